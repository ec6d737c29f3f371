"""multiple_of._tracker, built as one numpy table, equals the remainder automaton written state
by state (the definition: phase * p + r, fraction digits up to n, then only zeros)."""

import numpy as np
import pytest

from strictgen.grammar import multiple_of as mo


def reference_rows(p: int, n: int, fraction: bool):
    phases = n + 2 if fraction else 1
    rows, accepting = [], []
    for phase in range(phases):
        t = phase - 1
        weight = pow(10, n - t if phase else n, p)
        for r in range(p):
            row = [-1] * (len(mo._ALPHA) + 1)
            if phase == 0:
                row[mo._MINUS] = r
                if fraction:
                    row[mo._DOT] = p + r
            for d in range(10):
                if phase == 0:
                    row[mo._D0 + d] = (10 * r + d) % p
                elif t < n:
                    row[mo._D0 + d] = (phase + 1) * p + (10 * r + d) % p
                elif d == 0:
                    row[mo._D0] = phase * p + r
            rows.append(row)
            accepting.append(r * weight % p == 0)
    return rows, accepting


@pytest.mark.parametrize("p,n,fraction", [(1, 0, False), (7, 0, False), (12, 0, True), (33, 2, True), (429, 1, True), (10, 3, True), (25, 0, True)])
def test_tracker_is_the_remainder_automaton(p, n, fraction):
    dfa = mo._tracker(p, n, fraction)
    rows, accepting = reference_rows(p, n, fraction)
    table = np.frombuffer(dfa.table256(), dtype=np.int32).reshape(-1, 256)
    assert dfa.num_states == len(rows)
    assert table[:, list(mo._ALPHA)].tolist() == [row[:-1] for row in rows]
    assert (np.delete(table, list(mo._ALPHA), axis=1) == -1).all()
    assert [bool(a) for a in dfa.accepting()] == accepting
