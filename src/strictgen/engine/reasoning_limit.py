"""A bound on the reasoning block at the start of an answer (`thinking_token_budget`).

The block is free text between an open and a close marker (`<think>` … `</think>`, harmony's
analysis channel); a model that never closes it spends the whole `max_tokens` there and the
answer's format never starts. With a limit, once `max_tokens` output tokens were generated inside
the block and it is still open, the generation loop appends the close marker itself (as text
the grammar forces is appended, re-encoded with the last tokens), and the format after the block
applies from there. A block closed within the bound is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from strictgen.errors import StrictgenError

BEFORE, INSIDE, DONE = "before", "inside", "done"


@dataclass(frozen=True)
class ReasoningLimit:
    open: str
    close: str
    max_tokens: int  # output tokens inside the block (after the open marker) before the close is forced
    starts_inside: bool = False  # the prompt already opened the block

    def __post_init__(self):
        if not isinstance(self.max_tokens, int) or isinstance(self.max_tokens, bool) or self.max_tokens < 0:
            raise StrictgenError(f"the reasoning budget must be a non-negative integer, not {self.max_tokens!r}")
        if not self.close:
            raise StrictgenError("a reasoning limit needs the block's close marker")

    def phase(self, text: bytes) -> str:
        """Where output `text` stands: BEFORE (it may still open the block), INSIDE (open, not
        closed) or DONE (closed, or the output did not start with the block)."""
        open_b, close_b = self.open.encode(), self.close.encode()
        if self.starts_inside:
            body = text
        elif text.startswith(open_b):
            body = text[len(open_b) :]
        elif open_b.startswith(text):
            return BEFORE
        else:
            return DONE
        return DONE if close_b in body else INSIDE
