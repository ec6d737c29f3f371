"""Minimising by Moore's rounds (`regular.minimal_with_splits`): the same DFA as Hopcroft's
`minimal`, and a history of splits from which the classes after any round follow, equal to
Moore's rounds run that far (what a rule's horizon classes read instead of refining again)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strictgen import regular
from strictgen.deadline import compile_deadline
from strictgen.errors import CompileTimeoutError

from .test_core import FAST, RefNFA, moore_classes, nfas, same_partition


def classes_after(splits: regular.Splits, rounds: int) -> list[int]:
    """Each state's class after `rounds` rounds, read off the history: its first ancestor split off by then."""
    born, parent = (np.frombuffer(a, dtype=np.int32) for a in (splits.born, splits.parent))
    out = []
    for s in range(len(born)):
        while born[s] > rounds:
            s = int(parent[s])
        out.append(s)
    return out


def same_dfa(a: regular.DFA, b: regular.DFA) -> bool:
    return a.num_states == b.num_states and a.compact() == b.compact() and a.accepting() == b.accepting() and a.call_arrays() == b.call_arrays()


@FAST
@given(nfas(max_states=6, calls=True), st.booleans())
def test_moore_minimal_is_hopcrofts_with_every_round_inside(ref, productive_calls):
    dfa = regular.determinize(ref.core(), 0, ref.n - 1)
    productive = bytes([1, productive_calls, 1])  # callee 1 unproductive unless drawn: its calls trimmed away
    want = regular.minimal(dfa, productive)
    got, splits = regular.minimal_with_splits(dfa, productive)
    assert same_dfa(got, want)
    assert splits is not None  # a trimmed DFA reaches every class
    born = np.frombuffer(splits.born, dtype=np.int32)
    assert splits.last == int(born.max())  # the last round that split a class, counted in C
    for rounds in range(splits.last + 2):
        want_classes, _ = moore_classes(got, rounds)
        assert same_partition(classes_after(splits, rounds), want_classes), rounds
    assert len(set(classes_after(splits, splits.last))) == got.num_states  # the last split leaves every state apart
    assert splits.last == 0 or len(set(classes_after(splits, splits.last - 1))) < got.num_states  # and the round before did not


def test_a_counters_history():
    """a^0..a^40 then end: the state with k letters left splits off in round k."""
    n = 42
    ref = RefNFA(n, [(i, 0x61, 0x61, i + 1) for i in range(n - 1)], [])
    got, splits = regular.minimal_with_splits(regular.determinize(ref.core(), 0, n - 1))
    assert got.num_states == n
    born = np.frombuffer(splits.born, dtype=np.int32).tolist()
    assert born[n - 1] == 0 and sorted(born[: n - 1]) == [0, *range(1, n - 1)]
    assert len(set(classes_after(splits, 5))) == 7  # 0..5 letters left apart, the rest one class


def test_past_the_deadline_minimising_is_a_clear_error():
    k = 10  # (a|b)* a (a|b){k}: 2**(k + 1) states
    ref = RefNFA(k + 2, [(0, 0x61, 0x62, 0), (0, 0x61, 0x61, 1)] + [(i, 0x61, 0x62, i + 1) for i in range(1, k + 1)], [])
    dfa = regular.determinize(ref.core(), 0, k + 1)
    assert dfa.num_states == 2 ** (k + 1)
    with compile_deadline(0.001):
        time.sleep(0.01)
        with pytest.raises(CompileTimeoutError):
            regular.minimal_with_splits(dfa)


def assert_refine_is_moores_every_round(dfa: regular.DFA) -> None:
    """refine(r) against Python Moore rounds for every r up to the stable round: same partition, same stable round"""
    _, want_stable = moore_classes(dfa, dfa.num_states + 1)
    for rounds in range(want_stable + 1):
        raw, stable = dfa.refine(rounds)
        want, want_stable_here = moore_classes(dfa, rounds)
        assert same_partition(list(memoryview(raw).cast("i")), want), rounds
        assert stable == want_stable_here, rounds


def assert_history_is_moores(got: regular.DFA, splits: tuple[bytes, bytes]) -> None:
    """the classes read off minimal_with_splits' history after every round are Moore's on the minimal DFA"""
    born = np.frombuffer(splits.born, dtype=np.int32)
    for rounds in range(int(born.max()) + 2):
        assert same_partition(classes_after(splits, rounds), moore_classes(got, rounds)[0]), rounds


