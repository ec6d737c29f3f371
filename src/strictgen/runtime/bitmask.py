"""Token bitmasks: allocate, and apply to logits (numpy or torch, 1-D or batched).

Layout (the convention vLLM and SGLang grammar backends use): int32 words, bit i of word i // 32
(little-endian bit order) set when token i is allowed.
"""

from __future__ import annotations

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


def apply_token_bitmask_inplace(logits, mask, indices=None) -> None:
    """Set disallowed tokens' logits to -inf in place.

    `logits`: (V,) or (batch, V), numpy or torch; `mask`: (words,) or (batch, words).
    `indices`: rows of a batched `logits` to apply the mask rows to (default: all, in order).
    """
    m = _as_numpy(mask)
    if m.ndim == 1:
        m = m[None, :]
    width = logits.shape[-1]
    allowed = unpack_bitmask(m, width)
    if len(logits.shape) == 1:
        if allowed.shape[0] != 1:
            raise ValueError("a 1-D logits vector takes a single mask row")
        rows = None
    else:
        rows = list(range(logits.shape[0])) if indices is None else list(indices)
        if len(rows) != allowed.shape[0]:
            if allowed.shape[0] < len(rows):
                raise ValueError(f"mask has {allowed.shape[0]} rows for {len(rows)} logits rows")
            allowed = allowed[: len(rows)]
    if isinstance(logits, np.ndarray):
        if rows is None:
            logits[~allowed[0]] = -np.inf
        else:
            sub = logits[rows]
            sub[~allowed] = -np.inf
            logits[rows] = sub
        return
    import torch  # only reached with torch logits

    disallowed = torch.from_numpy(~allowed).to(logits.device)
    if rows is None:
        logits.masked_fill_(disallowed[0], float("-inf"))
    else:
        idx = torch.as_tensor(rows, device=logits.device)
        logits[idx] = logits[idx].masked_fill(disallowed, float("-inf"))
