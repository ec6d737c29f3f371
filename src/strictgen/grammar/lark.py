"""Lark grammars to the grammar IR.

    parse_lark(text, start="start") -> Grammar

What a grammar means: the context-free language whose terminals are their regexps' languages
(Lark's Earley parser with `lexer="dynamic_complete"`, which is also how xgrammar reads Lark). A
lexer-based reading (Lark's LALR, llguidance) can reject strings this accepts where a greedy
lexer would cut a token differently; a generator constrained here never needs that lexer.

* Rules `name: a b | c` (with `?name`, `!name`, `_name`, `-> alias` accepted and meaning
  nothing here), terminals `NAME: ...`, continuation lines starting with `|`, `//` and `#` comments.
* Items: `"text"` / `"text"i`, `/regexp/flags` (Python's `re` dialect, lark_regex.py),
  `"a".."z"`, `( )`, `[ ]` (optional), `?` `*` `+`, `item ~ n`, `item ~ n..m`, and
  llguidance's `item{m,n}` (also `{m}`, `{m,}`, `{,n}`).
* Direct left recursion (`sum: sum "+" product | product`) is rewritten as repetition; left
  recursion through other rules is refused by the compiler, naming the rule.
* Priorities (`name.2:`, `NAME.-1:`) are accepted: under this reading they choose among parse
  trees and never change which strings are in the language.
* `%import common.NAME [-> ALIAS]` and `%import common (A, B)`: the terminals of Lark's common
  library (lark_common.py, written here). Other modules are refused.
* `%ignore X`: exact. The ignored strings may stand after every terminal of a rule and at the
  start (a terminal of a rule is a named terminal, a literal, a regexp or a special token).
* llguidance: `%json { schema }` as an item embeds a JSON Schema (compiled by our JSON Schema
  front end), `<|name|>` / `<[id]>` special tokens (token_refs.py), and the captures
  `name[capture]` / `name[capture="x"]` (GrammarMatcher.captures; a left-recursive rule's
  captures nest as lark's trees do: `Grammar.written` keeps its body as written for them).
  The other rule attributes (`name[lazy]`, `[max_tokens=..]`, `[stop=..]`) change the language
  or need a lexer and are refused.
* Refused with a clear error: templates (`name{x}`), `%declare`, `%override`, `%extend`,
  recursive terminals, a rule referenced inside a terminal. `""` is the empty string (lark
  itself refuses it; xgrammar and llguidance take it).

Every malformed input raises GrammarSyntaxError with the 1-based line and column.
"""

from __future__ import annotations

import functools
import json
import re

from strictgen.errors import GrammarSyntaxError, RegexError, StrictgenError

from .ir import EMPTY, Alt, Expr, Seq, Grammar, RuleRef, alt, charset, cyclic_rules, opt, rename, repeat, rule_references, seq
from .lark_regex import lark_regexp, lark_string, unescape
from .text_position import LineIndex
from .token_refs import TOKEN_REF, token_ref

__all__ = ["parse_lark", "MAX_NESTING", "IGNORED"]

MAX_NESTING = 200
"""Deepest nesting of parentheses and brackets."""

MAX_REPEAT = 100_000
"""Largest count in `item ~ n..m`."""

IGNORED = "%ignore"
"""The IR rule holding the `%ignore`d strings (a name no Lark rule can have)."""

_TOKENS = re.compile(
    r"""(?P<blank>[ \t\f]+|\\\r?\n)
      | (?P<comment>(?://|\#)[^\n]*)
      | (?P<nl>(?:\r\n|\n|\r)+)
      | (?P<string>"(?:\\.|[^"\\\n])*"i?)
      | (?P<regexp>/(?!/)(?:\\[\s\S]|[^/\\])*/[imslux]*)
      | (?P<special>""" + TOKEN_REF.pattern + r""")
      | (?P<directive>%[A-Za-z_]+)
      | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
      | (?P<number>-?\d+)
      | (?P<op>->|\.\.|[:|()\[\]?!*+~,.{}=])""",
    re.X,
)
_STOP = {"|", ")", "]", "->"}


def parse_lark(text: str, start: str = "start") -> Grammar:
    """Parse a Lark grammar; `start` names the start rule. Raises GrammarSyntaxError."""
    if not isinstance(text, str):
        raise TypeError(f"Lark text must be a str, not {type(text).__name__}")
    parser = _Parser(text)
    parser.parse()
    return parser.grammar(start)


