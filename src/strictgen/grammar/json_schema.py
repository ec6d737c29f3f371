"""JSON Schema → grammar IR whose language is exactly the JSON documents valid under the schema.

Entry point: `json_schema_grammar(schema, strict=..., any_order=..., style=...)` returns
`(Grammar, unenforced)`. `GrammarCompiler.compile_json_schema` wraps it with caching.

Two steps (DESIGN.md §1): `schema_normalize.Normalizer` resolves `$ref` (with the `referencing`
library), merges `allOf` and distributes `anyOf`/`oneOf`/`not`/`if`/`dependent*` into conjuncts
(a DNF per subschema); `SchemaEmitter` here turns every subschema formula into one grammar rule.
Recursive schemas become recursive rules; the automaton compiler inlines the others.

What the grammar produces and accepts (documented restrictions; each one only narrows the
accepted spellings, never admits an invalid document):

* Whitespace follows `JsonStyle` (bounded; "compact" = none), after the top-level value too.
* Object members come in a fixed order: the listed properties (in the order the schema lists them,
  first appearance across `allOf`/`$ref` merges), each at most once, then any additional members.
  With ``any_order=True`` the listed properties may come in any order (each at most once,
  interleaved with additional members); past a dozen properties the sets of keys seen are rules
  built at run time (schema_key_sets), refused there only with presence clauses or `not` member rules.
* Strings are accepted in every JSON spelling (DESIGN.md §4 property 7; `json_escapes`): each
  character raw where JSON allows, as a short escape (``\\n``, ``\\/``...), as ``\\uXXXX`` in either
  hex case, or as a surrogate pair above U+FFFF, so const/enum values, patterns, formats, lengths
  (in code points) and object keys hold whatever the spelling. The spelled view of a string
  language is the inverse image of decoding, so it commutes with the intersections and
  differences the constraints are built from (``"\\u0061"`` cannot smuggle in an excluded key ``"a"``).
* Integers: ``-?(0|[1-9][0-9]*)`` optionally followed by ``.0+`` (JSON Schema counts 1.0 as an
  integer), plus ``-0`` when 0 is admitted; numbers with bounds, multipleOf or exclusions are plain
  decimals (no exponent); unconstrained numbers accept the whole JSON number syntax.
* enum/const values: each value's own serialization (members in the value's key order), numbers in
  every plain spelling of their value (``1``, ``1.0``, ``1.00``...) plus ``json.dumps``'s text.
* ``JsonStyle(numbers="canonical")`` (what generation uses) narrows numbers: integers as
  ``json.dumps`` writes them (no fraction, no exponent, no ``-0``), other numbers plain decimals
  without exponent or ``-0`` and with at most 17 fraction digits (json_value.py says why trailing
  zeros stay), enum/const numbers as ``json.dumps(value)``. A non-regular ``multipleOf``
  construction keeps its own spellings. The default ("any") accepts every spelling, as a validator must.
* Duplicate member keys among *additional* members are not prevented (a context-free grammar
  cannot); RFC 8259 says names SHOULD be unique, and `json.dumps` never writes duplicates.
* `pattern` uses ECMA-262 semantics (regex.py), as JSON Schema specifies; Python's `re` (which
  the jsonschema package uses) differs on Unicode classes such as ``\\d`` and ``\\w``.
* `format` is enforced as an assertion by default (formats.py; ``formats="annotate"`` makes it the
  annotation 2020-12 specifies): the formats in `formats.SUPPORTED_FORMATS`;
  ``hostname`` additionally limited to 253 characters; unknown format names are annotations;
  ``regex``, ``idn-email``, ``idn-hostname`` are refused (not regular).
* A schema that admits no value at all (``false``, ``{"not": {}}``, an empty enum...) raises
  SchemaError: there is nothing to generate, and the automaton compiler refuses empty languages.

Dialects: keywords follow the schema's `$schema` (drafts 4, 6, 7, 2019-09; a keyword the declared
draft does not define is an annotation there, as jsonschema treats it; drafts up to 7 ignore the
siblings of `$ref`). Without `$schema`, 2020-12 applies plus the legacy forms real schemas use:
`definitions`, array-form `items` + `additionalItems`, boolean `exclusiveMinimum`/`Maximum`,
`dependencies`. `$dynamicRef` follows the dynamic scope (resources entered on the way, outermost
first). Unknown keywords are annotations (spec-conformant, so a typo'd keyword is silently
ignored).

How the hard keywords are enforced exactly: oneOf is the union of its branches when they are
provably disjoint (different types, disjoint const/enum/ranges/patterns, a member required on one
side with disjoint value schemas, disjoint key sets), "at least one / not two" presence clauses for
branches that only list required members, else branch_i ∧ ¬branch_j for all j ≠ i; `not` is
pushed down by De Morgan onto each keyword (per-type complements, numeric intervals, Difference for
strings, absent/violating members and existential member constraints for objects, length/item
complements for arrays); dependentRequired and anyOf/oneOf of `required` lists become presence
clauses checked by the object construction; unevaluated* use the evaluated keys/items recorded on
each alternative (anyOf branches are split by exactly which branches hold when they differ).

Size control: big subschemas used several times (or as array items under maxItems) are kept as
called rules rather than inlined (`_call_big_rules`); long length bounds count characters through
a called character rule; a pattern/format combined with a long length bound is refused with
GrammarTooLargeError when the product automaton would exceed `MAX_LENGTH_PRODUCT` states.

Refused (SchemaError naming keyword and pointer under strict=True; recorded in `unenforced`
and dropped under strict=False): uniqueItems unless the item domain is small and finite, at most
one item is allowed, or the items are scalars the matcher can follow (schema_unique.py), `not` of uniqueItems, `not multipleOf` with a step p / 10**n whose p exceeds
`numbers.MAX_MODULUS` (its remainder automaton has p states; a plain multipleOf that large is a
GrammarTooLargeError), oneOf whose
branches may overlap when the complement is too large (more than `MAX_ALTERNATIVES` alternatives:
GrammarTooLargeError), key patterns of one object that overlap in more than `MAX_REGIONS` ways, more than 3
`contains` (or existential) constraints on one array (object), unevaluatedProperties/Items after
anyOf branches that may overlap (more than 5), $recursiveRef with $recursiveAnchor, patterns
regex.py cannot translate (lookaround other than a leading ``^(?!...)``, backreferences), and
references that cannot be resolved (other documents are never fetched: `documents=` supplies them,
see schema_documents).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from fractions import Fraction
from typing import Any

from strictgen import deadline
from strictgen.errors import CompileTimeoutError, GrammarTooLargeError, SchemaError, StrictgenError

from .automata import Language, dfa_size
from .ir import (
    MAX_CODEPOINT,
    NOTHING,
    Alt,
    ByteSet,
    CharSet,
    Difference,
    Expr,
    Grammar,
    Intersect,
    Literal,
    Repeat,
    RuleRef,
    Seq,
    Spelled,
    alt,
    charset,
    difference,
    intersect,
    lit,
    literal_trie,
    normalize_ranges,
    opt,
    recursive_rules,
    repeat,
    rule_references,
    seq,
)
from .json_escapes import json_escaped, spelled_string
from .json_value import CANONICAL_NUMBER, DIGIT, NONZERO, JsonStyle, json_container, json_integer, json_number, json_string
from .numbers import decimal_places
from .schema_key_sets import key_set_object
from .schema_unique import unique_array_rule, unique_scalar_kinds
from .schema_ir import FALSE, TRUE, ArrP, Conj, Formula, NumP, ObjP, pattern_language
from .schema_normalize import Normalizer
from .schema_values import RefLoop, Reporter, json_equal, load_schema, to_fraction, value_key

__all__ = ["json_schema_grammar", "spelled", "schema_cache_text", "SchemaEmitter", "MAX_PATTERNS"]

MAX_PATTERNS = 4  # distinct key patterns per object taken in all 2**n combinations
MAX_REGIONS = 24  # beyond that: combinations some key can match
MAX_DP_STATES = 20_000  # states of one array/object counting construction
MAX_FINITE_DOMAIN = 12  # item values for uniqueItems
MAX_RULES = 20_000
LONG_STRING = 48  # length bounds above this count characters through a called rule
MAX_LENGTH_PRODUCT = 60_000  # pattern/format states × length bound, at most
SHORT_ENUM = 32  # string enums with more characters in all are one called rule
BIG_RULE = 4_000  # rules whose inlined automaton would be bigger are kept as calls
MAX_INLINE_DEPTH = 24  # rules inlined inside one another, at most (the automaton builder recurses per level)

ANY_CHAR = charset([(0, MAX_CODEPOINT)])


def spelled(expr: Expr) -> Expr:
    """Every JSON spelling of the raw strings of `expr` (string bodies, between the quotes): a
    literal or one class is rewritten in place, anything else is spelled on its determinised
    automaton (`Spelled`), where a pattern's products with lengths and formats are cheap."""
    if isinstance(expr, (Literal, CharSet)):
        return json_escaped(expr, "all")
    return Spelled(expr)


