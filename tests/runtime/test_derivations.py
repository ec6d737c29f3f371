"""Shortest completions through shortest derivations per frame (runtime/derivations.py) against
the breadth-first search over machine states that they replace where every rule is built: the
same completion wherever the search finishes, always one that ends the document, shortest, and
consistent one byte further along (what budget.py's guard relies on); and issue 34's finding A,
whose search ran out of time, now answered at once."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile.machine import DEAD
from strictgen.runtime.budget import CompletionSearchTooLarge, ShortestCompletions
from tests.fuzz.languages import gbnf_text, random_gbnf

FINDING_A = 'root ::= r3 "abcdefghijklmnop" | "(" root ")"\nr3 ::= .* | "{" root "}"\n'
GRAMMARS = {
    "finding_a": ("grammar", FINDING_A),
    # an empty rule called between bytes (aliases of equal length), nested calls, recursion
    "nullable_calls": ("grammar", 'root ::= ws "[" ws (item (ws "," ws item)*)? ws "]"\nitem ::= [0-9]+ | root | "\\"" [a-z]* "\\""\nws ::= " "*\n'),
    "ties": ("grammar", 'root ::= a | b | "(" root ")"\na ::= "x" c\nb ::= c "x" | "w" "y"\nc ::= "y" | "{" root "}"\n'),
    "json": ("json", None),
    "schema": ("schema", {"type": "object", "properties": {"a": {"type": "string", "minLength": 3},
                                                          "b": {"type": "array", "items": {"type": "integer"}, "minItems": 2}},
                          "required": ["a", "b"]}),
    "regex": ("regex", "(ab|c)*d{3}e?"),
}


@pytest.fixture(scope="module")
def grammars(qwen):
    compiler = sg.GrammarCompiler(qwen)
    build = {"grammar": compiler.compile_grammar, "json": lambda _: compiler.compile_json(),
             "schema": compiler.compile_json_schema, "regex": compiler.compile_regex}
    return {name: build[kind](source) for name, (kind, source) in GRAMMARS.items()}


def _walk(machine, choices: list[int]) -> int:
    """The state after following live bytes picked by `choices` from the start."""
    state = machine.start
    for pick in choices:
        row = machine.compute_row(state)
        live = [b for b in range(256) if row[b] != DEAD]
        if not live:
            break
        state = int(row[live[pick % len(live)]])
    return state


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(GRAMMARS)), choices=st.lists(st.integers(0, 255), max_size=24))
def test_frames_give_the_searchs_completion_shortest_and_consistent(grammars, name, choices):
    machine = grammars[name].machine
    state = _walk(machine, choices)
    frames = ShortestCompletions(machine, by_frames=True)
    got = frames.completion(state)
    assert frames.derivations is not None
    assert ShortestCompletions(machine).completion(state) == got  # the default: quick search, then frames
    assert machine.accepting[machine.step_bytes(state, got)]
    try:
        searched = ShortestCompletions(machine, by_frames=False, max_expanded=20_000, max_seconds=0.3).completion(state)
    except CompletionSearchTooLarge:
        searched = None  # finding A's stacks: the search cannot say; the checks below still can
    if searched is not None:
        assert got == searched
    if got:  # one byte along, the completion is the tail (a fresh object: nothing memoised)
        after = machine.step_bytes(state, got[:1])
        assert ShortestCompletions(machine, by_frames=True).completion(after) == got[1:]
        # and nothing shorter ends the document: no accepting state within fewer bytes
        level = {state}
        for _ in range(min(len(got), 6)):
            assert not any(machine.accepting[s] for s in level)
            level = {int(t) for s in level for t in set(machine.compute_row(s).tolist()) if t != DEAD}
            if len(level) > 2000:
                break


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), choices=st.lists(st.integers(0, 255), max_size=16))
def test_frames_give_the_searchs_completion_on_random_grammars(qwen, seed, choices):
    """The fuzz campaign's random GBNF grammars (recursion through brackets, sometimes to an
    earlier rule): frames and the search agree from random states."""
    try:
        g = sg.GrammarCompiler(qwen).compile_grammar(gbnf_text(random_gbnf(random.Random(seed))))
    except sg.StrictgenError:
        return  # a refused grammar (left recursion, an empty language) has no states to compare
    state = _walk(g.machine, choices)
    got = ShortestCompletions(g.machine, by_frames=True).completion(state)
    assert g.machine.accepting[g.machine.step_bytes(state, got)]
    try:
        assert got == ShortestCompletions(g.machine, by_frames=False, max_expanded=20_000, max_seconds=0.3).completion(state)
    except CompletionSearchTooLarge:
        pass


def test_finding_a_is_answered_at_once(grammars):
    machine = grammars["finding_a"].machine
    t0 = time.thread_time()
    frames = ShortestCompletions(machine)  # the quick search gives up at once, frames answer
    assert frames.completion(machine.start) == b"abcdefghijklmnop" and frames.derivations is not None
    state = machine.step_bytes(machine.start, b"((((((((({{{{(((")
    assert frames.completion(state) == b"abcdefghijklmnop"  # r3's .* may have read all of it
    state = machine.step_bytes(state, b"abcdefghijklmnop)")  # "(" root ")": the rest was r3's .*
    assert frames.completion(state) == b"" and machine.accepting[state]
    assert time.thread_time() - t0 < 1


def test_deferred_rules_are_built_for_frames_once_the_quick_search_gives_up(qwen, monkeypatch):
    """A compile that deferred rules (every rule here: EAGER_STATES 0) keeps the deferral while a
    quick search answers; on finding A's grammar it cannot, and the deferred rules get built."""
    from strictgen.compile import automaton

    monkeypatch.setattr(automaton, "EAGER_STATES", 0)
    g = sg.GrammarCompiler(qwen).compile_grammar(FINDING_A.replace('"(" root ")"', '"(" root ")" | "#" far') + 'far ::= "zzzzzzzzzzzzzzzzzzzz" | "<" far ">"\n')
    machine = g.machine
    names = [machine.automaton.rules[0].name] + [rule.name for rule in machine.added.values()]
    assert machine.automaton.lazy is not None and "far" not in names  # not met yet
    completions = ShortestCompletions(machine)
    assert completions.completion(machine.start) == b"abcdefghijklmnop"
    assert completions.derivations is not None
    assert "far" in [rule.name for rule in machine.added.values()]  # built for frames
    state = machine.step_bytes(machine.start, b"#<<")  # far's, or r3's .* (shorter)
    assert completions.completion(state) == ShortestCompletions(g.machine, by_frames=False).completion(state) == b"abcdefghijklmnop"


def test_a_grammar_with_families_keeps_the_search(qwen):
    """Frames need every rule's automaton; a family (an any-order object past 9 keys: one rule per
    set of keys seen) has more members than can be built, so its grammar keeps the search."""
    schema = {"type": "object", "properties": {f"k{i}": {"type": "integer"} for i in range(12)}, "required": ["k0"]}
    g = sg.GrammarCompiler(qwen).compile_json_schema(schema, any_order=True, whitespace="compact")
    completions = ShortestCompletions(g.machine)
    assert completions.completion(g.machine.start) == b'{"k0":0}'
    assert completions.derivations is None
    with pytest.raises(sg.StrictgenError, match="families"):
        ShortestCompletions(g.machine, by_frames=True).completion(g.machine.start)
