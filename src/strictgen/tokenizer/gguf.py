"""GGUF files: a small reader of the key/value header, and the vocabulary llama.cpp stores in it.

gguf.GGUFReader builds numpy views for every string of every array (~2-4 s for a 49k vocab);
reading just the header is ~100x faster. tests/tokenizer/test_info.py checks it against GGUFReader.
"""

from __future__ import annotations

import functools
import mmap
import struct
from pathlib import Path
from typing import Any

import numpy as np

from strictgen.errors import StrictgenError
from strictgen.tokenizer.pieces import BYTE_PIECE, ReadVocab, decode_byte_level, decode_sentencepiece

__all__ = ["VOCAB_KEYS", "read_gguf_metadata", "read_gguf_vocab"]

# llama.cpp's token types
_CONTROL, _USER_DEFINED, _UNUSED, _BYTE, _UNKNOWN = 3, 4, 5, 6, 2
_EOS_KEYS = ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id")
VOCAB_KEYS = frozenset({"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", *_EOS_KEYS})


def read_gguf_vocab(path: str | Path) -> ReadVocab:
    """The vocabulary stored in a GGUF file (llama.cpp's `tokenizer.ggml.*` metadata): control,
    unused and unknown pieces are special; EOS ids are the eos/eot/eom keys the file names."""
    fields = read_gguf_metadata(path, VOCAB_KEYS)
    model = fields.get("tokenizer.ggml.model")
    pieces = fields.get("tokenizer.ggml.tokens")
    if pieces is None:
        raise StrictgenError(f"{path}: no tokenizer.ggml.tokens in this GGUF file (model {model!r})")
    types = fields.get("tokenizer.ggml.token_type")
    if types is None:
        types = np.ones(len(pieces), dtype=np.int32)
    if model == "gpt2":
        decode = decode_byte_level
    elif model in ("llama", "t5"):
        decode = functools.partial(decode_sentencepiece, byte_pieces=False)
    else:
        raise StrictgenError(f"{path}: unsupported tokenizer.ggml.model {model!r} (supported: gpt2, llama, t5)")
    tokens: list[bytes] = []
    special: list[int] = []
    for i, (piece, ttype) in enumerate(zip(pieces, types.tolist())):
        if ttype in (_CONTROL, _UNUSED, _UNKNOWN):
            tokens.append(piece.encode("utf-8"))
            special.append(i)
        elif ttype == _USER_DEFINED:
            tokens.append(piece.encode("utf-8"))  # llama.cpp copies user-defined text as is
        elif ttype == _BYTE:
            m = BYTE_PIECE.fullmatch(piece)
            if not m:
                raise StrictgenError(f"{path}: byte token {i} is {piece!r}, expected <0xNN>")
            tokens.append(bytes([int(m.group(1), 16)]))
        else:
            tokens.append(decode(piece))
    found: list[int] = []
    for key in _EOS_KEYS:
        value = fields.get(key)
        if value is not None and 0 <= int(value) < len(tokens) and int(value) not in found:
            found.append(int(value))
    return ReadVocab(tokens, special, found, f"gguf:{model}")


# GGUF value types: uint8 int8 uint16 int16 uint32 int32 float32 bool string array uint64 int64 float64
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


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
        if vtype in _SCALAR:
            fmt = end + _SCALAR[vtype]
            return (struct.unpack_from(fmt, buf, pos)[0] if keep else None), pos + struct.calcsize(fmt)
        if vtype == _STRING:
            raw, pos = read_str(pos)
            return (raw.decode("utf-8") if keep else None), pos
        if vtype == _ARRAY:
            (itype,) = struct.unpack_from(end + "I", buf, pos)
            (n,) = struct.unpack_from(count_fmt, buf, pos + 4)
            pos += 4 + count_size
            if itype in _SCALAR:
                dtype = np.dtype(end + _SCALAR[itype])
                nbytes = n * dtype.itemsize
                value = np.frombuffer(buf[pos : pos + nbytes], dtype=dtype) if keep else None
                return value, pos + nbytes
            if itype == _STRING:
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