ANY_STRING = repeat(ANY_CHAR)
PLAIN_NUMBER = seq(json_integer(), opt(seq(lit("."), repeat(DIGIT, 1))))
NONINT_PLAIN = seq(opt(lit("-")), alt(lit("0"), seq(NONZERO, repeat(DIGIT))), lit("."), repeat(DIGIT), NONZERO, repeat(DIGIT))
ZERO_FRACTION = opt(seq(lit("."), repeat(lit("0"), 1)))

# ---- helpers --------------------------------------------------------------------------------------


def _lcm(a: Fraction, b: Fraction) -> Fraction:
    """Least common multiple of two positive rationals: the smallest positive common multiple."""
    return Fraction(math.lcm(a.numerator, b.numerator), math.gcd(a.denominator, b.denominator))


def _decimal_text(x: Fraction) -> str | None:
    """The shortest plain decimal text of x, None if x is not a finite decimal."""
    k = decimal_places(x)
    if k is None:
        return None
    sign = "-" if x < 0 else ""
    m = abs(x) * 10**k
    digits = str(m.numerator)
    if k == 0:
        return sign + digits
    digits = digits.rjust(k + 1, "0")
    return sign + digits[:-k] + "." + digits[-k:]


def number_spellings(x: Fraction) -> Expr:
    """Every plain decimal spelling of the value x (trailing zeros; -0 for zero)."""
    text = _decimal_text(x)
    if text is None:
        return NOTHING
    if x == 0:
        return seq(opt(lit("-")), lit("0"), ZERO_FRACTION)
    if "." in text:
        return seq(lit(text), repeat(lit("0")))
    return seq(lit(text), ZERO_FRACTION)


def schema_cache_text(schema: Any) -> str:
    """The content key of a schema: its JSON text (member order kept: it is the emission order)."""
    return json.dumps(load_schema(schema), ensure_ascii=False, separators=(",", ":"), allow_nan=True)


# ---- the emitter -----------------------------------------------------------------------------------