@st.composite
def tables(draw):
    """A random partial DFA over 3 letters of up to 40 states, with a counter-like spine (long
    chains make many rounds) and random back edges (many blocks split in one round)."""
    n = draw(st.integers(2, 40))
    rows = [[-1] * 256 for _ in range(n)]
    for s in range(n - 1):
        rows[s][ord("a")] = s + 1
    for s in range(n):
        for letter in b"bc":
            if draw(st.booleans()):
                rows[s][letter] = draw(st.integers(0, n - 1))
    accepting = [draw(st.integers(0, 3)) == 0 for _ in range(n - 1)] + [True]
    return regular.from_table(rows, accepting)


@FAST
@given(tables())
def test_splitter_rounds_are_moores_on_bigger_tables(dfa):
    """Moore's rounds by splitters (the heaviest part of each split left out) against plain Python
    Moore rounds, round by round, and the minimal DFA against Hopcroft's."""
    assert_refine_is_moores_every_round(dfa)
    trimmed = dfa.trim()
    got, splits = regular.minimal_with_splits(dfa)
    assert same_dfa(got, regular.minimize(trimmed))
    assert_history_is_moores(got, splits)


def test_a_shifting_window_minimises_in_few_passes():
    """(a|b)*a(a|b){k}: every state apart, after k rounds that each halve every block. Moore's
    signatures re-signed the whole DFA every round; splitters read each edge O(log) times. Checked
    by the result (the work bound is regular_micro's to time)."""
    k = 8
    ref = RefNFA(k + 2, [(0, 0x61, 0x62, 0), (0, 0x61, 0x61, 1)] + [(i, 0x61, 0x62, i + 1) for i in range(1, k + 1)], [])
    dfa = regular.determinize(ref.core(), 0, k + 1)
    got, splits = regular.minimal_with_splits(dfa)
    assert got.num_states == dfa.num_states == 2 ** (k + 1)
    born = np.frombuffer(splits.born, dtype=np.int32)
    assert int(born.max()) == splits.last == k  # the accepting flag tells one letter; each round one more
    for rounds in (0, 1, 4, k - 1, k):
        assert len(set(classes_after(splits, rounds))) == len(set(moore_classes(got, rounds)[0])), rounds


@st.composite
def run_tables(draw):
    """A random partial DFA over 8 byte classes whose rows are runs of classes with one target
    (long runs, and runs of one class that end where the next starts into the same block), up to
    30 states with a counter-like spine: the partition keeps in-edges as runs when that reads fewer
    sources (else one per class edge), and both ways must split exactly like Moore's rounds."""
    n = draw(st.integers(2, 30))
    longest = draw(st.sampled_from([1, 2, 8]))  # 1: every run one class (the class-edge layout)
    rows = []
    for s in range(n):
        row = []
        while len(row) < 8:
            length = min(draw(st.integers(1, longest)), 8 - len(row))
            target = draw(st.integers(-1, n - 1))
            row += [target] * length
        if s + 1 < n and draw(st.integers(0, 3)) == 0:
            row[draw(st.integers(0, 7))] = s + 1
        rows.append(row)
    accepting = [draw(st.integers(0, 3)) == 0 for _ in range(n - 1)] + [True]
    classmap = bytes(min(b // 4, 7) for b in range(256))
    return regular.from_table(rows, accepting, classmap)


@FAST
@given(run_tables())
def test_splitting_by_runs_is_moores_every_round(dfa):
    """Refining by runs of classes (a run's sources marked once for all its classes, by where runs
    start and end) against Python Moore rounds over every byte, round by round; minimal_with_splits
    against Hopcroft's minimal, and its size against Moore's fixpoint on the trimmed DFA."""
    assert_refine_is_moores_every_round(dfa)
    trimmed = dfa.trim()
    if trimmed.num_states == 0:
        return
    got, splits = regular.minimal_with_splits(dfa)
    want_min = regular.minimize(trimmed)
    assert same_dfa(got, want_min)
    assert got.num_states == len(set(moore_classes(trimmed, trimmed.num_states + 1)[0]))
    assert_history_is_moores(got, splits)
