"""The C passes behind a loop's splits (tokenizer/_loops.c) equal their numpy definitions on random
inputs, and the splits they make (`VocabTrie.inside_by_first_byte`, `loop_rest` by entering first
bytes) equal what those definitions give on a real vocabulary."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from strictgen.tokenizer import _loops


def by_first_reference(inside: np.ndarray, first: np.ndarray, whole: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ids of `inside` stably sorted by 2 * first byte + whole, and each key's start (513)."""
    ids = np.flatnonzero(inside)
    keys = 2 * first[ids].astype(np.int64) + whole[ids]
    order = np.argsort(keys, kind="stable")
    return ids[order], np.searchsorted(keys[order], np.arange(513))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 400).flatmap(lambda n: st.tuples(arrays(np.bool_, n), arrays(np.uint8, n), arrays(np.bool_, n))))
def test_by_first_is_a_stable_sort_by_first_byte_then_whole(data):
    inside, first, whole = data
    ids, bounds = _loops.by_first(inside, first, whole)
    want_ids, want_bounds = by_first_reference(inside, first, whole)
    assert np.array_equal(np.frombuffer(ids, dtype=np.int64), want_ids)
    assert np.array_equal(np.frombuffer(bounds, dtype=np.int64), want_bounds)


def test_by_first_refuses_arrays_of_other_lengths():
    import pytest

    with pytest.raises(ValueError, match="one byte per token"):
        _loops.by_first(np.ones(4, dtype=bool), np.zeros(3, dtype=np.uint8), np.zeros(4, dtype=bool))


def test_inside_by_first_byte_on_a_real_vocabulary(qwen):
    trie = qwen.trie
    loop = bytes(range(ord("a"), ord("z") + 1)) + b"0123456789-."
    packed, ids, starts, cut_ends, ends = trie.inside_by_first_byte(loop, False)
    inside = trie.loop_inside(loop, False)
    want_ids, bounds = by_first_reference(inside, trie.first_bytes, trie.starts_whole_char)
    assert np.array_equal(ids, want_ids)
    assert np.array_equal(starts, bounds[0:512:2]) and np.array_equal(cut_ends, bounds[1:512:2]) and np.array_equal(ends, bounds[2:513:2])
    assert np.array_equal(np.unpackbits(packed.view(np.uint8), bitorder="little")[: len(inside)].astype(bool), inside)


def test_loop_rest_by_first_bytes_holds_exactly_the_outside_tokens_entering(qwen):
    trie = qwen.trie
    loop = bytes(range(ord("A"), ord("Z") + 1)) + bytes(range(ord("a"), ord("z") + 1)) + b"0123456789_"
    first = np.zeros(256, dtype=bool)
    first[list(loop)] = True
    rest = trie.loop_rest(loop, False, first)
    want = np.flatnonzero(~trie.loop_inside(loop, False) & first[trie.first_bytes] & (trie.token_node < trie.num_nodes))
    assert np.array_equal(np.sort(rest.node_tokens), want)
    assert rest.num_text_tokens < trie.loop_rest(loop, False).num_text_tokens / 3  # why it is split: a fraction of the others