class SchemaEmitter:
    """Turns normalised formulas into grammar rules, one rule per formula."""

    def __init__(self, norm: Normalizer, style: JsonStyle, any_order: bool, reporter: Reporter):
        self.norm = norm
        self.style = style
        self.any_order = any_order
        self.reporter = reporter
        self.rules: dict[str, Expr] = {}
        self._names: dict[Formula, str] = {}
        self._pending: list[Formula] = []
        self._str_cache: dict[tuple, Expr] = {}
        self._languages: dict[tuple, Language] = {}
        self._string_rules: dict[tuple, str] = {}
        self._cells: dict[tuple, list[int] | None] = {}
        self._counter = 0
        self.canonical_numbers = style.numbers == "canonical"
        self.ws = style.ws()
        self.comma = style.separator(",")
        self.colon = style.separator(":")
        if style.whitespace == "flexible":
            # bounded whitespace is a counter of ~2 × max_indent states: one shared, called rule
            # instead of a copy at every position keeps the automata (and compile time) small
            self.ws = self._called("ws", self.ws)
            self.comma = seq(self.ws, lit(","), self.ws)
            self.colon = seq(self.ws, lit(":"), self.ws)
        norm.str_member_hook = self.str_member
        norm.str_language_empty = self.str_language_empty
        norm.obj_keys_disjoint = self.objects_keys_disjoint

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
        _call_big_rules(grammar)
        return grammar

    def ref(self, f: Formula) -> Expr:
        if f is FALSE:
            return NOTHING
        if f is TRUE:
            return self._any()
        name = self._names.get(f)
        if name is None:
            name = self._names[f] = f"s{len(self._names)}"
            self.rules[name] = NOTHING  # placeholder until built
            self._pending.append(f)
        return RuleRef(name)

    def _any(self) -> Expr:
        if "any" not in self.rules:
            value = RuleRef("any")
            member = seq(json_string(), self.colon, value)
            self.rules["any"] = alt(
                json_container("{", member, "}", self.style),
                json_container("[", value, "]", self.style),
                json_string(),
                json_number(self.canonical_numbers),
                lit("true"),
                lit("false"),
                lit("null"),
            )
        return RuleRef("any")

    def is_empty(self, f: Formula) -> bool:
        """Does `f` admit no value at all? (False when it cannot be told yet: `f` is being normalised.)"""
        if f is FALSE:
            return True
        if f in self.norm._active:
            return False
        try:
            return not self.norm.dnf(f)
        except RefLoop:
            if self.norm._active:  # asked from inside a normalisation: cannot tell
                return False
            raise

    # ---- conjuncts ----

    def emit(self, dnf: list[Conj]) -> Expr:
        return alt(*(self.conj(c) for c in dnf)) if dnf else NOTHING

    def conj(self, c: Conj) -> Expr:
        if c.values is not None:
            return self._enum(c.values)
        if c.is_top:
            return self._any()
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

    def _enum(self, values) -> Expr:
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
        return self._called("enum_" + hashlib.sha1(key.encode()).hexdigest()[:16], body)

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
            body = [members[0]]
            for m in members[1:]:
                body.extend((self.comma, m))
            return seq(lit("{"), self.ws, *body, self.ws, lit("}"))
        raise SchemaError(f"not a JSON value: {v!r}")

    # ---- numbers ----

    def _prefix(self, what: str) -> str:
        self._counter += 1
        return f"{what}{self._counter}"

    def _merge_rules(self, rules: dict[str, Expr]) -> None:
        for k, v in rules.items():
            if k in self.rules:
                raise AssertionError(f"rule name clash {k}")
            self.rules[k] = v

    def number(self, n: NumP) -> Expr:
        from .numbers import integer_range, multiple_of_integers, multiple_of_numbers, number_range

        if n.is_empty():
            return NOTHING
        mult = self._multiple(n)
        excluded = self._excluded(n)
        if n.int_only:
            if mult is not None:
                expr, rules = multiple_of_integers(mult, *self._bounds(n), prefix=self._prefix("int_mul"))
            else:
                expr, rules = integer_range(*self._bounds(n)), {}
        elif mult is not None:
            expr, rules = multiple_of_numbers(mult, *self._bounds(n), prefix=self._prefix("num_mul"))
        else:
            expr, rules = self._plain_range(n), {}
        not_mults = []
        for m in n.not_mults:
            try:
                mexpr, mrules = multiple_of_numbers(m, *self._bounds(n), prefix=self._prefix("not_mul"))
            except CompileTimeoutError:
                raise
            except GrammarTooLargeError:
                break  # _number_residues refuses it, naming the keyword
            if mrules:
                break
            not_mults.append(mexpr)
        if rules and (n.nonint or excluded or n.not_mults) or len(not_mults) < len(n.not_mults):
            # a remainder automaton meets a difference or intersection: build it on the DFAs
            return self._number_residues(n, mult, excluded)
        self._merge_rules(rules)
        if n.int_only:
            expr = self._integer_spellings(n, expr)
        elif n.nonint:
            expr = intersect(expr, NONINT_PLAIN)
        for mexpr in not_mults:
            expr = difference(expr, mexpr)
        if excluded:
            expr = difference(expr, alt(*(number_spellings(x) for x in excluded)))
        if self.canonical_numbers and not n.int_only and not rules:
            expr = intersect(expr, CANONICAL_NUMBER)
        return expr

    def _number_residues(self, n: NumP, mult: Fraction | None, excluded: list) -> Expr:
        """`number` when multipleOf (or `not multipleOf`) needs a remainder automaton and is combined
        with a difference or an intersection: the rest is one regular language of plain decimals,
        which `residue_filter` multiplies with the remainder automata (their complements for
        `not multipleOf`)."""
        from .numbers import integer_range, residue_filter

        if n.int_only:
            base = self._integer_spellings(n, integer_range(*self._bounds(n)))
        else:
            base = self._plain_range(n)
            if n.nonint:
                base = intersect(base, NONINT_PLAIN)
        if excluded:
            base = difference(base, alt(*(number_spellings(x) for x in excluded)))
        if self.canonical_numbers and not n.int_only:
            base = intersect(base, CANONICAL_NUMBER)
        keep = [mult] if mult is not None else []
        prefix = self._prefix("num_res")
        try:
            expr, rules = residue_filter(base, keep, n.not_mults, prefix=prefix)
        except CompileTimeoutError:
            raise
        except GrammarTooLargeError as e:
            if not n.not_mults:
                raise
            # a step too big for a remainder automaton (or too big a product): refused, or dropped
            self.reporter.refuse(f"'not multipleOf' cannot be enforced here: {e}", "multipleOf", _where(n, "multipleOf"))
            expr, rules = residue_filter(base, keep, (), prefix=prefix)
        self._merge_rules(rules)
        return expr

    def _plain_range(self, n: NumP) -> Expr:
        """The numbers within n's bounds, as plain decimals once anything else constrains them."""
        from .numbers import number_range

        if n.lo is None and n.hi is None and (n.nonint or n.excluded or n.not_mults):
            return PLAIN_NUMBER
        return number_range(*self._bounds(n))

    def _integer_spellings(self, n: NumP, expr: Expr) -> Expr:
        """Canonical integer texts `expr` with every other spelling a validator accepts (`12.0`,
        `-0` when 0 is admitted), unless numbers are canonical."""
        if self.canonical_numbers:
            return expr
        zero_ok = NumP(int_only=True, lo=n.lo, lo_strict=n.lo_strict, hi=n.hi, hi_strict=n.hi_strict).contains(Fraction(0))
        expr = seq(expr, ZERO_FRACTION)
        return alt(expr, seq(lit("-0"), ZERO_FRACTION)) if zero_ok else expr

    @staticmethod
    def _multiple(n: NumP) -> Fraction | None:
        mult = None
        for m in n.mults:
            mult = m if mult is None else _lcm(mult, m)
        return mult

    @staticmethod
    def _excluded(n: NumP) -> list:
        """The excluded values inside n's range that no `not multipleOf` excludes already."""
        base = NumP(n.int_only, n.nonint, n.lo, n.lo_strict, n.hi, n.hi_strict, n.mults)
        return sorted(x for x in n.excluded if base.contains(x) and not any((x / m).denominator == 1 for m in n.not_mults))

    @staticmethod
    def _bounds(n: NumP):
        return n.lo, n.hi, n.lo_strict, n.hi_strict

    # ---- strings ----

    def string(self, atoms: tuple) -> Expr:
        if not atoms:
            return json_string()
        ins = [a[1] for a in atoms if a[0] == "in"]
        if ins:
            common = frozenset.intersection(*ins)
            rest = tuple(a for a in atoms if a[0] != "in")
            kept = sorted(s for s in common if not rest or self.str_member(rest, s))
            if not kept:
                return NOTHING
            return self._enum(kept)
        name = self._string_rules.get(atoms)
        if name is not None:
            return RuleRef(name)
        lens = [a for a in atoms if a[0] == "len"]
        if len(atoms) == 1 and atoms[0][0] == "len" and max(atoms[0][1], atoms[0][2] or 0) > LONG_STRING:
            # a long length bound alone: count characters with calls to one character rule
            body = json_string(repeat(self._char_rule(), atoms[0][1], atoms[0][2]))
        else:
            if lens and max(lens[0][1], lens[0][2] or 0) > LONG_STRING:
                self._check_length_product(atoms, lens[0])
            body = escaped_string(atoms)
        if (not lens or max(lens[0][1], lens[0][2] or 0) <= LONG_STRING) and all(a[0] == "len" for a in atoms):
            return body
        # patterns, formats, long counts: one rule per distinct constraint, shared by every use
        # (big ones are then compiled once, as calls)
        # a stable name (the same atoms give the same rule name and body object in every grammar,
        # so a compiler-side cache of rule automata could reuse e.g. the date-time automaton)
        name = self._string_rules[atoms] = "str_" + hashlib.sha1(repr(atoms).encode()).hexdigest()[:16]
        self.rules[name] = body
        return RuleRef(name)

    def _check_length_product(self, atoms: tuple, length: tuple) -> None:
        """Refuse early when a long length bound meets a pattern/format whose product is too big."""
        rest = tuple(a for a in atoms if a[0] != "len")
        lang = string_language(atoms)
        if not isinstance(lang, Intersect):
            return  # the length bound was implied by the other atoms, or merged into one class
        states = _raw_states(rest)
        if states is None:
            return
        count = max(length[1], length[2] or 0)
        estimate = 4 * states * count  # measured: ~4 product states per (pattern state, count)
        if estimate > MAX_LENGTH_PRODUCT:
            raise GrammarTooLargeError(
                f"a string with a length bound of {count} and a pattern/format of {states} states needs about "
                f"{estimate} automaton states (at most {MAX_LENGTH_PRODUCT})"
            )

    def _rule_of(self, expr: Expr) -> Expr:
        """`expr` as a rule of its own (a reference to it)."""
        if isinstance(expr, RuleRef):
            return expr
        name = f"m{self._counter}"
        self._counter += 1
        self.rules[name] = expr
        return RuleRef(name)

    def _char_rule(self) -> Expr:
        """One canonically spelled character, as a called rule: a length bound of N then costs
        about N DFA states instead of ~25 N (UTF-8 and escape sub-states per position)."""
        return self._called("json_char", spelled(ANY_CHAR))

    def _called(self, name: str, body: Expr) -> RuleRef:
        """`body` as rule `name`, which the automaton compiler keeps as a call instead of inlining
        it at every use: an unproductive self-reference (NOTHING followed by the rule) puts it on
        a reference cycle without changing its language. For pieces used in many places (any
        string, whitespace), one small automaton replaces a copy per use."""
        if name not in self.rules:
            self.rules[name] = Alt((body, Seq((NOTHING, RuleRef(name)))))
        return RuleRef(name)

    def str_lang(self, atoms: tuple) -> Expr:
        """The raw-character language of a conjunction of string atoms."""
        return string_language(atoms)

    def _language(self, atoms: tuple) -> Language:
        got = self._languages.get(atoms)
        if got is None:
            got = self._languages[atoms] = Language(self.str_lang(atoms))
        return got

    def str_member(self, atoms: tuple, s: str) -> bool:
        """Is the string s in the language of the atoms (ECMA pattern semantics)?"""
        simple = True
        for a in atoms:
            if a[0] == "len":
                n = len(s)
                if n < a[1] or (a[2] is not None and n > a[2]):
                    return False
            elif a[0] == "in":
                if s not in a[1]:
                    return False
            else:
                simple = False
        if simple:
            return True
        return self._language(atoms).accepts(s.encode("utf-8"))

    def str_language_empty(self, atoms: tuple) -> bool:
        """Is the conjunction empty? Decided lazily (the core stops at the first member); a
        language too big to decide counts as not empty, which only costs a disjointness proof."""
        try:
            return self._language(atoms).is_empty()
        except CompileTimeoutError:
            raise
        except (StrictgenError, TypeError):
            return False

    # ---- arrays ----

    def _open_close(self, open_: str, close: str):
        return lit(open_), seq(self.ws, lit(close)), lit(close)

    def array(self, a: ArrP) -> Expr:
        norm = self.norm
        if a.trivial:
            return json_container("[", self._any(), "]", self.style)
        lo = a.min
        contains = []
        for c in a.contains:
            if c.lo == 0 and c.hi is None:
                continue  # vacuous
            if c.schema is TRUE and c.hi is None:
                lo = max(lo, c.start + c.lo)  # at least lo items from index start: a length bound
                continue
            if c.schema is FALSE:
                if c.lo > 0:
                    return NOTHING
                continue
            contains.append(c)
        if len(contains) > 3:
            self.reporter.refuse("more than 3 'contains' constraints on one array", "contains", _where(a, "contains"))
            contains = contains[:3]
        unique = a.unique and (a.max is None or a.max > 1)
        domains = None
        open_, close_more, close_first = self._open_close("[", "]")
        if unique:
            domains = self._finite_domains(a)
            kinds = unique_scalar_kinds(self.norm.dnf(a.items), self.canonical_numbers) if domains is None and not a.prefix and not contains else None
            if kinds is not None:  # the matcher refuses copies of earlier items (schema_unique.py)
                return unique_array_rule(self.rules, seq(open_, self.ws, self._simple_array(a, lo, a.max, close_more, close_first)), kinds)
            if domains is None:
                kw, ptr = next(iter(a.where), ("uniqueItems", ""))
                self.reporter.refuse(
                    "uniqueItems is only enforced when the items take at most "
                    f"{MAX_FINITE_DOMAIN} possible values (or maxItems <= 1), or are scalars that can take "
                    "infinitely many (strings with at most minLength, numbers without bounds or multipleOf, booleans, null)",
                    "uniqueItems",
                    ptr,
                )
                unique = False
        P = len(a.prefix)
        hi = a.max
        if not contains and not unique:
            return seq(open_, self.ws, self._simple_array(a, lo, hi, close_more, close_first))
        k = len(contains)
        starts = [c.start for c in contains]
        cap = hi if hi is not None else max([P, lo, 1] + [s + 1 for s in starts])

        def nxt(i: int) -> int:
            return i + 1 if hi is not None else min(i + 1, cap)

        def item_classes(i: int):
            """(formula, new counts) choices for the item at index i."""
            S = a.item(i)
            out = []
            for mask in range(1 << k):
                parts = [S]
                ok = True
                bits = []
                for j, c in enumerate(contains):
                    active = i >= c.start
                    if mask >> j & 1:
                        if not active:
                            ok = False
                            break
                        parts.append(c.schema)
                        bits.append(True)
                    else:
                        if active and c.hi is not None:
                            parts.append(norm.not_(c.schema))
                        bits.append(False)
                if ok:
                    out.append((norm.and_(*parts), bits))
            return out

        def bump(cnt: tuple, bits: list) -> tuple | None:
            new = []
            for j, c in enumerate(contains):
                v = cnt[j] + (1 if bits[j] else 0)
                if c.hi is not None:
                    if v > c.hi:
                        return None
                else:
                    v = min(v, c.lo)
                new.append(v)
            return tuple(new)

        def trans(state):
            i, cnt, used = state
            if hi is not None and i >= hi:
                return []
            out = []
            if unique:
                for v in domains[min(i, P)]:
                    vk = value_key(v)
                    if vk in used:
                        continue
                    bits = [i >= c.start and norm.holds(c.schema, v) for c in contains]
                    cnt2 = bump(cnt, bits)
                    if cnt2 is None:
                        continue
                    item = self.value(v)
                    out.append((item if i == 0 else Seq((self.comma, item)), (nxt(i), cnt2, used | {vk})))
                return out
            for formula, bits in item_classes(i):
                if self.is_empty(formula):
                    continue
                cnt2 = bump(cnt, bits)
                if cnt2 is None:
                    continue
                item = self.ref(formula)
                out.append((item if i == 0 else Seq((self.comma, item)), (nxt(i), cnt2, used)))
            return out

        def closing(state):
            i, cnt, used = state
            if i < lo or any(cnt[j] < c.lo for j, c in enumerate(contains)):
                return None
            return close_first if i == 0 else close_more

        def progress(state):
            i, cnt, used = state
            return (i, sum(cnt), len(used))

        body = _dp((0, (0,) * k, frozenset()), trans, closing, progress)
        return seq(open_, self.ws, body)

    def _simple_array(self, a: ArrP, lo: int, hi: int | None, close_more: Expr, close_first: Expr) -> Expr:
        P = len(a.prefix)
        items = self.ref(a.items)
        # the tail after the prefix: items*, with the counts left
        if hi is not None and hi <= P:
            tail_first: Expr = close_first
            tail_more: Expr = close_more
            P = hi
        else:
            more_lo = max(0, lo - P)
            more_hi = None if hi is None else hi - P
            if items is NOTHING or self.is_empty(a.items):
                more_hi = 0
            if more_lo > (more_hi if more_hi is not None else more_lo):
                return NOTHING
            rep_more = repeat(seq(self.comma, items), more_lo, more_hi)
            tail_more = seq(rep_more, close_more)
            if more_hi == 0:
                tail_first = close_first if more_lo == 0 else NOTHING
            elif more_lo == 0:
                tail_first = alt(seq(items, repeat(seq(self.comma, items), 0, None if more_hi is None else more_hi - 1), close_more), close_first)
            else:
                tail_first = seq(items, repeat(seq(self.comma, items), more_lo - 1, None if more_hi is None else more_hi - 1), close_more)
        # the prefix, from the last position back
        cur_more = tail_more  # suffix after i items (i >= 1)
        for i in range(P - 1, -1, -1):
            item = self.ref(a.prefix[i])
            if i == 0:
                take = Seq((item, cur_more))
                return alt(take, close_first) if lo == 0 else take
            take = Seq((self.comma, item, cur_more))
            cur_more = Alt((take, close_more)) if i >= lo else take
        return tail_first

    def _finite_domains(self, a: ArrP) -> list[list] | None:
        """Possible values of the items at each prefix index and after (None: too many or infinite)."""
        out = []
        for f in list(a.prefix) + [a.items]:
            d = self.finite_values(f)
            if d is None:
                return None
            out.append(d)
        return out

    def finite_values(self, f: Formula) -> list | None:
        if f is FALSE:
            return []
        if f is TRUE:
            return None
        vals: list = []
        for c in self.norm.dnf(f):
            if c.values is not None:
                vals.extend(c.values)
                continue
            if c.str is not None or c.arr is not None or c.obj is not None:
                return None
            if c.null:
                vals.append(None)
            vals.extend(sorted(c.bools))
            if c.num is not None:
                n = c.num
                if not n.int_only or n.lo is None or n.hi is None:
                    return None
                a = math.ceil(n.lo) if not n.lo_strict else math.floor(n.lo) + 1
                b = math.floor(n.hi) if not n.hi_strict else math.ceil(n.hi) - 1
                if b - a + 1 > MAX_FINITE_DOMAIN:
                    return None
                vals.extend(x for x in range(a, b + 1) if n.contains(Fraction(x)))
            if len(vals) > MAX_FINITE_DOMAIN:
                return None
        out: list = []
        for v in vals:
            if not any(json_equal(v, w) for w in out):
                out.append(v)
        return out if len(out) <= MAX_FINITE_DOMAIN else None

    # ---- objects ----

    def object(self, o: ObjP) -> Expr:
        norm = self.norm
        if o.trivial:
            return json_container("{", seq(json_string(), self.colon, self._any()), "}", self.style)
        exists = list(o.exists)
        if len(exists) > 3:
            self.reporter.refuse("more than 3 existential member constraints (from 'not') on one object", "not", "")
            exists = exists[:3]
        full = (1 << len(exists)) - 1
        names = list(o.order)
        for r in o.rules + tuple(exists):
            if r.kind == "name" and r.name not in names:
                names.append(r.name)
        for clause in o.clauses:
            for k, _ in sorted(clause):
                if k not in names:
                    names.append(k)
        # presence clauses (dependentRequired, anyOf/oneOf of required lists): the construction
        # tracks which clauses are satisfied; in the fixed order a literal is decided at its slot
        clauses = list(o.clauses)
        all_clauses = (1 << len(clauses)) - 1

        # named members: (variants [(member expr, satisfied exists mask)], required, dependency bit)
        slots: list[tuple[list[tuple[Expr, int]], bool, int]] = []
        for k in names:
            vf = norm.value_formula(o, k)
            if self.is_empty(vf):
                if k in o.required:
                    return NOTHING
                continue
            key = spelled_string(k)
            variants = [(seq(key, self.colon, self.ref(vf)), 0)]
            applicable = [j for j, e in enumerate(exists) if norm.rule_applies(e, k)]
            for mask in _submasks(applicable):
                f = norm.and_(vf, *(exists[j].schema for j in applicable if mask >> j & 1))
                if not self.is_empty(f):
                    variants.append((seq(key, self.colon, self.ref(f)), mask))
            slots.append((variants, k in o.required, k))
        extras = self._additional(o, names, exists)
        open_, close_more, close_first = self._open_close("{", "}")
        lo, hi = o.min, o.max
        n = len(slots)
        if lo or hi is not None or exists or o.clauses or (self.any_order and n > 1):
            # members appear in many states of the construction: make them rules, so that big
            # ones can be compiled once and called (see _call_big_rules)
            slots = [([(self._rule_of(m), b) for m, b in variants], req, k) for variants, req, k in slots]
            extras = [(self._rule_of(m), b) for m, b in extras]
        slot_keys = {sl[2] for sl in slots}
        take_sat = [sum(1 << i for i, cl in enumerate(clauses) if (sl[2], True) in cl) for sl in slots]
        skip_sat = [sum(1 << i for i, cl in enumerate(clauses) if (sl[2], False) in cl) for sl in slots]
        sat0 = sum(1 << i for i, cl in enumerate(clauses) if any(not pos and k not in slot_keys for k, pos in cl))

        def clauses_hold(used: int) -> bool:
            """any_order: the clauses, given the set of slots used."""
            present = {slots[j][2] for j in range(n) if used >> j & 1}
            return all(any((k in present) == pos for k, pos in cl) for cl in clauses)

        def count(c: int) -> int:
            return c + 1 if hi is not None else min(c + 1, lo)

        if self.any_order and n > 1:
            required_mask = sum(1 << j for j in range(n) if slots[j][1])

            def trans(state):
                used, c, first, sat, present = state
                out = []
                if hi is not None and c >= hi:
                    return out
                for j in range(n):
                    if not used >> j & 1:
                        for m, bits in slots[j][0]:
                            nxt = (used | 1 << j, count(c), False, sat | bits, 0)
                            out.append((m if first else Seq((self.comma, m)), nxt))
                for m, bits in extras:
                    out.append((m if first else Seq((self.comma, m)), (used, count(c), False, sat | bits, present)))
                return out

            def closing(state):
                used, c, first, sat, present = state
                if used & required_mask != required_mask or c < lo or sat != full or not clauses_hold(used):
                    return None
                return close_first if first else close_more

            def progress(state):
                used, c, first, sat, present = state
                return (bin(used).count("1"), c, not first, bin(sat).count("1"))

            if (1 << n) * n > 60_000:  # too many key sets to build ahead: built at run time
                pieces = [m for variants, _, _ in slots for m, _ in variants] + [m for m, _ in extras] + [self.comma, close_first, close_more]
                return seq(open_, self.ws, key_set_object(self.rules, (0, 0, True, 0, 0), trans, closing, required=[sl[1] for sl in slots],
                                                          lo=lo, hi=hi, extras=bool(extras), pieces=pieces, exact=not exists and not clauses))
            return seq(open_, self.ws, _dp((0, 0, True, 0, 0), trans, closing, progress))

        def trans(state):
            k, c, first, sat, present = state
            out = []
            is_full = hi is not None and c >= hi
            if k < n:
                variants, req, _ = slots[k]
                if not is_full:
                    for m, bits in variants:
                        out.append((m if first else Seq((self.comma, m)), (k + 1, count(c), False, sat | bits, present | take_sat[k])))
                if not req:
                    out.append((None, (k + 1, c, first, sat, present | skip_sat[k])))
            elif not is_full:
                for m, bits in extras:
                    out.append((m if first else Seq((self.comma, m)), (k, count(c), False, sat | bits, present)))
            return out

        def closing(state):
            k, c, first, sat, present = state
            if k < n or c < lo or sat != full or present != all_clauses:
                return None
            return close_first if first else close_more

        def progress(state):
            k, c, first, sat, present = state
            return (k, c, not first, bin(sat).count("1"))

        return seq(open_, self.ws, _dp((0, 0, True, 0, sat0), trans, closing, progress))

    def _key_set(self, r) -> Expr:
        """The raw language of the keys an existential rule ranges over."""
        if r.kind == "name":
            return lit(r.name)
        if r.kind == "pattern":
            return pattern_language(r.pattern)
        if r.kind == "keys":
            return self.str_lang(r.atoms)
        outs = [lit(k) for k in sorted(r.names)] + [pattern_language(p) for p in sorted(r.patterns)]
        return difference(ANY_STRING, alt(*outs)) if outs else ANY_STRING

    def _regions(self, o: ObjP) -> list[tuple[Formula, Expr | None]]:
        """The keys outside the listed names, partitioned by the value schema that applies to them:
        (value formula, raw key language or None for every key). Names are not subtracted here."""
        norm = self.norm
        pattern_rules = [r for r in o.rules if r.kind == "pattern"]
        other_rules = [r for r in o.rules if r.kind == "other"]
        patterns = sorted({r.pattern for r in pattern_rules} | {p for r in other_rules for p in r.patterns})
        masks = range(1 << len(patterns))
        if len(patterns) > MAX_PATTERNS:  # only the combinations some key can fall into
            found = self._key_cells(patterns)
            if found is None:
                ptr = next((r.pointer for r in pattern_rules), "")
                self.reporter.refuse(
                    f"objects whose key patterns overlap in more than {MAX_REGIONS} ways are not supported", "patternProperties", ptr
                )
                patterns = patterns[:MAX_PATTERNS]
            else:
                masks = found
        regions: dict[Formula, list[int]] = {}
        for mask in masks:
            inside = {patterns[i] for i in range(len(patterns)) if mask >> i & 1}
            parts = [r.schema for r in pattern_rules if r.pattern in inside]
            parts += [r.schema for r in other_rules if not (r.patterns & inside)]
            vf = norm.and_(*parts)
            if self.is_empty(vf):
                continue
            regions.setdefault(vf, []).append(mask)
        out: list[tuple[Formula, Expr | None]] = []
        for vf, ms in regions.items():
            keys = None if len(ms) == len(masks) else alt(*(self._region(patterns, m) for m in ms))
            if o.key_atoms is not None:
                keys = self.str_lang(o.key_atoms) if keys is None else intersect(keys, self.str_lang(o.key_atoms))
            out.append((vf, keys))
        return out

    def allowed_keys(self, o: ObjP) -> Expr:
        """The raw language of the keys an object of `o` may have (for disjointness checks)."""
        names = list(dict.fromkeys(list(o.order) + [r.name for r in o.rules if r.kind == "name"]))
        allowed = [lit(k) for k in names if not self.is_empty(self.norm.value_formula(o, k))]
        named = literal_trie(names)
        for vf, keys in self._regions(o):
            allowed.append(difference(keys if keys is not None else ANY_STRING, named))
        return alt(*allowed) if allowed else NOTHING

    def objects_keys_disjoint(self, a: ObjP, b: ObjP) -> bool:
        """Both objects have a member and no key is allowed in both, or one needs a member
        (an existential constraint) with a key the other does not allow."""
        for x, y in ((a, b), (b, a)):
            for e in x.exists:
                if self._empty(intersect(self._key_set(e), self.allowed_keys(y))):
                    return True
        if not ((a.min > 0 or a.required) and (b.min > 0 or b.required)):
            return False
        return self._empty(intersect(self.allowed_keys(a), self.allowed_keys(b)))

    def _empty(self, lang: Expr) -> bool:
        """Is the raw language empty (decided lazily; too big to decide counts as not empty)?"""
        try:
            return Language(lang).is_empty()
        except CompileTimeoutError:
            raise
        except StrictgenError:
            return False

    def _additional(self, o: ObjP, names: list[str], exists: list) -> list[tuple[Expr, int]]:
        """Members whose key is none of the listed names, as (member, satisfied exists mask) variants."""
        norm = self.norm
        members: list[tuple[Expr, int]] = []
        named = literal_trie(names)
        for vf, keys in self._regions(o):
            if keys is None and not names:
                key_expr = json_string()
            else:
                key_expr = json_string(spelled(difference(keys if keys is not None else ANY_STRING, named)))
            members.append((seq(key_expr, self.colon, self.ref(vf)), 0))
            for sub in _submasks(list(range(len(exists)))):
                chosen = [exists[j] for j in range(len(exists)) if sub >> j & 1]
                f = norm.and_(vf, *(e.schema for e in chosen))
                if self.is_empty(f):
                    continue
                lang = intersect(keys if keys is not None else ANY_STRING, *(self._key_set(e) for e in chosen))
                key_expr = json_string(spelled(difference(lang, named)))
                members.append((seq(key_expr, self.colon, self.ref(f)), sub))
        return members

    def _key_cells(self, patterns: list[str]) -> list[int] | None:
        """The masks of the pattern combinations that some key matches exactly (None: more than
        MAX_REGIONS): the key space is split pattern by pattern, and empty cells are dropped, so
        patterns that rarely overlap (anchored names, prefixes) cost one cell each, not 2**n."""
        key = tuple(patterns)
        if key in self._cells:
            return self._cells[key]
        cells: list[tuple[int, Expr]] = [(0, ANY_STRING)]
        self._cells[key] = None
        for i, p in enumerate(patterns):
            lang = pattern_language(p)
            cells = [
                (mask | bit << i, part)
                for mask, cell in cells
                for bit, part in ((1, intersect(cell, lang)), (0, difference(cell, lang)))
                if not self._empty(part)
            ]
            if len(cells) > MAX_REGIONS:
                return None
        got = self._cells[key] = sorted(mask for mask, _ in cells)
        return got

    def _region(self, patterns: list[str], mask: int) -> Expr:
        ins = [pattern_language(p) for i, p in enumerate(patterns) if mask >> i & 1]
        outs = [pattern_language(p) for i, p in enumerate(patterns) if not mask >> i & 1]
        base = intersect(*ins) if ins else ANY_STRING
        return difference(base, alt(*outs)) if outs else base


