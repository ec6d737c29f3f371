"""Regular expressions (the JSON Schema `pattern` dialect, an ECMA-262 subset) to grammar IR.

Two entry points:

* `parse_regex(pattern)` — the language of strings the pattern **fully** matches (`re.fullmatch`).
  A leading `^` / trailing `$` are accepted and change nothing.
* `parse_regex_search(pattern)` — the language of strings that **contain** a match, which is what an
  (unanchored) JSON Schema `pattern` means: `.*(?:p).*`, minus the leading `.*` where the match is
  anchored by `^` and minus the trailing `.*` where it is anchored by `$`.

Semantics are those of ECMA-262 with the `u` flag, i.e. the pattern matches Unicode code points
(never UTF-16 code units) and there is no multiline / dotAll / ignoreCase flag:

* `^` matches only at the very start of the string and `$` only at the very end (unlike Python's
  `$`, never before a final newline). Anchors may appear anywhere (`^a|b$`, `(^x)?y`, `a^b`): they
  are translated exactly, see `regex_anchors.AnchoredLang`. A pattern like `a^b` therefore denotes the empty language.
* `.` is any code point except the line terminators \\n \\r \\u2028 \\u2029.
* `\\d` = [0-9], `\\w` = [A-Za-z0-9_], `\\s` = ECMA WhiteSpace + LineTerminator; `\\D \\W \\S` and
  `[^...]` are complements over all code points. Lone surrogates (\\uD800-\\uDFFF) have no UTF-8
  form, so they match nothing; `\\uD83D\\uDE00` (two escapes) is combined into one code point.
* `\\p{..}` / `\\P{..}`: General_Category values (`L`, `Lu`, `Letter`, `gc=Nd`,
  `General_Category=Decimal_Number`, `LC`/`Cased_Letter`) plus `Any`, `ASCII`, `Assigned`, computed
  exactly from Python's `unicodedata` (its Unicode version) over the whole code space, once, cached.
  Scripts and other binary properties raise RegexError.
* Quantifiers `* + ? {m} {m,} {m,n}` and lazy forms (same language under full matching); bounds
  above `MAX_REPEAT` raise RegexError. A `{` that does not start a well-formed `{m}`, `{m,}` or
  `{m,n}` is a literal `{` (ECMA Annex B; note `{,n}` is a literal here but a quantifier in Python).
  A lone `}` or `]` is a literal. A well-formed quantifier with nothing before it is an error.
* Classes: `[]` matches nothing and `[^]` any code point (ECMA; Python differs). In a range whose
  end is a class escape (`[\\w-z]`) the `-` is a literal (Annex B; Python rejects it). `\\b` in a
  class is backspace.
* Escapes: `\\n \\r \\t \\f \\v \\0 \\xHH \\uXXXX \\u{X..} \\cX` and any escaped character that is
  not an ASCII letter or digit (`\\/ \\. \\- \\_` ...) stands for itself.

Unsupported, raising `RegexError` (with the 0-based position of the construct): backreferences
`\\1 \\k<name>`, lookaround `(?= (?! (?<= (?<!`, word boundaries `\\b \\B`, inline flags `(?i)`,
Python-only syntax (`(?P<..>`, `\\A`, `\\Z`, possessive `*+`), octal escapes `\\01`, unknown letter
escapes (`\\q`), and nesting deeper than `MAX_NESTING` groups. Any other malformed input (unbalanced
parentheses, unterminated class, `[z-a]`, `*a`, `a**`, dangling `\\`) also raises `RegexError`;
no other exception type escapes. Anchors inside large nested counted repetitions (e.g.
`(((^|a){50}){50}){50}`) can expand beyond `MAX_EXPR_NODES` and raise "pattern too complex".

Output shape: the result is a tree of Literal / ByteSet (ASCII-only sets) / CharSet / Seq / Alt /
Repeat, never RuleRef. Sub-expressions may be shared (a DAG), and nesting depth is at most a small
multiple of the group nesting depth (<= `MAX_NESTING`), so consumers that recurse over it may need
about 3 * MAX_NESTING frames.
"""

from __future__ import annotations

import re

from ..errors import RegexError
from .ir import MAX_CODEPOINT, NOTHING, SURROGATES, Expr, lit, negate_ranges, normalize_ranges, repeat, seq
from .regex_anchors import END, START, AnchoredLang, alt_exprs, alt_langs, concat_all, repeat_lang, tree_size
from .regex_classes import (
    ANY_CHAR,
    CONTROL_ESCAPES,
    ESCAPE_CLASSES,
    LINE_TERMINATORS,
    Ranges,
    set_expr,
    unicode_property,
)

__all__ = ["MAX_NESTING", "MAX_REPEAT", "parse_regex", "parse_regex_search"]

MAX_REPEAT = 10000
"""Largest accepted quantifier bound."""

