"""Embedding a DFA into an NFA (`NFA.embed`, what the C lowering's EMBED op does): the edges it
adds are the DFA's rows as maximal byte ranges of one target, whatever the byte classes, checked
against a plain reading of the 256-wide table (the C reads a row by the classmap's runs)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen import regular


def byte_runs(table256: bytes, n: int) -> list[tuple[int, int, int, int]]:
    """(state, lo, hi, target) for each maximal run of bytes with one live target, state by state."""
    rows = np.frombuffer(table256, dtype=np.int32).reshape(n, 256)
    edges = []
    for q in range(n):
        lo = 0
        for b in range(1, 257):
            if b == 256 or rows[q][b] != rows[q][lo]:
                if rows[q][lo] >= 0:
                    edges.append((q, lo, b - 1, int(rows[q][lo])))
                lo = b
    return edges


@st.composite
def dfas(draw):
    n = draw(st.integers(1, 8))
    if draw(st.booleans()):  # classes in runs of bytes (a JSON piece's) or scattered
        cuts = sorted(set(draw(st.lists(st.integers(1, 255), max_size=12))))
        classmap = bytes(sum(b >= c for c in cuts) for b in range(256))
    else:
        classmap = bytes(draw(st.lists(st.integers(0, 5), min_size=256, max_size=256)))
    classmap = bytes(sorted(set(classmap)).index(c) for c in classmap)  # classes numbered 0..k-1
    k = max(classmap) + 1
    rows = [draw(st.lists(st.integers(-1, n - 1), min_size=k, max_size=k)) for _ in range(n)]
    return regular.from_table(rows, draw(st.lists(st.booleans(), min_size=n, max_size=n)), classmap)


def records(data: bytes | None, width: int) -> list[tuple[int, ...]]:
    """int32 records from `NFA.arrays()` (None where none were added)."""
    return [tuple(r) for r in np.frombuffer(data or b"", dtype=np.int32).reshape(-1, width).tolist()]


@settings(max_examples=150, deadline=None)
@given(dfas(), st.integers(0, 3))
def test_embedded_edges_are_the_rows_byte_runs(dfa, before):
    nfa = regular.NFA()
    nfa.add_states(before)
    s, t = nfa.add_state(), nfa.add_state()
    nfa.embed(dfa, s, t)
    base = before + 2
    edges = records(nfa.arrays()[0], 4)
    want = [(q + base, lo, hi, tgt + base) for q, lo, hi, tgt in byte_runs(dfa.table256(), dfa.num_states)]
    assert edges == want
    assert records(nfa.arrays()[1], 2) == [(s, base)] + [(base + q, t) for q, a in enumerate(dfa.accepting()) if a]
    nfa.embed(dfa, s, t)  # a second use: the same edges, listed once, shifted
    assert records(nfa.arrays()[0], 4)[len(edges):] == [(q + dfa.num_states, lo, hi, tgt + dfa.num_states) for q, lo, hi, tgt in want]