@functools.lru_cache(maxsize=2048)
def string_language(atoms: tuple) -> Expr:
    """The raw-character language of a conjunction of string atoms (cached: the same atoms give
    the same expression object in every grammar)."""
    langs = [_atom_lang(a) for a in atoms if a[0] != "len"]
    lens = [a for a in atoms if a[0] == "len"]
    if lens:
        lo, hi = lens[0][1], lens[0][2]
        if langs:  # drop or tighten the length bound where the other atoms imply it
            mins, maxs = zip(*(_length_range(e) for e in langs))
            lmin = max(mins)
            lmax = min((m for m in maxs if m is not None), default=None)
            if lo <= lmin:
                lo = 0
            if hi is not None and lmax is not None and lmax <= hi:
                hi = None
        if lo or hi is not None:
            langs.append(repeat(ANY_CHAR, lo, hi))
    langs = _merge_class_repeats(langs)
    return intersect(*langs) if langs else ANY_STRING


@functools.lru_cache(maxsize=1024)
def _raw_states(atoms: tuple) -> int | None:
    """DFA states of the raw-character language of the atoms (None: empty language); the product
    with a length bound is taken there, before the spellings (`Spelled`) are added."""
    try:
        return dfa_size(string_language(atoms))
    except CompileTimeoutError:
        raise
    except StrictgenError:
        return None


