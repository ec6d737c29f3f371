"""length_product._utf8_moves (what _length_classes.count reads: levels, acceptance, one move per
(state, target) weighted by the sum of its bytes' weights) equals, byte for byte, the cell-by-cell
reference below (the previous implementation, which sorted every live (state, byte) cell), on
pattern DFAs over 1- to 4-byte characters and on byte-level DFAs that are not whole UTF-8
characters (both None). And char_successors (the states one whole character leads to, from the
same levels) equals the keys of char_transitions, which LengthProduct now asks only of the states a
document reaches."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictgen import regular
from strictgen.grammar.automata import regular_dfa
from strictgen.grammar.ir import ByteSet, Literal, alt, repeat, seq
from strictgen.grammar.schema import length_product
from strictgen.grammar.schema.length_product import char_successors, char_transitions
from strictgen.grammar.schema.ir import Matches
from strictgen.grammar.schema.strings import string_language

from .test_length_product_count import patterns

_ROLE = length_product._BYTE_ROLE
_WEIGHT = length_product._BYTE_WEIGHT


def reference(dfa: regular.DFA):
    n = dfa.num_states
    table = np.frombuffer(dfa.table256(), dtype=np.int32).reshape(n, 256)
    q, b = np.nonzero(table >= 0)
    t = table[q, b]
    role = _ROLE[b]
    is_cont = role == -1
    has_cont = np.zeros(n, dtype=bool)
    has_cont[q[is_cont]] = True
    if (role == -9).any() or has_cont[q[~is_cont]].any():
        return None
    level = np.zeros(n, dtype=np.int64)
    for _ in range(4):
        high = np.zeros(n, dtype=np.int64)
        np.maximum.at(high, q[is_cont], level[t[is_cont]] + 1)
        level = high
    low = np.full(n, 9, dtype=np.int64)
    np.minimum.at(low, q[is_cont], level[t[is_cont]] + 1)
    accepting = np.fromiter((dfa.is_accepting(s) for s in range(n)), dtype=bool, count=n)
    if (has_cont & (low != level)).any() or (level > 3).any() or level[0] or (accepting & has_cont).any():
        return None
    if (level[t[~is_cont]] != role[~is_cont]).any():
        return None
    edges, inverse = np.unique(q.astype(np.int64) * n + t, return_inverse=True)
    weights = np.zeros(len(edges), dtype=np.uint64)
    np.add.at(weights, inverse, _WEIGHT[b])
    offsets = np.searchsorted(edges // n, np.arange(n + 1)).astype(np.int32)
    targets = (edges % n).astype(np.int32)
    return level.astype(np.int8).tobytes(), accepting.astype(np.uint8).tobytes(), offsets.tobytes(), targets.tobytes(), weights.tobytes()


FEW = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@FEW
@given(patterns())
def test_pattern_dfas(pattern):
    dfa = regular_dfa(string_language((Matches(pattern),)))
    got = length_product._utf8_moves(dfa)
    assert got == reference(dfa)
    assert got is not None  # whole characters: the moves apply
    assert char_successors(dfa) == [set(m) for m in char_transitions(dfa)]


_bytes = st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255)).map(lambda r: ByteSet(((min(r), max(r)),))), min_size=1, max_size=3)


@FEW
@given(_bytes, st.integers(0, 2))
def test_byte_level_dfas(sets, stars):
    """Bytes that are not whole characters (lone continuations, invalid leads) or ASCII only."""
    e = seq(*sets)
    for _ in range(stars):
        e = repeat(alt(e, Literal(b"a")))
    dfa = regular_dfa(e)
    assert length_product._utf8_moves(dfa) == reference(dfa)
    assert char_successors(dfa) == [set(m) for m in char_transitions(dfa)]


def test_a_big_pattern():
    dfa = regular_dfa(string_language((Matches("^$|(^(?:\\S+\\s+){0,29}\\S+$)"),)))
    assert dfa.num_states > 500
    assert length_product._utf8_moves(dfa) == reference(dfa)
    assert char_successors(dfa) == [set(m) for m in char_transitions(dfa)]
