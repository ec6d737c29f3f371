"""Token bitmasks: allocate, and apply to logits (numpy or torch, 1-D or batched).

Layout (the convention vLLM and SGLang grammar backends use): int32 words, bit i of word i // 32
(little-endian bit order) set when token i is allowed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from strictgen.compile.token_mask import words_for


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """A (batch, ceil(V/32)) int32 mask with every token allowed."""
    return np.full((batch_size, words_for(vocab_size)), -1, dtype=np.int32)


def _as_numpy(array) -> np.ndarray:
    if isinstance(array, np.ndarray):
        return array
    if hasattr(array, "detach"):  # a torch tensor
        return array.detach().cpu().numpy()
    return np.asarray(array)


def unpack_bitmask(mask, width: int) -> np.ndarray:
    """Bool array (..., width): True where the token is allowed. Tokens past the mask are disallowed."""
    m = np.ascontiguousarray(_as_numpy(mask), dtype=np.int32)
    bits = np.unpackbits(m.view(np.uint8), axis=-1, bitorder="little").astype(bool, copy=False)
    if bits.shape[-1] >= width:
        return bits[..., :width]
    pad = np.zeros(bits.shape[:-1] + (width - bits.shape[-1],), dtype=bool)
    return np.concatenate([bits, pad], axis=-1)


FEW_TOKENS = 64  # up to this many allowed (or disallowed) tokens, index the logits instead of a full pass
_PLAN_CACHE_SIZE = 64


class _Plan:
    """How to apply one mask row to logits of one width: the decoding loop revisits a few automaton
    states (string bodies, after a key, the value of an enum), so the unpacked form is built once.

    `cap` is +inf where allowed and -inf elsewhere: `minimum(logits, cap)` masks in one pass and,
    unlike adding a 0/-inf bias, never turns a +inf logit into NaN."""

    def __init__(self, row: np.ndarray, width: int):
        self.row = row.copy()
        allowed = unpack_bitmask(row[None, :], width)[0]
        self.allowed_ids = np.flatnonzero(allowed) if allowed.sum() <= FEW_TOKENS else None
        self.disallowed_ids = np.flatnonzero(~allowed) if (~allowed).sum() <= FEW_TOKENS else None
        self.cap = None if self.allowed_ids is not None or self.disallowed_ids is not None else np.where(allowed, np.inf, -np.inf)
        self._torch: dict = {}  # (dtype, device) → the same arrays as tensors

    def apply_numpy(self, logits: np.ndarray) -> None:
        if self.allowed_ids is not None:
            kept = logits[self.allowed_ids]
            logits.fill(-np.inf)
            logits[self.allowed_ids] = kept
        elif self.disallowed_ids is not None:
            logits[self.disallowed_ids] = -np.inf
        else:
            np.minimum(logits, self.cap.astype(logits.dtype, copy=False), out=logits)

    def apply_torch(self, logits) -> None:
        import torch

        key = (logits.dtype, logits.device)
        got = self._torch.get(key)
        if got is None:
            ids = self.allowed_ids if self.allowed_ids is not None else self.disallowed_ids
            if ids is not None:
                got = torch.from_numpy(ids).to(logits.device)
            else:
                got = torch.from_numpy(self.cap).to(device=logits.device, dtype=logits.dtype)
            self._torch[key] = got
        if self.allowed_ids is not None:
            kept = logits[got]
            logits.fill_(float("-inf"))
            logits[got] = kept
        elif self.disallowed_ids is not None:
            logits[got] = float("-inf")
        else:
            torch.minimum(logits, got, out=logits)


class _PlanCache:
    """Plans by mask content (an LRU; a content checksum finds candidates, equality confirms)."""

    def __init__(self, size: int = _PLAN_CACHE_SIZE):
        self.size = size
        self._plans: OrderedDict[tuple[int, int, int], list[_Plan]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, row: np.ndarray, width: int) -> _Plan:
        key = (width, len(row), int(row.sum(dtype=np.int64)))
        with self._lock:
            bucket = self._plans.get(key)
            if bucket is not None:
                self._plans.move_to_end(key)
                for plan in bucket:
                    if np.array_equal(plan.row, row):
                        return plan
        plan = _Plan(row, width)
        with self._lock:
            self._plans.setdefault(key, []).append(plan)
            while len(self._plans) > self.size:
                self._plans.popitem(last=False)
        return plan


_plans = _PlanCache()


def apply_token_bitmask_inplace(logits, mask, indices=None) -> None:
    """Set disallowed tokens' logits to -inf in place.

    `logits`: (V,) or (batch, V), numpy or torch; `mask`: (words,) or (batch, words).
    `indices`: rows of a batched `logits` to apply the mask rows to (default: all, in order).
    Tokens past the mask's width are disallowed; mask bits past V are ignored.
    """
    m = _as_numpy(mask)
    if m.ndim == 1:
        m = m[None, :]
    m = np.ascontiguousarray(m, dtype=np.int32)
    width = logits.shape[-1]
    if len(logits.shape) == 1:
        if m.shape[0] != 1:
            raise ValueError("a 1-D logits vector takes a single mask row")
        targets = [(logits, m[0])]
    else:
        rows = range(logits.shape[0]) if indices is None else list(indices)
        if m.shape[0] < len(rows):
            raise ValueError(f"mask has {m.shape[0]} rows for {len(rows)} logits rows")
        targets = [(logits[r], m[i]) for i, r in enumerate(rows)]
    is_numpy = isinstance(logits, np.ndarray)
    for vec, row in targets:
        if width <= 32 * len(row) and (row == -1).all():
            continue  # everything allowed
        plan = _plans.get(row, width)
        if is_numpy:
            plan.apply_numpy(vec)
        else:
            plan.apply_torch(vec)