@functools.lru_cache(maxsize=1024)
def escaped_string(atoms: tuple) -> Expr:
    """A quoted JSON string whose value is in the language of the atoms, canonically spelled."""
    return json_string(spelled(string_language(atoms)))


def _atom_lang(a: tuple) -> Expr:
    kind = a[0]
    if kind == "len":
        return repeat(ANY_CHAR, a[1], a[2])
    if kind == "re":
        return pattern_language(a[1])
    if kind == "fmt":
        from .formats import format_value_expr

        e = format_value_expr(a[1])
        if a[1] == "hostname":  # RFC 1123 labels; the whole name is at most 253 characters
            e = intersect(e, repeat(ANY_CHAR, 0, 253))
        return e
    if kind == "in":
        return literal_trie(a[1])
    if kind == "not":
        return difference(ANY_STRING, string_language(a[1]))
    raise AssertionError(a)


def _call_big_rules(grammar: Grammar) -> None:
    """Keep big non-recursive rules as calls instead of letting the compiler inline every use.

    The automaton compiler inlines every rule that is not on a reference cycle, so a subschema used
    in several places, or as an array item under maxItems, is copied each time. Walking the rules
    bottom-up, while a rule's inlined size (estimated NFA states) exceeds BIG_RULE, the referenced
    rule with the largest share (size × copies) is turned into a call, and so is any rule still
    above BIG_RULE. A rule becomes a call through an unproductive self-reference (NOTHING followed
    by the rule), which puts it on a reference cycle without changing its language."""
    called = set(recursive_rules(grammar))
    sizes: dict[str, int] = {}

    def rule_size(r: str) -> int:
        return 1 if r in called else sizes.get(r, 1)

    def make_called(r: str) -> None:
        called.add(r)
        grammar.rules[r] = Alt((grammar.rules[r], Seq((NOTHING, RuleRef(r)))))

    order: list[str] = []  # post-order from every rule
    seen: set[str] = set()
    for top in grammar.rules:
        if top in seen:
            continue
        stack = [(top, iter(sorted(rule_references(grammar.rules[top]))))]
        seen.add(top)
        while stack:
            n, it = stack[-1]
            child = next(it, None)
            if child is None:
                stack.pop()
                order.append(n)
            elif child not in seen and child in grammar.rules:
                seen.add(child)
                stack.append((child, iter(sorted(rule_references(grammar.rules[child])))))
    inline_depth: dict[str, int] = {}  # rules inlined below a rule, nested (0 for a called rule)
    terms: dict[int, tuple[int, dict[str, int]]] = {}  # _size_terms of every node, for all the rules
    for n in order:
        deadline.check()
        # the size is affine in the referenced rules' sizes, and making another rule a call leaves
        # this rule's expression as it is: one walk each, then the loop only does arithmetic
        fixed, weights = _size_terms(grammar.rules[n], terms)

        def size() -> int:
            return fixed + sum(w * rule_size(r) for r, w in weights.items())

        shares = None
        for _ in range(64):
            if size() <= BIG_RULE:
                break
            shares = _ref_copies(grammar.rules[n]) if shares is None else shares
            best = max(
                ((rule_size(r) * k, r) for r, k in shares.items() if r not in called and rule_size(r) > 32),
                default=None,
            )
            if best is None:
                break
            make_called(best[1])
        sizes[n] = size()
        if sizes[n] > BIG_RULE and n != grammar.root and n not in called:
            make_called(n)
        # a long chain of rules (a $ref chain, deeply nested objects) would be inlined into one
        # deep expression: every MAX_INLINE_DEPTH levels, one rule becomes a call
        depth = 1 + max((inline_depth.get(r, 0) for r in rule_references(grammar.rules[n]) if r not in called), default=0)
        if depth > MAX_INLINE_DEPTH and n != grammar.root and n not in called:
            make_called(n)
        inline_depth[n] = 0 if n in called else depth


