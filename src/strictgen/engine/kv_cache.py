"""Reproducible evaluation: what one KV sequence holds, and how much of it a new request may reuse.

A CPU kernel's rounding depends on the shape of the pass it runs in: llama.cpp picks other matmul
and attention paths for other token counts (and is built for the CPU it runs on), torch blocks its
matmuls by size. If a prompt were evaluated in one pass when the cache is cold and as a short tail
after a cached prefix when it is warm, the same request would get different logits, and greedy
decoding would flip at near-ties.

So every feed is evaluated in pieces split at absolute multiples of `CHUNK`. A piece that is a whole
aligned chunk, evaluated on its own right after whole chunks only, holds KV entries that are a pure
function of the tokens up to its end: exactly what a cold evaluation of any sequence starting with
those tokens computes. A new request keeps the cache only up to there (`KVSequence.reusable`) and
evaluates the rest in the same pieces a cold run would, so its logits are bit for bit those of a
cold run, whatever the cache held and whatever ran before. Within a run, the run's own history is
a function of the request, so it keeps everything it fed itself.
"""

from __future__ import annotations

import numpy as np

# tokens per aligned prefill piece: small enough that a follow-up turn reuses most of its prefix,
# large enough that pieces run at full prefill speed (scripts/prefill_chunks.py measures both)
CHUNK = 64


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if len(diff) else n


def aligned_pieces(start: int, count: int, chunk: int = CHUNK) -> list[tuple[int, int]]:
    """Positions [start, start + count) split at multiples of `chunk`, as (first position, length)."""
    pieces = []
    pos, end = start, start + count
    while pos < end:
        stop = min(end, (pos // chunk + 1) * chunk)
        pieces.append((pos, stop - pos))
        pos = stop
    return pieces


class KVSequence:
    """The tokens one KV sequence holds, and how many leading ones any request may reuse."""

    def __init__(self, chunk: int = CHUNK):
        if chunk < 1:
            raise ValueError("the chunk size must be at least 1")
        self.chunk = chunk
        self.tokens: list[int] = []
        self.canonical = 0  # leading positions evaluated as whole aligned chunks, each on its own

    def whole_chunk(self, pos: int, length: int) -> bool:
        """Is [pos, pos + length) one whole aligned chunk?"""
        return length == self.chunk and pos % self.chunk == 0

    def appended(self, pos: int, tokens: list[int], *, alone: bool) -> None:
        """Record a piece evaluated at `pos` (`alone`: in a pass of its own, no other sequence in it)."""
        if pos != len(self.tokens):
            raise ValueError(f"a piece at {pos} does not follow the {len(self.tokens)} cached tokens")
        self.tokens.extend(tokens)
        if alone and self.canonical == pos and self.whole_chunk(pos, len(tokens)):
            self.canonical = pos + len(tokens)

    def truncate(self, length: int) -> None:
        del self.tokens[length:]
        self.canonical = min(self.canonical, length - length % self.chunk)

    def reusable(self, seq: list[int]) -> int:
        """How many cached tokens a new request for `seq` keeps: the common prefix cut to the whole
        chunks, and never all of `seq` (the logits after its last token must be computed, by
        re-evaluating its last chunk as a cold run does)."""
        keep = min(common_prefix(self.tokens, seq), self.canonical)
        keep -= keep % self.chunk
        if seq:
            keep = min(keep, (len(seq) - 1) // self.chunk * self.chunk)
        return keep

    def within_run(self, seq: list[int]) -> int:
        """How many cached tokens a running request keeps (it fed them all itself): the common
        prefix, less one when that is all of `seq`."""
        keep = common_prefix(self.tokens, seq)
        return keep - 1 if seq and keep == len(seq) else keep
