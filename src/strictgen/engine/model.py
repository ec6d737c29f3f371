"""The model interface the generation loop drives, whatever runs the network underneath.

A model keeps one sequence in its KV cache. The loop only needs four things from it: append tokens
and get the logits after the last one, roll the cache back to a position (jump-forward re-tokenizes
a boundary), tokenize text, and the vocabulary as a TokenizerInfo for masks. Tokens go through the
network in pieces aligned to absolute positions (kv_cache.py), so logits never depend on what the
cache held before. Two runtimes implement it: llama.cpp (`llama_cpp_runtime.py`) and
transformers on torch CPU (`transformers_runtime.py`).
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from strictgen.errors import ModelError
from strictgen.lru import BoundedLRU
from strictgen.tokenizer.info import TokenizerInfo

from .kv_cache import KVSequence, aligned_pieces


@dataclass
class ChatTemplate:
    """A model's chat template (Jinja text) and the special tokens it refers to."""

    source: str | None
    bos_token: str = ""
    eos_token: str = ""
    name: str = ""  # where it came from (a file path), for messages

    def replaced_by(self, path: str) -> "ChatTemplate":
        """The Jinja template in file `path` in place of this one (same BOS/EOS texts): `--chat-template`."""
        try:
            with open(path, encoding="utf-8") as f:
                source = f.read()
        except OSError as exc:
            raise ModelError(f"cannot read chat template {path}: {exc}") from exc
        try:
            _compiled_template(source)
        except Exception as exc:  # jinja2.TemplateSyntaxError and kin
            raise ModelError(f"chat template {path} does not compile: {exc}") from exc
        return ChatTemplate(source, self.bos_token, self.eos_token, path)

    def render(self, messages: list[dict], add_generation_prompt: bool = True, **extra) -> str:
        """The prompt text for `messages`; without a template, a plain "role: content" layout.

        `extra` goes to the template as variables (a server passes `tools=[...]` to templates that use them)."""
        if not self.source:
            lines = [f"{m['role']}: {m['content']}" for m in messages]
            return "\n".join(lines) + ("\nassistant: " if add_generation_prompt else "")
        return _compiled_template(self.source).render(
            messages=messages,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
            **extra,
        )


_TEMPLATES: BoundedLRU[object] = BoundedLRU(64)  # compiled chat templates, by source


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _compiled_template(source: str):
    """Compile a chat template once, in a sandbox (templates come from model files)."""
    got = _TEMPLATES.get(source)
    if got is None:
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message):
            raise ModelError(f"chat template: {message}")

        # as transformers renders them: loop controls, a tojson that returns plain text (jinja's own
        # returns Markup, which HTML-escapes every string concatenated to it) and keeps key order
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: time.strftime(fmt)
        env.filters["tojson"] = _tojson
        got = env.from_string(source)
        _TEMPLATES.put(source, got)
    return got


@dataclass
class ForwardStats:
    """Counters a model keeps about its forward passes."""

    prefill_calls: int = 0
    prefill_tokens: int = 0
    prefill_s: float = 0.0
    decode_calls: int = 0
    decode_tokens: int = 0
    decode_s: float = 0.0
    extra: dict = field(default_factory=dict)


class Model(ABC):
    """One sequence's worth of a causal language model."""

    runtime: str = "?"
    name: str = "?"
    tokenizer_info: TokenizerInfo
    chat_template: ChatTemplate
    add_bos: bool = False
    bos_token_id: int | None = None

    def __init__(self) -> None:
        self.kv = KVSequence()  # what the KV cache holds, and how much of it a new request may reuse
        self.stats = ForwardStats()

    @property
    def tokens(self) -> list[int]:
        """The tokens the KV cache holds (read them; change them through forward and truncate)."""
        return self.kv.tokens

    @property
    def vocab_size(self) -> int:
        """Width of the logits vector (may exceed the tokenizer's vocabulary)."""
        return self.tokenizer_info.vocab_size

    @abstractmethod
    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        """Token ids of `text` (no BOS); `special=True` turns special-token text into those tokens."""

    @abstractmethod
    def _forward(self, tokens: list[int]) -> np.ndarray:
        """Run `tokens` after the cache in one pass; return float32 logits after the last one."""

    @abstractmethod
    def _truncate(self, length: int) -> None:
        """Drop the cache past `length` tokens."""

    def forward(self, tokens: list[int]) -> np.ndarray:
        """Append `tokens` and return the next-token logits (a fresh float32 array): one pass per
        aligned piece, so the same tokens at the same positions always go through the same shapes."""
        if not tokens:
            raise ModelError("forward needs at least one token")
        tokens = list(tokens)
        base = len(self.kv.tokens)
        for pos, length in aligned_pieces(base, len(tokens), self.kv.chunk):
            piece = tokens[pos - base : pos - base + length]
            logits = self._forward(piece)
            self.kv.appended(pos, piece, alone=True)
        return logits

    def truncate(self, length: int) -> None:
        """Roll the KV cache back to its first `length` tokens."""
        if not 0 <= length <= len(self.tokens):
            raise ModelError(f"cannot roll the cache back to {length} tokens: it holds {len(self.tokens)}")
        if length < len(self.tokens):
            self._truncate(length)
            self.kv.truncate(length)

    def reset(self) -> None:
        self.truncate(0)

    def token_bytes(self, token_id: int, keep=()) -> bytes:
        """A token's bytes; a special token gives nothing unless `keep` holds it (a grammar's
        marker token stands for its text: CompiledGrammar.marker_tokens)."""
        if self.tokenizer_info.is_special[token_id] and token_id not in keep:
            return b""
        return self.tokenizer_info.token_bytes(token_id)

    def detokenize(self, ids: list[int], keep=()) -> bytes:
        """The bytes of `ids` (special tokens give nothing, except those in `keep`)."""
        return b"".join(self.token_bytes(i, keep) for i in ids)

    def encode_prompt(self, prompt: str, *, chat: bool = True, system: str | None = None) -> list[int]:
        """Prompt token ids: the chat template around a user message (or the raw text), BOS as the model wants."""
        if chat:
            messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
            text = self.chat_template.render(messages)
        else:
            text = prompt
        ids = self.tokenize(text, special=chat)
        if self.add_bos and self.bos_token_id is not None and (not ids or ids[0] != self.bos_token_id):
            ids = [self.bos_token_id] + ids
        return ids

    def close(self) -> None:
        """Free the runtime's memory (the model is unusable afterwards)."""