def _ref_copies(e: Expr) -> dict[str, int]:
    """How many inlined copies of each referenced rule `e` makes (repeats multiply; a shared
    sub-expression counts once, as the automaton builder shares it)."""
    out: dict[str, int] = {}
    seen: set[int] = set()

    def rec(x: Expr, k: int) -> None:
        if id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, RuleRef):
            out[x.name] = out.get(x.name, 0) + k
        elif isinstance(x, (Seq, Alt, Intersect)):
            for i in x.items:
                rec(i, k)
        elif isinstance(x, Repeat):
            rec(x.item, k * max(1, x.max if x.max is not None else x.min + 1))
        elif isinstance(x, Difference):
            rec(x.base, k)
            rec(x.minus, k)

    rec(e, 1)
    return out


_NO_WEIGHTS: dict[str, int] = {}  # shared by every piece that refers to no rule (never written)


def _size_terms(e: Expr, memo: dict[int, tuple[int, dict[str, int]]]) -> tuple[int, dict[str, int]]:
    """Estimated NFA states of `e` with rules inlined, as (fixed, weights): the estimate is
    fixed + sum(weights[r] * size of rule r). A shared sub-expression counts at each use (the
    estimate is of the inlined automaton); repeats multiply their item, spelled strings count six
    times (an escape trie of a few states beside each state). Bottom-up over the DAG; `memo` keeps
    every node's terms, so the rules of one grammar, which share most of their pieces, are walked
    once together."""
    order: list[Expr] = []  # post-order of the nodes not in memo yet
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        x, done = stack.pop()
        if done:
            order.append(x)
            continue
        if id(x) in seen or id(x) in memo:
            continue
        seen.add(id(x))
        stack.append((x, True))
        stack.extend((c, False) for c, _ in _size_children(x))
    for x in order:  # children before parents
        if isinstance(x, RuleRef):
            memo[id(x)] = (0, {x.name: 1})
            continue
        fixed, weights = _own_size(x), _NO_WEIGHTS
        for c, factor in _size_children(x):
            c_fixed, c_weights = memo[id(c)]
            fixed += factor * c_fixed
            if c_weights:
                if weights is _NO_WEIGHTS:
                    weights = {}
                for r, w in c_weights.items():
                    weights[r] = weights.get(r, 0) + factor * w
        memo[id(x)] = (fixed, weights)
    return memo[id(e)]