MAX_NESTING = 500
"""Deepest accepted group nesting."""

MAX_EXPR_NODES = 1_000_000
"""Size limit (tree size, counting shared sub-expressions once per use) of a translated pattern."""

# ---- parser -----------------------------------------------------------------------------------

_BRACES = re.compile(r"\{([0-9]+)(?:(,)([0-9]*))?\}")
# a group name: [A-Za-z_$\u0080-\U0010ffff][A-Za-z0-9_$\u0080-\U0010ffff]*, written as the
# complements of the ASCII characters left out: `re` compiles a class reaching U+10FFFF into a
# table in ~8 ms (paid by the first compile of a schema with a `pattern`), its complement in 0.1 ms
_GROUP_NAME = re.compile(r"[^\x00-\x23\x25-\x40\x5b-\x5e\x60\x7b-\x7f][^\x00-\x23\x25-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]*")
_HEX = "0123456789abcdefABCDEF"


class _Frame:
    __slots__ = ("branches", "start", "terms")

    def __init__(self, start: int):
        self.start = start  # position of the group's "(" (-1 for the whole pattern)
        self.branches: list[AnchoredLang] = []
        self.terms: list[AnchoredLang] = []

    def finish(self) -> AnchoredLang:
        self.branches.append(concat_all(self.terms))
        if len(self.branches) == 1:
            return self.branches[0]
        return alt_langs(self.branches)


