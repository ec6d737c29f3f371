"""Reasoning blocks: which markers a template uses, where the output starts, and the split of
output text into reasoning and the rest (on any prefix, so streaming adds up).

The format constraint applies after reasoning ends (vLLM's `enable_in_reasoning=False`): the
grammar lets the model think freely up to the close marker, then the format takes over.
"""

from __future__ import annotations

from strictgen.grammar.reasoning import THINK, Reasoning, reasoning_prefix  # noqa: F401  (the block's grammar lives below serve)

# (open, close, what in a template's source says it uses them), most specific first
MARKERS = (
    ("<|channel|>analysis<|message|>", "<|end|><|start|>assistant", "<|channel|>"),  # gpt-oss harmony
    ("<|START_THINKING|>", "<|END_THINKING|>", "<|START_THINKING|>"),  # Command R7B
    ("<|channel>thought\n", "<channel|>", "<|channel>"),  # Gemma 4
    ("<think>", "</think>", "<think>"),  # Qwen3, DeepSeek R1 / V3.1, QwQ
)


def judge(open_: str, close: str, generation_prompt: str) -> Reasoning | None:
    """Markers judged against the end of a rendered prompt: a prompt that ends in an open block
    starts the output inside it; one that ends in a closed, empty block has thinking switched off."""
    tail = generation_prompt.rstrip()
    if tail.endswith(close.rstrip()) and open_.strip() in tail[-(len(open_) + len(close) + 8) :]:
        return None  # "<think></think>": thinking off
    return Reasoning(open_, close, starts_inside=tail.endswith(open_.rstrip()))


def detect_reasoning(source: str, generation_prompt: str) -> Reasoning | None:
    """The known reasoning markers (MARKERS) a template's source uses, judged against its prompt."""
    for open_, close, mark in MARKERS:
        if mark in source:
            return judge(open_, close, generation_prompt)
    return None


def hold_partial(text: str, marker: str) -> str:
    """`text` without a suffix that could be the start of `marker`."""
    for k in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-k:]):
            return text[:-k]
    return text


def split_reasoning(text: str, r: Reasoning | None, final: bool) -> tuple[str, str | None]:
    """(reasoning so far, the text after the block; None while the block may still be open)."""
    if r is None:
        return "", text
    if r.starts_inside:
        body = text
    elif text.startswith(r.open):
        body = text[len(r.open) :]
    elif not final and r.open.startswith(text):
        return "", None  # might still become a reasoning block
    else:
        return "", text
    end = body.find(r.close)
    if end < 0:  # newlines around the reasoning are layout: held back until more text comes
        return (body if final else hold_partial(body, r.close)).strip("\n"), ("" if final else None)
    return body[:end].strip("\n"), body[end + len(r.close) :].lstrip()
