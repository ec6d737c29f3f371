"""GBNF (llama.cpp's grammar format) to the grammar IR.

    parse_gbnf(text, root="root") -> Grammar

The dialect is llama.cpp's (grammars/README.md there), with a few deliberate differences:

* Rules are `name ::= expr`; names are `[a-zA-Z0-9_-]+` (llama.cpp has no `_`; we accept it).
* Alternation `|`, grouping `( )`, postfix `*` `+` `?` `{m}` `{m,}` `{m,n}` and `{,n}` (the last is
  an extension), stackable (`x*?` is `(x*)?`), with optional blanks before the operator.
* String literals `"..."` and character classes `[...]` / `[^...]`, with the escapes `\\n \\r \\t
  \\\\ \\" \\' \\[ \\] \\- \\^ \\xHH \\uHHHH \\UHHHHHHHH` (llama.cpp lacks `\\'`, `\\-` and `\\^`). Every
  escape, `\\xHH` included, denotes a Unicode code point, so `"\\xff"` is the two bytes C3 BF, as in
  llama.cpp. Class ranges `a-z`; a `-` just before `]` is a literal `-`. `.` is any Unicode scalar
  value. Surrogate code points (raw or escaped) are rejected: they have no UTF-8 encoding.
* Comments run from `#` to the end of the line.
* Captures (an extension): `name@capture ::= ...` defines rule `name` and reports the text it
  matches as capture `name` (GrammarMatcher.captures); references stay `name`.
* Layout: a rule ends at a line break only where the next non-blank, non-comment text is another
  `name ::=` or the end of the input; otherwise the rule continues on the next line. This accepts
  every layout llama.cpp accepts (with the same meaning) and also continuation lines that llama.cpp
  rejects, such as a line starting with `|`. Inside parentheses line breaks are free.
* String literals and classes may not contain a raw line break (llama.cpp allows one); write `\\n`.
  That keeps "unterminated string" errors on the line where the string starts.
* A rule defined twice is an error (llama.cpp silently keeps the last definition).
* Special tokens: `<[id]>`, `<[a-b]>`, `<[a,b]>`, `<|name|>` and `<name>` (llama.cpp's and
  llguidance's spelling) read exactly that special token of the vocabulary (token_refs.py; an
  unknown name or an ordinary token is an error when the grammar is compiled). The negation
  `!<...>` (any token but one) is refused: it is a set of text tokens no byte grammar states.

Every malformed input raises `GrammarSyntaxError` with the 1-based line and column (counted in code
points) of the offending character: for unterminated strings, classes and parentheses that is the
opening character; for an undefined rule, its first reference; for a missing root rule, line 1
column 1. The parser is iterative (no recursion), and nesting (parentheses plus stacked postfix
operators) deeper than `MAX_NESTING` is rejected so later recursive passes over the IR stay safe.
"""

from __future__ import annotations

from strictgen.errors import GrammarSyntaxError
from strictgen.grammar.text_position import LineIndex
from strictgen.grammar.token_refs import TOKEN_REF, token_ref
from strictgen.grammar.ir import (
    EMPTY,
    NOTHING,
    SURROGATES,
    Expr,
    Grammar,
    RuleRef,
    alt,
    charset,
    lit,
    negate_ranges,
    repeat,
    seq,
)

__all__ = ["parse_gbnf", "MAX_NESTING", "MAX_REPEAT"]

MAX_NESTING = 500
"""Deepest allowed nesting of parentheses and stacked postfix operators."""

CAPTURE = "@capture"
"""Written right after a rule's name where it is defined (`name@capture ::= ...`): the text the
rule matches is reported as capture `name` (GrammarMatcher.captures). No llama.cpp grammar has
an `@`, so none changes meaning."""

