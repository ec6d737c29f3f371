"""The token classes distinct-name objects read (distinct_names._token_classes, numpy over the
vocabulary's bytes laid end to end): equal, array for array, dtype for dtype and key for key in
order, to the loop over every token they replaced (kept here as the reference), on every real
vocabulary and on a small one made of the edge cases."""

from __future__ import annotations

import numpy as np

import strictgen as sg
from strictgen.compile import distinct_names


def _reference_classes(info) -> dict:
    """distinct_names._token_classes before numpy (3a3d8b4): one Python pass over every token."""
    n = info.trie.facts.lengths.shape[0]
    special = np.ones(info.vocab_size, dtype=bool)
    special[:n] = info.is_special[:n]
    quotes = np.zeros(info.vocab_size, dtype=np.int64)
    quoted, three, always = [], [], []
    before: dict[bytes, list[int]] = {}
    between: dict[bytes, list[int]] = {}
    for t, text in enumerate(info.all_token_bytes[:n]):
        if b'"' not in text or special[t]:
            continue
        parts = text.split(b'"')
        quotes[t] = len(parts) - 1
        quoted.append(t)
        if quotes[t] >= 3:
            three.append(t)
        if quotes[t] >= 3 or b"\\" in text:
            always.append(t)
            continue
        before.setdefault(parts[0], []).append(t)
        if quotes[t] == 2:
            between.setdefault(parts[1], []).append(t)

    def ids(xs: list[int]) -> np.ndarray:
        return np.array(xs, dtype=np.int64)

    return {
        "few_quotes": (quotes <= 2) | special,
        "no_quote": (quotes == 0) | special,
        "quoted": ids(quoted),
        "three_quotes": ids(three),
        "always": ids(always),
        "before_quote": {k: ids(v) for k, v in before.items()},
        "between_quotes": {k: ids(v) for k, v in between.items()},
    }


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tolist() == b.tolist()


def _assert_same(info) -> None:
    got = distinct_names._token_classes(info)
    for name, want in _reference_classes(info).items():
        have = getattr(got, name)
        if isinstance(want, dict):
            assert list(have) == list(want), name  # same keys, in the same order
            assert all(_same(have[k], v) for k, v in want.items()), name
        else:
            assert _same(have, want), name


def test_quote_classes_equal_the_loop_reference_on_real_vocabularies(vocab):
    _assert_same(vocab[1])


EDGE_TOKENS = [
    b"", b'"', b"", b'""', b'"""', b'a"b"c"d', b'"a"', b' "key', b'key":', b'\\"', b'"\\', b"\\", b"plain", b'"x', b"",
    b'":"', b'" "', b'\xc3\xa9"', b'"\x00"', b'""""',
]


def test_quote_classes_equal_the_loop_reference_on_edge_tokens():
    """Empty tokens between quoted ones (a byte belongs to the token after them), one to four
    quotes, quotes with backslashes, a quoted special token (in every class, never counted)
    and ids past the tokens the trie holds."""
    tokens = EDGE_TOKENS + [b'<"eos">']
    info = sg.TokenizerInfo.from_vocab(tokens, eos_token_ids=[len(tokens) - 1], special_token_ids=[len(tokens) - 1], vocab_size=len(tokens) + 3)
    _assert_same(info)
    got = distinct_names._token_classes(info)
    assert len(tokens) - 1 not in got.quoted.tolist() and got.no_quote[len(tokens) - 1]
    assert got.three_quotes.tolist() == [EDGE_TOKENS.index(b'"""'), EDGE_TOKENS.index(b'a"b"c"d'), EDGE_TOKENS.index(b'""""')]