def _is_terminal(name: str) -> bool:
    bare = name.lstrip("_")
    return bool(bare) and bare[0].isupper()


class _Parser:
    def __init__(self, text: str, prefix: str = "") -> None:
        self.text = text
        self.lines = LineIndex(text)
        self.prefix = prefix  # the names of an imported library's rules, as the IR holds them
        self.toks = self.tokenize()
        self.i = 0
        self.depth = 0  # open parentheses and brackets: line breaks are free inside them
        self.has_ignore = any(k == "directive" and v == "%ignore" for k, v, _ in self.toks)
        self.rules: dict[str, Expr] = {}
        self.defined_at: dict[str, int] = {}
        self.refs: list[tuple[str, str, int]] = []  # (definition, name referred to, offset)
        self.ignored: list[Expr] = []
        self.extra: dict[str, Expr] = {}  # rules of imports and embedded schemas
        self.embedded = 0
        self.imported: set[str] = set()
        self.special_tokens = False  # whether a `<|name|>` / `<[id]>` was read
        self.captures: dict[str, str] = {}  # rule or terminal -> capture name (`name[capture]`)

    # ---- tokens --------------------------------------------------------------------------------

    def error(self, message: str, pos: int) -> GrammarSyntaxError:
        return self.lines.error(message, pos)

    def tokenize(self) -> list[tuple[str, str, int]]:
        t, n = self.text, len(self.text)
        out: list[tuple[str, str, int]] = []
        i = 1 if t.startswith("\ufeff") else 0
        while i < n:
            m = _TOKENS.match(t, i)
            if m is None:
                raise self.error(f"unexpected character {t[i]!r}", i)
            kind = m.lastgroup
            if kind not in ("blank", "comment"):
                out.append((kind, m.group(), i))
            i = m.end()
            if kind == "directive" and m.group() == "%json":
                i = self.json_value(i, out)
        return out

    def json_value(self, i: int, out: list) -> int:
        """The JSON value after `%json`, as one token (its parsed value)."""
        t = self.text
        while i < len(t) and t[i] in " \t\r\n":
            i += 1
        try:
            value, end = json.JSONDecoder().raw_decode(t, i)
        except json.JSONDecodeError as exc:
            raise self.error(f"%json needs a JSON Schema after it: {exc.msg}", exc.pos) from None
        out.append(("json", value, i))
        return end

    def peek(self, ahead: int = 0) -> tuple[str, str, int]:
        k = self.i
        while True:
            if k >= len(self.toks):
                return ("end", "", len(self.text))
            tok = self.toks[k]
            if tok[0] == "nl" and (self.depth or self.continues(k)):
                k += 1
                continue
            if ahead == 0:
                return tok
            ahead -= 1
            k += 1

    def continues(self, k: int) -> bool:
        """Whether the line break at token k is followed by `|` (the definition goes on)."""
        return k + 1 < len(self.toks) and self.toks[k + 1][:2] == ("op", "|")

    def next(self) -> tuple[str, str, int]:
        tok = self.peek()
        while self.i < len(self.toks) and self.toks[self.i] is not tok:
            self.i += 1
        self.i += 1
        return tok

    def expect(self, kind: str, value: str | None = None, what: str = "") -> tuple[str, str, int]:
        tok = self.peek()
        if tok[0] != kind or (value is not None and tok[1] != value):
            raise self.error(f"expected {what or repr(value or kind)}, found {self.describe(tok)}", tok[2])
        return self.next()

    @staticmethod
    def describe(tok) -> str:
        return {"end": "end of input", "nl": "end of line"}.get(tok[0]) or repr(tok[1])

    # ---- statements ----------------------------------------------------------------------------

    def parse(self) -> None:
        while True:
            while self.i < len(self.toks) and self.toks[self.i][0] == "nl":
                self.i += 1
            tok = self.peek()
            if tok[0] == "end":
                return
            if tok[0] == "directive":
                self.directive()
            elif tok[0] == "name" or (tok[1] in "?!" and tok[0] == "op" and self.peek(1)[0] == "name"):
                self.definition()
            else:
                raise self.error(f"expected a rule or terminal definition, found {self.describe(tok)}", tok[2])
            end = self.peek()
            if end[0] not in ("nl", "end"):
                raise self.error(f"unexpected {self.describe(end)}", end[2])

    def definition(self) -> None:
        modifier = self.next()[1] if self.peek()[0] == "op" else ""
        _, name, pos = self.next()
        terminal = _is_terminal(name)
        if terminal and (modifier or name.upper() != name):
            raise self.error(f"terminal name {modifier + name!r} must be upper case, without '!' or '?'", pos)
        if self.peek()[1] == ".":
            self.next()
            self.expect("number", what="a priority number")
        if self.peek()[1] == "{":
            raise self.error(f"templates ({name}{{...}}) are not supported", self.peek()[2])
        if self.peek()[1] == "[":
            self.captures[name] = self.capture(name)
        self.expect("op", ":", "':' after the name " + repr(name))
        if name in self.defined_at:
            line, _ = self.lines.location(self.defined_at[name])
            raise self.error(f"{name!r} is already defined on line {line}", pos)
        self.defined_at[name] = pos
        self.rules[name] = self.expansions(name, terminal)

    def capture(self, name: str) -> str:
        """llguidance's `name[capture]` / `name[capture="x"]`: the capture's name (runtime/captures.py).
        Other attributes change the language or need a lexer, and are refused."""
        bracket = self.next()[2]
        word = self.peek()
        captured = name
        if word[:2] == ("name", "capture"):
            self.next()
            if self.peek()[1] == "=":
                self.next()
                kind, raw, pos = self.next()
                captured = raw[1:-1] if kind == "string" and raw.endswith('"') and "\\" not in raw else ""
                if not captured:
                    raise self.error('expected a non-empty string after capture=, as in [capture="name"]', pos)
            if self.peek()[1] == "]":
                self.next()
                return captured
        end = self.text.find("]", bracket)
        raise self.error(f"rule attributes ({self.text[bracket:end + 1 if end >= 0 else None]}) are not supported "
                         "but [capture] and [capture=\"name\"]: lazy, max_tokens and stop change the language or need a lexer", bracket)

    def directive(self) -> None:
        _, word, pos = self.next()
        if word == "%import":
            self.imports(pos)
        elif word == "%ignore":
            self.ignored.append(self.expansions(IGNORED, True))
        elif word == "%json":
            raise self.error("%json embeds a schema inside a rule: write it as an item of a rule", pos)
        else:
            raise self.error(f"the directive {word} is not supported (supported: %import common, %ignore, %json)", pos)

    def imports(self, pos: int) -> None:
        path = [self.expect("name", what="a module name")]
        while self.peek()[1] == ".":
            self.next()
            path.append(self.expect("name", what="a name after '.'"))
        names: list[tuple[str, str, int]] = []  # (name in common, name here, offset)
        if self.peek()[1] == "(":
            self.next()
            while True:
                tok = self.expect("name", what="a name to import")
                names.append((tok[1], tok[1], tok[2]))
                if self.next()[1] == ")":
                    break
            module = path
        else:
            module, last = path[:-1], path[-1]
            alias = last[1]
            if self.peek()[1] == "->":
                self.next()
                alias = self.expect("name", what="an alias")[1]
            names.append((last[1], alias, last[2]))
        if [m[1] for m in module] != ["common"]:
            raise self.error(f"only '%import common' is supported, not module {'.'.join(m[1] for m in module)!r}", pos)
        library = _common()
        for name, alias, at in names:
            if name not in library:
                raise self.error(f"common has no terminal {name!r}", at)
            if alias in self.defined_at:
                raise self.error(f"{alias!r} is already defined", at)
            self.defined_at[alias] = at
            self.imported.add(alias)
            self.rules[alias] = RuleRef("common." + name)
            stack = ["common." + name]
            while stack:
                dep = stack.pop()
                if dep not in self.extra:
                    self.extra[dep] = library[dep[len("common."):]]
                    stack.extend(rule_references(self.extra[dep]))

    # ---- expressions ---------------------------------------------------------------------------

    def expansions(self, owner: str, terminal: bool) -> Expr:
        alts = [self.expansion(owner, terminal)]
        while self.peek()[1] == "|":
            self.next()
            alts.append(self.expansion(owner, terminal))
        return alt(*alts)

    def expansion(self, owner: str, terminal: bool) -> Expr:
        items = []
        while True:
            kind, value, _ = self.peek()
            if kind in ("nl", "end") or (kind == "op" and value in _STOP):
                break
            items.append(self.item(owner, terminal))
        if self.peek()[1] == "->":
            self.next()
            self.expect("name", what="an alias name")
        return seq(*items)

    def item(self, owner: str, terminal: bool) -> Expr:
        expr = self.atom(owner, terminal)
        kind, value, pos = self.peek()
        if kind == "op" and value in "?*+" and value:
            self.next()
            return {"?": opt, "*": repeat, "+": lambda e: repeat(e, 1)}[value](expr)
        if value == "{":
            return self.braces(expr, pos)
        if value == "~":
            self.next()
            lo = self.count()
            hi = lo
            if self.peek()[1] == "..":
                self.next()
                hi = self.count()
                if hi < lo:
                    raise self.error(f"repetition ~ {lo}..{hi} has max < min", pos)
            return repeat(expr, lo, hi)
        return expr

    def braces(self, expr: Expr, pos: int) -> Expr:
        """llguidance's `item{m}`, `{m,}`, `{,n}`, `{m,n}` (Lark's templates use the braces too: refused)."""
        self.next()
        if self.peek()[0] != "number" and self.peek()[1] != ",":
            raise self.error("templates are not supported (braces after an item are llguidance's repetition {m,n})", pos)
        lo = 0 if self.peek()[1] == "," else self.count()
        hi: int | None = lo
        if self.peek()[1] == ",":
            self.next()
            hi = None if self.peek()[1] == "}" else self.count()
        if self.peek()[1] != "}":
            raise self.error("expected a repetition {m}, {m,}, {,n} or {m,n} (templates are not supported)", pos)
        self.next()
        if hi is not None and hi < lo:
            raise self.error(f"repetition {{{lo},{hi}}} has max < min", pos)
        return repeat(expr, lo, hi)

    def count(self) -> int:
        _, value, pos = self.expect("number", what="a repetition count")
        if int(value) < 0 or int(value) > MAX_REPEAT:
            raise self.error(f"repetition count must be between 0 and {MAX_REPEAT}", pos)
        return int(value)

    def atom(self, owner: str, terminal: bool) -> Expr:
        kind, value, pos = self.next()
        if kind == "op" and value in "([":
            if self.depth >= MAX_NESTING:
                raise self.error(f"nested deeper than {MAX_NESTING}", pos)
            self.depth += 1
            inner = self.expansions(owner, terminal)
            self.depth -= 1
            close = ")" if value == "(" else "]"
            if self.peek()[1] != close:
                raise self.error(f"{value!r} was never closed", pos)
            self.next()
            return inner if value == "(" else opt(inner)
        if kind == "string":
            if self.peek()[1] == "..":
                return self.token(self.char_range(value, pos), terminal)
            return self.token(self.literal(value, pos, lark_string), terminal)
        if kind == "regexp":
            return self.token(self.literal(value, pos, lark_regexp), terminal)
        if kind == "special":
            self.special_tokens = True
            try:
                return self.token(token_ref(value), terminal)
            except ValueError as exc:
                raise self.error(exc.args[0], pos + exc.args[1]) from None
        if kind == "name":
            name = value
            if not _is_terminal(name) and terminal:
                raise self.error(f"terminal {owner!r} refers to rule {name!r}: terminals may only use terminals", pos)
            self.refs.append((owner, name, pos))
            return self.token(RuleRef(self.prefix + name), terminal and _is_terminal(name))
        if kind == "directive" and value == "%json":
            return self.embedded_schema(terminal, pos)
        if kind == "directive":
            raise self.error(f"{value} is not supported (of llguidance's item extensions only %json is)", pos)
        raise self.error(f"unexpected {self.describe((kind, value, pos))}", pos)

    def token(self, expr: Expr, inside_terminal: bool) -> Expr:
        """A terminal as a rule reads it: followed by the ignored strings, if any."""
        return seq(expr, RuleRef(IGNORED)) if self.has_ignore and not inside_terminal else expr

    def literal(self, raw: str, pos: int, build) -> Expr:
        close = raw.rindex(raw[0])
        flags = raw[close + 1 :]
        if raw[0] == "/" and "\n" in raw and "x" not in flags:
            raise self.error("a regexp may span lines only with the x (verbose) flag", pos)
        try:
            body = unescape(raw[1:close])
        except ValueError as exc:
            raise self.error(exc.args[0], pos + 1 + exc.args[1]) from None
        if not body:
            return EMPTY  # lark refuses `""`; xgrammar and llguidance read it as the empty string
        if raw[0] == '"':
            body = body.replace("\\\\", "\\")
        try:
            return build(body, flags)
        except RegexError as exc:
            at = pos + 1 + exc.position if raw[0] == "/" and exc.pattern == body else pos
            raise self.error(f"{str(exc).split(' at position')[0]} in {raw}", at) from None

    def char_range(self, first: str, pos: int) -> Expr:
        self.next()
        _, last, last_pos = self.expect("string", what="a one-character string after '..'")
        ends = []
        for raw, at in ((first, pos), (last, last_pos)):
            text = unescape(raw[1 : raw.rindex('"')]).replace("\\\\", "\\")
            if len(text) != 1:
                raise self.error(f"a range needs one-character strings, not {raw}", at)
            ends.append(ord(text))
        if ends[1] < ends[0]:
            raise self.error(f"range {first}..{last} is reversed", pos)
        return charset([tuple(ends)])

    def embedded_schema(self, terminal: bool, pos: int) -> Expr:
        kind, schema, at = self.next()
        if terminal:
            raise self.error("%json belongs in a rule, not in a terminal", pos)
        from .json_schema import json_schema_grammar  # the JSON Schema front end is large: load it when used

        try:
            grammar, _ = json_schema_grammar(schema)
        except StrictgenError as exc:
            raise self.error(f"the schema after %json is refused: {exc}", at) from None
        self.embedded += 1
        names = {name: f"%json{self.embedded}.{name}" for name in grammar.rules}
        for name, body in grammar.rules.items():
            self.extra[names[name]] = rename(body, names)
        return RuleRef(names[grammar.root])

    # ---- the grammar ---------------------------------------------------------------------------

    def definitions(self) -> dict[str, Expr]:
        """The rules and terminals defined, with every reference checked."""
        for owner, name, pos in self.refs:
            if name not in self.defined_at:
                what = "terminal" if _is_terminal(name) else "rule"
                raise self.error(f"undefined {what} {name!r}", pos)
        terminals = {n: rule_references(e) for n, e in self.rules.items() if _is_terminal(n) and n not in self.imported}
        graph = {n: {r for r in refs if r in terminals} for n, refs in terminals.items()}
        looped = cyclic_rules(graph)
        if looped:
            first = min(looped, key=self.defined_at.__getitem__)
            raise self.error(f"terminal {first!r} is recursive: terminals must be regular, use a rule", self.defined_at[first])
        return {self.prefix + n: e if _is_terminal(n) else _without_left_recursion(self.prefix + n, e) for n, e in self.rules.items()}

    def grammar(self, start: str) -> Grammar:
        rules = self.definitions()
        if start not in rules or _is_terminal(start):
            raise GrammarSyntaxError(f"missing start rule {start!r}", 1, 1)
        rules.update(self.extra)
        root = start
        if self.has_ignore:
            rules[IGNORED] = repeat(alt(*self.ignored)) if self.ignored else EMPTY
            root = "%start"
            rules[root] = seq(RuleRef(IGNORED), RuleRef(start))
        written = {name: self.rules[name] for name in self.captures if rules[name] is not self.rules[name]}  # left recursion
        return Grammar(rules=rules, root=root, special_tokens=self.special_tokens, captures=dict(self.captures), written=written)


def _without_left_recursion(name: str, body: Expr) -> Expr:
    """`A: A x | A y | b | c` as `A: (b | c) (x | y)*`, the same language without the direct left
    recursion the pushdown machine cannot run (Lark grammars write lists and operators so).
    Left recursion through other rules stays, and the compiler refuses it by name."""
    me = RuleRef(name)
    tails, bases = [], []
    for option in body.items if isinstance(body, Alt) else (body,):
        if isinstance(option, Seq) and option.items and option.items[0] == me:
            tails.append(seq(*option.items[1:]))
        elif option != me:  # `A: A` adds nothing
            bases.append(option)
    return seq(alt(*bases), repeat(alt(*tails))) if tails else body


@functools.cache
def _common() -> dict[str, Expr]:
    """Lark's common library as our IR, rules named `common.NAME` (see lark_common.py)."""
    from .lark_common import COMMON

    parser = _Parser(COMMON, prefix="common.")
    parser.parse()
    return {name[len("common."):]: body for name, body in parser.definitions().items()}
