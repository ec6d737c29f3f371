"""An SGLang grammar backend: `--grammar-backend strictgen`.

    python -m strictgen.integrations.sglang --model-path MODEL --grammar-backend strictgen [sglang args]

registers the backend, then runs `sglang.launch_server` with the arguments passed on. Installed
with strictgen, `register` is also an SGLang general plugin (entry point `sglang.srt.plugins`), which
SGLang runs in every process it spawns, so plain `sglang serve ... --grammar-backend strictgen`
works too. Requests use SGLang's own fields: `json_schema` (or "$$ANY$$" for any JSON), `regex`,
`ebnf` (strictgen reads it as GBNF), `structural_tag` (the JSON SGLang makes of a `structural_tag`
response format). Speculative decoding (EAGLE, n-gram) works as with SGLang's xgrammar backend:
SGLang's spec_utils.traverse_tree fills the verify tree's rows through accept_token /
fill_vocab_mask / rollback; `traverse_draft_tree` does the same walk in one call. See docs/engines.md.

This module imports SGLang; strictgen itself never does.
"""

from __future__ import annotations

import logging
import sys
from typing import List, Optional, Tuple

import torch
from sglang.srt.constrained.base_grammar_backend import (
    BaseGrammarBackend,
    BaseGrammarObject,
    GrammarRow,
    GrammarStats,
    InvalidGrammarObject,
)

from strictgen.compile.compiler import GrammarCompiler
from strictgen.errors import InternalError, StrictgenError
from strictgen.runtime.batch import fill_next_token_bitmask_batch
from strictgen.runtime.bitmask import allocate_token_bitmask, apply_token_bitmask_inplace
from strictgen.tokenizer.info import TokenizerInfo

from ._formats import GRAMMAR, JSON_OBJECT, JSON_SCHEMA, REGEX, STRUCTURAL_TAG, compile_format
from ._grammar import RequestGrammar

logger = logging.getLogger(__name__)

NAME = "strictgen"
ANY_JSON = "$$ANY$$"  # SGLang's json_schema value for json_object mode


class StrictgenGrammar(BaseGrammarObject):
    """One request. The vocab mask is strictgen's packed int32 bitmask (the layout xgrammar uses),
    kept on the host: `apply_vocab_mask` uploads it once and masks the whole batch in one pass
    (strictgen.runtime.bitmask)."""

    def __init__(self, grammar: RequestGrammar, key: str = "", stats: GrammarStats | None = None):
        super().__init__()
        self.grammar = grammar
        self.key = key
        self.grammar_stats = stats

    @property
    def matcher(self):
        return self.grammar.matcher

    def accept_token(self, token: int) -> None:
        if self.grammar.is_terminated():
            return  # SGLang feeds the token that ended the request once more on some paths
        self.current_token = token
        if not self.grammar.accept_tokens([token]):
            raise ValueError(f"token {token} does not follow the {self.key or 'grammar'}")  # SGLang aborts the request

    def rollback(self, k: int) -> None:
        self.grammar.rollback(k)

    # speculative decoding: SGLang's spec_utils.traverse_tree drives accept_token / fill_vocab_mask /
    # rollback(1) node by node, as for its xgrammar backend; this does the same walk in one call

    def traverse_draft_tree(self, retrieve_next_token, retrieve_next_sibling, draft_tokens, vocab_mask: torch.Tensor,
                            time_threshold: float | None = None) -> int:
        """Fill vocab_mask's rows for a verify tree (node 0: the last accepted token) as
        spec_utils.traverse_tree does, each row exactly the mask after the tokens on its path
        (runtime/drafts.py); the state does not move. Returns the nodes given a mask."""
        as_list = lambda t: t.tolist() if hasattr(t, "tolist") else list(t)  # noqa: E731
        return self.matcher.fill_draft_tree_bitmasks(as_list(draft_tokens), as_list(retrieve_next_token), as_list(retrieve_next_sibling),
                                                     vocab_mask, time_budget=time_threshold)

    def validate_tokens(self, tokens: List[int]) -> int:
        """How many leading draft tokens the grammar accepts from here; the state does not move."""
        return self.matcher.validate_tokens(tokens)

    def is_terminated(self) -> bool:
        return self.grammar.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device) -> torch.Tensor:
        # numpy, then a view: SGLang allocates a mask every step, and torch.full of a (64, 4040)
        # int32 mask took 0.5 ms on one CPU thread and 26 ms on two of a loaded host (its parallel
        # region waits for busy cores) where numpy takes 0.02 ms (scripts/sglang_overlap_wait.py)
        return torch.from_numpy(allocate_token_bitmask(batch_size, vocab_size))

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        self.grammar.fill_bitmask(vocab_mask, idx)

    @staticmethod
    def fill_vocab_mask_batched(entries: List[GrammarRow], vocab_mask: torch.Tensor) -> None:
        """The batch's rows at once: first-time masks of distinct states on strictgen's thread pool."""
        if entries:
            fill_next_token_bitmask_batch([e.grammar.matcher for e in entries], vocab_mask, [e.row for e in entries])

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        if vocab_mask.device.type == "cpu":
            vocab_mask.numpy().fill(-1)  # as allocate_vocab_mask: no torch parallel region for a host mask
        else:
            vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device) -> torch.Tensor:
        return vocab_mask  # stays on the host; see the class docstring

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        apply_token_bitmask_inplace(logits, vocab_mask)

    def copy(self) -> StrictgenGrammar:
        stats = None
        if self.grammar_stats is not None:
            stats = GrammarStats(dispatch_type=self.grammar_stats.dispatch_type, is_cache_hit=True)
        return StrictgenGrammar(self.grammar.copy(), self.key, stats)

    # jump-forward: text the grammar forces, appended by the engine and re-tokenized with the output

    def try_jump_forward(self, tokenizer) -> Optional[Tuple[List[int], str]]:
        text = self.grammar.jump_forward_string()
        return ([], text) if text else None

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids: List[int], new_output_ids: List[int], next_state: int) -> None:
        if not self.grammar.retokenize(old_output_ids, new_output_ids):
            raise ValueError(f"the re-tokenized output does not follow the {self.key or 'grammar'}")

    def __repr__(self) -> str:
        return f"StrictgenGrammar({self.key!r}, tokens={self.grammar.num_processed_tokens})"


