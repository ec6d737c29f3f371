"""Token bitmasks: allocate, and apply to logits (numpy or torch, 1-D or batched, any device).

Layout (the convention vLLM and SGLang grammar backends use): int32 words, bit i of word i // 32
(little-endian bit order) set when token i is allowed.

Applying is one vectorised pass over the batch, never a Python loop over rows: a decoding step at
batch 128 must cost about one kernel, not 128 uploads (DESIGN §5). Every path masks the same way:
a *cap* is +inf where a token is allowed and -inf elsewhere, and `minimum(logits, cap)` keeps
allowed logits bit for bit and turns the others into -inf (unlike adding a 0/-inf bias, a +inf
logit never becomes NaN; a NaN logit stays NaN). The cap comes from the mask's bytes through a
256-entry table of 8 caps each:
- on the host (numpy, CPU torch) numpy builds it in blocks of rows that stay in the CPU's cache;
- on a device the int32 mask is uploaded once (from pinned memory, without blocking) and either a
  Triton kernel masks every row in one launch (runtime/bitmask_triton.py), or, without Triton, the
  same torch code as the host path runs with the cap gathered on the device.
Rows whose mask allows every token are dropped from the pass by index before any of this; rows that
allow at most FEW_TOKENS tokens (a JSON structure's next punctuation, a key's next letters) are
filled with -inf and their few logits put back, which writes a row once instead of reading caps.
"""

from __future__ import annotations

import functools
import importlib.util
import threading

import numpy as np

from strictgen.compile.token_mask import words_for

BLOCK_BYTES = 1 << 21  # a block of caps this size stays in a core's L2 cache while it is applied


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


def allows_everything(mask: np.ndarray, width: int) -> np.ndarray:
    """Per row of a 2-D int32 mask: whether all of tokens [0, width) are allowed."""
    whole, rest = divmod(width, 32)
    if mask.shape[1] < whole + (rest > 0):
        return np.zeros(mask.shape[0], dtype=bool)  # tokens past the mask are disallowed
    full = (mask[:, :whole] == -1).all(axis=1)
    if rest:
        low = np.int32((1 << rest) - 1)
        full &= (mask[:, whole] & low) == low
    return full


# ---- caps: per mask byte, the 8 tokens' caps as the bit patterns of the logits' dtype ------------


@functools.lru_cache(maxsize=None)
def _cap_table(neg_inf_bits: int, pos_inf_bits: int, itemsize: int) -> np.ndarray:
    """(256, 8) signed ints: entry [b, j] is +inf's bit pattern if bit j of byte b is set, else -inf's."""
    bits = (np.arange(256)[:, None] >> np.arange(8)) & 1
    return np.where(bits == 1, pos_inf_bits, neg_inf_bits).astype(f"<i{itemsize}")


def _bits_of(infinities: np.ndarray) -> tuple[int, int]:
    as_int = infinities.view(f"<i{infinities.itemsize}")
    return int(as_int[0]), int(as_int[1])


def _numpy_table(dtype: np.dtype) -> np.ndarray:
    return _cap_table(*_bits_of(np.array([-np.inf, np.inf], dtype=dtype)), np.dtype(dtype).itemsize)


def _torch_table(dtype) -> np.ndarray:
    import torch

    infinities = torch.tensor([float("-inf"), float("inf")], dtype=dtype)
    size = infinities.element_size()
    as_int = infinities.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[size])
    return _cap_table(int(as_int[0]), int(as_int[1]), size)


def host_caps(mask_bytes: np.ndarray, table: np.ndarray, covered: int) -> np.ndarray:
    """Caps (rows, covered) as bit patterns, from the rows' mask bytes (rows, 4 * words)."""
    return np.take(table, mask_bytes, axis=0).reshape(len(mask_bytes), -1)[:, :covered]


# ---- rows that allow a handful of tokens -------------------------------------------------------

FEW_TOKENS = 64  # up to this many allowed tokens, a row is filled with -inf and its few logits put back