class _Parser:
    def __init__(self, pattern: str):
        self.p = pattern
        self.n = len(pattern)

    def error(self, message: str, position: int) -> RegexError:
        return RegexError(message, self.p, position)

    # -- top level ------------------------------------------------------------------------------

    def parse(self) -> AnchoredLang:
        p, n = self.p, self.n
        stack = [_Frame(-1)]
        i = 0
        while i < n:
            c = p[i]
            frame = stack[-1]
            if c == "|":
                frame.branches.append(concat_all(frame.terms))
                frame.terms = []
                i += 1
                continue
            if c == "(":
                i = self.open_group(i)
                if len(stack) > MAX_NESTING:  # the root frame plus MAX_NESTING open groups
                    raise self.error(f"groups nested deeper than {MAX_NESTING}", i)
                stack.append(_Frame(i))
                i = self.group_body_start(i)
                continue
            if c == ")":
                if len(stack) == 1:
                    raise self.error("unbalanced parenthesis: unmatched ')'", i)
                lang = stack.pop().finish()
                i = self.quantify(lang, i + 1, stack[-1].terms)
                continue
            if c in "*+?":
                raise self.error("nothing to repeat", i)
            if c == "^" or c == "$":
                if i + 1 < n and self.quantifier_at(i + 1):
                    raise self.error("nothing to repeat", i + 1)
                frame.terms.append(START if c == "^" else END)
                i += 1
                continue
            if c == "{" and _BRACES.match(p, i):
                raise self.error("nothing to repeat", i)
            if c == "[":
                ranges, i = self.parse_class(i)
                lang = AnchoredLang.plain(set_expr(ranges), False)
            elif c == ".":
                lang = AnchoredLang.plain(set_expr(negate_ranges(LINE_TERMINATORS)), False)
                i += 1
            elif c == "\\":
                kind, value, i = self.parse_escape(i, in_class=False)
                if kind == "char":
                    lang = AnchoredLang.plain(self.char_expr(value), False)
                else:
                    lang = AnchoredLang.plain(set_expr(value), False)
            else:
                cp, i = self.literal_char(i)
                lang = AnchoredLang.plain(self.char_expr(cp), False)
            i = self.quantify(lang, i, frame.terms)
        if len(stack) > 1:
            raise self.error("unbalanced parenthesis: missing ')'", stack[-1].start)
        return stack[0].finish()

    def open_group(self, i: int) -> int:
        """Validate the group opener at `i` (unsupported kinds raise); returns `i`."""
        p = self.p
        if not p.startswith("(?", i):
            return i
        nxt = p[i + 2 : i + 3]
        if nxt == ":":
            return i
        if nxt in ("=", "!") or p.startswith(("(?<=", "(?<!"), i):
            raise self.error("lookaround is not supported", i)
        if nxt == "<":
            m = _GROUP_NAME.match(p, i + 3)
            if not m or not p.startswith(">", m.end()):
                raise self.error("invalid group name", i + 3)
            return i
        if nxt == "P":
            raise self.error("Python-style named groups (?P<...>) are not ECMA syntax; use (?<name>...)", i)
        if nxt and (nxt.isalpha() or nxt in "-^"):
            raise self.error("inline flags / modifiers are not supported", i)
        raise self.error("invalid group syntax after '(?'", i)

    def group_body_start(self, i: int) -> int:
        p = self.p
        if p.startswith("(?:", i):
            return i + 3
        if p.startswith("(?<", i):
            return p.index(">", i) + 1
        return i + 1

    def quantifier_at(self, i: int) -> bool:
        return self.p[i] in "*+?" or (self.p[i] == "{" and _BRACES.match(self.p, i) is not None)

    def quantify(self, lang: AnchoredLang, i: int, terms: list[AnchoredLang]) -> int:
        """Apply the quantifier at `i` (if any) to `lang`, append the result to `terms`."""
        p, n = self.p, self.n
        if i >= n:
            terms.append(lang)
            return i
        c = p[i]
        start = i
        if c == "*":
            lo, hi, i = 0, None, i + 1
        elif c == "+":
            lo, hi, i = 1, None, i + 1
        elif c == "?":
            lo, hi, i = 0, 1, i + 1
        elif c == "{" and (m := _BRACES.match(p, i)):
            if len(m.group(1)) > 9 or len(m.group(3) or "") > 9:  # int() of huge digit strings fails
                raise self.error(f"quantifier bound above the limit of {MAX_REPEAT}", start)
            lo = int(m.group(1))
            if m.group(2) is None:
                hi = lo
            elif m.group(3):
                hi = int(m.group(3))
            else:
                hi = None
            if lo > MAX_REPEAT or (hi is not None and hi > MAX_REPEAT):
                raise self.error(f"quantifier bound above the limit of {MAX_REPEAT}", start)
            if hi is not None and hi < lo:
                raise self.error("numbers out of order in {} quantifier", start)
            i = m.end()
        else:
            terms.append(lang)
            return i
        if i < n and p[i] == "?":  # lazy: same language under full matching
            i += 1
        if i < n and self.quantifier_at(i):
            raise self.error("nothing to repeat (multiple quantifiers)", i)
        terms.append(repeat_lang(lang, lo, hi))
        return i

    # -- characters -----------------------------------------------------------------------------

    @staticmethod
    def char_expr(cp: int) -> Expr:
        if SURROGATES[0] <= cp <= SURROGATES[1]:
            return NOTHING  # a lone surrogate never occurs in UTF-8 text
        return lit(chr(cp))

    def literal_char(self, i: int) -> tuple[int, int]:
        """An unescaped pattern character; a literal surrogate pair is one code point."""
        cp = ord(self.p[i])
        if 0xD800 <= cp <= 0xDBFF and i + 1 < self.n and 0xDC00 <= ord(self.p[i + 1]) <= 0xDFFF:
            return 0x10000 + ((cp - 0xD800) << 10) + (ord(self.p[i + 1]) - 0xDC00), i + 2
        return cp, i + 1

    def hex_digits(self, i: int, count: int) -> int | None:
        text = self.p[i : i + count]
        if len(text) == count and all(ch in _HEX for ch in text):
            return int(text, 16)
        return None

    def parse_escape(self, i: int, in_class: bool) -> tuple[str, object, int]:
        """The escape at `i` (a backslash): ('char', code point, next) or ('set', ranges, next)."""
        p, n = self.p, self.n
        if i + 1 >= n:
            raise self.error("dangling backslash at end of pattern", i)
        c = p[i + 1]
        if c in ESCAPE_CLASSES:
            return "set", ESCAPE_CLASSES[c], i + 2
        if c in CONTROL_ESCAPES:
            return "char", CONTROL_ESCAPES[c], i + 2
        if c == "b":
            if in_class:
                return "char", 0x08, i + 2
            raise self.error("word boundary \\b is not supported", i)
        if c == "B":
            raise self.error("word boundary \\B is not supported", i)
        if c == "0":
            if i + 2 < n and p[i + 2] in "0123456789":
                raise self.error("octal escapes are not supported", i)
            return "char", 0, i + 2
        if c in "123456789":
            raise self.error("backreferences are not supported", i)
        if c == "k":
            if p.startswith("<", i + 2):
                raise self.error("backreferences are not supported", i)
            raise self.error("bad escape \\k", i)
        if c == "x":
            value = self.hex_digits(i + 2, 2)
            if value is None:
                raise self.error("bad \\x escape: expected two hex digits", i)
            return "char", value, i + 4
        if c == "u":
            return ("char", *self.unicode_escape(i))
        if c == "c":
            if i + 2 < n and ("a" <= p[i + 2] <= "z" or "A" <= p[i + 2] <= "Z"):
                return "char", ord(p[i + 2]) % 32, i + 3
            raise self.error("bad \\c escape: expected a letter", i)
        if c in "pP":
            if not p.startswith("{", i + 2):
                raise self.error(f"bad \\{c} escape: expected {{", i)
            close = p.find("}", i + 3)
            if close < 0:
                raise self.error(f"bad \\{c} escape: missing }}", i)
            ranges = unicode_property(p[i + 3 : close])
            if ranges is None:
                raise self.error(f"unsupported Unicode property {p[i + 3 : close]!r}", i)
            if c == "P":
                ranges = negate_ranges(ranges)
            return "set", ranges, close + 1
        if c.isascii() and c.isalnum():
            raise self.error(f"bad escape \\{c}", i)
        cp, nxt = self.literal_char(i + 1)  # identity escape: \/ \. \- \\ \_ ...
        return "char", cp, nxt

    def unicode_escape(self, i: int) -> tuple[int, int]:
        """`\\uXXXX` (combining an escaped surrogate pair) or `\\u{X...}` at `i`."""
        p = self.p
        if p.startswith("{", i + 2):
            close = p.find("}", i + 3)
            digits = p[i + 3 : close] if close >= 0 else ""
            if not digits or len(digits) > 8 or not all(ch in _HEX for ch in digits):
                raise self.error("bad \\u{...} escape", i)
            value = int(digits, 16)
            if value > MAX_CODEPOINT:
                raise self.error("\\u{...} escape above U+10FFFF", i)
            return value, close + 1
        value = self.hex_digits(i + 2, 4)
        if value is None:
            raise self.error("bad \\u escape: expected four hex digits", i)
        if 0xD800 <= value <= 0xDBFF and p.startswith("\\u", i + 6):
            low = self.hex_digits(i + 8, 4)
            if low is not None and 0xDC00 <= low <= 0xDFFF:
                return 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00), i + 12
        return value, i + 6

    def parse_class(self, i: int) -> tuple[Ranges, int]:
        """The class starting with `[` at `i`: its code point ranges and the position after `]`."""
        p, n = self.p, self.n
        start = i
        i += 1
        negate = i < n and p[i] == "^"
        if negate:
            i += 1
        ranges: list[tuple[int, int]] = []
        while True:
            if i >= n:
                raise self.error("unterminated character class", start)
            if p[i] == "]":
                i += 1
                break
            atom_start = i
            kind, value, i = self.class_atom(i)
            if i + 1 < n and p[i] == "-" and p[i + 1] != "]":
                kind2, value2, j = self.class_atom(i + 1)
                if kind == "char" and kind2 == "char":
                    if value > value2:  # type: ignore[operator]
                        raise self.error("bad character range (start above end)", atom_start)
                    ranges.append((value, value2))  # type: ignore[arg-type]
                else:  # Annex B: a class escape at either end makes the '-' a literal
                    for k, v in ((kind, value), ("char", 0x2D), (kind2, value2)):
                        ranges.extend(v if k == "set" else ((v, v),))  # type: ignore[arg-type]
                i = j
                continue
            ranges.extend(value if kind == "set" else ((value, value),))  # type: ignore[arg-type]
        result = normalize_ranges(ranges)
        if negate:
            result = negate_ranges(result)
        return result, i

    def class_atom(self, i: int) -> tuple[str, object, int]:
        if self.p[i] == "\\":
            return self.parse_escape(i, in_class=True)
        cp, i = self.literal_char(i)
        return "char", cp, i


