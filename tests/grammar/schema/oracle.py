"""Test-only helpers for the schema front end's unit tests.

`conj_holds` / `dnf_holds` interpret the schema IR (Conjunct, NumberConstraints, string atoms, ArrayConstraints, ObjectConstraints, KeyRule)
by its documented meaning, written out independently of the algebra under test: nested formulas
and the string atoms `Matches` / `Format` are decided by the real `jsonschema` validator, so a DNF
can be compared with jsonschema on any JSON value. `json_values` draws small JSON values whose
keys, strings and numbers hit the test schemas' constraints often; `nump` and `atoms` draw random
number parts and string-atom conjunctions; `language_of` decides membership of texts in an
expression an emitter returned, with the real automaton compiler."""

from __future__ import annotations

import functools
from fractions import Fraction

import jsonschema
import jsonschema.validators
import referencing
import referencing.jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictgen.compile.automaton import EmptyLanguageError, compile_automaton
from strictgen.compile.machine import DEAD, PushdownMachine
from strictgen.grammar.ir import Expr, Grammar
from strictgen.grammar.schema.emitter import SchemaEmitter
from strictgen.grammar.json_value import JsonStyle
from strictgen.grammar.schema.ir import AmongStrings, ArrayConstraints, Conjunct, Format, Length, Matches, NotAll, NumberConstraints, ObjectConstraints, str_meet
from strictgen.grammar.schema.normalize import Normalizer
from strictgen.grammar.schema.values import Reporter, is_number, json_equal, to_fraction

__all__ = [
    "validator", "normalizer", "conj_holds", "dnf_holds", "str_holds", "json_values", "SEEDS", "check_agreement",
    "check_random_agreement", "nump", "atoms", "raw_atoms", "WORDS", "language_of", "emitter", "compile_outcome",
]


def validator(schema, documents: dict | None = None):
    """The judge: jsonschema's validator for the schema's `$schema` (2020-12 by default), formats
    asserted; `documents` (URI -> schema) are the other documents its references may reach."""
    registry = referencing.Registry().with_resources(
        (uri, referencing.jsonschema.DRAFT202012.create_resource(doc)) for uri, doc in (documents or {}).items()
    )
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=jsonschema.FormatChecker(), registry=registry)


def compile_outcome(schema, **options):
    """What json_schema_grammar makes of `schema`: (root, the rules in order, unenforced), or the
    refusal (class, keyword, pointer, message): two ways of computing it compare equal on this."""
    from strictgen.errors import GrammarTooLargeError, SchemaError
    from strictgen.grammar.json_schema import json_schema_grammar

    try:
        g, unenforced = json_schema_grammar(schema, **options)
    except (SchemaError, GrammarTooLargeError) as e:
        return ("refused", type(e).__name__, getattr(e, "keyword", None), getattr(e, "pointer", None), str(e))
    return (g.root, repr(list(g.rules.items())), unenforced)


def normalizer(schema, strict: bool = True, **kw) -> Normalizer:
    """A Normalizer of `schema` as json_schema_grammar builds it (its own string-language service
    decides string atoms for negation and disjointness; no emitter is involved)."""
    return Normalizer(schema, Reporter(strict), **kw)


def emitter(schema, strict: bool = True, style: JsonStyle | None = None, any_order: bool = False, **kw) -> SchemaEmitter:
    """The SchemaEmitter json_schema_grammar would build for `schema` (its `.normalized` the
    immutable value the Normalizer handed over; the Normalizer itself is dropped)."""
    return normalizer_and_emitter(schema, strict, style, any_order, **kw)[1]


def normalizer_and_emitter(schema, strict: bool = True, style: JsonStyle | None = None, any_order: bool = False, **kw) -> tuple[Normalizer, SchemaEmitter]:
    """The Normalizer and the SchemaEmitter json_schema_grammar would build for `schema`."""
    reporter = Reporter(strict)
    norm = Normalizer(schema, reporter, **kw)
    return norm, SchemaEmitter(norm.normalized, style or JsonStyle(), any_order, reporter)


