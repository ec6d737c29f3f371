"""Chat settings stored in a GGUF file's metadata: template, BOS/EOS tokens, whether to add BOS."""

from __future__ import annotations

from pathlib import Path

from strictgen.tokenizer.info import read_gguf_metadata

from .model import ChatTemplate

_KEYS = frozenset(
    {
        "tokenizer.chat_template",
        "tokenizer.ggml.tokens",
        "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.add_bos_token",
        "general.name",
    }
)


def gguf_chat_settings(path: str | Path) -> tuple[ChatTemplate, bool, int | None]:
    """(chat template, add BOS?, BOS id) from a GGUF file."""
    meta = read_gguf_metadata(path, _KEYS)
    tokens = meta.get("tokenizer.ggml.tokens") or []

    def piece(key: str) -> tuple[str, int | None]:
        value = meta.get(key)
        if value is None or not 0 <= int(value) < len(tokens):
            return "", None
        return tokens[int(value)], int(value)

    bos, bos_id = piece("tokenizer.ggml.bos_token_id")
    eos, _ = piece("tokenizer.ggml.eos_token_id")
    add_bos = bool(meta.get("tokenizer.ggml.add_bos_token", False))
    return ChatTemplate(meta.get("tokenizer.chat_template"), bos, eos), add_bos, bos_id
