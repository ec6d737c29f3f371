"""A reasoning block before a format: the markers a chat template uses, and the grammar of the
block, so that a format applies after the model's reasoning ends (vLLM's `enable_in_reasoning=False`).

The format-request table (grammar/format_spec.py) wraps formats in it; serve/tools reads the
markers from templates and splits output text at them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ir import Expr, charset, lit, opt, repeat, seq
from .structural_tag import text_without


@dataclass(frozen=True)
class Reasoning:
    open: str
    close: str
    starts_inside: bool = False  # the generation prompt already opened the block (DeepSeek R1)


THINK = Reasoning("<think>", "</think>")


def reasoning_prefix(r: Reasoning | None, body: Expr) -> Expr:
    """`body` preceded by the reasoning block (optional unless the prompt opened it)."""
    if r is None:
        return body
    block = seq(text_without(r.close), lit(r.close), repeat(charset(((10, 10), (32, 32))), 0, 4))
    return seq(block, body) if r.starts_inside else seq(opt(seq(lit(r.open), block)), body)
