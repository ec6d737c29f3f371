"""schema.ir: the schema IR's own operations, each against a direct reading of its meaning.

- NumberConstraints: `contains` is the conjunction of its fields; `meet` is intersection (None only when no
  number is in both); `negate` is the complement; `is_empty` is never wrong when True;
- string atoms and `str_meet` (conjunction, length bounds merged, None when lengths cannot meet);
- ArrayConstraints / ObjectConstraints `meet`, Conjunct (`is_empty`, `is_top`, `types`, `only`, `conjunct_meet`);
- Formula interning (equal keys are equal and hash alike), `pattern_language` (ECMA search,
  a leading negative lookahead included) against jsonschema's `pattern`, `keyword_pointer`."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings

from strictgen.errors import RegexError
from strictgen.grammar.automata import Language
from strictgen.grammar.schema.ir import (
    ALL_BOOLS, FALSE, NONE, TOP, TRUE, AmongStrings, ArrayConstraints, Conjunct, Formula, Length, Matches, NumberConstraints, ObjectConstraints,
    KeyRule, conjunct_meet, keyword_pointer, conjunct_of, str_meet,
)
from strictgen.grammar.schema.patterns import pattern_language

from .oracle import WORDS, normalizer, nump, raw_atoms, str_holds, validator

FEW = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
GRID = [Fraction(k, 4) for k in range(-48, 49)]  # every quarter in [-12, 12]

def direct(n: NumberConstraints, x: Fraction) -> bool:
    """NumberConstraints's meaning, field by field."""
    checks = [
        not n.int_only or x.denominator == 1,
        not n.nonint or x.denominator != 1,
        n.lo is None or x > n.lo or (x == n.lo and not n.lo_strict),
        n.hi is None or x < n.hi or (x == n.hi and not n.hi_strict),
        all((x / m).denominator == 1 for m in n.mults),
        all((x / m).denominator != 1 for m in n.not_mults),
        x not in n.excluded,
    ]
    return all(checks)


@FEW
@given(nump, nump)
def test_nump_contains_meet_negate_and_is_empty(a, b):
    m = a.meet(b)
    neg = a.negate()
    for x in GRID:
        assert a.contains(x) == direct(a, x)
        both = direct(a, x) and direct(b, x)
        assert (m is not None and m.contains(x)) == both
        assert any(p.contains(x) for p in neg) == (not direct(a, x))
    if a.is_empty():
        assert not any(direct(a, x) for x in GRID)


def test_nump_is_empty_cases():
    assert NumberConstraints(int_only=True, lo=Fraction(1, 4), hi=Fraction(3, 4)).is_empty()  # no integer in (0, 1)
    assert NumberConstraints(lo=Fraction(2), hi=Fraction(2), hi_strict=True).is_empty()
    assert NumberConstraints(int_only=True, nonint=True).is_empty()
    assert not NumberConstraints(int_only=True, lo=Fraction(1, 4), hi=Fraction(1)).is_empty()
    assert NumberConstraints().trivial and not NumberConstraints(lo=Fraction(0)).trivial
    assert NumberConstraints(where=(("minimum", "/a"),)) == NumberConstraints()  # `where` is for messages, not identity


@FEW
@given(raw_atoms, raw_atoms)
def test_str_meet_is_the_conjunction_with_one_merged_length(a, b):
    m = str_meet(a, b)
    for s in WORDS:
        both = str_holds(a, s) and str_holds(b, s)
        if m is None:
            assert not both
        else:
            assert str_holds(m, s) == both
    if m is not None:
        assert sum(type(x) is Length for x in m) <= 1
        assert len(set(m)) == len(m)


def test_str_meet_cases():
    assert str_meet((Length(2, 5),), (Length(0, 3), Matches("a"))) == (Length(2, 3), Matches("a"))
    assert str_meet((Length(4, None),), (Length(0, 3),)) is None
    assert str_meet((Matches("a"),), (Matches("a"),)) == (Matches("a"),)
    assert str_meet((), ()) == ()
    assert str_meet((Length(0, None),), ()) == ()  # the trivial bound is dropped


def test_formulas_are_equal_by_key_and_hash_alike():
    f, g = Formula("and", ("and", 1)), Formula("and", ("and", 1))
    assert f == g and hash(f) == hash(g) and f is not g
    assert f != Formula("and", ("and", 2)) and f != ("and", 1)
    assert repr(TRUE) == "TRUE" and repr(FALSE) == "FALSE"