def _size_children(x: Expr) -> list[tuple[Expr, int]]:
    """(child, copies of it per copy of x) for the size estimate."""
    if isinstance(x, (Seq, Alt, Intersect)):
        return [(i, 1) for i in x.items]
    if isinstance(x, Repeat):
        return [(x.item, max(1, x.max if x.max is not None else x.min + 1))]
    if isinstance(x, Difference):
        return [(x.base, 1), (x.minus, 1)]
    if isinstance(x, Spelled):
        return [(x.item, 6)]
    return []


def _own_size(x: Expr) -> int:
    """States of x itself, beside its children's."""
    if isinstance(x, Literal):
        return max(1, len(x.data))
    if isinstance(x, CharSet):
        return 2 + len(x.ranges)
    if isinstance(x, (Difference, Spelled)):
        return 0
    return 1  # Seq, Alt, Intersect and Repeat add one; a ByteSet or anything else is one


def _where(part, keyword: str) -> str:
    """The pointer of `keyword` recorded on a normalised part ("" if unknown)."""
    return next((p for k, p in getattr(part, "where", ()) if k == keyword), "")


def _submasks(indices: list[int]):
    """Every non-empty subset of `indices`, as bit masks."""
    for r in range(1, 1 << len(indices)):
        yield sum(1 << indices[i] for i in range(len(indices)) if r >> i & 1)


