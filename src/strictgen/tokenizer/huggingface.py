"""Hugging Face tokenizers: each id's bytes read from a `tokenizers` backend's tokenizer.json.

The JSON names the model (BPE, Unigram...), the pre-tokenizer and the decoder; from those this module
decides the piece style (byte-level, SentencePiece, raw text) and decodes every piece, and it places
the added tokens, whose content is literal text.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import numpy as np

from strictgen.errors import StrictgenError
from strictgen.tokenizer.pieces import (
    BYTE_LEVEL,
    RAW,
    SENTENCEPIECE,
    ReadVocab,
    decode_byte_level_all,
    decode_sentencepiece,
)

__all__ = ["read_huggingface_vocab", "tokenizer_json"]

# For a bare tokenizers.Tokenizer (which has no notion of EOS): special tokens that end generation by convention.
_KNOWN_EOS = (
    "</s>",
    "<|endoftext|>",
    "<|im_end|>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<eos>",
    "<end_of_turn>",
    "<|end|>",
    "<｜end▁of▁sentence｜>",
)


def read_huggingface_vocab(tok: Any) -> ReadVocab:
    """A `tokenizers.Tokenizer` or a fast transformers tokenizer (duck-typed: no transformers import)."""
    backend = getattr(tok, "backend_tokenizer", tok)
    if not hasattr(backend, "to_str"):
        raise StrictgenError(
            f"{type(tok).__name__} has no tokenizers backend; pass a tokenizers.Tokenizer or a fast "
            "transformers tokenizer (use_fast=True)"
        )
    data = tokenizer_json(backend)
    model = data.get("model") or {}
    style, meta = _detect_style(data)
    byte_pieces = bool(model.get("byte_fallback")) or "ByteFallback" in _component_types(data.get("decoder"))

    if model.get("type") == "Unigram":
        pieces = {piece: i for i, (piece, _score) in enumerate(model.get("vocab") or [])}
    else:
        pieces = dict(model.get("vocab") or {})
    added = data.get("added_tokens") or []
    size = max([-1, *pieces.values(), *(a["id"] for a in added)]) + 1
    tokens: list[bytes] = [b""] * size
    present = np.zeros(size, dtype=bool)
    special: set[int] = set()

    texts = list(pieces)
    if style == BYTE_LEVEL:
        decoded = decode_byte_level_all(texts)
    elif style == SENTENCEPIECE:
        decoded = map(functools.partial(decode_sentencepiece, meta=meta, byte_pieces=byte_pieces), texts)
    else:
        decoded = map(str.encode, texts)
    ids = np.fromiter(pieces.values(), dtype=np.int64, count=len(pieces))
    placed = np.array(tokens, dtype=object)  # object arrays: numpy places the pieces in C
    placed[ids] = np.fromiter(decoded, dtype=object, count=len(pieces))
    tokens = placed.tolist()
    present[ids] = True
    # <unk> stands for text the vocab lacks; emitting it writes no real text
    unk = model.get("unk_token")
    if unk is not None and unk in pieces:
        special.add(pieces[unk])
    if isinstance(model.get("unk_id"), int) and 0 <= model["unk_id"] < size:  # Unigram names it by id
        special.add(model["unk_id"])
    # Added tokens are matched in the text before the model's byte mapping (on raw text, or the
    # normalizer's output when `normalized`), so their content is literal text, never byte-level encoded.
    for a in added:
        i = a["id"]
        tokens[i] = a["content"].encode("utf-8")
        present[i] = True
        if a.get("special"):
            special.add(i)
        else:
            special.discard(i)
    special.update(np.flatnonzero(~present).tolist())  # holes in the id space

    found: list[int] = []
    if tok is not backend:  # a transformers tokenizer knows its specials and EOS
        special.update(i for i in (getattr(tok, "all_special_ids", None) or []) if isinstance(i, int) and 0 <= i < size)
        eos = getattr(tok, "eos_token_id", None)
        found = [eos] if isinstance(eos, int) else list(eos or [])
    if not found:
        by_content = {a["content"]: a["id"] for a in added if a.get("special")}
        found = [by_content[name] for name in _KNOWN_EOS if name in by_content]
    return ReadVocab(tokens, sorted(special), found, f"huggingface:{style}")


def _component_types(component: Any) -> set[str]:
    """Every `type` inside a tokenizer.json component, through Sequence nesting."""
    types: set[str] = set()
    stack = [component]
    while stack:
        c = stack.pop()
        if isinstance(c, dict):
            if "type" in c:
                types.add(c["type"])
            stack.extend(v for v in c.values() if isinstance(v, (dict, list)))
        elif isinstance(c, list):
            stack.extend(c)
    return types


def _find_components(component: Any, type_name: str) -> list[dict]:
    found: list[dict] = []
    stack = [component]
    while stack:
        c = stack.pop()
        if isinstance(c, dict):
            if c.get("type") == type_name:
                found.append(c)
            stack.extend(v for v in c.values() if isinstance(v, (dict, list)))
        elif isinstance(c, list):
            stack.extend(c)
    return found


def tokenizer_json(backend: Any) -> dict:
    """What from_huggingface reads of tokenizer.json. A BPE model's vocabulary and components are
    asked for directly: serialising the whole tokenizer and parsing it back (its merges are most of
    it) took 60% of preparing a 128k vocabulary."""
    model = getattr(backend, "model", None)
    if type(model).__name__ != "BPE" or not hasattr(backend, "get_vocab") or not hasattr(backend, "get_added_tokens_decoder"):
        return json.loads(backend.to_str())
    parts = {}
    for name in ("normalizer", "pre_tokenizer", "decoder"):
        part = getattr(backend, name, None)
        parts[name] = json.loads(part.__getstate__()) if part is not None else None
    added = [
        {"id": i, "content": a.content, "special": bool(a.special)}
        for i, a in sorted(backend.get_added_tokens_decoder().items())
    ]
    vocab = backend.get_vocab(with_added_tokens=False)
    return {"model": {"type": "BPE", "vocab": vocab, "unk_token": model.unk_token, "byte_fallback": bool(getattr(model, "byte_fallback", False))},
            "added_tokens": added, **parts}


def _detect_style(data: dict) -> tuple[str, str]:
    """(style, metaspace char) from a tokenizer.json: byte-level BPE, SentencePiece-like, or raw text."""
    decoder, pre, norm = data.get("decoder"), data.get("pre_tokenizer"), data.get("normalizer")
    dec_types = _component_types(decoder)
    unsupported = dec_types & {"WordPiece", "BPEDecoder", "CTC"}
    if unsupported:
        raise StrictgenError(f"tokenizer decoder {sorted(unsupported)} is not supported (tokens have no fixed bytes)")
    if "ByteLevel" in dec_types | _component_types(pre) | _component_types(norm):
        return BYTE_LEVEL, ""
    for part in (decoder, pre):
        for m in _find_components(part, "Metaspace"):
            return SENTENCEPIECE, m.get("replacement") or "\u2581"
    for part in (decoder, norm):
        for r in _find_components(part, "Replace"):
            pattern = r.get("pattern") or {}
            if "\u2581" in (pattern.get("String"), r.get("content")):
                return SENTENCEPIECE, "\u2581"
    if "ByteFallback" in dec_types or (data.get("model") or {}).get("byte_fallback"):
        return SENTENCEPIECE, "\u2581"
    return RAW, ""
