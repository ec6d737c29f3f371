"""Where new masks are written and which array keeps them (compile/mask_memory.py): a scratch row
per thread, one read-only array per distinct content, held weakly; masks unchanged."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile import _mask_bits, mask_memory

words = st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(words, words)
def test_digest_and_the_table_tell_contents_apart(a, b):
    x, y = np.asarray(a, dtype=np.int32), np.asarray(b, dtype=np.int32)
    assert _mask_bits.digest(x) == _mask_bits.digest(x.copy())
    table = _mask_bits.ContentTable()
    kept = table.keep(x)
    assert (table.keep(y) is kept) == (a == b)
    if a != b:  # a planted one-bit change moves the digest (not a guarantee in general: a check of these)
        z = x.copy()
        z[len(z) // 2] ^= 1 << (len(z) % 31)
        assert _mask_bits.digest(z) != _mask_bits.digest(x)


def test_keep_shares_equal_contents_and_copies_new_ones():
    row = mask_memory.blank(5)
    row[:] = [1, 2, 3, 4, 5]
    first = mask_memory.keep(row)
    assert first is not row and not first.flags.writeable and first.tolist() == [1, 2, 3, 4, 5]
    again = mask_memory.blank(5)
    assert again.tolist() == [0] * 5  # the scratch comes back zeroed
    again[:] = [1, 2, 3, 4, 5]
    assert mask_memory.keep(again) is first
    other = mask_memory.blank(5)
    other[:] = [1, 2, 3, 4, 6]
    second = mask_memory.keep(other)
    assert second is not first and second.tolist() == [1, 2, 3, 4, 6] and first.tolist() == [1, 2, 3, 4, 5]


def test_blank_copy_holds_exactly_its_source_whatever_the_scratch_held():
    dirty = mask_memory.blank(6)
    dirty[:] = -1
    mask_memory.give_back(dirty)  # the next scratch row is this one, every bit set
    source = np.array([0, 5, 0, 7, 0, 9], dtype=np.int32)
    row = mask_memory.blank_copy(source)
    assert row is dirty and row.tolist() == source.tolist() and row is not source
    mask_memory.give_back(row)


def test_a_digest_collision_keeps_each_content():
    table = _mask_bits.ContentTable(digest_mask=0)  # a planted collision: every row one digest
    kept = []
    for value in (1, 2, 1, 2):
        row = np.full(3, value, dtype=np.int32)
        kept.append(table.keep(row))
    assert [k.tolist() for k in kept] == [[1] * 3, [2] * 3, [1] * 3, [2] * 3]
    assert kept[2] is kept[0] and kept[1] is not kept[0] and kept[3] is not kept[1]  # the first content holds the key
    assert not any(k.flags.writeable for k in kept)
    assert table.keep(np.full(4, 1, dtype=np.int32)).tolist() == [1] * 4  # another length: another key


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 6), st.booleans()), min_size=1, max_size=120), st.sampled_from([0, 3, 2**64 - 1]))
def test_the_content_table_matches_a_dict_of_live_arrays(steps, digest_mask):
    """Against a reference (a dict by content of the arrays still held): every keep returns an
    array with the row's words, the same array as a live one with those words when that one was
    kept first, never a dead one; arrays let go die (weakly held) and the table sweeps them as it
    grows, whatever the digest's collisions (digest_mask 0: all collide; 3: four keys)."""
    table = _mask_bits.ContentTable(digest_mask=digest_mask)
    held: dict[bytes, np.ndarray] = {}
    for value, words, drop in steps:
        row = np.arange(words, dtype=np.int32) * 7 + value
        got = table.keep(row)
        assert np.array_equal(got, row) and got is not row and not got.flags.writeable
        key = row.tobytes()
        if digest_mask == 2**64 - 1 and key in held:
            assert got is held[key]  # no collisions: a live content is always found
        if key in held and got is not held[key]:
            assert digest_mask != 2**64 - 1  # only a collision hands out a second array
        held.setdefault(key, got)
        if drop:
            held.pop(key, None)
            del got  # numpy arrays hold no cycles: the last reference gone, the array is gone
    assert table.live() <= len(held)


