"""schema.keywords (per-type keywords → the parts of one conjunct, and unevaluated*):

- the parts read from `type`, number bounds (draft-04 boolean exclusives too), multipleOf, string
  lengths / pattern / format, array and object keywords, propertyNames as a key language;
- the resulting DNF agrees with jsonschema on every seed value, unevaluated* included;
- a keyword value of the wrong type is an invalid schema (SchemaError naming keyword and pointer,
  in every mode); a pattern that cannot be compiled or a non-regular format is refused (strict)
  or recorded and dropped (loose); formats="annotate" enforces no format."""

from __future__ import annotations

from fractions import Fraction

import pytest

from strictgen.errors import SchemaError
from strictgen.grammar.schema.ir import ALL_BOOLS, Format, Length, Matches, NumberConstraints

from .oracle import SEEDS, check_agreement, normalizer, str_holds, validator


def only_conj(schema, **kw):
    norm = normalizer(schema, **kw)
    (c,) = norm.dnf(norm.root_formula)
    return c


def test_type_and_number_keywords_make_one_number_part():
    c = only_conj({"type": "integer", "minimum": 1.5, "exclusiveMaximum": 4, "multipleOf": 0.5})
    assert (c.null, c.bools, c.str, c.arr, c.obj) == (False, frozenset(), None, None, None)
    assert c.num == NumberConstraints(int_only=True, lo=Fraction(3, 2), hi=Fraction(4), hi_strict=True, mults=(Fraction(1, 2),))
    assert c.types() == {"number"}


