"""A logits processor for llama-cpp-python's own `create_completion` / `create_chat_completion`.

    from llama_cpp import LogitsProcessorList
    from strictgen.engine.llama_cpp_runtime import open_llama
    from strictgen.integrations.llama_cpp import StrictgenLlamaLogitsProcessor

    llm = open_llama(path)   # a llama_cpp.Llama that runs on every CPU (AMX included: see open_llama)
    processor = StrictgenLlamaLogitsProcessor.from_json_schema(llm, schema)
    out = llm.create_completion(prompt, logits_processor=LogitsProcessorList([processor]), max_tokens=64)

Use a fresh processor for each completion. llama.cpp still samples; strictgen only masks, so its
own truncation guard and jump-forward do not apply here (use strictgen.engine for those).
"""

from __future__ import annotations

import functools

import numpy as np

from strictgen.compile.compiled import CompiledGrammar
from strictgen.runtime.bitmask import apply_token_bitmask_inplace
from strictgen.tokenizer.info import TokenizerInfo

from ._rows import RowMatcher, masks_for


@functools.lru_cache(maxsize=8)
def _compiler(path: str, n_vocab: int):
    """One GrammarCompiler per model file, so repeated schemas compile once (its cache)."""
    from strictgen.compile.compiler import GrammarCompiler

    return GrammarCompiler(TokenizerInfo.from_gguf(path, vocab_size=n_vocab))


class StrictgenLlamaLogitsProcessor:
    def __init__(self, grammar: CompiledGrammar):
        self.row = RowMatcher(grammar)

    @classmethod
    def from_json_schema(cls, llm, schema, **compile_options) -> StrictgenLlamaLogitsProcessor:
        return cls(_compiler(str(llm.model_path), int(llm.n_vocab())).compile_json_schema(schema, **compile_options))

    @property
    def matcher(self):
        return self.row.matcher

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        self.row.advance(input_ids)
        apply_token_bitmask_inplace(scores, masks_for([self.row.matcher], scores.shape[-1])[0])
        return scores
