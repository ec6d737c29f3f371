"""A vLLM (v1) logits-processor plugin: per-request formats inside `vllm serve` and `vllm.LLM`.

Name it when starting vLLM: `--logits-processors strictgen.integrations.vllm:StrictgenLogitsProcessor`
(no entry point is declared: vLLM 0.33's default GPU runner refuses v1 processors found there, which
would break every plain `vllm serve`; docs/engines.md). A request
chooses its format with exactly one `SamplingParams.extra_args` key (`vllm_xargs` on the OpenAI
server): `strictgen_json_schema` (an object or its JSON text), `strictgen_regex`, `strictgen_grammar`
(GBNF), `strictgen_choice` (a list or its JSON text), `strictgen_json_object` (true) or
`strictgen_structural_tag` (the JSON text vLLM itself takes as `structured_outputs.structural_tag`,
or an object). Requests without one are untouched. See docs/engines.md for the recipe and what a logits processor cannot do.

This module imports vLLM; strictgen itself never does.
"""

from __future__ import annotations

import functools
import logging
import weakref
from dataclasses import dataclass

import numpy as np
import torch
from vllm.sampling_params import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

from strictgen.compile.compiler import GrammarCompiler
from strictgen.compile.token_mask import words_for
from strictgen.errors import InternalError, StrictgenError
from strictgen.runtime.batch import fill_next_token_bitmask_batch, fill_next_token_bitmask_batch_async
from strictgen.runtime.bitmask import apply_token_bitmask_inplace
from strictgen.tokenizer.info import TokenizerInfo

from ._formats import byte_compiler, compile_format, empty_document, request_format
from ._grammar import RequestGrammar

logger = logging.getLogger(__name__)

PLACEHOLDER = -1  # vLLM's async scheduler appends this for a token sampled but not yet copied back
ASYNC_HINT = (
    "vLLM passed a placeholder instead of the last sampled token: with async scheduling it fills in "
    "output tokens only for processors named with --logits-processors; start vLLM with "
    "--logits-processors strictgen.integrations.vllm:StrictgenLogitsProcessor (or --no-async-scheduling)"
)


_built: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id(vllm_config) → the active instance


@functools.lru_cache(maxsize=4)
def compiler_for(tokenizer: str, vocab_size: int) -> GrammarCompiler:
    """One compiler per (tokenizer, model vocabulary size) in a worker process, so every processor
    instance and every repeated format share its cache."""
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(tokenizer)
    return GrammarCompiler(TokenizerInfo.from_huggingface(hf, vocab_size=vocab_size))


@dataclass
class _Row:
    """One constrained request in the persistent batch: its grammar and vLLM's live output list."""

    grammar: RequestGrammar
    output_ids: list[int]
    seen: int = 0

    def catch_up(self) -> None:
        """Accept the tokens appended to the output list since the last step."""
        ids = self.output_ids
        if PLACEHOLDER in ids[self.seen :]:
            raise RuntimeError(ASYNC_HINT)  # a set-up error, the same for every request: stop loudly
        while self.seen < len(ids):
            if self.grammar.is_terminated():
                self.seen = len(ids)  # tokens after EOS (ignore_eos): nothing left to constrain
                return
            if not self.grammar.accept_tokens([ids[self.seen]]):
                raise StrictgenError(f"token {ids[self.seen]} does not follow the grammar (was another processor run after the mask?)")
            self.seen += 1