def test_normaliser_interns_formulas_and_simplifies_junctions():
    norm = normalizer({"$defs": {"a": {"type": "integer"}, "b": {"type": "string"}}})
    root = norm.root_formula
    a = norm.sub(root, norm.root["$defs"]["a"], "$defs", "a")
    b = norm.sub(root, norm.root["$defs"]["b"], "$defs", "b")
    assert norm.and_(a, b) is norm.and_(b, a)  # canonical order, one interned formula
    assert norm.and_(a, norm.and_(a, b)) is norm.and_(a, b)  # flattened and deduplicated
    assert norm.and_(a, TRUE) is a and norm.and_(a, FALSE) is FALSE
    assert norm.or_(a, TRUE) is TRUE and norm.or_(a, FALSE) is a
    assert norm.not_(norm.not_(a)) is a and norm.not_(TRUE) is FALSE


def test_array_meet():
    norm = normalizer(True)
    a = ArrayConstraints(prefix=(TRUE,), min=1, max=5)
    b = ArrayConstraints(min=2, max=3, unique=True)
    m = a.meet(b, norm.formulas)
    assert (m.min, m.max, m.unique, len(m.prefix)) == (2, 3, True, 1)
    assert ArrayConstraints(min=4).meet(ArrayConstraints(max=3), norm.formulas) is None
    assert ArrayConstraints(prefix=(TRUE, TRUE, TRUE)).meet(ArrayConstraints(max=1), norm.formulas).prefix == (TRUE,)  # items past max cannot exist
    assert ArrayConstraints(prefix=(TRUE,)).item(0) is TRUE and ArrayConstraints(items=FALSE).item(3) is FALSE


def test_object_meet():
    forbid = KeyRule("name", FALSE, name="a")
    assert ObjectConstraints(required=frozenset("a")).meet(ObjectConstraints(rules=(forbid,))) is None  # required yet forbidden
    assert ObjectConstraints(required=frozenset("ab")).meet(ObjectConstraints(max=1)) is None
    assert ObjectConstraints(min=3).meet(ObjectConstraints(max=2)) is None
    m = ObjectConstraints(order=("a",), key_atoms=(Length(0, 3),)).meet(ObjectConstraints(order=("b", "a"), key_atoms=(Length(2, None),), min=1))
    assert m.order == ("a", "b") and m.key_atoms == (Length(2, 3),) and m.min == 1
    empty = ObjectConstraints(key_atoms=(Length(3, None),)).meet(ObjectConstraints(key_atoms=(Length(0, 1),)))
    assert empty is not None and empty.key_atoms == (AmongStrings(frozenset()),)  # only {} is left


def test_conj_emptiness_top_and_types():
    assert TOP.is_top and not TOP.is_empty() and NONE.is_empty() and not NONE.is_top
    assert TOP.types() == {"null", "boolean", "number", "string", "array", "object"}
    assert NONE.types() == set()
    assert conjunct_of(str=()).types() == {"string"} and conjunct_of(bools=frozenset([True])).types() == {"boolean"}
    assert Conjunct(values=(1, "a", None)).types() == {"number", "string", "null"}
    assert Conjunct(values=()).is_empty() and not Conjunct(values=(None,)).is_empty()
    assert not conjunct_of(num=NumberConstraints(lo=Fraction(0))).is_top


def test_conj_meet_is_per_type():
    norm = normalizer(True)
    a = conjunct_of(null=True, num=NumberConstraints(lo=Fraction(0)), str=(Length(0, 2),))
    b = Conjunct(null=True, bools=ALL_BOOLS, num=NumberConstraints(hi=Fraction(5)), str=(Length(1, None),), arr=None, obj=None)
    m = conjunct_meet(a, b, norm)
    assert m.null and not m.bools and m.arr is None and m.obj is None
    assert m.num == NumberConstraints(lo=Fraction(0), hi=Fraction(5)) and m.str == (Length(1, 2),)
    assert conjunct_meet(conjunct_of(null=True), conjunct_of(str=()), norm) is None


