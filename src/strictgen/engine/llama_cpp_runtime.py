"""llama.cpp through llama-cpp-python: the default runtime for GGUF files (the embedded model).

Only llama-cpp-python's low-level pieces are used (decode a batch, read the last logits, drop KV
entries past a position); sampling, masks and jump-forward are ours. ctypes releases the GIL while
llama.cpp decodes, so the next mask can be computed in parallel.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from strictgen.errors import ModelError
from strictgen.tokenizer.info import TokenizerInfo

from .gguf_meta import gguf_chat_settings
from .model import Model


class LlamaCppModel(Model):
    runtime = "llama.cpp"

    def __init__(self, path: str | Path, *, n_ctx: int = 4096, threads: int | None = None):
        super().__init__()
        try:
            import llama_cpp
        except ImportError as exc:
            raise ModelError("llama-cpp-python is not installed: pip install 'strictgen[llama]' (builds from source)") from exc
        self._llama_cpp = llama_cpp
        path = Path(path)
        # llama-cpp-python's own default (half the logical cores): llama.cpp's threads spin while
        # they wait, so leaving a core free keeps them fast and lets the next mask run beside them
        threads = threads or max(1, (os.cpu_count() or 2) // 2)
        try:
            self.llm = llama_cpp.Llama(
                model_path=str(path), n_ctx=n_ctx, n_batch=512, n_threads=threads, n_threads_batch=threads,
                logits_all=False, verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"llama.cpp cannot load {path}: {exc}") from exc
        self.name = path.name
        self.path = path
        self.n_ctx = n_ctx
        width = int(self.llm.n_vocab())
        self.tokenizer_info = TokenizerInfo.from_gguf(path, vocab_size=width)
        self.chat_template, self.add_bos, self.bos_token_id = gguf_chat_settings(path)

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def _forward(self, tokens: list[int]) -> np.ndarray:
        llm = self.llm
        if len(self.tokens) + len(tokens) > self.n_ctx:
            raise ModelError(f"context full: {len(self.tokens)} + {len(tokens)} tokens exceed n_ctx={self.n_ctx}")
        llm.n_tokens = len(self.tokens)
        t0 = time.perf_counter()
        try:
            llm.eval(tokens)
        except RuntimeError as exc:
            raise ModelError(f"llama.cpp decode failed: {exc}") from exc
        ptr = llm._ctx.get_logits_ith(-1)
        logits = np.ctypeslib.as_array(ptr, shape=(self.vocab_size,)).astype(np.float32, copy=True)
        self.stats.extra["last_forward_s"] = time.perf_counter() - t0
        return logits

    def _truncate(self, length: int) -> None:
        # eval() drops KV entries from n_tokens onwards before decoding
        self.llm.n_tokens = length
        self.llm._ctx.kv_cache_seq_rm(-1, length, -1)

    def close(self) -> None:
        llm, self.llm = self.llm, None
        if llm is not None:
            llm.close()