# ---- public API -------------------------------------------------------------------------------


def _parse(pattern: str) -> AnchoredLang:
    if not isinstance(pattern, str):
        raise RegexError(f"pattern must be a string, not {type(pattern).__name__}", repr(pattern), 0)
    try:
        return _Parser(pattern).parse()
    except RecursionError:  # defensive: nothing above recurses on the pattern's structure
        raise RegexError("pattern too deeply nested", pattern, 0) from None


def _checked(expr: Expr, pattern: str) -> Expr:
    if tree_size(expr, MAX_EXPR_NODES) > MAX_EXPR_NODES:
        raise RegexError("pattern too complex (anchors inside repetitions expand too much)", pattern, 0)
    return expr


def parse_regex(pattern: str) -> Expr:
    """The strings that fully match `pattern` (a JSON Schema / ECMA-262 regex), as an IR expression."""
    lang = _parse(pattern)
    parts = [part for part in lang.parts if part is not None]
    return _checked(alt_exprs(parts) if parts else NOTHING, pattern)


def parse_regex_search(pattern: str) -> Expr:
    """The strings that contain a match of `pattern` anywhere (JSON Schema `pattern` semantics)."""
    lang = _parse(pattern)
    free, end, start, both = lang.parts
    n_free, n_end, n_start, _ = lang.nullable
    anything = repeat(ANY_CHAR)
    if (free is not None and n_free) or (end is not None and n_end) or (start is not None and n_start):
        return anything  # an empty match is possible at the start or end of every string
    branches = []
    if free is not None:
        branches.append(seq(anything, free, anything))
    if start is not None:
        branches.append(seq(start, anything))
    if end is not None:
        branches.append(seq(anything, end))
    if both is not None:
        branches.append(both)
    return _checked(alt_exprs(branches) if branches else NOTHING, pattern)
