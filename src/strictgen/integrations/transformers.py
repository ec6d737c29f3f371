"""A transformers LogitsProcessor: constrain `model.generate` to a compiled grammar.

    import strictgen as sg
    from strictgen.integrations.transformers import StrictgenLogitsProcessor

    tok = sg.TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=model.config.vocab_size)
    grammar = sg.GrammarCompiler(tok).compile_json_schema(schema)
    processor = StrictgenLogitsProcessor(grammar)          # or a list: one grammar per batch row
    out = model.generate(**inputs, logits_processor=[processor], max_new_tokens=64)

One matcher per batch row; use a fresh processor for each `generate` call. Greedy and sampled
decoding are supported; beam search (which reorders rows) is not.
"""

from __future__ import annotations

from transformers import LogitsProcessor

from strictgen.compile.compiled import CompiledGrammar
from strictgen.errors import StrictgenError
from strictgen.runtime.bitmask import apply_token_bitmask_inplace

from ._rows import RowMatcher, masks_for


class StrictgenLogitsProcessor(LogitsProcessor):
    def __init__(self, grammar: CompiledGrammar | list[CompiledGrammar]):
        self._grammars = grammar if isinstance(grammar, (list, tuple)) else None
        self._grammar = None if self._grammars is not None else grammar
        self.rows: list[RowMatcher] | None = None

    def _start(self, batch: int) -> list[RowMatcher]:
        if self._grammars is not None and len(self._grammars) != batch:
            raise StrictgenError(f"{len(self._grammars)} grammars for a batch of {batch} rows")
        grammars = self._grammars if self._grammars is not None else [self._grammar] * batch
        return [RowMatcher(g) for g in grammars]

    def __call__(self, input_ids, scores):
        batch = input_ids.shape[0]
        if self.rows is None:
            self.rows = self._start(batch)
        elif len(self.rows) != batch:
            raise StrictgenError("the batch changed size (beam search is not supported)")
        ids = input_ids.tolist()
        for row, seq in zip(self.rows, ids):
            row.advance(seq)
        masks = masks_for([r.matcher for r in self.rows], scores.shape[-1])
        apply_token_bitmask_inplace(scores, masks)
        return scores

    @property
    def matchers(self):
        """The per-row GrammarMatchers (after the first call)."""
        return [r.matcher for r in self.rows or []]
