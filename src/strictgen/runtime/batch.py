"""Masks for a batch of matchers at once, and in the background while the model runs.

Computing a state's mask for the first time is a walk of the vocabulary trie in C, which releases
the GIL, so a batch's distinct new states are computed by the caller and pool threads together;
states seen before are cache hits: the whole batch's hits are row copies in one C call that
releases the GIL (`_mask_store.fill_rows`, reading each matcher's state and its grammar's store of
masks from the matcher's C base, and writing the "needs apply" flags found when each mask was
stored), with no Python per row. `fill_next_token_bitmask_batch_async`
returns at once, so a decoding loop can start the next masks and run the model's forward pass
while they are computed.

Small batches are common (one request, a few): their fill is a handful of Python calls, with no
array of row numbers, no pool and no stacking for one row, so it costs what
`GrammarMatcher.fill_next_token_bitmask` costs."""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import zip_longest
from typing import Sequence

import numpy as np

from strictgen.compile import _mask_store
from strictgen.runtime.matcher import GrammarMatcher
from strictgen.runtime.prefetch import PREFETCHER

MASK_WORKERS = max(2, os.cpu_count() or 2)  # threads computing first-time masks, the caller's included

_pools: dict[str, ThreadPoolExecutor] = {}
_pool_lock = threading.Lock()


def _executor(kind: str = "mask") -> ThreadPoolExecutor:
    """The thread pool of one kind of work: "mask" helps a batch fill's caller compute first-time
    masks (MASK_WORKERS threads with the caller); "batch" runs whole batch fills started with
    `..._async` (one thread, so fills run in the order started). Apart, because a batch fill waits
    on mask work: on one pool, fills started at once could hold every thread while their mask
    work waits behind them."""
    with _pool_lock:
        pool = _pools.get(kind)
        if pool is None:
            workers = MASK_WORKERS - 1 if kind == "mask" else 1
            pool = _pools[kind] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"strictgen-{kind}")
        return pool


def _fill_rows(matchers: Sequence[GrammarMatcher], target: np.ndarray, rows: np.ndarray | None, threads: int, prefetch: bool) -> list[bool]:
    """Fill row rows[i] (None: row i) of `target` with matcher i's mask; per row, whether it needs applying.

    The whole batch is one C call (`_mask_store.fill_rows`, GIL released for the copies) that reads
    each matcher's state, "ended" flag and store from the matcher's C base (`RowState`), with no
    Python per row: rows whose mask is the state's stored mask as it is are copied, and the call
    says which rows it did not fill. The states of its misses, and of the rows a tracker filters,
    are computed together (`_compute_missing`), then a second C call copies the misses. The rest
    (ended rows, tracked rows, a miss a full store already dropped again) are read row by row.
    The C call ages the hits itself, only where a store is full enough for it to matter
    (`TokenMasker.age`)."""
    codes = np.empty(len(matchers), dtype=np.uint8)  # 0/1 a hit (1: some token disallowed), MISSED, NOT_PLAIN
    if not _mask_store.fill_rows(matchers, rows, target, codes):
        return codes.view(bool).tolist()  # the usual warm batch: every row a hit
    missed = np.flatnonzero(codes == _mask_store.MISSED)
    others = np.flatnonzero(codes == _mask_store.NOT_PLAIN).tolist()
    tracked = [i for i in others if not matchers[i].is_terminated()]
    if len(missed) or tracked:
        _compute_missing([matchers[i] for i in missed.tolist()] + [matchers[i] for i in tracked], threads, prefetch)
    if len(missed):
        again = np.empty(len(missed), dtype=np.uint8)
        if _mask_store.fill_rows([matchers[i] for i in missed.tolist()], missed if rows is None else rows[missed], target, again):
            others.extend(missed[again == _mask_store.MISSED].tolist())  # stored and dropped since (a small bound)
        codes[missed] = again
    for i in others:
        mask = matchers[i].next_token_mask()
        target[i if rows is None else rows[i], : len(mask)] = mask
        codes[i] = (mask != -1).any()
    return codes.view(bool).tolist()


def _compute_missing(matchers: Sequence[GrammarMatcher], threads: int, prefetch: bool) -> None:
    """Compute the masks of the distinct states of `matchers` (states no cache holds yet).

    States that share a horizon key share a mask (`TokenMasker.horizon_key`): one of them is
    computed, and the others' reads find it. Only the machine's masks are computed here; a
    tracker's filtering is each row's, done once when the caller reads the row. The calling
    thread computes them too, with at most `threads - 1` pool helpers (the pool has
    `MASK_WORKERS - 1`): one shared list of states that every worker pops from, not one future
    per state, so a step with a few misses pays no hand-off per state and the caller does not
    sit idle while its misses are computed (hand-offs cost CPU and, on a busy host, waits:
    docs/performance.md). The list takes the grammars in turn, so that workers start on
    different grammars: a rule that a grammar's states need is built once, under that grammar's
    lock, while the other workers walk states of other grammars instead of waiting for that lock."""
    # distinct states in the batch's order, by masker (grammars compiled alike may share one)
    states = dict.fromkeys((m.compiled.masker, m.state) for m in matchers)
    if prefetch:  # the rules these new states may call next, built ahead (prefetch.py)
        askers: dict[object, list[GrammarMatcher]] = {}
        new_states: dict[object, list[int]] = {}
        for m in matchers:
            askers.setdefault(m.compiled.masker, []).append(m)
        for masker, state in states:  # grouped once (a scan of every state per grammar grew with the batch squared)
            new_states.setdefault(masker, []).append(state)
        for masker, rows in askers.items():
            PREFETCHER.start(masker, rows, new_states[masker])
    missing = {(masker, masker.horizon_key(state)): state for masker, state in states}
    by_grammar: dict[object, list[tuple]] = {}
    for (masker, key), state in missing.items():
        by_grammar.setdefault(masker, []).append((masker, state, key))
    todo = [pair for turn in zip_longest(*by_grammar.values()) for pair in turn if pair is not None]
    todo.reverse()  # workers pop from the end: the first grammars' states first
    helpers = [_executor().submit(_drain, todo) for _ in range(min(len(todo), threads, MASK_WORKERS) - 1)]
    try:
        _drain(todo)
    except BaseException:
        todo.clear()  # the helpers stop after their current state; the error is the caller's
        raise
    finally:
        for helper in helpers:
            if not helper.cancel():  # started: it is finishing its last state
                helper.result()