def test_the_content_table_refuses_what_is_not_a_mask():
    table = _mask_bits.ContentTable()
    for bad in (np.zeros(3, dtype=np.int64), np.zeros((2, 2), dtype=np.int32), "words"):
        with pytest.raises((ValueError, TypeError)):
            table.keep(bad)


def test_many_masks_let_go_leave_the_table_small():
    """The sweeps a growing table makes drop the dead entries only: ten arrays kept before 5,000
    that die at once are still the ones found after, and only they are alive in the table."""
    table = _mask_bits.ContentTable()
    keep_alive = [table.keep(np.full(8, -i, dtype=np.int32)) for i in range(1, 11)]
    for i in range(5000):
        table.keep(np.full(8, i, dtype=np.int32))  # each dies at once
    assert table.live() == 10
    assert all(table.keep(np.full(8, -i, dtype=np.int32)) is keep_alive[i - 1] for i in range(1, 11))


def test_kept_arrays_are_held_weakly():
    row = mask_memory.blank(4)
    row[:] = [9, 8, 7, 123456]
    kept = mask_memory.keep(row)
    ref = weakref.ref(kept)
    del kept
    gc.collect()
    assert ref() is None  # nothing outlives the stores that hold a mask


def _walk_masks(grammar, texts: list[str]) -> list[np.ndarray]:
    """The kept mask before each of `texts`, accepted one after another by a new matcher."""
    matcher, out = sg.GrammarMatcher(grammar), []
    for text in texts:
        out.append(grammar.masker.mask(matcher.state))
        assert matcher.accept_string(text)
    return out


def _fresh_masks(grammar, texts: list[str]) -> list[np.ndarray]:
    """The same masks computed again (`_compute`, nothing kept or shared), each copied at once."""
    matcher, out = sg.GrammarMatcher(grammar), []
    for text in texts:
        out.append(grammar.masker._compute(matcher.state).copy())
        assert matcher.accept_string(text)
    return out


def test_masks_are_shared_across_grammars_and_unchanged_by_later_ones(qwen):
    """One schema compiled by two compilers (two grammars, two maskers): each state's mask is
    one array for both; a later grammar computing into the scratch leaves every kept mask as it
    was; each equals the mask computed again on a third compile."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a", "b"],
              "additionalProperties": False}
    texts = ['{"a": "', "x", '", "b": ', "12", "}"]
    first, second = (sg.GrammarCompiler(qwen).compile_json_schema(schema) for _ in range(2))
    assert first.masker is not second.masker
    kept = _walk_masks(first, texts)
    copies = [k.copy() for k in kept]
    assert all(a is b for a, b in zip(kept, _walk_masks(second, texts)))  # one array per content
    assert len({id(k) for k in kept}) == len({k.tobytes() for k in kept}) > 2
    _walk_masks(sg.GrammarCompiler(qwen).compile_regex("[0-9]{2,5}"), ["12", "3"])
    fresh = _fresh_masks(sg.GrammarCompiler(qwen).compile_json_schema(schema), texts)
    for got, copy, again in zip(kept, copies, fresh):
        assert not got.flags.writeable and np.array_equal(got, copy) and np.array_equal(got, again)


def test_threads_computing_masks_at_once_get_their_own_masks(qwen):
    """Four threads walk the masks of four grammars at once (each thread its own scratch): each
    mask equals the one computed alone afterwards on a fresh compile."""
    cases = [("[a-z]{1,8}", ["ab", "cde", "f"]), ("[0-9]+x", ["1", "23", "x"]), ("(ab|cd)*e", ["ab", "cd", "e"]),
             ('"[^"]{0,6}"', ['"', "ab", '"'])]
    results: dict[int, list[np.ndarray]] = {}

    def run(i: int) -> None:
        results[i] = _walk_masks(sg.GrammarCompiler(qwen).compile_regex(cases[i][0]), cases[i][1])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (pattern, texts) in enumerate(cases):
        fresh = _fresh_masks(sg.GrammarCompiler(qwen).compile_regex(pattern), texts)
        assert len(results[i]) == len(fresh)
        for got, again in zip(results[i], fresh):
            assert np.array_equal(got, again), pattern
