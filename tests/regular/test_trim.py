"""Trimming (`DFA.trim`, which reads each row as runs of equal targets): against a reference in
Python over the core's table, state by state: the states reachable from the start (by bytes and
the calls of productive rules) that can still reach acceptance, numbered breadth first (targets
in byte-class order, then returns in call order), calls of unproductive rules dropped."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from strictgen import regular

from .test_core import FAST, nfas


def reference_trim(dfa: regular.DFA, productive: bytes | None) -> tuple[list[int], dict[int, int]]:
    """(the kept states in their new order, old -> new id)."""
    n = dfa.num_states
    table, classmap = dfa.compact()
    k = max(classmap) + 1
    rows = [list(memoryview(table).cast("i")[s * k : (s + 1) * k]) for s in range(n)]

    def call_ok(callee: int) -> bool:
        return productive is None or (callee < len(productive) and productive[callee] != 0)

    calls = [[(c, t) for c, t in dfa.calls(s) if call_ok(c)] for s in range(n)]
    ok = [dfa.is_accepting(s) for s in range(n)]
    changed = True
    while changed:
        changed = False
        for s in range(n):
            if not ok[s] and (any(t >= 0 and ok[t] for t in rows[s]) or any(ok[t] for _, t in calls[s])):
                ok[s] = changed = True
    order: list[int] = [0] if ok[0] else []
    new_id = {s: i for i, s in enumerate(order)}
    for s in order:  # grows as it goes: breadth first
        for t in [t for t in rows[s] if t >= 0] + [t for _, t in calls[s]]:
            if ok[t] and t not in new_id:
                new_id[t] = len(order)
                order.append(t)
    return order, new_id


@FAST
@given(nfas(max_states=6, calls=True), st.sampled_from([None, b"\x01\x01\x01", b"\x01\x00\x01", b"\x00\x00\x00"]))
def test_trim_is_the_reference(ref, productive):
    dfa = regular.determinize(ref.core(), 0, ref.n - 1)
    got = dfa.trim(productive)
    order, new_id = reference_trim(dfa, productive)
    assert got.num_states == max(1, len(order))
    if not order:
        assert not got.is_accepting(0) and all(got.step(0, bytes([b])) == -1 for b in range(256))
        return
    for i, s in enumerate(order):
        assert got.is_accepting(i) == dfa.is_accepting(s)
        for b in range(256):
            t = dfa.step(s, bytes([b]))
            assert got.step(i, bytes([b])) == new_id.get(t, -1)
        want_calls = [(c, new_id[t]) for c, t in dfa.calls(s) if t in new_id and (productive is None or productive[c])]
        assert got.calls(i) == want_calls
