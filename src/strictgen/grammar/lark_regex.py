"""Lark's literals to grammar IR: `"strings"i` and `/regexps/flags` in Python's `re` dialect.

Lark hands a terminal's regexp to Python's `re`; our regex front end (regex.py) reads JSON
Schema's ECMA-262 dialect. The two agree on structure (groups, `|`, quantifiers) and differ on
what a single character means (`.`, `\\d`, `\\w`, `\\s`, classes, escapes, case folding). So a
Python pattern is rewritten into the ECMA dialect with every one-character atom replaced by the
explicit code point set that Python's own `re` gives it (found by scanning every code point once
per distinct atom, cached): what a class matches is Python's answer, not a re-implementation.

Refused (RegexError with the position in the pattern): anchors (`^ $ \\A \\Z \\b \\B`: a terminal
is matched as a whole), lookaround, backreferences, conditionals, atomic groups, possessive
quantifiers, inline flags (`(?i)`, `(?i:...)`; write the flag after the closing `/`) and the `l`
flag. Lazy quantifiers mean what greedy ones do: a terminal stands for its regexp's language.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from strictgen.errors import RegexError

from .ir import Expr, lit
from .regex import parse_regex

__all__ = ["lark_string", "lark_regexp", "unescape"]

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "u": re.UNICODE, "x": re.VERBOSE}
_CHAR_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_HEX_SIZES = {"x": 2, "u": 4, "U": 8}
_QUANTIFIER = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")


def unescape(body: str) -> str:
    """What Lark makes of the text between the quotes or slashes of a literal: `\\n \\t \\r \\f`
    and `\\xHH \\uHHHH \\UHHHHHHHH` become their characters, `\\"` a quote, `\\\\` stays two
    backslashes, and any other escape is kept as written (backslash and character).
    Raises ValueError (with the offset) for a dangling backslash or short hex escape."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:
            raise ValueError("the literal ends with a lone backslash", i)
        e = body[i + 1]
        if e in "nftr":
            out.append(_CHAR_ESCAPES[e])
            i += 2
        elif e in _HEX_SIZES:
            digits = body[i + 2 : i + 2 + _HEX_SIZES[e]]
            if len(digits) != _HEX_SIZES[e] or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"escape '\\{e}' needs {_HEX_SIZES[e]} hex digits", i)
            cp = int(digits, 16)
            if cp > 0x10FFFF:
                raise ValueError(f"escape '\\{e}{digits}' is past U+10FFFF", i)
            out.append(chr(cp))
            i += 2 + len(digits)
        elif e == '"':
            out.append('"')
            i += 2
        else:
            out.append("\\" + e)
            i += 2
    return "".join(out)


def _re_flags(flags: str) -> int:
    bits = 0
    for f in flags:
        if f not in _FLAGS:
            raise RegexError(f"flag {f!r} is not supported (Lark's flags here: imsux)", flags, 0)
        bits |= _FLAGS[f]
    return bits


def lark_string(value: str, flags: str) -> Expr:
    """A string literal's language (`value` already unescaped); with `i`, every case variant
    Python's `re.IGNORECASE` matches."""
    if "i" not in flags:
        return lit(value)
    return lark_regexp(re.escape(value), "i")


def lark_regexp(pattern: str, flags: str) -> Expr:
    """The strings a Lark regexp terminal matches as a whole (`re.fullmatch(pattern, s, flags)`)."""
    bits = _re_flags(flags)
    try:
        re.compile(pattern, bits)
    except re.error as exc:
        raise RegexError(f"invalid regular expression: {exc.msg}", pattern, exc.pos or 0) from None
    return parse_regex(_Translator(pattern, bits).run())


@functools.cache
def _every_character() -> str:
    """Every Unicode scalar value in code point order (surrogates have no UTF-8 form)."""
    return "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))


@functools.lru_cache(maxsize=512)
def _python_set(atom: str, bits: int) -> str:
    """The ECMA class matching exactly the characters Python's `re` matches with `atom` (one
    character: a class, an escape, `.` or a literal) under `bits`: runs of consecutive matches
    over all code points are the class's ranges."""
    runs = re.finditer(f"(?:{atom})+", _every_character(), bits)
    ranges = []
    for m in runs:
        lo, hi = ord(m.group()[0]), ord(m.group()[-1])
        ranges.append(f"\\u{{{lo:X}}}" if lo == hi else f"\\u{{{lo:X}}}-\\u{{{hi:X}}}")
    return "[" + "".join(ranges) + "]"


