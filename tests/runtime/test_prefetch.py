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
from strictgen.runtime.prefetch import PREFETCHER, Prefetch



def schema(tag: str) -> dict:
    """A schema whose called rules are new to this process (`tag` names an optional member): rules
    an earlier compile built are built ahead, at no cost, and would leave nothing to prefetch."""
    item = {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}, tag: {"type": "boolean"}},
            "required": ["id"]}
    return {"type": "object", "properties": {"a": item, "b": {"type": "array", "items": item, "maxItems": 3}, "c": {"type": "array", "items": {"type": "array", "items": item}}}}


DOCUMENT = '{"a": {"id": 1, "tags": ["x", "y"]}, "b": [{"id": 2}], "c": [[{"id": 3, "tags": []}]]}'


@pytest.fixture
def deferring(monkeypatch):
    """Compiles that build nothing ahead but the root, so every called rule is deferred; the
    prefetch's thread is waited for after the test, so no test sees another's builds."""
    monkeypatch.setattr(automaton, "EAGER_STATES", 0)
    yield
    assert PREFETCHER.idle(30)


def _counting_builds(monkeypatch) -> dict:
    builds: dict = {}
    build = LazyRules.dfa

    def counted(self, index):
        builds[index] = builds.get(index, 0) + 1
        return build(self, index)

    monkeypatch.setattr(LazyRules, "dfa", counted)
    return builds


def test_a_batch_fill_starts_building_the_rules_ahead(qwen, deferring, monkeypatch):
    """The first batch fill of a fresh grammar starts the prefetch; once it is done every deferred
    rule is built, each once, and teacher-forced batch fills from there equal row-by-row fills of
    a grammar compiled whole."""
    builds = _counting_builds(monkeypatch)
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("a_batch_fill_starts_"))
    whole = sg.GrammarCompiler(qwen, defer_rules=False).compile_json_schema(schema("a_batch_fill_starts_"))
    assert grammar.masker.deferred_rules(), "nothing deferred: the test no longer exercises the prefetch"
    rows = [sg.GrammarMatcher(grammar) for _ in range(3)]
    reference = [sg.GrammarMatcher(whole) for _ in range(3)]
    mask = sg.allocate_token_bitmask(3, qwen.vocab_size)
    want = sg.allocate_token_bitmask(3, qwen.vocab_size)
    sg.fill_next_token_bitmask_batch(rows, mask)
    assert PREFETCHER.idle(30)
    assert grammar.masker.deferred_rules() == [] and set(builds.values()) == {1}, builds
    text = DOCUMENT.encode()
    for position in range(0, len(text), 7):  # the rows a few bytes apart, every fill equal
        for r, m in enumerate(reference):
            m.fill_next_token_bitmask(want, index=r)
        sg.fill_next_token_bitmask_batch(rows, mask)
        assert np.array_equal(mask, want)
        chunk = text[position:position + 7]
        assert all(m.accept_string(chunk) for m in rows) and all(m.accept_string(chunk) for m in reference)


def test_a_finished_request_stops_its_prefetch(qwen, deferring):
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("a_finished_request"))
    todo = len(grammar.masker.deferred_rules())
    assert todo, "nothing deferred: the test no longer exercises the prefetch"
    matcher = sg.GrammarMatcher(grammar)
    assert matcher.accept_string('{"a": {"id": 1}}') and sg.accept_token_batch([matcher], [qwen.eos_token_ids[0]]) == [True]
    todo = len(grammar.masker.deferred_rules())  # (what that document entered is built now)
    job = Prefetch(grammar.masker)
    job.matchers.add(matcher)
    assert not job.step() and len(grammar.masker.deferred_rules()) == todo  # ended: nothing built
    other = sg.GrammarMatcher(grammar)
    job.matchers.add(other)
    del other  # dropped without ending: nothing wants the rules either
    assert not job.step() and len(grammar.masker.deferred_rules()) == todo
    assert todo, "the document entered every rule: nothing left to stop"
    live = sg.GrammarMatcher(grammar)
    job.matchers.add(live)
    assert job.step() == (todo > 1) and len(grammar.masker.deferred_rules()) == todo - 1  # one rule a step


def test_a_build_that_fails_ahead_fails_the_request_that_enters_the_rule(qwen, deferring, monkeypatch):
    """A failure in the background is the machine's, kept for the walk that enters the rule: that
    request gets the clear error (the failure is forced: a real one needs 200,000 DFA states)."""
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("a_build_that_fails_a"))
    real = LazyRules.dfa

    def too_deep(self, index):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(LazyRules, "dfa", too_deep)
    matcher = sg.GrammarMatcher(grammar)
    job = Prefetch(grammar.masker)
    job.matchers.add(matcher)
    while job.step():  # every build fails; none escapes the prefetch
        pass
    monkeypatch.setattr(LazyRules, "dfa", real)
    with pytest.raises(GrammarTooLargeError, match="nested too deeply"):
        matcher.accept_string('{"a": {"id": 1')


def test_no_build_starts_while_a_batch_fill_runs_and_no_thread_stays(qwen, deferring, monkeypatch):
    builds = _counting_builds(monkeypatch)
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("no_build_starts_whil"))
    matcher = sg.GrammarMatcher(grammar)
    with PREFETCHER:  # as a batch fill holds it
        PREFETCHER.start(grammar.masker, [matcher])
        time.sleep(0.1)
        assert not builds  # the thread waits for the fill to end
    assert PREFETCHER.idle(30) and grammar.masker.deferred_rules() == [] and builds
    assert not [t for t in threading.enumerate() if t.name == "strictgen-prefetch"]
    PREFETCHER.start(grammar.masker, [matcher])  # nothing left to build: no thread at all
    assert not [t for t in threading.enumerate() if t.name == "strictgen-prefetch"]


def test_row_by_row_fills_start_no_prefetch(qwen, deferring):
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema("row_by_row_fills_sta"))
    todo = grammar.masker.deferred_rules()
    matcher = sg.GrammarMatcher(grammar)
    matcher.fill_next_token_bitmask(sg.allocate_token_bitmask(1, qwen.vocab_size))
    sg.fill_next_token_bitmask_batch([matcher], sg.allocate_token_bitmask(1, qwen.vocab_size))
    assert PREFETCHER.idle(30) and grammar.masker.deferred_rules() == todo
