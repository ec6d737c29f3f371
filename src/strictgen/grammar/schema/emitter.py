"""The emitter's core: normalised schema formulas → grammar rules, one rule per formula.

`SchemaEmitter` owns the rules being built, the formula → rule names, and the pieces every JSON
type shares (separators, literal values, called rules); `conj` dispatches each part of a conjunct
to its type's emitter function, one module each (emit_numbers, emit_strings, emit_arrays,
emit_objects), which takes the core as its first argument. It reads what the normaliser handed
over, an immutable value (schema.normalized: the root and the formula algebra's answers: dnf, the
formula constructors, membership, emptiness) and the compile's string-language service
(schema.strings); it never holds the normaliser, and the normaliser never calls it (data flows one
way, DESIGN.md §1). The entry point is schema.entry."""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from strictgen.errors import GrammarTooLargeError, SchemaError
from strictgen.lru import BoundedLRU

from ..ir import EMPTY, NOTHING, Expr, Grammar, RuleRef, Seq, alt, called_body, lit, literal_trie, seq
from ..json_escapes import spelled_choice, spelled_string
from ..json_value import JsonStyle, any_value_body
from ..numbers import number_spellings
from .counting import counting_language
from .emit_arrays import emit_array
from .emit_numbers import emit_number
from .emit_objects import KEY_SETS_AHEAD, emit_object
from .emit_strings import emit_string
from .ir import FALSE, TRUE, Conjunct, Formula
from .key_sets import key_set_object
from .kept_pieces import kept, kept_entry_size
from .normalized import NormalizedSchema
from .rule_sizes import call_big_rules
from .values import Reporter, to_fraction

__all__ = ["MAX_RULES", "SHORT_ENUM", "SchemaEmitter"]

MAX_RULES = 20_000
SHORT_ENUM = 32  # string enums with more characters in all are one called rule

# An enum of JSON scalars is a function of its values' JSON text and the number spelling style:
# kept for the process (schema.kept_pieces: each use gets the expression a build would write,
# a body of its own included; spelling the values was most of `enum`, in every compile). The
# text tells 1, 1.0 and true apart, which equal tuples would not.
ENUMS_KEPT = 512  # enums ...
ENUMS_CHARS = 1 << 20  # ... of at most this many characters of JSON text among them all
ENUM_PARTS: BoundedLRU[tuple] = BoundedLRU(ENUMS_KEPT, ENUMS_CHARS, kept_entry_size)  # schema.kept_pieces' entries
_SCALARS = frozenset((str, bool, int, float))
_BRACKETS = {c: lit(c) for c in "[]{}"}


