"""Shared by the integrations: matchers that follow a growing token sequence, one per row."""

from __future__ import annotations

import numpy as np

from strictgen.compile.token_mask import words_for
from strictgen.errors import StrictgenError
from strictgen.runtime.matcher import GrammarMatcher


class RowMatcher:
    """A GrammarMatcher fed from the full token sequence a library passes at each step.

    Libraries hand a logits processor the prompt plus everything generated so far; the first call
    marks where the prompt ends, later calls accept the tokens appended since."""

    def __init__(self, grammar):
        self.matcher = GrammarMatcher(grammar)
        self.seen: int | None = None

    def advance(self, ids) -> None:
        n = len(ids)
        if self.seen is None:
            self.seen = n
            return
        if n < self.seen:
            raise StrictgenError("the token sequence got shorter: start a new logits processor for each generation")
        for tok in ids[self.seen : n]:
            if self.matcher.is_terminated():
                break  # padding after the end of this row
            if not self.matcher.accept_token(int(tok)):
                raise StrictgenError(f"token {int(tok)} does not follow the grammar (was the mask applied?)")
        self.seen = n


def masks_for(rows: list[GrammarMatcher], width: int) -> np.ndarray:
    """Packed masks (len(rows), words) for logits of `width`; tokens past the grammar's vocabulary stay off."""
    out = np.zeros((len(rows), words_for(width)), dtype=np.int32)
    for i, m in enumerate(rows):
        row = m.next_token_mask()
        n = min(len(row), out.shape[1])
        out[i, :n] = row[:n]
    return out
