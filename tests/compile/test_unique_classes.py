"""The token facts uniqueItems reads (compile/_unique_classes.c through unique_items._token_classes):
equal, array for array and dtype for dtype, to the numpy formulation they replaced (kept here as
the reference), on every real vocabulary and on a small one made of the edge cases."""

from __future__ import annotations

import numpy as np
import pytest

import strictgen as sg
from strictgen.compile import unique_items


def _reference_classes(info) -> dict:
    """The numpy formulation of unique_items._token_classes before the C pass (86a0eac)."""
    facts = info.trie.facts
    n = len(facts.lengths)
    special = np.ones(info.vocab_size, dtype=bool)
    special[:n] = info.is_special[:n]

    def has(text: bytes) -> np.ndarray:
        out = np.zeros(n, dtype=bool)
        for b in text:
            out |= (facts.byte_sets[:, b >> 6] >> np.uint64(b & 63)) & np.uint64(1) != 0
        return out

    def lacking(holds: np.ndarray) -> np.ndarray:
        out = np.zeros(info.vocab_size, dtype=bool)
        out[:n] = ~holds
        return out | special

    return {
        "special": special,
        "no_quote": lacking(has(b'"')),
        "no_comma": lacking(has(b",")),
        "not_opening": lacking(has(b"[") & has(b",")),
        "no_bracket": lacking(has(b"[]}")),
        "no_close": lacking(has(b"]}")),
        "starts_item": lacking(~_reference_starts_item(facts)),
        "brackets": _reference_brackets(info),
    }


def _counts(facts, byte_flags: np.ndarray) -> np.ndarray:
    per_byte = np.concatenate([[0], np.cumsum(byte_flags[facts.flat], dtype=np.int64)])
    return per_byte[facts.starts + facts.lengths] - per_byte[facts.starts]


def _reference_starts_item(facts) -> np.ndarray:
    flags = np.zeros((5, 256), dtype=bool)
    space, quote, digit, bracket, comma = flags
    space[list(b" \t\n\r")] = True
    quote[ord('"')] = True
    digit[list(b"0123456789")] = True
    bracket[list(b"[]{}")] = True
    comma[ord(",")] = True
    lengths, flat, starts = facts.lengths, facts.flat, facts.starts
    non_space = np.concatenate([[0], np.cumsum(~space[flat], dtype=np.int64)])
    some = (non_space[starts + lengths] - non_space[starts]) > 0
    first_text = np.searchsorted(non_space, non_space[starts[some]] + 1) - 1
    rest = lengths.copy()
    rest[some] -= first_text - starts[some]
    first = np.zeros(len(lengths), dtype=np.uint8)
    first[some] = flat[first_text]
    ok = some & (_counts(facts, comma) == 0)
    opens_string = (first == ord('"')) & (_counts(facts, quote) == 1)
    opens_number = np.isin(first, list(b"123456789")) & (_counts(facts, digit) == rest)
    opens_container = np.isin(first, list(b"[{")) & (_counts(facts, bracket) == 1)
    return ok & (opens_string | opens_number | opens_container)


def _reference_brackets(info) -> dict:
    facts = info.trie.facts
    starts, ends = facts.starts, facts.starts + facts.lengths

    def running(chars: bytes) -> np.ndarray:
        flags = np.zeros(256, dtype=bool)
        flags[list(chars)] = True
        return np.concatenate([[0], np.cumsum(flags[facts.flat], dtype=np.int64)])

    quote, opens, closes, backslash = running(b'"'), running(b"["), running(b"]}"), running(b"\\")
    first = np.searchsorted(quote, quote[starts] + 1)
    first = np.where(quote[ends] > quote[starts], first, ends)
    n = len(starts)
    keep = ((opens[ends] > opens[starts]) | (closes[ends] > closes[starts])) & ~np.asarray(info.is_special[:n], dtype=bool)
    ids = np.flatnonzero(keep)
    s, e, f = starts[ids], ends[ids], first[ids]
    return {"ids": ids.astype(np.int64), "opens": opens[e] - opens[s], "closes": closes[e] - closes[s], "opens_after_quote": opens[e] - opens[f],
            "closes_after_quote": closes[e] - closes[f], "plain": backslash[e] == backslash[s]}


def _assert_same(info) -> None:
    got = unique_items._token_classes(info)
    want = _reference_classes(info)
    assert set(got) == set(want)
    for name, expected in want.items():
        if name == "brackets":
            for field, array in expected.items():
                actual = getattr(got["brackets"], field)
                assert actual.dtype == array.dtype and actual.tolist() == array.tolist(), field
        else:
            assert got[name].dtype == expected.dtype and got[name].tolist() == expected.tolist(), name


def test_token_classes_equal_the_numpy_reference_on_real_vocabularies(vocab):
    _assert_same(vocab[1])


EDGE_TOKENS = [
    b"", b" ", b"\t\n\r ", b'"', b' "', b'"a"', b'  "abc', b'"a,', b"1", b" 12", b"10", b"0", b"1a", b"12 ", b"1.5", b" 9,",
    b"[", b" {", b"[]", b"[1", b"{a", b"{[", b"]", b"}", b"]}", b"],", b"[,", b'"[', b'a"[[', b'"]}"]', b'\\"[', b'x\\"]',
    b'"\\"', b"[[[", b'"a"]', b"a", b"abc", b"\xc3\xa9", b"\x00", b" \x00", b",", b",[", b'"",',
]


def test_token_classes_equal_the_numpy_reference_on_edge_tokens():
    """Leading whitespace, several quotes, escaped quotes, brackets before and after the first
    quote, empty and whitespace-only tokens, and a special token holding brackets (left out of
    the brackets, in every class)."""
    tokens = EDGE_TOKENS + [b"[EOS]]"]
    info = sg.TokenizerInfo.from_vocab(tokens, eos_token_ids=[len(tokens) - 1], special_token_ids=[len(tokens) - 1])
    _assert_same(info)
    brackets = unique_items._token_classes(info)["brackets"]
    at = {int(t): k for k, t in enumerate(brackets.ids)}
    k = at[EDGE_TOKENS.index(b'"]}"]')]
    assert (brackets.opens[k], brackets.closes[k], brackets.opens_after_quote[k], brackets.closes_after_quote[k]) == (0, 3, 0, 3)
    assert len(tokens) - 1 not in at


def test_token_classes_refuse_bytes_outside_the_vocabulary():
    from strictgen.compile import _unique_classes

    flags, counts = np.empty(1, dtype=np.uint8), np.empty((1, 4), dtype=np.int32)
    with pytest.raises(ValueError):
        _unique_classes.token_classes(np.zeros(3, dtype=np.uint8), np.array([2], dtype=np.int64), np.array([2], dtype=np.int64), flags, counts)
    with pytest.raises(ValueError):
        _unique_classes.token_classes(np.zeros(3, dtype=np.uint8), np.array([0], dtype=np.int64), np.array([1], dtype=np.int64), flags[:0], counts)