class SchemaEmitter:
    """Turns normalised formulas into grammar rules, one rule per formula.

    The core here owns the rules, the formula -> rule names and the pieces every type shares
    (separators, literal values, called rules); each JSON type's emission is a function of its own
    module (emit_*), which uses these through its `em` argument."""

    def __init__(self, normalized: NormalizedSchema, style: JsonStyle, any_order: bool, reporter: Reporter):
        self.normalized = normalized  # what the normaliser handed over: the emitter asks it, never the reverse
        self.strings = normalized.strings  # the compile's string-language service, shared by both steps
        self.style = style
        self.any_order = any_order
        self.reporter = reporter
        self.rules: dict[str, Expr] = {}
        self._names: dict[Formula, str] = {}
        self._pending: list[Formula] = []
        self._counter = 0
        self.string_rules: dict[tuple, str] = {}  # emit_string's rule name per distinct conjunction of atoms
        self.canonical_numbers = style.numbers == "canonical"
        self.ws, self.comma, self.colon, ws_rule = _layout(style)
        if ws_rule is not None:
            self.rules["ws"] = ws_rule

    # ---- rules ----

    def build(self, root: Formula) -> Grammar:
        # RFC 8259 allows whitespace after the value: the style's own bounded run of it
        self.rules["root"] = seq(self.ref(root), self.ws)
        while self._pending:
            f = self._pending.pop()
            self.rules[self._names[f]] = self.emit(self.normalized.dnf(f))
            if len(self.rules) > MAX_RULES:
                raise GrammarTooLargeError(f"schema too large: more than {MAX_RULES} grammar rules")
        grammar = Grammar(self.rules, "root")
        call_big_rules(grammar)
        return grammar

    def ref(self, f: Formula) -> Expr:
        if f is FALSE:
            return NOTHING
        if f is TRUE:
            return self.any_value()
        name = self._names.get(f)
        if name is None:
            name = self._names[f] = f"s{len(self._names)}"
            self.rules[name] = NOTHING  # placeholder until built
            self._pending.append(f)
        return RuleRef(name)

    def any_value(self) -> Expr:
        """Any JSON value (the `true` schema), one shared recursive rule."""
        if "any" not in self.rules:
            self.rules["any"] = _any_value_rule(self.style)
        return RuleRef("any")

    def is_empty(self, f: Formula) -> bool:
        """Does `f` admit no value at all? (the formula algebra's answer)"""
        return self.normalized.is_empty(f)

    # ---- conjuncts ----

    def emit(self, dnf: list[Conjunct]) -> Expr:
        return alt(*(self.conj(c) for c in dnf)) if dnf else NOTHING

    def conj(self, c: Conjunct) -> Expr:
        if c.values is not None:
            return self.enum(c.values)
        if c.is_top:
            return self.any_value()
        parts: list[Expr] = []
        if c.null:
            parts.append(lit("null"))
        for b in sorted(c.bools):
            parts.append(lit("true" if b else "false"))
        if c.num is not None:
            parts.append(emit_number(self, c.num))
        if c.str is not None:
            parts.append(emit_string(self, c.str))
        if c.arr is not None:
            parts.append(emit_array(self, c.arr))
        if c.obj is not None:
            parts.append(emit_object(self, c.obj))
        return alt(*parts) if parts else NOTHING

    # ---- literal values ----

    def enum(self, values) -> Expr:
        """Any of `values`. Every spelling of many strings is a big automaton: past SHORT_ENUM
        characters of strings it is one called rule, not a copy at each use."""
        long = sum(len(v) for v in values if isinstance(v, str)) > SHORT_ENUM
        scalars = all(v is None or type(v) in _SCALARS for v in values)
        text = json.dumps(list(values), sort_keys=True, allow_nan=True) if long or scalars else None
        name = None
        if long:
            name = "enum_" + hashlib.sha1(text.encode()).hexdigest()[:16]
            if name in self.rules:  # the same enum met again (o69207 has one twelve times): its rule
                return RuleRef(name)
        if scalars:
            body = kept(ENUM_PARTS, (text, self.canonical_numbers), lambda: alt(*self._enum_parts(values)), len(text))
        else:
            body = alt(*self._enum_parts(values))
        return body if name is None else self.called(name, body)

    def _enum_parts(self, values) -> list[Expr]:
        """The alternatives of enum `values`: the strings and true/false/null share prefixes in a
        trie (an enum of 50,000 strings stays linear to compile), each string character then in
        every spelling."""
        strings = [v for v in values if isinstance(v, str)]
        words = [v for v in values if v is None or isinstance(v, bool)]
        parts = [self.value(v) for v in values if not (v is None or isinstance(v, (str, bool)))]
        if strings:
            parts.append(spelled_choice(strings))
        if words:
            parts.append(literal_trie(json.dumps(v) for v in words))
        return parts

    def value(self, v: Any) -> Expr:
        if v is None:
            return lit("null")
        if v is True:
            return lit("true")
        if v is False:
            return lit("false")
        if isinstance(v, str):
            return spelled_string(v)
        if isinstance(v, (int, float)):
            x = to_fraction(v)
            text = json.dumps(v)
            if self.canonical_numbers:
                return lit(text)
            spell = number_spellings(x)
            return alt(spell, lit(text)) if "e" in text or "E" in text else spell
        if isinstance(v, list):
            if not v:
                return seq(lit("["), self.ws, lit("]"))
            items = [self.value(x) for x in v]
            body = [items[0]]
            for x in items[1:]:
                body.extend((self.comma, x))
            return seq(lit("["), self.ws, *body, self.ws, lit("]"))
        if isinstance(v, dict):
            if not v:
                return seq(lit("{"), self.ws, lit("}"))
            members = [seq(spelled_string(k), self.colon, self.value(x)) for k, x in v.items()]
            if self.any_order and len(members) > 1:
                return seq(lit("{"), self.ws, self.members_any_order(members), self.ws, lit("}"))
            body = [members[0]]
            for m in members[1:]:
                body.extend((self.comma, m))
            return seq(lit("{"), self.ws, *body, self.ws, lit("}"))
        raise SchemaError(f"not a JSON value: {v!r}")

    def members_any_order(self, members: list[Expr]) -> Expr:
        """Every member exactly once, in any order (an enum/const object under any_order): the
        states are the sets of members seen, built ahead up to nine members, past that at run
        time (schema.key_sets)."""
        n = len(members)
        full = (1 << n) - 1
        members = [self.rule_of(m) for m in members]

        def trans(state):
            used, c, first, _, _ = state
            return [(m if first else Seq((self.comma, m)), (used | 1 << j, c + 1, False, 0, 0)) for j, m in enumerate(members) if not used >> j & 1]

        def closing(state):
            return EMPTY if state[0] == full else None

        start = (0, 0, True, 0, 0)
        if (1 << n) * n > KEY_SETS_AHEAD:
            return key_set_object(self.rules, start, trans, closing, required=[True] * n, lo=0, hi=None, extras=False, pieces=members + [self.comma], exact=True)
        return counting_language(start, trans, closing, lambda state: (state[1],))

    # ---- rules the type emitters add ----

    def fresh_name(self, what: str) -> str:
        """A rule-name prefix not used before in this grammar."""
        self._counter += 1
        return f"{what}{self._counter}"

    def merge_rules(self, rules: dict[str, Expr]) -> None:
        """Add rules built elsewhere (remainder automata), whose names must be new."""
        for k, v in rules.items():
            if k in self.rules:
                raise AssertionError(f"rule name clash {k}")
            self.rules[k] = v

    def rule_of(self, expr: Expr) -> Expr:
        """`expr` as a rule of its own (a reference to it)."""
        if isinstance(expr, RuleRef):
            return expr
        name = f"m{self._counter}"
        self._counter += 1
        self.rules[name] = expr
        return RuleRef(name)

    def called(self, name: str, body: Expr) -> RuleRef:
        """`body` as rule `name`, which the automaton compiler keeps as a call instead of inlining
        it at every use: an unproductive self-reference (NOTHING followed by the rule) puts it on
        a reference cycle without changing its language. For pieces used in many places (any
        string, whitespace), one small automaton replaces a copy per use."""
        if name not in self.rules:
            self.rules[name] = called_body(name, body)
        return RuleRef(name)

    def open_close(self, open_: str, close: str):
        """(opening bracket, closing after items, closing of an empty container). The brackets
        are one leaf each for the process (leaves are never walked as shared pieces); the
        closing after items is a new node each time, as it was."""
        close_ = _BRACKETS[close]
        return _BRACKETS[open_], seq(self.ws, close_), close_


# The pieces every schema grammar of a style has are the same objects in every compile, so that
# the automaton compiler's cache of rule automata (compile/automaton.py, by rule body identity)
# builds the whitespace and any-value rules once per process, not once per schema.


@functools.lru_cache(maxsize=32)
def _layout(style: JsonStyle) -> tuple[Expr, Expr, Expr, Expr | None]:
    """(whitespace, comma, colon, the "ws" rule's body or None) of a style."""
    if style.whitespace != "flexible":
        return style.ws(), style.separator(","), style.separator(":"), None
    # bounded whitespace is a counter of ~2 × max_indent states: one shared, called rule
    # instead of a copy at every position keeps the automata (and compile time) small
    ws = RuleRef("ws")
    return ws, seq(ws, lit(","), ws), seq(ws, lit(":"), ws), called_body("ws", style.ws())


@functools.lru_cache(maxsize=32)
def _any_value_rule(style: JsonStyle) -> Expr:
    """The body of rule "any": any JSON value, recursively (the emitter's separators)."""
    return any_value_body(RuleRef("any"), _layout(style)[2], style)
