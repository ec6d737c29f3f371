"""A stand-in model for fast loop tests: real SmolLM2 vocabulary, pseudo-random logits.

The logits depend only on the tokens in the cache, so rollback and re-feeding are checked for real:
a loop that let the cache and the output disagree would change what comes next."""

from __future__ import annotations

import zlib

import numpy as np

import strictgen as sg
from strictgen.engine.model import ChatTemplate, Model
from strictgen.runtime.budget import GreedyTokenizer


class FakeModel(Model):
    runtime = "fake"
    name = "fake"

    def __init__(self, tokenizer_info: sg.TokenizerInfo, temperature: float = 3.0):
        super().__init__()
        self.tokenizer_info = tokenizer_info
        self.chat_template = ChatTemplate(None)
        self._greedy = GreedyTokenizer(tokenizer_info.all_token_bytes, tokenizer_info.is_special)
        self._scale = temperature
        self.calls: list[int] = []  # tokens fed per forward pass (however many aligned pieces it runs as)

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        return self._greedy.encode(text.encode("utf-8"))

    def forward(self, tokens: list[int]) -> np.ndarray:
        self.calls.append(len(tokens))
        return super().forward(tokens)

    def _forward(self, tokens: list[int]) -> np.ndarray:
        seq = np.asarray(self.tokens + tokens, dtype=np.int64)
        seed = zlib.crc32(seq.tobytes())
        return (np.random.default_rng(seed).standard_normal(self.vocab_size) * self._scale).astype(np.float32)

    def _truncate(self, length: int) -> None:
        pass  # the logits are a function of self.tokens, which the base class truncates