PATTERNS = ["^a+$", "b", "^(?!foo)[a-z]+", "^(?!a|b)[a-z0-9]{2}", "\\d", "^[^@]+@[^@]+$", "(?:ab)*c", "^é+"]
STRINGS = ["", "a", "aa", "ab", "abc", "foo", "foobar", "fo", "b", "x1", "c", "ababc", "1", "a@b", "@b", "é", "éé", "Xa"]


@pytest.mark.parametrize("p", PATTERNS)
def test_pattern_language_is_jsonschema_pattern(p):
    lang = Language(pattern_language(p))
    judge = validator({"type": "string", "pattern": p})
    for s in STRINGS:
        assert lang.accepts(s.encode()) == judge.is_valid(s), (p, s)


def test_pattern_language_classes_are_ecma_262_not_python():
    # ECMA-262 \w and \d are ASCII; Python's re (jsonschema's judge) reads them as Unicode
    assert not Language(pattern_language("^\\w$")).accepts("é".encode())
    assert Language(pattern_language("^\\w$")).accepts(b"_")
    assert not Language(pattern_language("^\\d$")).accepts("٣".encode())


def test_pattern_language_refuses_a_lookahead_it_cannot_split():
    with pytest.raises(RegexError):
        pattern_language("a(?=b)")


def test_keyword_pointer_reads_where():
    n = NumberConstraints(where=(("minimum", "/properties/a"), ("multipleOf", "/b")))
    assert keyword_pointer(n, "multipleOf") == "/b"
    assert keyword_pointer(n, "maximum") == "" and keyword_pointer(object(), "x") == ""


def test_the_schema_ir_is_immutable():
    """Formulas and their source records are keys and values of the normaliser's and emitter's
    tables, shared by both stages: nothing may change them after the normaliser made them."""
    norm = normalizer({"properties": {"a": {"type": "integer"}}})
    f = norm.root_formula
    with pytest.raises(AttributeError):
        f.kind = "and"
    with pytest.raises(AttributeError):
        del f.args
    with pytest.raises(AttributeError):
        f.src.pointer = "/elsewhere"
    assert f.kind == "src" and f.src.pointer == ""


def test_listed_names_are_the_order_then_the_name_rules_each_once():
    from strictgen.grammar.schema.ir import TRUE, KeyRule, ObjectConstraints

    o = ObjectConstraints(
        rules=(KeyRule("name", TRUE, name="b"), KeyRule("pattern", TRUE, pattern="^x"), KeyRule("name", TRUE, name="c"), KeyRule("name", TRUE, name="a")),
        order=("a", "b"),
    )
    assert o.listed == ("a", "b", "c") and o.listed_set == frozenset("abc")
    assert o.listed is o.listed and o == ObjectConstraints(rules=o.rules, order=o.order)  # kept, and no field
    assert ObjectConstraints().listed == ()


def test_conjunct_of_is_none_with_the_parts_replaced():
    import dataclasses

    for parts in ({}, {"null": True}, {"num": NumberConstraints(int_only=True), "str": ()}, {"obj": ObjectConstraints(), "arr": ArrayConstraints(min=1)}, {"bools": ALL_BOOLS}):
        assert conjunct_of(**parts) == dataclasses.replace(NONE, **parts)
    with pytest.raises(TypeError):
        conjunct_of(nums=None)


def test_kept_hashes_are_the_dataclass_hashes():
    """Conjunct and KeyRule keep their hash: the value the dataclass would compute (a hash of every
    compared field, in order), so no dict or set of them orders differently."""
    import dataclasses

    def generated(x):
        compared = [f for f in dataclasses.fields(x) if f.compare]
        twin = dataclasses.make_dataclass("Twin", [(f.name, object) for f in compared], frozen=True)
        return hash(twin(*[getattr(x, f.name) for f in compared]))

    rule = KeyRule("name", TRUE, name="a", pointer="/p")
    conjuncts = [TOP, NONE, conjunct_of(str=(Length(1, 3),)), Conjunct(False, frozenset(), NumberConstraints(int_only=True, lo=Fraction(1)), (), None, ObjectConstraints(rules=(rule,), required=frozenset("a")))]
    for x in conjuncts + [rule]:
        assert hash(x) == generated(x) and hash(x) == hash(x)
    assert TOP.num.trivial and TOP.arr.trivial and TOP.obj.trivial and not NumberConstraints(int_only=True).trivial
