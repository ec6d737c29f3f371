"""Where a new token mask is written, and which array keeps it.

Why: every first-time mask used to be a new 16-19 KB numpy array, and on this VM the first touch
of fresh memory costs ~2.4 µs per 4 KB page (~10 µs a mask: 10-15% of a first pass's fill time,
profiled). Yet most masks repeat one computed before: over the bench's first pass on DeepSeek,
6,775 masks hold 2,389 distinct contents per grammar and 1,214 in all (a comma's, a colon's, a
string body's masks are the same in every object). So a mask is computed into a scratch row of
the computing thread (its memory touched once, then hot in cache), and kept as the one read-only
array that already holds that content, or as a copy when none does: fresh memory is touched
only for a mask not seen before, and the masks held take less of it.

The arrays are found by content (a 64-bit digest, confirmed word for word: `_mask_bits.ContentTable`,
one C call a mask) and held weakly: an entry lives as long as some mask store (or a caller) holds
its array, so this table bounds nothing and adds no memory; the stores' bounds still bound the masks. Masks are immutable and
equal by content, so sharing one array between states and grammars changes no answer.
"""

from __future__ import annotations

import threading

import numpy as np

from . import _mask_bits

_scratch = threading.local()  # .row: the thread's free scratch row (None while a mask is computed in it)
_by_content = _mask_bits.ContentTable()


def scratch(width: int) -> np.ndarray:
    """An int32 row of `width` words, its contents left as they were, to compute one mask into
    (by a writer that sets every word), then handed to `keep` or `give_back`: the thread's scratch
    row when it is free and of that width (a row taken and never kept, as when the computation
    raised, is simply replaced by a new one)."""
    row = getattr(_scratch, "row", None)
    if row is None or len(row) != width:
        return np.zeros(width, dtype=np.int32)
    _scratch.row = None
    return row


def blank(width: int) -> np.ndarray:
    """`scratch` zeroed."""
    row = scratch(width)
    row.fill(0)
    return row


def give_back(row: np.ndarray) -> None:
    """Return a row from `scratch` or `blank` that was not used after all: the next one takes it again."""
    _scratch.row = row


def blank_copy(source: np.ndarray) -> np.ndarray:
    """A `scratch` row holding the words of `source` (a cached set of tokens a mask starts from):
    the copy writes every word, so the row is not zeroed first (a memset of 16 KB saved)."""
    row = scratch(len(source))
    np.copyto(row, source)
    return row


def keep(row: np.ndarray) -> np.ndarray:
    """The read-only array to keep the mask computed in `row` (from `blank`): one already holding
    the same words, or a new copy of them. `row` goes back to the thread's scratch."""
    kept = _by_content.keep(row)
    _scratch.row = row
    return kept