@functools.lru_cache(maxsize=None)
def _keyword_validator(keyword: str, value: str):
    return validator({keyword: value})


def str_holds(atoms: tuple, s: str) -> bool:
    """The conjunction of string atoms, on the string `s`."""
    for a in atoms:
        if type(a) is Length:
            ok = a.lo <= len(s) and (a.hi is None or len(s) <= a.hi)
        elif type(a) is Matches:
            ok = _keyword_validator("pattern", a.pattern).is_valid(s)
        elif type(a) is Format:
            ok = _keyword_validator("format", a.name).is_valid(s)
        elif type(a) is AmongStrings:
            ok = s in a.values
        elif type(a) is NotAll:
            ok = not str_holds(a.atoms, s)
        else:
            raise AssertionError(f"unknown string atom {a!r}")
        if not ok:
            return False
    return True


def _key_in(norm: Normalizer, r, key: str) -> bool:
    if r.kind == "name":
        return key == r.name
    if r.kind == "pattern":
        return _keyword_validator("pattern", r.pattern).is_valid(key)
    if r.kind == "keys":
        return str_holds(r.atoms, key)
    assert r.kind == "other", r.kind
    return key not in r.names and not any(_keyword_validator("pattern", p).is_valid(key) for p in r.patterns)


def _arr_holds(norm: Normalizer, a: ArrayConstraints, v: list) -> bool:
    if len(v) < a.min or (a.max is not None and len(v) > a.max):
        return False
    if not all(norm.satisfies(a.item(i), x) for i, x in enumerate(v)):
        return False
    for c in a.contains:
        n = sum(1 for x in v[c.start :] if norm.satisfies(c.schema, x))
        if n < c.lo or (c.hi is not None and n > c.hi):
            return False
    if a.unique and any(json_equal(x, y) for i, x in enumerate(v) for y in v[i + 1 :]):
        return False
    return True


def _obj_holds(norm: Normalizer, o: ObjectConstraints, v: dict) -> bool:
    if len(v) < o.min or (o.max is not None and len(v) > o.max):
        return False
    if not o.required <= v.keys():
        return False
    for r in o.rules:
        if any(_key_in(norm, r, k) and not norm.satisfies(r.schema, x) for k, x in v.items()):
            return False
    if o.key_atoms is not None and not all(str_holds(o.key_atoms, k) for k in v):
        return False
    for e in o.exists:
        if not any(_key_in(norm, e, k) and norm.satisfies(e.schema, x) for k, x in v.items()):
            return False
    for clause in o.clauses:
        if not any((k in v) == present for k, present in clause):
            return False
    return True


def conj_holds(norm: Normalizer, c: Conjunct, v) -> bool:
    """Does the JSON value `v` satisfy the conjunct `c`?"""
    if c.values is not None:
        return any(json_equal(v, w) for w in c.values)
    if v is None:
        return c.null
    if isinstance(v, bool):
        return v in c.bools
    if is_number(v):
        return c.num is not None and c.num.contains(to_fraction(v))
    if isinstance(v, str):
        return c.str is not None and str_holds(c.str, v)
    if isinstance(v, list):
        return c.arr is not None and _arr_holds(norm, c.arr, v)
    assert isinstance(v, dict)
    return c.obj is not None and _obj_holds(norm, c.obj, v)


def dnf_holds(norm: Normalizer, dnf: list, v) -> bool:
    return any(conj_holds(norm, c, v) for c in dnf)


# ---- random IR parts ----

_bound = st.one_of(st.none(), st.integers(-10, 10).map(lambda k: Fraction(k, 2)))
nump = st.builds(
    NumberConstraints,
    int_only=st.booleans(),
    nonint=st.just(False) | st.booleans(),
    lo=_bound,
    lo_strict=st.booleans(),
    hi=_bound,
    hi_strict=st.booleans(),
    mults=st.lists(st.sampled_from([Fraction(1, 2), Fraction(2), Fraction(3)]), max_size=2).map(tuple),
    not_mults=st.lists(st.sampled_from([Fraction(1), Fraction(3, 2), Fraction(4)]), max_size=1).map(tuple),
    excluded=st.frozensets(st.integers(-4, 4).map(Fraction), max_size=2),
)


