"""Rules a compile deferred, built in the background ahead of the batch fills that enter them
(runtime/prefetch.py): the masks stay those of rules built ahead, each rule is built once, a
finished request stops its prefetch, a failed build fails the request that enters the rule, no
build starts while a batch fill runs, and the thread is gone when there is nothing to do."""

import threading
import time

import numpy as np
import pytest

import strictgen as sg
from strictgen.compile import automaton
from strictgen.compile.lazy_rules import LazyRules
from strictgen.errors import GrammarTooLargeError
from strictgen.runtime import batch
from strictgen.runtime.prefetch import Prefetch, Prefetcher



def schema(tag: str) -> dict:
    """A schema whose called rules are new to this process (`tag` names an optional member): rules
    an earlier compile built are built ahead, at no cost, and would leave nothing to prefetch."""
    item = {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}, tag: {"type": "boolean"}},
            "required": ["id"]}
    return {"type": "object", "properties": {"a": item, "b": {"type": "array", "items": item, "maxItems": 3}, "c": {"type": "array", "items": {"type": "array", "items": item}}}}


DOCUMENT = '{"a": {"id": 1, "tags": ["x", "y"]}, "b": [{"id": 2}], "c": [[{"id": 3, "tags": []}]]}'


@pytest.fixture
def prefetcher(monkeypatch):
    """Compiles that build nothing ahead but the root, so every called rule is deferred, and a
    prefetcher of the test's own for the batch fills (no timings of other tests' fills), closed
    after the test, so no test sees another's builds."""
    monkeypatch.setattr(automaton, "EAGER_STATES", 0)
    own = Prefetcher()
    monkeypatch.setattr(batch, "PREFETCHER", own)
    yield own
    own.close()
    assert own.idle(30)


def _counting_builds(monkeypatch) -> dict:
    """Builds of run-time rules by thread name (the prefetch's is "strictgen-prefetch"), each rule
    index counted."""
    builds: dict = {}
    build = LazyRules.dfa

    def counted(self, index):
        builds.setdefault(threading.current_thread().name, []).append(index)
        return build(self, index)

    monkeypatch.setattr(LazyRules, "dfa", counted)
    return builds


def test_batch_fills_build_the_rules_a_document_enters_ahead(qwen, prefetcher, monkeypatch):
    """Two rows teacher-forced through a document, a batch fill per step and the prefetch given
    the time a forward pass gives it: after the first fill (which starts the prefetch, and builds
    what the start's own mask needs), the rules the document enters are built by the prefetch,
    not inside the fills nor the accepts, each once; every fill equals row-by-row fills of the
    grammar compiled whole."""
    builds = _counting_builds(monkeypatch)
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("builds_ahead"))
    whole = sg.GrammarCompiler(qwen, defer_rules=False).compile_json_schema(schema("builds_ahead"))
    assert grammar.masker.deferred_rules(), "nothing deferred: the test no longer exercises the prefetch"
    rows = [sg.GrammarMatcher(grammar) for _ in range(2)]
    reference = [sg.GrammarMatcher(whole) for _ in range(2)]
    mask = sg.allocate_token_bitmask(2, qwen.vocab_size)
    want = sg.allocate_token_bitmask(2, qwen.vocab_size)
    text = DOCUMENT.encode()
    for position in range(0, len(text), 5):
        sg.fill_next_token_bitmask_batch(rows, mask)
        for r, m in enumerate(reference):
            m.fill_next_token_bitmask(want, index=r)
        assert np.array_equal(mask, want)
        assert prefetcher.idle(30)  # the forward pass
        if not position:
            first = builds.pop("MainThread", [])
        chunk = text[position:position + 5]
        assert all(m.accept_string(chunk) for m in rows) and all(m.accept_string(chunk) for m in reference)
    assert all(m.can_end() for m in rows)
    ahead = builds.pop("strictgen-prefetch", [])
    assert ahead and not builds, builds  # every rule the document entered was built ahead
    assert len(set(ahead + first)) == len(ahead + first)  # each once
    assert len(ahead) <= len(grammar.automaton.lazy.names) - len(grammar.automaton.rules)


def test_a_finished_request_stops_its_prefetch(qwen, prefetcher):
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("a_finished_request"))
    start = grammar.machine.start
    todo = len(grammar.masker.deferred_rules())
    ended = sg.GrammarMatcher(grammar)
    assert ended.accept_string("{}") and sg.accept_token_batch([ended], [qwen.eos_token_ids[0]]) == [True]
    todo = len(grammar.masker.deferred_rules())
    job = Prefetch(grammar.masker)
    job.matchers.add(ended)
    job.states.append(start)
    assert not job.step() and len(grammar.masker.deferred_rules()) == todo  # ended: nothing built
    dropped = sg.GrammarMatcher(grammar)
    job.matchers.add(dropped)
    del dropped  # dropped without ending: nothing wants the rules either
    assert not job.step() and len(grammar.masker.deferred_rules()) == todo
    live = sg.GrammarMatcher(grammar)
    job.matchers.add(live)
    job.states.append(start)
    job.step()
    assert len(grammar.masker.deferred_rules()) == todo - 1  # one rule a step, for a live request


