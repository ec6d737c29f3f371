"""Token-string decoding styles: the private encodings tokenizers keep their pieces in, undone to bytes.

Byte-level BPE (GPT-2's byte-to-unicode alphabet) and SentencePiece (`▁` for a space, `<0xNN>` byte
pieces) are the two styles real vocabularies use; the readers of each vocabulary format
(tokenizer.json, GGUF) name a style and decode every piece through the functions here.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

__all__ = [
    "BYTE_LEVEL", "SENTENCEPIECE", "RAW", "BYTE_PIECE",
    "decode_byte_level", "decode_byte_level_all", "decode_sentencepiece", "ReadVocab",
]


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
BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")

BYTE_LEVEL = "byte_level"
SENTENCEPIECE = "sentencepiece"
RAW = "raw"


def _alphabet_tables() -> tuple[np.ndarray, np.ndarray]:
    """Code point -> byte, and code point -> in the alphabet; the last entry stands for every code
    point past the alphabet."""
    size = max(map(ord, _BYTE_TO_CHAR.values())) + 2
    to_byte, inside = np.zeros(size, dtype=np.uint8), np.zeros(size, dtype=bool)
    for b, ch in _BYTE_TO_CHAR.items():
        to_byte[ord(ch)], inside[ord(ch)] = b, True
    return to_byte, inside


_ALPHABET_BYTE, _IN_ALPHABET = _alphabet_tables()


def decode_byte_level_all(pieces: list[str]) -> list[bytes]:
    """decode_byte_level of every piece at once (128k pieces one by one took a sixth of preparing
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
        out[i] = decode_byte_level(pieces[i])
    return out


def decode_byte_level(piece: str) -> bytes:
    """Bytes of a byte-level BPE piece; like tokenizers' ByteLevel decoder, a piece with a character
    outside the alphabet is taken literally as UTF-8."""
    if _NOT_IN_ALPHABET.search(piece):
        return piece.encode("utf-8")
    return piece.translate(_CHAR_TO_LATIN1).encode("latin-1")


def decode_sentencepiece(piece: str, meta: str = "\u2581", byte_pieces: bool = True) -> bytes:
    """Bytes of a SentencePiece piece: `▁` is a space and `<0xNN>` (byte fallback) is the single byte NN."""
    if byte_pieces and len(piece) == 6:
        m = BYTE_PIECE.fullmatch(piece)
        if m:
            return bytes([int(m.group(1), 16)])
    return piece.replace(meta, " ").encode("utf-8")


class ReadVocab(NamedTuple):
    """What a reader of one vocabulary format hands TokenizerInfo: each id's bytes, the ids that are
    never text, the EOS ids the source names (maybe none), and a label of the source."""

    tokens: list[bytes]
    special_ids: list[int]
    eos_ids: list[int]
    source: str
