"""The per-token facts (tokenizer/token_facts.py, made in C by _vocab.c) against their plain
Python definitions, on random byte strings and on the real vocabularies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.tokenizer.info import TokenizerInfo
from strictgen.tokenizer.token_facts import TokenFacts


def whole(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def starts_whole_char(data: bytes) -> bool:
    if not data or not 0xC2 <= data[0] <= 0xF4:
        return False
    width = 2 if data[0] <= 0xDF else 3 if data[0] <= 0xEF else 4
    return whole(data[:width]) and len(data[:width].decode("utf-8")) == 1


def reference(tokens: list[bytes]) -> dict:
    sets = np.zeros((len(tokens), 4), dtype=np.uint64)
    for i, t in enumerate(tokens):
        for b in set(t):
            sets[i, b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    complete = [whole(t) for t in tokens]
    return {
        "first_bytes": [t[0] if t else 0 for t in tokens],
        "complete_utf8": complete,
        "starts_whole_char": [starts_whole_char(t) for t in tokens],
        "char_counts": [len(t.decode("utf-8")) if c else len(t) for t, c in zip(tokens, complete)],
        "byte_sets": sets,
    }


def char_widths(tokens: list[bytes]) -> tuple[list[int], list[bool]]:
    """By byte of the tokens laid end to end: the width of the one whole multi-byte character
    starting there inside its token (0: none), and whether the byte lies in such a character."""
    widths, inside = [], []
    for t in tokens:
        w = [next((k for k in (2, 3, 4) if starts_whole_char(t[i : i + k]) and len(t[i : i + k]) == k), 0) for i in range(len(t))]
        widths += w
        inside += [any(w[j] > i - j for j in range(max(0, i - 3), i + 1)) for i in range(len(t))]
    return widths, inside


def check(tokens: list[bytes]) -> None:
    facts, want = TokenFacts(tokens), reference(tokens)
    for name, expected in want.items():
        assert np.array_equal(getattr(facts, name), np.asarray(expected)), name
    if sum(map(len, tokens)) <= 20_000:  # the per-byte facts, on the small inputs only (a Python loop)
        widths, inside = char_widths(tokens)
        assert facts.char_width.tolist() == widths and facts.in_whole_char.tolist() == inside


# bytes that make every UTF-8 case: ASCII, continuations, every lead range and the edge second bytes
INTERESTING = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=6) | st.lists(st.sampled_from(INTERESTING), max_size=6).map(bytes), max_size=30))
def test_facts_match_their_definitions(tokens):
    check(tokens)


@pytest.mark.parametrize("name", ["qwen", "deepseek", "smollm2"])
def test_facts_on_real_vocabularies(name):
    check(TokenizerInfo.from_name(name).all_token_bytes)


def scan_cut(data: bytes, loop: set, multibyte: bool, skip_first: bool) -> int:
    """The plain scan that loop_cuts reads off in numpy."""
    def width(i):
        if not multibyte or not 0xC2 <= data[i] <= 0xF4:
            return 0
        w = 2 if data[i] <= 0xDF else 3 if data[i] <= 0xEF else 4
        return w if whole(data[i : i + w]) and len(data[i : i + w].decode("utf-8")) == 1 else 0

    i = (width(0) or 1) if skip_first else 0
    while i < len(data):
        if data[i] in loop:
            i += 1
        elif width(i):
            i += width(i)
        else:
            break
    return min(i, len(data))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(INTERESTING + [0x22, 0x20, 0x61, 0x5C]), min_size=1, max_size=6).map(bytes), min_size=1, max_size=30),
    st.sets(st.sampled_from([0x20, 0x22, 0x41, 0x5C, 0x61, 0x7F, 0x00])),
    st.booleans(),
    st.booleans(),
)
def test_loop_cuts_match_the_scan(tokens, loop, multibyte, skip_first):
    facts = TokenFacts(tokens)
    ids = np.arange(len(tokens))
    cuts = facts.loop_cuts(ids, bytes(sorted(loop)), multibyte, skip_first)
    assert cuts.tolist() == [scan_cut(t, loop, multibyte, skip_first) for t in tokens]


def test_loop_cuts_on_a_real_vocabulary():
    tokens = TokenizerInfo.from_name("qwen").all_token_bytes
    facts = TokenFacts(tokens)
    ids = np.flatnonzero(facts.lengths > 0)[::7]
    loop = bytes(b for b in range(0x20, 0x80) if b not in (0x22, 0x5C, 0x3A))
    for multibyte in (False, True):
        for skip in (False, True):
            cuts = facts.loop_cuts(ids, loop, multibyte, skip)
            assert cuts.tolist() == [scan_cut(tokens[i], set(loop), multibyte, skip) for i in ids.tolist()]
    assert facts.loop_cuts(ids, bytes([0x41, 0xC3]), True, False) is None  # a loop byte inside characters: scanned instead


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=6) | st.lists(st.sampled_from(INTERESTING), max_size=6).map(bytes), max_size=30),
       st.sets(st.integers(0, 255), max_size=40), st.booleans())
def test_made_of_matches_its_definition(tokens, loop, multibyte):
    """_loops.made_of (what a loop state allows unseen): every byte a loop byte, or, with
    multibyte, whole UTF-8 whose ASCII bytes are loop bytes."""
    from strictgen.tokenizer import _loops

    facts = TokenFacts(tokens)
    want = np.zeros(4, dtype=np.uint64)
    for b in loop:
        want[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    got = np.frombuffer(_loops.made_of(facts.byte_sets, want, facts.complete_utf8 if multibyte else None), dtype=bool)
    expected = [set(t) <= loop or (multibyte and whole(t) and {b for b in t if b < 0x80} <= loop) for t in tokens]
    assert got.tolist() == expected