class _Translator:
    """One pass over a Python pattern (already checked by `re.compile`), writing the ECMA form."""

    def __init__(self, pattern: str, bits: int) -> None:
        self.p = pattern
        self.bits = bits & ~re.MULTILINE
        self.verbose = bool(bits & re.VERBOSE)
        self.out: list[str] = []

    def refuse(self, what: str, pos: int) -> RegexError:
        return RegexError(f"{what} is not supported in a Lark terminal", self.p, pos)

    def atom(self, text: str) -> None:
        """A one-character atom written as Python wrote it."""
        if len(text) == 1 and text.isascii() and text.isalnum() and not self.bits & re.IGNORECASE:
            self.out.append(text)
        else:
            self.out.append(_python_set(text, self.bits))

    def run(self) -> str:
        p, n = self.p, len(self.p)
        i = 0
        while i < n:
            c = p[i]
            if self.verbose and c in " \t\n\r\f\v":
                i += 1
            elif self.verbose and c == "#":
                while i < n and p[i] != "\n":
                    i += 1
            elif c == "\\":
                i = self.escape(i)
            elif c == "[":
                end = self.class_end(i)
                self.atom(p[i:end])
                i = end
            elif c == ".":
                self.atom(".")
                i += 1
            elif c in "^$":
                raise self.refuse(f"the anchor {c!r}", i)
            elif c == "(":
                i = self.group(i)
            elif c in ")|":
                self.out.append(c)
                i += 1
            elif c in "*+?":
                self.out.append(c)
                i = self.after_quantifier(i + 1)
            elif c == "{" and (m := _QUANTIFIER.match(p, i)) and (m.group(1) or m.group(2)):
                lo = m.group(1) or "0"
                self.out.append(f"{{{lo},{m.group(3)}}}" if m.group(2) else f"{{{lo}}}")
                i = self.after_quantifier(m.end())
            else:
                self.atom(re.escape(c))
                i += 1
        return "".join(self.out)

    def after_quantifier(self, i: int) -> int:
        if i < len(self.p) and self.p[i] == "+":
            raise self.refuse("a possessive quantifier", i)
        return i + 1 if i < len(self.p) and self.p[i] == "?" else i  # lazy: the same language

    def group(self, i: int) -> int:
        p = self.p
        if not p.startswith("(?", i):
            self.out.append("(?:")
            return i + 1
        if p.startswith("(?:", i):
            self.out.append("(?:")
            return i + 3
        if p.startswith("(?P<", i):
            self.out.append("(?:")
            return p.index(">", i) + 1
        if p.startswith("(?#", i):
            return p.index(")", i) + 1
        kinds = {"(?=": "lookahead", "(?!": "lookahead", "(?<": "lookbehind", "(?P=": "a backreference",
                 "(?(": "a conditional group", "(?>": "an atomic group"}
        kind = next((k for prefix, k in kinds.items() if p.startswith(prefix, i)), "an inline flag")
        raise self.refuse(kind, i)

    def class_end(self, i: int) -> int:
        """The offset just past the class opening at `i` (Python's rules: a `]` first is literal)."""
        p = self.p
        j = i + 1
        if j < len(p) and p[j] == "^":
            j += 1
        if j < len(p) and p[j] == "]":
            j += 1
        while p[j] != "]":
            j += 2 if p[j] == "\\" else 1
        return j + 1

    def escape(self, i: int) -> int:
        p = self.p
        e = p[i + 1]
        if e in "AZbBG":
            raise self.refuse(f"the anchor '\\{e}'", i)
        if e.isdigit():
            octal = re.match(r"0[0-7]{0,2}|[0-7]{3}", p[i + 1 :])
            if octal is None:
                raise self.refuse("a backreference", i)
            self.atom(re.escape(chr(int(octal.group(), 8))))
            return i + 1 + octal.end()
        if e in _HEX_SIZES:
            end = i + 2 + _HEX_SIZES[e]
            self.atom(re.escape(chr(int(p[i + 2 : end], 16))))
            return end
        if e == "N":
            end = p.index("}", i)
            self.atom(re.escape(unicodedata.lookup(p[i + 3 : end])))
            return end + 1
        self.atom(p[i : i + 2])
        return i + 2
