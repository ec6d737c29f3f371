"""transformers on torch CPU: Hugging Face model folders, and GGUF files when llama.cpp is absent.

GGUF weights are dequantised to float32 by transformers (needs the `gguf` package). Everything is
loaded from local files: nothing is fetched from a model hub.
"""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path

import numpy as np

from strictgen.errors import ModelError
from strictgen.tokenizer.info import TokenizerInfo

from .model import ChatTemplate, Model


class TransformersModel(Model):
    runtime = "transformers"

    def __init__(self, path: str | Path, *, threads: int | None = None):
        super().__init__()
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise ModelError(f"the transformers runtime needs torch and transformers ({exc}); pip install 'strictgen[transformers]'") from exc
        path = Path(path)
        if threads:
            torch.set_num_threads(threads)
        self._torch = torch
        if path.is_file():  # a GGUF file
            folder, kwargs = str(path.parent), {"gguf_file": path.name}
        elif path.is_dir():
            folder, kwargs = str(path), {}
        else:
            raise ModelError(f"no model at {path}")
        try:
            # transformers draws its own progress bars on stderr; the loader shows one line instead
            with contextlib.redirect_stderr(io.StringIO()):
                self.hf_tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, **kwargs)
                self.hf_model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32, **kwargs)
        except (OSError, ValueError) as exc:
            raise ModelError(f"transformers cannot load {path}: {exc}") from exc
        self.hf_model.eval()
        self.name = path.name
        width = int(self.hf_model.config.vocab_size)
        if path.is_file():
            self.tokenizer_info = TokenizerInfo.from_gguf(path, vocab_size=width)
            from .gguf_meta import gguf_chat_settings

            self.chat_template, self.add_bos, self.bos_token_id = gguf_chat_settings(path)
        else:
            self.tokenizer_info = TokenizerInfo.from_huggingface(self.hf_tokenizer, vocab_size=max(width, len(self.hf_tokenizer)))
            tk = self.hf_tokenizer
            self.chat_template = ChatTemplate(getattr(tk, "chat_template", None), tk.bos_token or "", tk.eos_token or "")
            self.bos_token_id = tk.bos_token_id
            probe = tk("a", add_special_tokens=True)["input_ids"]
            self.add_bos = bool(tk.bos_token_id is not None and probe and probe[0] == tk.bos_token_id)
        self._cache = None
        import inspect

        params = inspect.signature(self.hf_model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"  # renamed in transformers 5.x
        self._last_only = {"logits_to_keep": 1} if "logits_to_keep" in params else {}

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        return list(self.hf_tokenizer(text, add_special_tokens=False, split_special_tokens=not special)["input_ids"])

    def _forward(self, tokens: list[int]) -> np.ndarray:
        torch = self._torch
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self.hf_model(
                input_ids=torch.tensor([tokens], dtype=torch.long), use_cache=True, **{self._cache_kw: self._cache}, **self._last_only
            )
        self._cache = out.past_key_values
        logits = out.logits[0, -1].float().numpy().copy()
        self.stats.extra["last_forward_s"] = time.perf_counter() - t0
        return logits

    def _truncate(self, length: int) -> None:
        if length == 0 or self._cache is None:
            self._cache = None
            return
        # a negative count removes that many tokens in every transformers version (5.x refuses a
        # positive absolute length, 4.x took either)
        drop = self._cache.get_seq_length() - length
        if drop > 0:
            self._cache.crop(-drop)

    def close(self) -> None:
        self._cache = None
        self.hf_model = None