def test_draft_04_boolean_exclusive_bounds():
    c = only_conj({"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "minimum": 0, "exclusiveMinimum": True})
    assert c.num == NumberConstraints(lo=Fraction(0), lo_strict=True)


def test_keywords_of_one_type_leave_the_other_types_alone():
    c = only_conj({"minLength": 2, "maxLength": 5, "pattern": "^a", "minimum": 3})
    assert c.null and c.bools == ALL_BOOLS and c.arr.trivial and c.obj.trivial
    assert c.str == (Length(2, 5), Matches("^a")) and c.num == NumberConstraints(lo=Fraction(3))


def test_format_is_an_atom_unless_annotated():
    assert only_conj({"type": "string", "format": "date"}).str == (Format("date"),)
    assert only_conj({"type": "string", "format": "date"}, formats="annotate").str == ()
    assert only_conj({"type": "string", "format": "no-such-format"}).str == ()  # unknown: an annotation


def test_object_keywords_make_key_rules():
    c = only_conj({"type": "object", "properties": {"a": {}}, "patternProperties": {"^x": {}}, "required": ["b"], "additionalProperties": False, "maxProperties": 3})
    kinds = {r.kind: r for r in c.obj.rules}
    assert set(kinds) == {"name", "pattern", "other"}
    assert kinds["other"].names == frozenset({"a"}) and kinds["other"].patterns == frozenset({"^x"})
    assert c.obj.required == frozenset({"b"}) and c.obj.order == ("a", "b") and c.obj.max == 3


@pytest.mark.parametrize(
    "names",
    [{"enum": ["a", "bb"]}, {"maxLength": 1}, {"anyOf": [{"maxLength": 1}, {"pattern": "^x"}]}, {"not": {"const": "a"}}, False],
)
def test_property_names_become_the_key_language(names):
    c = only_conj({"type": "object", "propertyNames": names})
    judge = validator({"propertyNames": names})
    for key in ["", "a", "b", "bb", "x", "xyz", "ab"]:
        assert str_holds(c.obj.key_atoms, key) == judge.is_valid({key: 0}), key


def test_impossible_counts_make_empty_parts():
    assert only_conj({"type": ["array", "null"], "contains": {}, "minContains": 3, "maxContains": 2}).arr is None
    assert only_conj({"type": ["object", "null"], "minProperties": 3, "maxProperties": 2}).obj is None
    assert only_conj({"type": ["number", "null"], "minimum": 5, "maximum": 4}).num is None
    assert len(only_conj({"type": ["array", "null"], "prefixItems": [{}, {}, {}], "maxItems": 1}).arr.prefix) == 1


AGREE = [
    {"type": ["integer", "string"], "minimum": 2, "maxLength": 1},
    {"type": "number", "multipleOf": 1.5},
    {"exclusiveMinimum": 1, "maximum": 2.5},
    {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}], "items": False},
    {"type": "array", "minItems": 2, "contains": {"type": "string"}, "maxContains": 1},
    {"type": "array", "contains": {"const": 9}, "minContains": 0},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "patternProperties": {"^x": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
    {"type": "object", "required": ["a", "b"], "minProperties": 2},
    {"type": "string", "format": "date"},
    {"properties": {"a": True}, "unevaluatedProperties": False},
    {"allOf": [{"properties": {"a": True}}], "patternProperties": {"^x": True}, "unevaluatedProperties": {"type": "integer"}},
    {"prefixItems": [{"type": "integer"}], "unevaluatedItems": {"type": "string"}},
    {"allOf": [{"contains": {"type": "string"}}], "unevaluatedItems": False},
    {"if": {"properties": {"a": {"const": 1}}}, "then": {"properties": {"b": True}}, "unevaluatedProperties": False},
]


@pytest.mark.parametrize("schema", AGREE, ids=[str(i) for i in range(len(AGREE))])
def test_normalised_type_keywords_agree_with_jsonschema(schema):
    norm = normalizer(schema)
    dnf = norm.dnf(norm.root_formula)
    values = SEEDS + [{"a": 1, "b": 2}, {"b": "s"}, {"a": 1, "x": "s"}, {"a": 1, "x": 1}, [1, "a", "b"], [9], [1, 2, 3]]
    assert check_agreement(norm, validator(schema), values, dnf) == {True, False}


@pytest.mark.parametrize(
    "schema,keyword,pointer",
    [
        ({"type": "text"}, "type", "/type"),
        ({"type": ["string", 3]}, "type", "/type"),
        ({"minLength": -1}, "minLength", "/minLength"),
        ({"maxItems": 1.5}, "maxItems", "/maxItems"),
        ({"multipleOf": 0}, "multipleOf", "/multipleOf"),
        ({"maximum": "3"}, "maximum", "/maximum"),
        ({"minimum": float("nan")}, "minimum", "/minimum"),
        ({"required": "a"}, "required", "/required"),
        ({"pattern": 3}, "pattern", "/pattern"),
        ({"format": 3}, "format", "/format"),
        ({"properties": {"a": {"minProperties": True}}}, "minProperties", "/properties/a/minProperties"),
    ],
)
def test_wrong_keyword_values_are_invalid_schemas_in_every_mode(schema, keyword, pointer):
    for strict in (True, False):
        with pytest.raises(SchemaError) as e:
            norm = normalizer(schema, strict=strict)
            for c in norm.dnf(norm.root_formula):  # nested values are normalised lazily
                for r in c.obj.rules if c.obj is not None else ():
                    norm.dnf(r.schema)
        assert (e.value.keyword, e.value.pointer) == (keyword, pointer)


@pytest.mark.parametrize(
    "schema,keyword",
    [({"type": "string", "pattern": "(?<=a)b"}, "pattern"), ({"type": "string", "format": "regex"}, "format")],
)
def test_what_cannot_be_enforced_is_refused_or_recorded(schema, keyword):
    with pytest.raises(SchemaError, match="strict=False") as e:
        norm = normalizer(schema)
        norm.dnf(norm.root_formula)
    assert e.value.keyword == keyword
    loose = normalizer(schema, strict=False)
    (c,) = loose.dnf(loose.root_formula)
    assert c.str == () and loose.reporter.unenforced == [(keyword, "/" + keyword)]


def test_infinite_bounds():
    assert only_conj({"type": ["number", "null"], "minimum": float("inf")}).num is None
    assert only_conj({"type": "number", "maximum": float("inf")}).num.trivial