def few_allowed(mask: np.ndarray, covered: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which rows of `mask` allow at most FEW_TOKENS of tokens [0, covered), and those tokens as
    (entry among those rows, token id) pairs; found from the mask's nonzero words, not its bits."""
    words = mask[:, : words_for(covered)].view(np.uint32)
    few = np.bitwise_count(words).sum(axis=1, dtype=np.int64) <= FEW_TOKENS
    entry, word = np.nonzero(words[few])
    if not len(entry):
        return few, entry, word
    bits = (words[few][entry, word][:, None] >> np.arange(32, dtype=np.uint32)) & 1
    hit, bit = np.nonzero(bits)
    token = word[hit].astype(np.int64) * 32 + bit
    inside = token < covered
    return few, entry[hit][inside], token[inside]


# ---- the logits rows a pass writes: a view where they are consecutive, else a gathered copy ------


def _consecutive(rows: np.ndarray) -> bool:
    return bool(rows[-1] - rows[0] == len(rows) - 1 and (len(rows) < 3 or (np.diff(rows) == 1).all()))


class _NumpyRows:
    def __init__(self, logits: np.ndarray):
        self.logits = logits
        self.table = _numpy_table(logits.dtype)

    def caps(self, mask_bytes, covered):
        return host_caps(mask_bytes, self.table, covered).view(self.logits.dtype)

    def take(self, rows):
        return self.logits[rows[0] : rows[-1] + 1] if _consecutive(rows) else self.logits[rows]

    def put(self, rows, block):
        if not _consecutive(rows):
            self.logits[rows] = block

    @staticmethod
    def mask(block, caps, covered):
        head = block[:, :covered]
        np.minimum(head, caps, out=head)
        block[:, covered:] = -np.inf

    def keep_only(self, rows, entry, token):
        """Rows `rows` become -inf except at (rows[entry], token), which keep their logits."""
        kept = self.logits[rows[entry], token]
        self.logits[rows] = -np.inf
        self.logits[rows[entry], token] = kept


class _TorchRows:
    """Torch logits on any device; the caps come from the host (CPU) or from `device_caps`."""

    def __init__(self, logits, device_caps=None):
        self.logits = logits
        self.device_caps = device_caps
        self.table = _torch_table(logits.dtype)

    def caps(self, mask_bytes, covered):
        import torch

        if self.device_caps is not None:
            return self.device_caps(mask_bytes, covered)
        return torch.from_numpy(host_caps(mask_bytes, self.table, covered)).view(self.logits.dtype)

    def take(self, rows):
        import torch

        if _consecutive(rows):
            return self.logits[int(rows[0]) : int(rows[-1]) + 1]
        return self.logits.index_select(0, torch.from_numpy(rows).to(self.logits.device))

    def put(self, rows, block):
        import torch

        if not _consecutive(rows):
            self.logits.index_copy_(0, torch.from_numpy(rows).to(self.logits.device), block)

    @staticmethod
    def mask(block, caps, covered):
        import torch

        head = block[:, :covered]
        torch.minimum(head, caps, out=head)
        block[:, covered:] = float("-inf")

    def keep_only(self, rows, entry, token):
        import torch

        device = self.logits.device
        at_rows, at_tokens = torch.from_numpy(rows[entry]).to(device), torch.from_numpy(token).to(device)
        kept = self.logits[at_rows, at_tokens]
        self.logits.index_fill_(0, torch.from_numpy(rows).to(device), float("-inf"))
        self.logits[at_rows, at_tokens] = kept


def _apply_blocks(target, mask_bytes, rows: np.ndarray, covered: int, rows_per_block: int) -> None:
    """Mask logits rows `rows` of `target` with the caps of `mask_bytes` (one row each), a block of
    rows at a time (the host keeps a block's caps in cache; a device takes all rows at once)."""
    for start in range(0, len(rows), rows_per_block):
        part = rows[start : start + rows_per_block]
        block = target.take(part)
        target.mask(block, target.caps(mask_bytes[start : start + rows_per_block], covered), covered)
        target.put(part, block)


# ---- devices -----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def triton_available() -> bool:
    return importlib.util.find_spec("triton") is not None


class _Staging:
    """Pinned host buffers for the mask rows a device pass uploads, reused from step to step; an
    event recorded after each upload says when a buffer may be rewritten."""

    def __init__(self):
        self._lock = threading.Lock()
        self._buffers: dict = {}  # device → (pinned int32 buffer, event of its last upload)

    def upload(self, mask: np.ndarray, device):
        import torch

        with self._lock:
            buffer, event = self._buffers.get(device, (None, None))
            if event is not None:
                event.synchronize()  # the previous step's copy has left the buffer
            if buffer is None or buffer.numel() < mask.size:
                buffer = torch.empty(max(mask.size, 1 << 16), dtype=torch.int32, pin_memory=True)
            np.copyto(buffer.numpy()[: mask.size].reshape(mask.shape), mask)
            on_device = buffer[: mask.size].view(mask.shape).to(device, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            self._buffers[device] = (buffer, event)
            return on_device


_staging = _Staging()


@functools.lru_cache(maxsize=16)
def _device_table(dtype, device):
    """The cap table as (256, 8) logits of `dtype` on `device`."""
    import torch

    return torch.from_numpy(_torch_table(dtype)).view(dtype).to(device)


def apply_with_torch_ops(logits2d, mask, rows: np.ndarray) -> None:
    """The device path without Triton: the mask (a torch int32 row per entry of `rows`) and the
    cap table on the logits' device, the caps gathered there by the mask's bytes, then the host
    path's torch code over all rows in one block. Runs on CPU tensors too (the tests)."""
    import torch

    table = _device_table(logits2d.dtype, logits2d.device)

    def caps(mask_bytes, covered):
        return torch.nn.functional.embedding(mask_bytes.int(), table).reshape(len(mask_bytes), -1)[:, :covered]

    covered = min(logits2d.shape[1], 32 * mask.shape[1])
    mask_bytes = mask.to(logits2d.device).contiguous().view(torch.uint8)
    _apply_blocks(_TorchRows(logits2d, caps), mask_bytes, rows, covered, max(1, len(rows)))


def _upload(mask: np.ndarray, device):
    if device.type == "cuda":
        return _staging.upload(np.ascontiguousarray(mask), device)
    import torch

    return torch.from_numpy(mask).to(device)


def _apply_on_device(logits2d, mask, rows: np.ndarray) -> None:
    import torch

    if isinstance(mask, np.ndarray):
        mask = _upload(mask, logits2d.device)
    if logits2d.device.type == "cuda" and logits2d.stride(1) == 1 and triton_available():
        from strictgen.runtime.bitmask_triton import apply_masks

        rows_on_device = torch.from_numpy(rows.astype(np.int32)).to(logits2d.device, non_blocking=True)
        apply_masks(logits2d, mask, rows_on_device)
    else:
        apply_with_torch_ops(logits2d, mask, rows)


# ---- the entry point ---------------------------------------------------------------------------


def _target_rows(n_logits_rows: int, indices) -> np.ndarray:
    if indices is None:
        return np.arange(n_logits_rows, dtype=np.int64)
    rows = np.asarray(indices.tolist() if hasattr(indices, "tolist") else list(indices), dtype=np.int64).reshape(-1)
    if len(rows) and (rows.min() < 0 or rows.max() >= n_logits_rows):
        raise ValueError(f"indices must name rows of the {n_logits_rows}-row logits")
    if len(np.unique(rows)) != len(rows):
        raise ValueError("indices must not repeat a row")
    return rows


def apply_token_bitmask_inplace(logits, mask, indices=None) -> None:
    """Set disallowed tokens' logits to -inf in place.

    `logits`: (V,) or (batch, V), numpy or torch (any device); `mask`: (words,) or (rows, words),
    numpy or torch. `indices`: the rows of a batched `logits` that mask rows 0, 1, ... apply to
    (default: all rows, in order), distinct. Tokens past the mask's width are disallowed (a model
    vocabulary padded past the tokenizer's); mask bits past V are ignored.
    """
    if len(logits.shape) not in (1, 2):
        raise ValueError(f"logits must be 1-D or 2-D, not of shape {tuple(logits.shape)}")
    is_numpy = isinstance(logits, np.ndarray)
    on_device = not is_numpy and logits.device.type != "cpu"
    target = logits if len(logits.shape) == 2 else logits[None]
    if on_device and not isinstance(mask, np.ndarray) and mask.device.type != "cpu":
        m = mask if mask.dim() == 2 else mask[None]  # already on the device: nothing to skip by
    else:
        m = _as_numpy(mask)
        m = np.ascontiguousarray(m[None] if m.ndim == 1 else m, dtype=np.int32)
    if len(logits.shape) == 1 and (m.shape[0] != 1 or indices is not None):
        raise ValueError("a 1-D logits vector takes a single mask row and no indices")
    rows = _target_rows(target.shape[0], indices)
    if m.shape[0] < len(rows):
        raise ValueError(f"mask has {m.shape[0]} rows for {len(rows)} logits rows")
    m = m[: len(rows)]
    width = target.shape[1]
    if isinstance(m, np.ndarray):
        needed = ~allows_everything(m, width)
        if not needed.all():
            rows, m = rows[needed], m[needed]
    if not len(rows):
        return
    if on_device:
        _apply_on_device(target, m, rows)
        return
    covered = min(width, 32 * m.shape[1])
    rows_target = _NumpyRows(target) if is_numpy else _TorchRows(target)
    few, entry, token = few_allowed(m, covered)
    if few.any():  # rows allowing a handful of tokens: keep those logits, fill the rows with -inf
        rows_target.keep_only(rows[few], entry, token)
        rows, m = rows[~few], m[~few]
    if len(rows):
        rows_per_block = max(1, BLOCK_BYTES // (covered * target.dtype.itemsize if is_numpy else covered * target.element_size()))
        _apply_blocks(rows_target, m.view(np.uint8), rows, covered, rows_per_block)
