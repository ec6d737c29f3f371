"""Special-token references inside grammar texts, shared by the GBNF and Lark front ends.

    <|im_end|>   <｜tool▁sep｜>   <think>    a special token named by its text
    <[128000]>   <[128000-128010]>   <[5,7,9-12]>    special tokens by id (inclusive ranges)

Negations (`!<...>` in llama.cpp, `<[^...]>` in llguidance) mean "any one token but these": a set
of text tokens that no byte-level grammar can state, so they are refused. Whether a name or an id
is a special token of the vocabulary is checked when the grammar is compiled for it
(compile/special_tokens.py): an unknown name or an ordinary token is an error there.
"""

from __future__ import annotations

import re

from .ir import SpecialToken

__all__ = ["TOKEN_REF", "token_ref"]

TOKEN_REF = re.compile(r"<\[[^\]\n]*\]>|<\|[^|\n]*\|>|<｜[^｜\n]*｜>|<[^\s<>\[\]|]+>")
"""A special-token reference at the start of the text it is matched against."""

_ID_ITEM = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def token_ref(text: str) -> SpecialToken:
    """The reference written `text` (a whole TOKEN_REF match). Raises ValueError(message, offset)."""
    if not text.startswith("<["):
        return SpecialToken(name=text)
    body = text[2:-2]
    if body.strip() == "*":
        raise ValueError("a wildcard token ('<[*]>': any one token) includes text tokens and is not supported", 0)
    if body.lstrip().startswith("^"):
        raise ValueError("a negated token set ('<[^...]>': any token but these) includes text tokens and is "
                         "not supported; list the special tokens allowed", 0)
    ranges = []
    offset = 2
    for item in body.split(","):
        m = _ID_ITEM.match(item)
        if m is None:
            raise ValueError(f"expected a token id or an id range 'A-B' in {text!r}", offset)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo:
            raise ValueError(f"token id range {lo}-{hi} is reversed", offset)
        ranges.append((lo, hi))
        offset += len(item) + 1
    return SpecialToken(ids=tuple(sorted(ranges)))
