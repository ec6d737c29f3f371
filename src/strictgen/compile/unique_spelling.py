"""Which strings can a JSON string's text so far still spell? (uniqueItems over enum strings,
unique_items.py.)

The grammar accepts every JSON spelling of a string (DESIGN.md §4 property 7): each character
raw, as a short escape, as \\uXXXX in either hex case, or (above U+FFFF) as a surrogate pair. So a
value is still possible exactly when the text's complete characters are a prefix of it and the
unfinished tail (part of a UTF-8 sequence or of an escape) begins one spelling of its next
character.
"""

from __future__ import annotations

import json

__all__ = ["consistent", "split_text"]

_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def consistent(text: bytes, values: tuple) -> tuple:
    """The strings of `values` that some spelling extending `text` (an open JSON string, from
    its opening quote, before its closing one) can still spell."""
    decoded, pending = split_text(text[1:])
    out = []
    for v in values:
        if not v.startswith(decoded):
            continue
        if pending:
            rest = v[len(decoded) :]
            if not rest or not any(s.startswith(pending) for s in _spellings(rest[0])):
                continue
        out.append(v)
    return tuple(out)


def _spellings(c: str) -> list[str]:
    """The spellings of character c, lowercased escapes (the text's tail is compared lowercased)."""
    out = [c.encode("utf-8").decode("latin-1")]
    if c in _SHORT:
        out.append(_SHORT[c])
    code = ord(c)
    if code > 0xFFFF:
        code -= 0x10000
        out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
    else:
        out.append(f"\\u{code:04x}")
    return out


def split_text(body: bytes) -> tuple[str, str]:
    """(the characters `body` spells completely, its unfinished tail): the tail as latin-1 text
    of its bytes, escapes lowercased; a high surrogate escape waits for its low half."""
    i, n, cut = 0, len(body), 0
    while i < n:
        b = body[i]
        if b == 0x5C:
            if i + 1 >= n:
                break
            if body[i + 1] != 0x75:  # a short escape
                i += 2
            else:
                if i + 6 > n:
                    break
                code = int(body[i + 2 : i + 6], 16)
                i += 6
                if 0xD800 <= code < 0xDC00:  # a high surrogate: the character may need its low half
                    nxt = body[i : i + 6]
                    if len(nxt) < 6 and b"\\u".startswith(nxt[:2]):
                        i -= 6  # the low half may still come
                        break
                    if nxt[:2] == b"\\u" and 0xDC00 <= int(nxt[2:], 16) < 0xE000:
                        i += 6
        elif b < 0x80:
            i += 1
        else:
            size = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            if i + size > n:
                break
            i += size
        cut = i
    decoded = json.loads(b'"' + body[:cut] + b'"')
    tail = body[cut:].decode("latin-1")
    return decoded, tail.lower() if tail.startswith("\\") else tail
