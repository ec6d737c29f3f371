"""JSON Schema → grammar IR whose language is exactly the JSON documents valid under the schema.

Entry point: `json_schema_grammar(schema, strict=..., any_order=..., style=...)` returns
`(Grammar, unenforced)`. `GrammarCompiler.compile_json_schema` wraps it with caching.

Two steps (DESIGN.md §1): `schema.normalize.Normalizer` resolves `$ref` (with the `referencing`
library), merges `allOf` and distributes `anyOf`/`oneOf`/`not`/`if`/`dependent*` into conjuncts
(a DNF per subschema); `SchemaEmitter` here turns every subschema formula into one grammar rule,
with one mixin per JSON type (schema.emit_numbers, _strings, _arrays, _objects; counting
constructions in schema.counting) and the size control of schema.rule_sizes.
Recursive schemas become recursive rules; the automaton compiler inlines the others.

What the grammar produces and accepts (documented restrictions; each one only narrows the
accepted spellings, never admits an invalid document):

* Whitespace follows `JsonStyle` (bounded; "compact" = none), after the top-level value too.
* Object members come in a fixed order: the listed properties (in the order the schema lists them,
  first appearance across `allOf`/`$ref` merges), each at most once, then any additional members.
  With ``any_order=True`` the listed properties may come in any order (each at most once,
  interleaved with additional members); past nine properties the sets of keys seen are rules
  built at run time (schema.key_sets), refused there only with presence clauses or `not` member rules.
* Strings are accepted in every JSON spelling (DESIGN.md §4 property 7; `json_escapes`): each
  character raw where JSON allows, as a short escape (``\\n``, ``\\/``...), as ``\\uXXXX`` in either
  hex case, or as a surrogate pair above U+FFFF, so const/enum values, patterns, formats, lengths
  (in code points) and object keys hold whatever the spelling. The spelled view of a string
  language is the inverse image of decoding, so it commutes with the intersections and
  differences the constraints are built from (``"\\u0061"`` cannot smuggle in an excluded key ``"a"``).
* Integers: ``-?(0|[1-9][0-9]*)`` optionally followed by ``.0+`` (JSON Schema counts 1.0 as an
  integer), plus ``-0`` when 0 is admitted; numbers with bounds, multipleOf or exclusions are plain
  decimals (no exponent); unconstrained numbers accept the whole JSON number syntax.
* enum/const values: each value's own serialization (members in the value's key order; in any
  order with ``any_order=True``), numbers in every plain spelling of their value (``1``, ``1.0``, ``1.00``...) plus ``json.dumps``'s text.
* ``JsonStyle(numbers="canonical")`` (what generation uses) narrows numbers: integers as
  ``json.dumps`` writes them (no fraction, no exponent, no ``-0``), other numbers plain decimals
  without exponent or ``-0`` and with at most 17 fraction digits (json_value.py says why trailing
  zeros stay), enum/const numbers as ``json.dumps(value)``. A non-regular ``multipleOf``
  construction keeps its own spellings. The default ("any") accepts every spelling, as a validator must.
* Duplicate member keys among *additional* members are not prevented (a context-free grammar
  cannot); RFC 8259 says names SHOULD be unique, and `json.dumps` never writes duplicates.
* `pattern` uses ECMA-262 semantics (regex.py), as JSON Schema specifies; Python's `re` (which
  the jsonschema package uses) differs on Unicode classes such as ``\\d`` and ``\\w``.
* `format` is enforced as an assertion by default (string_formats.py; ``formats="annotate"`` makes it the
  annotation 2020-12 specifies): the formats in `formats.SUPPORTED_FORMATS`;
  ``hostname`` additionally limited to 253 characters; unknown format names are annotations;
  ``regex``, ``idn-email``, ``idn-hostname`` are refused (not regular).
* A schema that admits no value at all (``false``, ``{"not": {}}``, an empty enum...) raises
  SchemaError: there is nothing to generate, and the automaton compiler refuses empty languages.

Dialects: keywords follow the schema's `$schema` (drafts 4, 6, 7, 2019-09; a keyword the declared
draft does not define is an annotation there, as jsonschema treats it; drafts up to 7 ignore the
siblings of `$ref`; a supplied metaschema's `$vocabulary` drops the keywords of the vocabularies it
leaves out, schema.vocabularies). Without `$schema`, 2020-12 applies plus the legacy forms real schemas use:
`definitions`, array-form `items` + `additionalItems`, boolean `exclusiveMinimum`/`Maximum`,
`dependencies`. `$dynamicRef` follows the dynamic scope (resources entered on the way, outermost
first). Unknown keywords are annotations (spec-conformant, so a typo'd keyword is silently
ignored).

How the hard keywords are enforced exactly: oneOf is the union of its branches when they are
provably disjoint (different types, disjoint const/enum/ranges/patterns, a member required on one
side with disjoint value schemas, disjoint key sets), "at least one / not two" presence clauses for
branches that only list required members, else branch_i ∧ ¬branch_j for every j ≠ i whose branch
may overlap branch_i (a disjoint one is inside the complement already); `not` is
pushed down by De Morgan onto each keyword (per-type complements, numeric intervals, Difference for
strings, absent/violating members and existential member constraints for objects, length/item
complements for arrays); dependentRequired and anyOf/oneOf of `required` lists become presence
clauses checked by the object construction; unevaluated* use the evaluated keys/items recorded on
each alternative (anyOf branches are split by exactly which branches hold when they differ).

Size control: big subschemas used several times (or as array items under maxItems) are kept as
called rules rather than inlined (`schema.rule_sizes.call_big_rules`); long length bounds count characters through
a called character rule; a pattern/format combined with a long length bound whose raw-character
product automaton exceeds `MAX_LENGTH_PRODUCT` states has its (pattern state, count) rules built at
run time (length_product).

Refused (SchemaError naming keyword and pointer under strict=True; recorded in `unenforced`
and dropped under strict=False): uniqueItems unless the item domain is small and finite, at most
one item is allowed, or the items are values the matcher can follow exactly (schema/unique.py), `not` of uniqueItems, `not multipleOf` with a step p / 10**n whose p exceeds
`multiple_of.MAX_MODULUS` (its remainder automaton has p states; a plain multipleOf that large is a
GrammarTooLargeError), oneOf whose
branches may overlap when the complement is too large (more than `MAX_ALTERNATIVES` alternatives:
GrammarTooLargeError), key patterns of one object that overlap in more than `MAX_REGIONS` ways, more than 3
`contains` constraints on one array, more than `MAX_EXISTS` existential member constraints (from
`not`) on one object, unevaluatedProperties/Items after
anyOf branches that may overlap (more than 5), $recursiveRef with $recursiveAnchor, patterns
regex.py cannot translate (lookaround other than a leading ``^(?!...)``, backreferences), and
references that cannot be resolved (other documents are never fetched: `documents=` supplies them,
see schema.documents).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from strictgen.errors import GrammarTooLargeError, SchemaError

from .ir import EMPTY, NOTHING, Expr, Grammar, RuleRef, Seq, alt, called_body, lit, literal_trie, seq
from .json_escapes import json_escaped, spelled_string
from .json_value import JsonStyle, any_value_body
from .numbers import number_spellings
from .schema.counting import counting_language
from .schema.emit_arrays import ArrayEmitter
from .schema.emit_numbers import NumberEmitter
from .schema.emit_objects import KEY_SETS_AHEAD, ObjectEmitter
from .schema.emit_strings import StringEmitter
from .schema.ir import FALSE, TRUE, Conjunct, Formula
from .schema.key_sets import key_set_object
from .schema.normalize import Normalizer
from .schema.rule_sizes import call_big_rules
from .schema.strings import StringLanguages
from .schema.values import Reporter, load_schema, to_fraction

__all__ = ["json_schema_grammar", "schema_cache_text", "SchemaEmitter"]

MAX_RULES = 20_000
SHORT_ENUM = 32  # string enums with more characters in all are one called rule


def schema_cache_text(schema: Any) -> str:
    """The content key of a schema: its JSON text (member order kept: it is the emission order)."""
    return json.dumps(load_schema(schema), ensure_ascii=False, separators=(",", ":"), allow_nan=True)


class SchemaEmitter(NumberEmitter, StringEmitter, ArrayEmitter, ObjectEmitter):
    """Turns normalised formulas into grammar rules, one rule per formula.

    The core here owns the rules, the formula -> rule names and the pieces every type shares
    (separators, literal values, called rules); each JSON type's emission is a mixin of its own
    module (schema_emit_*), which uses these through `self`."""

    def __init__(self, norm: Normalizer, style: JsonStyle, any_order: bool, reporter: Reporter):
        super().__init__()
        self.norm = norm
        self.strings = norm.strings  # the compile's string-language service, shared with the normaliser
        self.style = style
        self.any_order = any_order
        self.reporter = reporter
        self.rules: dict[str, Expr] = {}
        self._names: dict[Formula, str] = {}
        self._pending: list[Formula] = []
        self._counter = 0
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
            self.rules[self._names[f]] = self.emit(self.norm.dnf(f))
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
        """Does `f` admit no value at all? (the normaliser's answer)"""
        return self.norm.is_empty(f)

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
            parts.append(self.number(c.num))
        if c.str is not None:
            parts.append(self.string(c.str))
        if c.arr is not None:
            parts.append(self.array(c.arr))
        if c.obj is not None:
            parts.append(self.object(c.obj))
        return alt(*parts) if parts else NOTHING

    # ---- literal values ----

    def enum(self, values) -> Expr:
        """Any of `values`. Every spelling of many strings is a big automaton: past SHORT_ENUM
        characters of strings it is one called rule, not a copy at each use."""
        # strings and true/false/null share prefixes in a trie (an enum of 50,000 strings stays
        # linear to compile), each string character then in every spelling
        strings = [v for v in values if isinstance(v, str)]
        words = [v for v in values if v is None or isinstance(v, bool)]
        parts = [self.value(v) for v in values if not (v is None or isinstance(v, (str, bool)))]
        if strings:
            parts.append(seq(lit('"'), json_escaped(literal_trie(strings), "all"), lit('"')))
        if words:
            parts.append(literal_trie(json.dumps(v) for v in words))
        body = alt(*parts)
        if sum(len(v) for v in strings) <= SHORT_ENUM:
            return body
        key = json.dumps(list(values), sort_keys=True, allow_nan=True)
        return self.called("enum_" + hashlib.sha1(key.encode()).hexdigest()[:16], body)

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
            self.rules[name] = _called_rule(name, body)
        return RuleRef(name)

    def open_close(self, open_: str, close: str):
        """(opening bracket, closing after items, closing of an empty container)."""
        return lit(open_), seq(self.ws, lit(close)), lit(close)


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


_CALLED: dict[tuple[str, int], tuple[Expr, Expr]] = {}  # (name, id(body)) -> (body, kept alive; the rule's body)


def _called_rule(name: str, body: Expr) -> Expr:
    """`called_body(name, body)`, the same object for the same body object (a shared piece, such
    as one spelled character, is then the same rule in every grammar)."""
    got = _CALLED.get((name, id(body)))
    if got is not None and got[0] is body:
        return got[1]
    rule = called_body(name, body)
    if len(_CALLED) >= 256:
        _CALLED.clear()
    _CALLED[(name, id(body))] = (body, rule)
    return rule


@functools.lru_cache(maxsize=32)
def _any_value_rule(style: JsonStyle) -> Expr:
    """The body of rule "any": any JSON value, recursively (the emitter's separators)."""
    return any_value_body(RuleRef("any"), _layout(style)[2], style)


def json_schema_grammar(
    schema: Any,
    *,
    strict: bool = True,
    any_order: bool = False,
    style: JsonStyle | None = None,
    formats: str = "assert",
    documents: Any = None,
) -> tuple[Grammar, list[tuple[str, str]]]:
    """The grammar of the JSON documents valid under `schema` (dict, bool, JSON text or a pydantic
    model class), and the (keyword, JSON pointer) pairs left unenforced (always [] when strict).
    formats="annotate" treats `format` as an annotation only (the 2020-12 default). `documents`:
    the other documents `$ref` may point to, a mapping of URI -> schema or a referencing.Registry
    (see schema.documents); nothing is fetched."""
    schema = load_schema(schema)
    style = style or JsonStyle()
    reporter = Reporter(strict)
    norm = Normalizer(schema, reporter, formats=formats, documents=documents, strings=StringLanguages())
    emitter = SchemaEmitter(norm, style, any_order, reporter)
    try:
        grammar = emitter.build(norm.root_formula)
        if not norm.dnf(norm.root_formula):
            raise SchemaError("the schema admits no JSON value at all", keyword="", pointer="")
    except RecursionError:
        raise GrammarTooLargeError("schema nested too deeply") from None
    return grammar, list(reporter.unenforced)