def _length_range(e: Expr) -> tuple[int, int | None]:
    """(fewest, most) characters of the strings of a raw-character language (most None: unbounded)."""
    memo: dict[int, tuple[int, int | None]] = {}

    def rec(x: Expr) -> tuple[int, int | None]:
        got = memo.get(id(x))
        if got is not None:
            return got
        if isinstance(x, Literal):
            n = len(x.data.decode("utf-8"))
            out: tuple[int, int | None] = (n, n)
        elif isinstance(x, (ByteSet, CharSet)):
            out = (1, 1)
        elif isinstance(x, Seq):
            lo, hi = 0, 0
            for i in x.items:
                a, b = rec(i)
                lo += a
                hi = None if hi is None or b is None else hi + b
            out = (lo, hi)
        elif isinstance(x, Alt):
            if not x.items:
                out = (0, 0)
            else:
                rs = [rec(i) for i in x.items]
                out = (min(r[0] for r in rs), None if any(r[1] is None for r in rs) else max(r[1] for r in rs))
        elif isinstance(x, Repeat):
            a, b = rec(x.item)
            out = (a * x.min, None if x.max is None or b is None else b * x.max)
            if b == 0:
                out = (0, 0)
        elif isinstance(x, Intersect):
            rs = [rec(i) for i in x.items]
            his = [r[1] for r in rs if r[1] is not None]
            out = (max(r[0] for r in rs), min(his) if his else None)
        elif isinstance(x, Difference):
            out = rec(x.base)
        else:
            out = (0, None)
        memo[id(x)] = out
        return out

    return rec(e)


def _merge_class_repeats(langs: list[Expr]) -> list[Expr]:
    """Intersect items that repeat a single character class merge into one: [a-z]{1,} ∩ .{0,9} = [a-z]{1,9}."""
    merged: tuple | None = None  # (ranges, lo, hi)
    rest: list[Expr] = []
    for e in langs:
        if isinstance(e, Repeat) and isinstance(e.item, (ByteSet, CharSet)):
            r, lo, hi = e.item.ranges, e.min, e.max
            if merged is None:
                merged = (r, lo, hi)
            else:
                mr, mlo, mhi = merged
                both = []
                for a, b in mr:
                    for c, d in r:
                        if max(a, c) <= min(b, d):
                            both.append((max(a, c), min(b, d)))
                merged = (normalize_ranges(both), max(mlo, lo), hi if mhi is None else (mhi if hi is None else min(mhi, hi)))
        else:
            rest.append(e)
    if merged is not None:
        r, lo, hi = merged
        cls = charset(r) if r else NOTHING
        rest.insert(0, NOTHING if hi is not None and lo > hi else (repeat(cls, lo, hi) if cls != NOTHING or lo == 0 else NOTHING))
    return rest


def _dp(start, trans, closing, progress) -> Expr:
    """The suffix language from `start` of a counting construction, as a DAG of shared suffixes.

    `trans(state)` lists (item, next state) — item None for a silent move — and `closing(state)`
    the text that may end the construction there (None: it may not). Every move other than a
    self-loop must increase `progress(state)`; self-loops become a Repeat."""
    edges: dict = {}
    order = [start]
    seen = {start}
    i = 0
    while i < len(order):
        s = order[i]
        i += 1
        ts = trans(s)
        edges[s] = ts
        for _, t in ts:
            if t not in seen:
                seen.add(t)
                order.append(t)
                if len(order) > MAX_DP_STATES:
                    raise GrammarTooLargeError(f"array/object constraints need more than {MAX_DP_STATES} states")
    exprs: dict = {}
    for s in sorted(order, key=progress, reverse=True):
        loops = []
        exits: list[Expr] = []
        for item, t in edges[s]:
            if t == s:
                loops.append(item)
                continue
            nxt = exprs[t]
            if nxt is NOTHING or nxt == NOTHING:
                continue
            exits.append(nxt if item is None else Seq((item, nxt)))
        c = closing(s)
        if c is not None:
            exits.append(c)
        body: Expr = exits[0] if len(exits) == 1 else Alt(tuple(exits))
        if loops and exits:
            body = Seq((Repeat(alt(*loops), 0, None), body))
        exprs[s] = body
    return exprs[start]


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
    (see schema_documents); nothing is fetched."""
    schema = load_schema(schema)
    style = style or JsonStyle()
    reporter = Reporter(strict)
    norm = Normalizer(schema, reporter, formats=formats, documents=documents)
    emitter = SchemaEmitter(norm, style, any_order, reporter)
    try:
        grammar = emitter.build(norm.root_formula)
    except RecursionError:
        raise GrammarTooLargeError("schema nested too deeply") from None
    if not norm.dnf(norm.root_formula):
        raise SchemaError("the schema admits no JSON value at all", keyword="", pointer="")
    return grammar, list(reporter.unenforced)
