"""The merge check's bound (compile/_futures.c): a return frame whose future reaches more than
MAX_FUTURE_STATES (64) frames keeps its own frame, one that reaches at most 64 is merged with the
first frame of equal future. Since the check first settles "too long" by a depth-first search
that finds, per strongly connected component, the frames each reaches (`future_is_long`), these
tests pin the bound against an independent count: a breadth-first search in Python over each
rule's own DFA arrays (byte targets and call returns, as the check reads them)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg

from tests.fuzz.languages import gbnf_text, random_node

MAX_FUTURE_STATES = 64
BRACKETS = 6


@pytest.fixture(scope="module")
def compiler() -> sg.GrammarCompiler:
    return sg.GrammarCompiler(sg.TokenizerInfo.from_name("smollm2"), compile_timeout=10.0)


def return_reach(rule) -> list[int]:
    """How many frames each of `rule`'s return frames reaches (itself included), by BFS; but the
    frames that only finish (a tail call: nothing is pushed, nothing merged)."""
    table_bytes, classmap = rule.dfa.compact()
    width = max(classmap) + 1
    table = np.frombuffer(table_bytes, np.int32).reshape(-1, width)
    call_start, _, ret = (np.frombuffer(a, np.int32) for a in rule.dfa.call_arrays())

    def successors(f: int) -> set[int]:
        return {int(t) for t in table[f] if t >= 0} | {int(r) for r in ret[call_start[f] : call_start[f + 1]]}

    sizes = []
    for r in sorted({int(x) for x in ret}):
        seen, todo = {r}, [r]
        while todo:
            for t in successors(todo.pop()):
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        if len(seen) > 1:
            sizes.append(len(seen))
    return sizes


def bracket_grammar(tail: list) -> str:
    """Finding D's shape (two rules that open `(` around root and close it with `tail`)."""
    return gbnf_text(
        {
            "root": ["alt", [["ref", "a"], ["seq", [["lit", "("], ["ref", "root"], tail]]]],
            "a": ["alt", [["lit", "x"], ["seq", [["lit", "("], ["ref", "root"], tail]]]],
        }
    )


def stacks_after_brackets(g) -> int:
    return len(g.machine.stacks(g.machine.step_bytes(g.machine.start, b"(" * BRACKETS)))


@pytest.mark.parametrize("length", [61, 62, 63, 64, 65, 80])
def test_a_literal_tail_merges_up_to_the_bound(compiler, length):
    """`(` root then `length` bytes: the return frame reaches length + 1 frames, so the frames merge
    (2 stacks) up to a 63-byte tail and double with every bracket past it."""
    g = compiler.compile_grammar(bracket_grammar(["lit", "y" * length]))
    reach = [s for rule in g.automaton.rules for s in return_reach(rule)]
    assert set(reach) == {length + 1}
    expected = 2 if length + 1 <= MAX_FUTURE_STATES else 2 * 2**BRACKETS
    assert stacks_after_brackets(g) == expected


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(35, 75))
def test_merging_follows_the_reach_count_with_loops_and_branches(compiler, seed, length):
    """A random tail (loops, classes, branches: components of several frames) after a literal
    that brings the future near the bound: the two rules' return frames merge exactly when the
    frames they reach number at most 64, whatever the search found first."""
    rnd = random.Random(seed)
    tail = ["seq", [["lit", "y" * length], random_node(rnd, 2, regex=False)]]
    try:
        g = compiler.compile_grammar(bracket_grammar(tail))
    except sg.StrictgenError:
        return  # a refused grammar: nothing to compare
    reach = [s for rule in g.automaton.rules for s in return_reach(rule)]
    short = [s <= MAX_FUTURE_STATES for s in reach]
    if all(short):
        assert stacks_after_brackets(g) == 2
    elif not any(short):
        assert stacks_after_brackets(g) == 2 * 2**BRACKETS
    else:  # the rules' minimal DFAs differ in size: only the longer one must keep its own frames
        assert stacks_after_brackets(g) == 2 * 2**BRACKETS


@pytest.mark.parametrize("length", [60, 61, 62, 63, 64, 300])
def test_a_search_from_a_long_return_frame_leaves_the_short_one_after_it(compiler, length):
    """`(` root `,` root then `length` bytes: the first return frame reaches length + 3 frames, the
    second length + 1, and the first is asked first (its search meets the second). Each merges
    (2 stacks after the brackets; 4 apart) exactly when its own count is within the bound, past
    the search's own frame budget (300) too."""
    tail = ["seq", [["lit", ","], ["ref", "root"], ["lit", "y" * length]]]
    g = compiler.compile_grammar(bracket_grammar(tail))
    reach = {s for rule in g.automaton.rules for s in return_reach(rule)}
    assert reach == {length + 1, length + 3}
    machine = g.machine
    first = machine.step_bytes(machine.start, b"(")
    second = machine.step_bytes(first, b"x,")
    assert len(machine.stacks(first)) == (2 if length + 3 <= MAX_FUTURE_STATES else 4)
    assert len(machine.stacks(second)) == (2 if length + 1 <= MAX_FUTURE_STATES else 4)
