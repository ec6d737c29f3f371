"""Per-token facts the mask shortcuts ask of a whole vocabulary, computed once (in C, `_vocab.c`).

String-like states allow tokens by what they are made of (their byte set, whether they are whole
UTF-8, how many characters they hold, whether they start with a whole character). Computed token
by token in Python these took a tenth of a second per fact on a 150k vocabulary, and the first
request that needed them paid it inside one mask fill; here they come from one pass over the
vocabulary's bytes laid end to end, done while the trie is built.
"""

from __future__ import annotations

import numpy as np

from . import _vocab

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
        is_loop = np.zeros(256, dtype=np.uint8)
        is_loop[list(loop_bytes)] = 1
        cuts = _vocab.loop_cuts(self.flat, self.starts, self.lengths, np.ascontiguousarray(ids, dtype=np.int64), is_loop,
                                self.in_whole_char if multibyte else None, self.char_width if multibyte else None, skip_first)
        return np.frombuffer(cuts, dtype=np.int64)

    def __init__(self, token_bytes: list[bytes], lengths: np.ndarray | None = None):
        n = len(token_bytes)
        lengths = np.fromiter(map(len, token_bytes), dtype=np.int64, count=n) if lengths is None else np.asarray(lengths, dtype=np.int64)
        flat = np.frombuffer(b"".join(token_bytes), dtype=np.uint8)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
        self.lengths = lengths
        nonempty = lengths > 0
        self.first_bytes = np.zeros(n, dtype=np.uint8)  # 0 for empty tokens, which are never text
        self.first_bytes[nonempty] = flat[starts[nonempty]]
        width, inside, complete, chars, sets = _vocab.facts(flat, starts, lengths)  # one pass in C
        # by byte of the vocabulary laid end to end (what loop scans read): the bytes, where each
        # token starts, the width of the whole multi-byte character starting at a byte (0: none),
        # and whether a byte lies in such a character
        self.flat, self.starts = flat, starts
        self.char_width = np.frombuffer(width, dtype=np.int8)
        self.in_whole_char = np.frombuffer(inside, dtype=bool)
        # by token: it decodes as UTF-8; its characters (bytes if it does not); its byte values
        self.complete_utf8 = np.frombuffer(complete, dtype=bool)
        self.char_counts = np.frombuffer(chars, dtype=np.int64)
        self.byte_sets = np.frombuffer(sets, dtype=np.uint64).reshape(n, 4)
        self.starts_whole_char = np.zeros(n, dtype=bool)
        self.starts_whole_char[nonempty] = self.char_width[starts[nonempty]] > 0
        for a in (self.lengths, self.first_bytes, self.starts_whole_char, self.flat, self.starts):
            a.setflags(write=False)
