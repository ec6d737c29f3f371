"""Per-token facts the mask shortcuts ask of a whole vocabulary, computed once (in C, `_vocab.c`).

String-like states allow tokens by what they are made of (their byte set, whether they are whole
UTF-8, how many characters they hold, whether they start with a whole character). Computed token
by token in Python these took a tenth of a second per fact on a 150k vocabulary, and the first
request that needed them paid it inside one mask fill; here they come from one pass over the
vocabulary's bytes laid end to end, done while the trie is built.
"""

from __future__ import annotations

import numpy as np

from . import _loops, _vocab

__all__ = ["TokenFacts", "typed_array"]


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
        cuts = _loops.loop_cuts(self.flat, self.starts, self.lengths, np.ascontiguousarray(ids, dtype=np.int64), is_loop,
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

    # ---- a stored copy (compile/disk_cache.py keeps a vocabulary's tables across restarts) ----

    _ARRAYS = {"lengths": np.int64, "first_bytes": np.uint8, "flat": np.uint8, "starts": np.int64, "char_width": np.int8,
               "in_whole_char": np.bool_, "complete_utf8": np.bool_, "char_counts": np.int64, "byte_sets": np.uint64,
               "starts_whole_char": np.bool_}

    def arrays(self) -> dict[str, np.ndarray]:
        """The facts' arrays by name (byte_sets flattened): what `from_arrays` takes back."""
        return {name: getattr(self, name).reshape(-1) for name in self._ARRAYS}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], num_tokens: int) -> "TokenFacts":
        """The facts `arrays()` gave for a vocabulary of `num_tokens` tokens, checked for types and
        sizes, and for token starts and lengths inside the bytes laid end to end (the loop scans
        in C read them unchecked); ValueError otherwise."""
        got = {name: typed_array(arrays, name, dtype) for name, dtype in cls._ARRAYS.items()}
        per_token = ("lengths", "first_bytes", "starts", "complete_utf8", "char_counts", "starts_whole_char")
        per_byte = ("flat", "char_width", "in_whole_char")
        if any(len(got[n]) != num_tokens for n in per_token) or len(got["byte_sets"]) != 4 * num_tokens or len({len(got[n]) for n in per_byte}) != 1:
            raise ValueError("token facts of inconsistent sizes")
        starts, lengths = got["starts"], got["lengths"]
        if num_tokens and (lengths.min() < 0 or starts.min() < 0 or (starts + lengths).max() > len(got["flat"])):
            raise ValueError("a token's bytes out of range")
        out = object.__new__(cls)
        for name, a in got.items():
            setattr(out, name, a)
        out.byte_sets = got["byte_sets"].reshape(num_tokens, 4)
        return out


def typed_array(arrays: dict[str, np.ndarray], name: str, dtype) -> np.ndarray:
    """arrays[name], one-dimensional and of `dtype` (ValueError if it is absent or is not)."""
    a = arrays.get(name)
    if a is None or a.dtype != np.dtype(dtype) or a.ndim != 1:
        raise ValueError(f"array {name!r} missing or not {np.dtype(dtype)}")
    return a
