"""The batch's masks applied on a CUDA device in one Triton launch.

Imported by runtime/bitmask.py only when Triton is importable and the logits are on a CUDA device.
One program masks one block of tokens of one logits row: it reads the row's index, the mask words
covering its tokens (32 tokens share a word), and writes -inf where a token's bit is clear or the
token lies past the mask. Allowed logits are not written at all, so they keep their bits.
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK_TOKENS = 4096


@triton.jit
def _mask_rows(logits_ptr, logits_row_stride, mask_ptr, mask_row_stride, rows_ptr, width, mask_tokens, BLOCK: tl.constexpr):
    entry = tl.program_id(0)  # which (mask row, logits row) pair
    block = tl.program_id(1)  # which block of tokens
    row = tl.load(rows_ptr + entry).to(tl.int64)
    tokens = block * BLOCK + tl.arange(0, BLOCK)
    in_row = tokens < width
    in_mask = in_row & (tokens < mask_tokens)
    words = tl.load(mask_ptr + entry.to(tl.int64) * mask_row_stride + tokens // 32, mask=in_mask, other=0)
    allowed = ((words >> (tokens % 32)) & 1) != 0
    minus_inf = tl.full([BLOCK], float("-inf"), tl.float32)
    tl.store(logits_ptr + row * logits_row_stride + tokens, minus_inf, mask=in_row & ~allowed)


def apply_masks(logits2d, mask, rows) -> None:
    """Mask logits row rows[i] with mask row i, for every i, in place (all three on one device)."""
    if logits2d.stride(1) != 1 or mask.stride(1) != 1:
        raise ValueError("the Triton apply needs logits and mask rows contiguous in memory")
    width = logits2d.shape[1]
    grid = (rows.shape[0], triton.cdiv(width, BLOCK_TOKENS))
    _mask_rows[grid](logits2d, logits2d.stride(0), mask, mask.stride(0), rows, width, 32 * mask.shape[1], BLOCK=BLOCK_TOKENS)