WORDS = ["", "a", "ab", "abc", "abcd", "ba", "é", "éé", "aé", "xyz"]
atom = st.one_of(
    st.builds(Length, st.integers(0, 3), st.none() | st.integers(0, 4)),
    st.sampled_from([Matches("^a"), Matches("b"), Matches("^.{2}$")]),
    st.frozensets(st.sampled_from(WORDS), max_size=4).map(AmongStrings),
)
# any tuple of atoms (what str_meet accepts), and string parts as the normaliser makes them:
# str_meet's output, one merged Length at most, inside NotAll too (the emitters rely on it)
raw_atoms = st.lists(st.one_of(atom, st.lists(atom, min_size=1, max_size=2).map(lambda x: NotAll(tuple(x)))), max_size=3).map(tuple)


def _part(atom_list) -> tuple | None:
    return str_meet(tuple(atom_list), ())


_inner = st.lists(atom, min_size=1, max_size=2).map(_part).filter(bool)
atoms = st.lists(st.one_of(atom, _inner.map(NotAll)), max_size=3).map(_part).filter(lambda p: p is not None)


# ---- random JSON values ----

KEYS = ["a", "b", "c", "x", "xy", "ab"]
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 12),
    st.sampled_from([0.5, 1.5, 2.0, -0.5, 3.25, 6.0]),
    st.text(alphabet="abx1é", max_size=4),
    st.sampled_from(["2020-01-01", "2020-13-01"]),
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)),
    max_leaves=8,
)

# values tried on every schema before the random ones
SEEDS = [
    None, True, False, 0, 1, 2, 3, 4, 5, 6, 9, 12, -1, 1.0, 1.5, 2.5, "", "a", "b", "aa", "ab", "aaa", "abcd", "x", "2020-01-01",
    "2020-13-01", [], [1], ["a"], [1, "a"], [1, 2], [2, 1], [1, 2, 3], [1, 1], ["a", 1], [[1]], {}, {"a": 1}, {"a": 1.0},
    {"a": "s"}, {"a": 1, "b": 2}, {"b": 2}, {"x": "s"}, {"x": 1}, {"xy": "s", "x": "t"}, {"a": 1, "c": 1},
    {"ab": 1}, {"a": [1.0, 2]}, {"a": 1, "b": 2, "c": 3},
]


def check_agreement(norm: Normalizer, judge, values, dnf: list, neg: list | None = None) -> set:
    """Every value satisfies `dnf` iff the judge says valid (and `neg` iff invalid); the set of
    verdicts seen, so a caller can make sure both kinds of value were tried."""
    seen = set()
    for v in values:
        valid = judge.is_valid(v)
        seen.add(valid)
        assert dnf_holds(norm, dnf, v) == valid, (v, dnf)
        if neg is not None:
            assert dnf_holds(norm, neg, v) == (not valid), (v, neg)
    return seen


def check_random_agreement(norm: Normalizer, judge, dnf: list, neg: list | None = None, examples: int = 20) -> None:
    """check_agreement on random JSON values (hypothesis)."""

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(json_values)
    def prop(v):
        check_agreement(norm, judge, [v], dnf, neg)

    prop()


def language_of(emitter: SchemaEmitter, expr: Expr):
    """Membership of exact texts in an expression an emitter returned (its rules included),
    decided by the real engine."""
    try:
        machine = PushdownMachine(compile_automaton(Grammar({**emitter.rules, "root": expr}, "root")))
    except EmptyLanguageError:
        return lambda text: False

    def accepts(text: str) -> bool:
        state = machine.step_bytes(machine.start, text.encode("utf-8"))
        return state != DEAD and bool(machine.accepting[state])

    return accepts
