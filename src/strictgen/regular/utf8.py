"""Unicode code point ranges as UTF-8 byte-range sequences, so character classes run on bytes."""

from __future__ import annotations

_SURROGATE_LO, _SURROGATE_HI = 0xD800, 0xDFFF
_LENGTH_LIMITS = (0x7F, 0x7FF, 0xFFFF)


def _encode(cp: int) -> bytes:
    return chr(cp).encode("utf-8")


def utf8_sequences(lo: int, hi: int) -> list[tuple[tuple[int, int], ...]]:
    """Split code points lo..hi into sequences of byte ranges whose concatenations are exactly
    the UTF-8 encodings of those code points (surrogates excluded)."""
    out: list[tuple[tuple[int, int], ...]] = []
    todo = [(lo, hi)]
    while todo:
        lo, hi = todo.pop()
        if lo > hi:
            continue
        if lo <= _SURROGATE_HI and hi >= _SURROGATE_LO:
            todo.append((_SURROGATE_HI + 1, hi))
            todo.append((lo, _SURROGATE_LO - 1))
            continue
        split = next((m for m in _LENGTH_LIMITS if lo <= m < hi), None)
        if split is not None:
            todo.append((split + 1, hi))
            todo.append((lo, split))
            continue
        if hi <= 0x7F:
            out.append(((lo, hi),))
            continue
        for i in (1, 2, 3):  # make every continuation byte position span a full or aligned range
            m = (1 << (6 * i)) - 1
            if lo & ~m != hi & ~m:
                if lo & m:
                    todo.append(((lo | m) + 1, hi))
                    todo.append((lo, lo | m))
                    break
                if hi & m != m:
                    todo.append((hi & ~m, hi))
                    todo.append((lo, (hi & ~m) - 1))
                    break
        else:
            a, b = _encode(lo), _encode(hi)
            out.append(tuple(zip(a, b)))
    return out
