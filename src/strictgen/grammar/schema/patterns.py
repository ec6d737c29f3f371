"""The regular languages of JSON Schema `pattern`s (ECMA-262 searches; regex.py translates them),
with the one shape of lookahead a pattern may start with, and the patterns that are one literal
string (`^text$`), which the disjointness proofs read without building a language."""

from __future__ import annotations

import functools
import re

from strictgen.errors import RegexError

__all__ = ["literal_pattern", "pattern_language"]


def _structure(p: str, start: int = 0):
    """(index, char, depth before it) for each `(`, `)` and `|` of regex `p` outside escapes and classes."""
    depth, i, in_class = 0, start, False
    while i < len(p):
        c = p[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c in "()|":
            yield i, c, depth
            depth += {"(": 1, ")": -1, "|": 0}[c]
        i += 1


def _split_leading_lookahead(p: str) -> tuple[str, str] | None:
    """`^(?!A)B` with no alternation at the top level of B → (A, B); otherwise None."""
    if not p.startswith("^(?!"):
        return None
    close = next((i for i, c, d in _structure(p, 4) if c == ")" and d == 0), None)
    if close is None:
        return None
    a, b = p[4:close], p[close + 1 :]
    if any(c == "|" and d == 0 for _, c, d in _structure(b)):
        return None
    return a, b


@functools.lru_cache(maxsize=4096)
def pattern_language(p: str):
    """Strings containing a match of the ECMA-262 pattern `p` (JSON Schema `pattern`).

    Beyond regex.py: a leading negative lookahead `^(?!A)B` is the difference of two searches,
    strings with a prefix matching B minus strings with a prefix matching A."""
    from ..ir import difference
    from ..regex import parse_regex_search

    try:
        return parse_regex_search(p)
    except RegexError:
        split = _split_leading_lookahead(p)
        if split is None:
            raise
        a, b = split
        return difference(parse_regex_search("^(?:" + b + ")"), parse_regex_search("^(?:" + a + ")"))


# `^text$` with no ECMA-262 syntax character (^ $ \\ . * + ? ( ) [ ] { } |) nor surrogate in text
_LITERAL_PATTERN = re.compile("\\^([^^$\\\\.*+?()\\[\\]{}|\ud800-\udfff]*)\\$\\Z")


def literal_pattern(p: str) -> str | None:
    """The one string the ECMA-262 pattern `p` matches when it is `^text$` with no syntax
    character (nor surrogate) in `text` (`^` and `$` match only at the ends without the `m`
    flag), else None: a tag such as `^Abs$` is decided without building its language. (One
    regex match: oneOf's pairwise proofs ask it of every pair of tags.)"""
    m = _LITERAL_PATTERN.match(p)
    return m.group(1) if m else None
