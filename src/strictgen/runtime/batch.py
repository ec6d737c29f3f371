"""Masks for a batch of matchers at once, and in the background while the model runs.

Computing a state's mask for the first time is numpy work over the vocabulary trie, which releases
the GIL, so distinct states are computed on a thread pool; states seen before are cache hits and
cost a row copy. `fill_next_token_bitmask_batch_async` returns at once, so a decoding loop can
start the next masks and run the model's forward pass while they are computed."""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Sequence

import numpy as np

from strictgen.runtime.matcher import GrammarMatcher

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="strictgen-mask")
        return _pool


def fill_next_token_bitmask_batch(matchers: Sequence[GrammarMatcher], bitmask, indices: Sequence[int] | None = None) -> list[bool]:
    """Fill row `indices[i]` (default: row i) of `bitmask` with matcher i's next-token mask.

    Returns, per matcher, whether some token is disallowed (the row needs applying)."""
    rows = list(range(len(matchers))) if indices is None else list(indices)
    if len(rows) != len(matchers):
        raise ValueError(f"{len(matchers)} matchers but {len(rows)} row indices")
    target = bitmask if isinstance(bitmask, np.ndarray) else bitmask.numpy()
    if target.ndim != 2 or (rows and max(rows) >= target.shape[0]):
        raise ValueError(f"bitmask of shape {tuple(target.shape)} has no row {max(rows) if rows else 0}")
    if len(matchers) > 1:
        # first-time masks of distinct states in parallel; the rest are cache hits below
        distinct = {}
        for m in matchers:
            if not m.is_terminated():
                distinct.setdefault((id(m.compiled), m.state), m)
        if len(distinct) > 1:
            list(_executor().map(lambda m: m.next_token_mask(), distinct.values()))
    return [m.fill_next_token_bitmask(target, index=r) for m, r in zip(matchers, rows)]


def fill_next_token_bitmask_batch_async(matchers: Sequence[GrammarMatcher], bitmask, indices: Sequence[int] | None = None) -> "Future[list[bool]]":
    """Start `fill_next_token_bitmask_batch` in the background; `.result()` waits for it.

    The matchers must not advance until the future is done."""
    return _executor().submit(fill_next_token_bitmask_batch, list(matchers), bitmask, indices)
