"""Per-token facts the mask shortcuts ask of a whole vocabulary, computed once and in numpy.

String-like states allow tokens by what they are made of (their byte set, whether they are whole
UTF-8, how many characters they hold, whether they start with a whole character). Computed token
by token in Python these took a tenth of a second per fact on a 150k vocabulary, and the first
request that needed them paid it inside one mask fill; here each is one pass over the vocabulary's
bytes laid end to end, done while the trie is built.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TokenFacts"]


class TokenFacts:
    """Facts about every token of one vocabulary (arrays indexed by token id, read-only)."""

    def loop_cuts(self, ids: np.ndarray, loop_bytes: bytes, multibyte: bool, skip_first: bool) -> np.ndarray | None:
        """For each token of `ids` (non-empty): where its leading run of loop bytes (with
        `multibyte`, also whole multi-byte characters) ends, the first byte (character) not counted
        when `skip_first`. None when that cannot be read off the bytes alone: a multi-byte loop with
        a loop byte above 0x7F, which a scan may step into the middle of a character with."""
        if multibyte and any(b >= 0x80 for b in loop_bytes):
            return None
        is_loop = np.zeros(256, dtype=bool)
        is_loop[list(loop_bytes)] = True
        good = is_loop[self.flat]
        if multibyte:
            good |= self.in_whole_char
        begin = self.starts[ids]
        if skip_first:
            first = self.char_width[begin].astype(np.int64) if multibyte else np.zeros(len(ids), dtype=np.int64)
            begin = begin + np.maximum(first, 1)
        end = self.starts[ids] + self.lengths[ids]
        bad = np.flatnonzero(~good)
        stop = np.append(bad, np.iinfo(np.int64).max)[np.searchsorted(bad, begin)]  # the first bad byte at or after begin
        return np.minimum(stop, end) - self.starts[ids]

    def __init__(self, token_bytes: list[bytes], lengths: np.ndarray | None = None):
        n = len(token_bytes)
        lengths = np.fromiter(map(len, token_bytes), dtype=np.int64, count=n) if lengths is None else np.asarray(lengths, dtype=np.int64)
        flat = np.frombuffer(b"".join(token_bytes), dtype=np.uint8)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
        owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
        self.lengths = lengths
        nonempty = lengths > 0
        self.first_bytes = np.zeros(n, dtype=np.uint8)  # 0 for empty tokens, which are never text
        self.first_bytes[nonempty] = flat[starts[nonempty]]
        self.byte_sets = _byte_sets(flat, owner, n)
        lead_ok, width = _whole_chars(flat, owner, starts, lengths)
        # by byte of the vocabulary laid end to end (what loop scans read): the bytes, where each
        # token starts, the width of the whole multi-byte character starting at a byte (0: none),
        # and whether a byte lies in such a character
        self.flat, self.starts = flat, starts
        self.char_width = np.where(lead_ok & (width >= 2), width, 0).astype(np.int8)
        self.in_whole_char = self.char_width > 0
        for k in (1, 2, 3):
            self.in_whole_char[k:] |= self.char_width[:-k] > k if len(flat) > k else False
        self.complete_utf8 = _complete(flat, owner, lead_ok, width, n)
        self.starts_whole_char = np.zeros(n, dtype=bool)
        self.starts_whole_char[nonempty] = self.char_width[starts[nonempty]] > 0
        chars = np.bincount(owner, weights=(flat & 0xC0) != 0x80, minlength=n).astype(np.int64)
        self.char_counts = np.where(self.complete_utf8, chars, lengths)  # a character starts at every non-continuation byte
        for a in (self.lengths, self.first_bytes, self.byte_sets, self.complete_utf8, self.starts_whole_char, self.char_counts, self.flat,
                  self.starts, self.char_width, self.in_whole_char):
            a.setflags(write=False)


def _byte_sets(flat: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """(tokens, 4) uint64: the byte values each token uses, as a 256-bit set (bit b & 63 of word b >> 6)."""
    sets = np.zeros((n, 4), dtype=np.uint64)  # set bit by bit: a (tokens, 256) table first touched 33 MB cold
    np.bitwise_or.at(sets, (owner, flat >> 6), np.left_shift(np.uint64(1), (flat & 63).astype(np.uint64)))
    return sets


def _whole_chars(flat: np.ndarray, owner: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per byte: (it starts a valid UTF-8 character that ends inside its token, that character's
    width; 0 for a byte no character starts with). Valid as Python's decoder has it: no
    overlongs (C0, C1, E0 80-9F, F0 80-8F), no surrogates (ED A0-BF), nothing above U+10FFFF."""
    b = flat.astype(np.int64)
    width = np.select([b < 0x80, (b >= 0xC2) & (b <= 0xDF), (b >= 0xE0) & (b <= 0xEF), (b >= 0xF0) & (b <= 0xF4)], [1, 2, 3, 4], 0)
    end = (starts + lengths)[owner] if len(flat) else np.zeros(0, dtype=np.int64)
    pos = np.arange(len(flat), dtype=np.int64)
    ok = (width > 0) & (pos + width <= end)
    padded = np.concatenate([b, np.zeros(3, dtype=np.int64)])
    for k in (1, 2, 3):
        follow = padded[pos + k]
        ok &= (width <= k) | ((follow & 0xC0) == 0x80)
    second = padded[pos + 1]
    ok &= ~((b == 0xE0) & (second < 0xA0)) & ~((b == 0xED) & (second > 0x9F))
    ok &= ~((b == 0xF0) & (second < 0x90)) & ~((b == 0xF4) & (second > 0x8F))
    return ok, width


def _complete(flat: np.ndarray, owner: np.ndarray, lead_ok: np.ndarray, width: np.ndarray, n: int) -> np.ndarray:
    """Per token: it decodes as UTF-8. Every byte that is no continuation starts a valid character,
    and the continuations are exactly the ones those characters cover."""
    continuation = (flat & 0xC0) == 0x80
    bad_start = np.bincount(owner, weights=~continuation & ~lead_ok, minlength=n)
    covered = np.bincount(owner, weights=np.where(~continuation & lead_ok, width - 1, 0), minlength=n)
    return (bad_start == 0) & (covered == np.bincount(owner, weights=continuation, minlength=n))