class StrictgenGrammarBackend(BaseGrammarBackend):
    """SGLang's backend interface over one strictgen GrammarCompiler (which caches by content)."""

    def __init__(self, tokenizer, vocab_size: int, eos_token_ids=None):
        super().__init__()
        eos = sorted(int(i) for i in eos_token_ids) if eos_token_ids else None
        self.compiler = GrammarCompiler(TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size, eos_token_ids=eos))

    def _compile(self, kind: str, key: str, value) -> BaseGrammarObject:
        try:
            compiled = compile_format(self.compiler, key, value)
        except (StrictgenError, InternalError) as e:  # never a crash of the engine: the request alone fails
            logger.info("strictgen refused a %s: %s", kind, e)
            return InvalidGrammarObject(str(e))
        return StrictgenGrammar(RequestGrammar(compiled), kind, GrammarStats(dispatch_type=kind))

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        if key_string == ANY_JSON:
            return self._compile("json", JSON_OBJECT, True)
        return self._compile("json", JSON_SCHEMA, key_string)

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._compile("regex", REGEX, key_string)

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        return self._compile("ebnf", GRAMMAR, key_string)

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        return self._compile("structural_tag", STRUCTURAL_TAG, key_string)


def _create(server_args, tokenizer, vocab_size, eos_token_ids) -> StrictgenGrammarBackend:
    return StrictgenGrammarBackend(tokenizer, vocab_size, eos_token_ids)


def register() -> None:
    """Make `--grammar-backend strictgen` a choice of SGLang's argument parser and resolve it to
    StrictgenGrammarBackend. Idempotent."""
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES, add_grammar_backend_choices
    from sglang.srt.constrained.base_grammar_backend import register_grammar_backend

    if NAME not in GRAMMAR_BACKEND_CHOICES:
        add_grammar_backend_choices([NAME])
    register_grammar_backend(NAME, _create)


def main(argv: list[str] | None = None) -> None:
    """Register, then run `python -m sglang.launch_server` in this process with `argv`."""
    import runpy

    register()
    sys.argv = ["sglang.launch_server", *(sys.argv[1:] if argv is None else argv)]
    runpy.run_module("sglang.launch_server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