class StrictgenLogitsProcessor(LogitsProcessor):
    """vLLM's v1 `LogitsProcessor`: rows follow the persistent batch (removed, then added, then
    moved), masks are filled for the whole batch at once (started in update_state, before the
    forward pass, where the last tokens are known) and applied on the logits' device in one pass."""

    def __init__(self, vllm_config, device: torch.device, is_pin_memory: bool):
        # should vLLM build the class twice for one engine (an entry point of the user's own and
        # --logits-processors), the second stays inert instead of masking every row twice.
        first = _built.get(id(vllm_config))
        self._inert = first is not None and first._config is vllm_config
        self._config = vllm_config
        if not self._inert:
            _built[id(vllm_config)] = self
        model = vllm_config.model_config
        self.compiler = compiler_for(model.tokenizer, int(model.get_vocab_size()))
        self.device = device
        self.rows: dict[int, _Row] = {}
        self._mask: np.ndarray | None = None
        self._pending = None  # (row indices, tokens seen per row, Future) of masks started in update_state

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """Compile the request's format (vocabulary-free), or raise ValueError with why: vLLM turns
        it into HTTP 400 before the request reaches a worker."""
        named = request_format(sampling_params.extra_args)
        if named is None:
            return
        if sampling_params.structured_outputs is not None:
            raise StrictgenError("give either vLLM's structured_outputs or a strictgen_* format, not both")
        compile_format(byte_compiler(), *named)

    def is_argmax_invariant(self) -> bool:
        return False  # masking changes the greedy choice

    # -- batch bookkeeping ---------------------------------------------------------------------

    def _new_row(self, params: SamplingParams, output_ids: list[int]) -> _Row | None:
        named = request_format(params.extra_args)
        if named is None:
            return None
        try:
            compiled = compile_format(self.compiler, *named)
        except (StrictgenError, InternalError) as e:  # validated already; a limit (time, size) or a slip of ours can still hit
            logger.error("strictgen: %s; the request ends with empty output", e)
            compiled = empty_document(self.compiler)
        return _Row(RequestGrammar(compiled), output_ids)

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if self._inert:
            return
        if batch_update is not None:
            self._follow(batch_update)
        self._start_masks()

    def _follow(self, batch_update: BatchUpdate) -> None:
        rows = self.rows
        for index in batch_update.removed:
            rows.pop(index, None)
        for index, params, _prompt_ids, output_ids in batch_update.added:
            row = self._new_row(params, output_ids)
            if row is None:
                rows.pop(index, None)
            else:
                rows[index] = row  # a resumed request replays the output it already has
        for a, b, direction in batch_update.moved:
            row_a, row_b = rows.pop(a, None), rows.pop(b, None)
            if row_a is not None:
                rows[b] = row_a
            if row_b is not None and direction == MoveDirectionality.SWAP:
                rows[a] = row_b

    # -- the step -------------------------------------------------------------------------------

    def _mask_rows(self, n: int) -> np.ndarray:
        words = words_for(self.compiler.tokenizer_info.vocab_size)
        if self._mask is None or self._mask.shape[0] < n:
            self._mask = np.empty((max(n, 8), words), dtype=np.int32)
        return self._mask[:n]

    def _start_masks(self) -> None:
        """Start the next masks in the background (vLLM calls update_state before the forward pass,
        apply after it): only when every row already holds its last sampled token, which async
        scheduling fills in later (placeholders); then apply computes them itself."""
        self._wait_pending()
        indices = sorted(self.rows)
        if not indices:
            return
        try:
            for i in indices:
                if PLACEHOLDER in self.rows[i].output_ids[self.rows[i].seen :]:
                    return
                self.rows[i].catch_up()
        except StrictgenError:
            return  # apply ends that row, as it does without a head start
        mask = self._mask_rows(len(indices))
        seen = [self.rows[i].seen for i in indices]
        self._pending = (indices, seen, fill_next_token_bitmask_batch_async([self.rows[i].grammar.matcher for i in indices], mask))

    def _wait_pending(self):
        """The background fill started by update_state, finished (None if there is none)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending[2].result()
        return pending

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if self._inert:
            return logits
        pending = self._wait_pending()
        if not self.rows:
            return logits
        indices = sorted(i for i in self.rows if i < logits.shape[0])
        if pending is not None and pending[0] == indices and pending[1] == [len(self.rows[i].output_ids) for i in indices]:
            apply_token_bitmask_inplace(logits, self._mask_rows(len(indices)), indices=indices)  # filled meanwhile
            return logits
        for i in indices:
            row = self.rows[i]
            try:
                row.catch_up()
            except StrictgenError as e:  # the output already broke the format: end it at once
                logger.error("strictgen: %s; the request ends here", e)
                row.grammar, row.seen = RequestGrammar(empty_document(self.compiler)), len(row.output_ids)
        mask = self._mask_rows(len(indices))
        fill_next_token_bitmask_batch([self.rows[i].grammar.matcher for i in indices], mask)
        apply_token_bitmask_inplace(logits, mask, indices=indices)
        return logits