MAX_REPEAT = 1_000_000
"""Largest allowed number in a `{m,n}` repetition."""

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE_ESCAPES = {
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "\\": "\\",
    '"': '"',
    "'": "'",
    "[": "[",
    "]": "]",
    "-": "-",
    "^": "^",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_ANY_CHAR = charset(((0, SURROGATES[0] - 1), (SURROGATES[1] + 1, 0x10FFFF)))


def parse_gbnf(text: str, root: str = "root") -> Grammar:
    """Parse a GBNF grammar; `root` names the start rule. Raises GrammarSyntaxError."""
    if not isinstance(text, str):
        raise TypeError(f"GBNF text must be a str, not {type(text).__name__}")
    return _Parser(text).parse(root)


def _repeat(item: Expr, lo: int, hi: int | None) -> Expr:
    if item == EMPTY:
        return EMPTY
    if item == NOTHING:
        return EMPTY if lo == 0 else NOTHING
    return repeat(item, lo, hi)


class _Frame:
    """One open group (or the rule body itself) of the iterative parser."""

    __slots__ = ("open_pos", "alts", "items", "depths", "depth")

    def __init__(self, open_pos: int) -> None:
        self.open_pos = open_pos
        self.alts: list[Expr] = []
        self.items: list[Expr] = []
        self.depths: list[int] = []
        self.depth = 0  # deepest item seen so far in this group

    def end_alternative(self) -> None:
        self.alts.append(seq(*self.items))
        self.items = []
        self.depths = []

    def finish(self) -> Expr:
        self.end_alternative()
        return alt(*self.alts)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.pos = 1 if text.startswith("\ufeff") else 0
        self.newline = False  # whether the last _skip() crossed a line break
        self.lines = LineIndex(text)
        self.special_tokens = False  # whether a `<...>` token reference was read

    # ---- positions and errors ----------------------------------------------------------------

    def location(self, pos: int) -> tuple[int, int]:
        return self.lines.location(pos)

    def error(self, message: str, pos: int) -> GrammarSyntaxError:
        return self.lines.error(message, pos)

    def describe(self, pos: int) -> str:
        return "end of input" if pos >= self.n else repr(self.text[pos])

    # ---- lexical helpers ---------------------------------------------------------------------

    def _skip(self) -> None:
        """Skip blanks, line breaks and comments; note whether a line break was crossed."""
        t, n, i = self.text, self.n, self.pos
        newline = False
        while i < n:
            c = t[i]
            if c == " " or c == "\t":
                i += 1
            elif c == "\n" or c == "\r":
                newline = True
                i += 1
            elif c == "#":
                while i < n and t[i] != "\n" and t[i] != "\r":
                    i += 1
            else:
                break
        self.pos = i
        self.newline = newline

    def _skip_blanks(self, i: int) -> int:
        t, n = self.text, self.n
        while i < n and (t[i] == " " or t[i] == "\t"):
            i += 1
        return i

    def _name_end(self, i: int) -> int:
        t, n = self.text, self.n
        while i < n and t[i] in _NAME_CHARS:
            i += 1
        return i

    def _rule_start(self, i: int) -> bool:
        """Whether `name ::=` (or `name@capture ::=`) starts at i."""
        j = self._name_end(i)
        if j > i and self.text.startswith(CAPTURE, j):
            j += len(CAPTURE)
        return j > i and self.text.startswith("::=", self._skip_blanks(j))

    # ---- top level ---------------------------------------------------------------------------

    def parse(self, root: str) -> Grammar:
        t = self.text
        rules: dict[str, Expr] = {}
        defined_at: dict[str, int] = {}
        captures: dict[str, str] = {}
        self.refs: list[tuple[str, int]] = []
        self._skip()
        while self.pos < self.n:
            start = self.pos
            end = self._name_end(start)
            if end == start:
                raise self.error(f"expected a rule name, found {self.describe(start)}", start)
            name = t[start:end]
            if t.startswith(CAPTURE, end):
                captures[name] = name
                end += len(CAPTURE)
            i = self._skip_blanks(end)
            if not t.startswith("::=", i):
                raise self.error(f"expected '::=' after rule name {name!r}, found {self.describe(i)}", i)
            if name in defined_at:
                first_line, _ = self.location(defined_at[name])
                raise self.error(f"rule {name!r} is already defined on line {first_line}", start)
            defined_at[name] = start
            self.pos = i + 3
            rules[name] = self._body()
        for name, pos in self.refs:
            if name not in rules:
                raise self.error(f"undefined rule {name!r}", pos)
        if root not in rules:
            raise GrammarSyntaxError(f"missing root rule {root!r}", 1, 1)
        return Grammar(rules=rules, root=root, special_tokens=self.special_tokens, captures=captures)

    # ---- rule bodies -------------------------------------------------------------------------

    def _body(self) -> Expr:
        """Parse one rule's alternatives; stops at the next rule definition or the end."""
        t, n = self.text, self.n
        stack = [_Frame(-1)]
        self._skip()
        while True:
            frame = stack[-1]
            i = self.pos
            if i >= n or (self.newline and self._rule_start(i)):
                if len(stack) > 1:
                    raise self.error("'(' was never closed", frame.open_pos)
                return frame.finish()
            c = t[i]
            depth = 0
            if c == '"':
                expr = self._string()
            elif c == "[":
                expr = self._char_class()
            elif c == ".":
                expr = _ANY_CHAR
                self.pos = i + 1
            elif c in _NAME_CHARS:
                end = self._name_end(i)
                name = t[i:end]
                self.refs.append((name, i))
                expr = RuleRef(name)
                self.pos = end
            elif c == "(":
                if len(stack) > MAX_NESTING:
                    raise self.error(f"parentheses nested deeper than {MAX_NESTING}", i)
                stack.append(_Frame(i))
                self.pos = i + 1
                self._skip()
                continue
            elif c == ")":
                if len(stack) == 1:
                    raise self.error("unmatched ')'", i)
                stack.pop()
                expr = frame.finish()
                depth = frame.depth + 1
                if depth > MAX_NESTING:
                    raise self.error(f"expression nested deeper than {MAX_NESTING}", frame.open_pos)
                frame = stack[-1]
                self.pos = i + 1
            elif c == "|":
                frame.end_alternative()
                self.pos = i + 1
                self._skip()
                continue
            elif c in "*+?{":
                if not frame.items:
                    raise self.error(f"{c!r} has nothing to repeat", i)
                if c == "{":
                    lo, hi = self._bounds()
                else:
                    lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
                    self.pos = i + 1
                depth = frame.depths[-1] + 1
                if depth > MAX_NESTING:
                    raise self.error(f"expression nested deeper than {MAX_NESTING}", i)
                frame.items[-1] = _repeat(frame.items[-1], lo, hi)
                frame.depths[-1] = depth
                frame.depth = max(frame.depth, depth)
                self._skip()
                continue
            elif c == "!" and t.startswith("<", i + 1):
                raise self.error("a negated token reference ('!<...>': any token but this one) includes text "
                                 "tokens and is not supported", i)
            elif c == "<":
                expr = self._token_ref()
            elif t.startswith("::=", i):
                raise self.error("unexpected '::=' (each rule definition must start on a new line)", i)
            else:
                raise self.error(f"unexpected character {c!r}", i)
            frame.items.append(expr)
            frame.depths.append(depth)
            frame.depth = max(frame.depth, depth)
            self._skip()

    def _token_ref(self) -> Expr:
        i = self.pos
        m = TOKEN_REF.match(self.text, i)
        if m is None:
            raise self.error("expected a special token '<|name|>', '<name>' or '<[id]>' after '<'", i)
        try:
            expr = token_ref(m.group())
        except ValueError as exc:
            raise self.error(exc.args[0], i + exc.args[1]) from None
        self.special_tokens = True
        self.pos = m.end()
        return expr

    def _char(self, i: int, opener: int, what: str) -> tuple[int, int]:
        """One (possibly escaped) character at i inside a string or class: (code point, next i)."""
        t, n = self.text, self.n
        c = t[i]
        if c != "\\":
            cp = ord(c)
            if SURROGATES[0] <= cp <= SURROGATES[1]:
                raise self.error(f"surrogate code point U+{cp:04X} is not a character", i)
            return cp, i + 1
        if i + 1 >= n or t[i + 1] in "\r\n":
            raise self.error(f"unterminated {what}", opener)
        e = t[i + 1]
        if e in _SIMPLE_ESCAPES:
            return ord(_SIMPLE_ESCAPES[e]), i + 2
        if e in _HEX_ESCAPES:
            size = _HEX_ESCAPES[e]
            digits = t[i + 2 : i + 2 + size]
            if len(digits) != size or not all(d in _HEX for d in digits):
                raise self.error(f"escape '\\{e}' needs exactly {size} hex digits", i)
            cp = int(digits, 16)
            if cp > 0x10FFFF:
                raise self.error(f"escape '\\{e}{digits}' is past U+10FFFF", i)
            if SURROGATES[0] <= cp <= SURROGATES[1]:
                raise self.error(f"escape '\\{e}{digits}' is a surrogate, not a character", i)
            return cp, i + 2 + size
        raise self.error(f"unknown escape '\\{e}'", i)

    def _string(self) -> Expr:
        t, n = self.text, self.n
        start = self.pos
        i = start + 1
        out: list[str] = []
        while True:
            if i >= n or t[i] == "\n" or t[i] == "\r":
                raise self.error("unterminated string literal", start)
            if t[i] == '"':
                break
            cp, i = self._char(i, start, "string literal")
            out.append(chr(cp))
        self.pos = i + 1
        return lit("".join(out))

    def _char_class(self) -> Expr:
        t, n = self.text, self.n
        start = self.pos
        i = start + 1
        negated = i < n and t[i] == "^"
        if negated:
            i += 1
        ranges: list[tuple[int, int]] = []
        while True:
            if i >= n or t[i] == "\n" or t[i] == "\r":
                raise self.error("unterminated character class", start)
            if t[i] == "]":
                break
            first = i
            lo, i = self._char(i, start, "character class")
            hi = lo
            if i + 1 < n and t[i] == "-" and t[i + 1] != "]" and t[i + 1] not in "\r\n":
                hi, i = self._char(i + 1, start, "character class")
                if hi < lo:
                    raise self.error(
                        f"reversed range in character class (U+{lo:04X} > U+{hi:04X})", first
                    )
            ranges.append((lo, hi))
        if not ranges:
            raise self.error("empty character class", start)
        self.pos = i + 1
        if negated:
            return charset(negate_ranges(ranges))
        return charset(ranges)

    def _number(self, i: int) -> tuple[int, int]:
        t, n = self.text, self.n
        j = i
        while j < n and t[j] in _DIGITS:
            j += 1
        if j - i > len(str(MAX_REPEAT)) or int(t[i:j]) > MAX_REPEAT:
            raise self.error(f"repetition count larger than {MAX_REPEAT}", i)
        return int(t[i:j]), j

    def _bounds(self) -> tuple[int, int | None]:
        """Parse `{m}`, `{m,}`, `{m,n}` or `{,n}` at self.pos."""
        t, n = self.text, self.n
        start = self.pos
        i = self._skip_blanks(start + 1)
        lo: int | None = None
        hi: int | None = None
        if i < n and t[i] in _DIGITS:
            lo, i = self._number(i)
            i = self._skip_blanks(i)
        if i < n and t[i] == "}" and lo is not None:
            hi = lo
        elif i < n and t[i] == ",":
            i = self._skip_blanks(i + 1)
            if i < n and t[i] in _DIGITS:
                hi, i = self._number(i)
                i = self._skip_blanks(i)
            elif lo is None:
                raise self.error(f"expected a number in repetition, found {self.describe(i)}", i)
            if i >= n or t[i] != "}":
                raise self.error(f"expected '}}' to end repetition, found {self.describe(i)}", i)
        elif lo is None:
            raise self.error(f"expected a number in repetition, found {self.describe(i)}", i)
        else:
            raise self.error(f"expected ',' or '}}' in repetition, found {self.describe(i)}", i)
        self.pos = i + 1
        if lo is None:
            lo = 0
        if hi is not None and hi < lo:
            raise self.error(f"repetition {{{lo},{hi}}} has max < min", start)
        return lo, hi