def _drain(todo: list[tuple]) -> None:
    """Compute the masks of the (masker, state, horizon key) triples in `todo`, popping them until
    none is left (list.pop is atomic, so several threads share the list)."""
    while True:
        try:
            masker, state, key = todo.pop()
        except IndexError:
            return
        masker.mask(state, key)


def _thread_count(threads: int | None) -> int:
    if threads is None:
        return MASK_WORKERS
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, not {threads!r}")
    return threads


def _row_numbers(count: int, indices) -> np.ndarray | None:
    """The bitmask row of each matcher as int64 (None: row i), checked against the matchers' count."""
    if indices is None:
        return None
    try:
        rows = np.ascontiguousarray(indices, dtype=np.int64).reshape(-1)
    except (OverflowError, TypeError, ValueError):
        rows = np.asarray([int(r) for r in indices], dtype=object)  # an index no int64 holds: out of range below
    if len(rows) != count:
        raise ValueError(f"{count} matchers but {len(rows)} row indices")
    return rows


def fill_next_token_bitmask_batch(matchers: Sequence[GrammarMatcher], bitmask, indices: Sequence[int] | None = None,
                                  threads: int | None = None, prefetch: bool = True) -> list[bool]:
    """Fill row `indices[i]` (default: row i) of `bitmask` with matcher i's next-token mask.

    Returns, per matcher, whether some token is disallowed (the row needs applying). First-time
    masks of distinct states are computed by the caller and up to `threads - 1` pool threads
    (default `MASK_WORKERS` in all; 1 computes them in place, which a host with no idle core may
    prefer: docs/performance.md); the batch's cached rows are copied into the bitmask in one C
    call without the GIL (`_fill_rows`). A batch of one is the matcher's own fill.

    `prefetch`: whether the rules the batch's new states may call next are built ahead in the
    background between fills (runtime/prefetch.py). Right where the model's forward pass leaves
    the CPU idle (a GPU); a driver whose forward pass runs on the same CPU cores (the embedded
    engine's llama.cpp batching) passes False: there a build ahead takes cores from the model,
    and builds rules a document may never enter (2-4x the fills' own builds, measured), while
    without it a fill builds only the rules it enters."""
    threads = _thread_count(threads)
    count = len(matchers)
    rows = _row_numbers(count, indices)
    target = bitmask if isinstance(bitmask, np.ndarray) else bitmask.numpy()
    height = target.shape[0] if target.ndim == 2 else 0
    low, high = (0, count - 1) if rows is None or not count else (int(rows.min()), int(rows.max()))
    if target.ndim != 2 or high >= height or low < 0:
        raise ValueError(f"bitmask of shape {tuple(target.shape)} has no row {high if high >= height else low}")
    if not count:
        return []
    row_list = range(count) if rows is None else rows.tolist()
    with PREFETCHER:  # no rule build starts in the background while the batch fills
        if count == 1:
            return [matchers[0].fill_next_token_bitmask(target, index=row_list[0])]
        if target.dtype != np.int32 or target.strides[1] != target.itemsize:  # not a bitmask C can write: row by row
            return [m.fill_next_token_bitmask(target, index=r) for m, r in zip(matchers, row_list)]
        return _fill_rows(matchers, target, rows, threads, prefetch)


def fill_next_token_bitmask_batch_async(matchers: Sequence[GrammarMatcher], bitmask, indices: Sequence[int] | None = None,
                                        threads: int | None = None, prefetch: bool = True) -> "Future[list[bool]]":
    """Start `fill_next_token_bitmask_batch` in the background; `.result()` waits for it.

    The matchers must not advance until the future is done."""
    threads = _thread_count(threads)  # a bad count is the caller's error now, not the future's
    return _executor("batch").submit(fill_next_token_bitmask_batch, list(matchers), bitmask, indices, threads, prefetch)


def accept_token_batch(matchers: Sequence[GrammarMatcher], token_ids) -> list[bool]:
    """Accept `token_ids[i]` in matcher i, for the whole batch in one call; per matcher, whether the
    token was allowed (a refused token leaves that matcher unchanged, as `accept_token` does).

    `token_ids`: a sequence of ints, or a 1-D numpy/torch integer array (the sampler's output).
    Each accept is one step of the grammar's machine in C over the token's bytes, so the loop over
    rows costs about a microsecond of Python each (0.2 ms at batch 128): at parity with the
    peers' batch accepts (issue 28), so it stays in Python."""
    ids = token_ids.tolist() if hasattr(token_ids, "tolist") else list(token_ids)
    if len(ids) != len(matchers):
        raise ValueError(f"{len(matchers)} matchers but {len(ids)} token ids")
    return [m.accept_token(int(t)) for m, t in zip(matchers, ids)]


def find_jump_forward_string_batch(matchers: Sequence[GrammarMatcher]) -> list[str]:
    """Per matcher, the text its grammar forces next ("" if none), as `find_jump_forward_string`:
    after `accept_token_batch`, the rows whose next tokens an engine can append without sampling."""
    return [m.find_jump_forward_string() for m in matchers]