def test_a_build_that_fails_ahead_fails_the_request_that_enters_the_rule(qwen, prefetcher, monkeypatch):
    """A failure in the background is the machine's, kept for the walk that enters the rule: that
    request gets the clear error (the failure is forced: a real one needs 200,000 DFA states)."""
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("a_build_that_fails"))
    real, tried = LazyRules.dfa, []

    def too_deep(self, index):
        tried.append(index)
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(LazyRules, "dfa", too_deep)
    matcher = sg.GrammarMatcher(grammar)
    job = Prefetch(grammar.masker)
    job.matchers.add(matcher)
    job.states.append(grammar.machine.start)
    while job.step():  # every build fails; none escapes the prefetch
        pass
    assert tried
    monkeypatch.setattr(LazyRules, "dfa", real)
    with pytest.raises(GrammarTooLargeError, match="nested too deeply"):
        matcher.accept_string(DOCUMENT)


def test_no_build_starts_while_a_batch_fill_runs_and_no_thread_stays(qwen, prefetcher, monkeypatch):
    builds = _counting_builds(monkeypatch)
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("no_build_starts"))
    matcher = sg.GrammarMatcher(grammar)
    with prefetcher:  # as a batch fill holds it
        prefetcher.start(grammar.masker, [matcher], [grammar.machine.start])
        time.sleep(0.1)
        assert not builds  # the thread waits for the fill to end
    assert prefetcher.idle(30) and builds.get("strictgen-prefetch")
    assert not [t for t in threading.enumerate() if t.name == "strictgen-prefetch"]


def test_row_by_row_fills_start_no_prefetch(qwen, prefetcher):
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("row_by_row_fills"))
    todo = grammar.masker.deferred_rules()
    matcher = sg.GrammarMatcher(grammar)
    matcher.fill_next_token_bitmask(sg.allocate_token_bitmask(1, qwen.vocab_size))
    sg.fill_next_token_bitmask_batch([matcher], sg.allocate_token_bitmask(1, qwen.vocab_size))
    assert prefetcher.idle(30) and grammar.masker.deferred_rules() == todo


def test_an_unexpected_error_drops_the_job_not_the_prefetch(qwen, prefetcher, monkeypatch):
    """An error that is not a build's own (those are kept for the request) ends that job's turn,
    not the thread's service: the next start builds again (before, the dead thread stayed
    registered, so nothing started again and `idle` waited forever)."""
    builds = _counting_builds(monkeypatch)
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("an_unexpected_error"))
    matcher = sg.GrammarMatcher(grammar)
    step = Prefetch.step

    def slip(self, wanted=None):
        raise RuntimeError("a slip")

    monkeypatch.setattr(Prefetch, "step", slip)
    prefetcher.start(grammar.masker, [matcher], [grammar.machine.start])
    assert prefetcher.idle(30) and not builds
    monkeypatch.setattr(Prefetch, "step", step)
    prefetcher.start(grammar.masker, [matcher], [grammar.machine.start])
    assert prefetcher.idle(30) and builds.get("strictgen-prefetch")


def test_a_driver_can_turn_the_prefetch_off(qwen, prefetcher, monkeypatch):
    """`prefetch=False` (a driver whose forward pass runs on the fill's CPU): the batch fills start
    no prefetch, build the rules they enter themselves, and fill what the grammar compiled whole
    fills; the same fills with the prefetch on start it."""
    builds = _counting_builds(monkeypatch)
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("driver_off"))
    whole = sg.GrammarCompiler(qwen, defer_rules=False).compile_json_schema(schema("driver_off"))
    rows = [sg.GrammarMatcher(grammar) for _ in range(2)]
    reference = sg.GrammarMatcher(whole)
    mask = sg.allocate_token_bitmask(2, qwen.vocab_size)
    want = sg.allocate_token_bitmask(1, qwen.vocab_size)
    text = DOCUMENT.encode()
    for position in range(0, len(text), 5):
        sg.fill_next_token_bitmask_batch(rows, mask, prefetch=False)
        reference.fill_next_token_bitmask(want)
        assert np.array_equal(mask[0], want[0]) and np.array_equal(mask[1], want[0])
        assert prefetcher.idle(30)
        chunk = text[position:position + 5]
        assert all(m.accept_string(chunk) for m in rows) and reference.accept_string(chunk)
    assert builds.get("MainThread") and "strictgen-prefetch" not in builds
    assert not prefetcher._by_masker  # no job was ever made
    other = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("driver_on"))
    sg.fill_next_token_bitmask_batch([sg.GrammarMatcher(other) for _ in range(2)], mask)
    assert prefetcher._by_masker  # the default: on

