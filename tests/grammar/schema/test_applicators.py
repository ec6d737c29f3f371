"""schema.applicators (one raw schema's in-place applicators → its conjuncts):

- allOf / anyOf / oneOf / not / if-then-else / dependentRequired / dependentSchemas /
  dependencies / enum / const each give a DNF that agrees with jsonschema, and so does the DNF of
  their negation (built by De Morgan over the schema's factors, not by negating the product);
- the shapes: presence-only anyOf/oneOf become one conjunct of CNF presence clauses; a oneOf
  of disjoint branches is their plain union; enum values are deduplicated (JSON equality) and
  filtered by the other keywords; members are ordered by the keyword that first names them;
- what cannot be enforced is refused by keyword and pointer (strict) or recorded (loose), and
  malformed applicators are invalid schemas."""

from __future__ import annotations

import pytest
from strictgen.errors import SchemaError

from .oracle import SEEDS, check_agreement, check_random_agreement, normalizer, validator


APPLICATORS = [
    {"allOf": [{"type": "integer"}, {"minimum": 3}, {"multipleOf": 3}]},
    {"anyOf": [{"type": "string", "maxLength": 1}, {"type": "array", "maxItems": 1}]},
    {"anyOf": [{"required": ["a"]}, {"required": ["b", "c"]}]},
    {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    {"oneOf": [{"type": "integer"}, {"minimum": 4}, {"const": "a"}]},
    {"not": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    {"if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"maxProperties": 0}},
    {"if": {"type": "string"}, "then": {"minLength": 2}},
    {"type": "object", "dependentRequired": {"a": ["b", "c"]}},
    {"dependentSchemas": {"a": {"properties": {"b": {"type": "integer"}}, "required": ["b"]}}},
    # (2020-12 has no `dependencies`: the normaliser reads it as drafts 4-7 do, and so must the judge)
    {"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"], "x": {"maxProperties": 1}}},
    {"enum": [1, 1.0, "a", [1], {"a": 1}, None, False], "type": ["number", "array"]},
    {"enum": [1, 2, 3, "aa"], "minimum": 2, "maxLength": 1},
    {"const": [1, "a"], "enum": [[1.0, "a"], "b"]},
    {"$defs": {"s": {"type": "string"}}, "allOf": [{"$ref": "#/$defs/s"}], "anyOf": [{"pattern": "^a"}, {"maxLength": 0}]},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "not": {"properties": {"a": {"const": 1}}, "required": ["a"]}},
]
IDS = [str(i) for i in range(len(APPLICATORS))]
EXTRA = [{"a": 1, "b": 2, "c": 3}, {"b": 1, "c": 1}, {"a": 1, "b": "s"}, {"a": 2}, {"x": 1}, {"x": 1, "a": 1, "b": 2}, [1.0], ["aa"]]


@pytest.mark.parametrize("schema", APPLICATORS, ids=IDS)
def test_applicator_and_its_negation_agree_with_jsonschema(schema):
    norm = normalizer(schema)
    dnf = norm.dnf(norm.root_formula)
    neg = norm.dnf(norm.not_(norm.root_formula))
    judge = validator(schema)
    assert check_agreement(norm, judge, SEEDS + EXTRA, dnf, neg) == {True, False}
    check_random_agreement(norm, judge, dnf, neg)


def test_legacy_dependencies_are_enforced_without_a_declared_draft():
    # real schemas without $schema still write `dependencies`: read as draft 7 reads it
    import jsonschema

    schema = {"dependencies": {"a": ["b"], "x": {"required": ["y"]}}}
    norm = normalizer(schema)
    dnf = norm.dnf(norm.root_formula)
    judge = jsonschema.Draft7Validator(schema)
    assert check_agreement(norm, judge, [{"a": 1}, {"a": 1, "b": 1}, {"x": 1}, {"x": 1, "y": 1}, {}, 3], dnf) == {True, False}


def test_presence_only_branches_become_one_conjunct_of_clauses():
    for kw in ("anyOf", "oneOf"):
        norm = normalizer({kw: [{"required": ["a"]}, {"required": ["b"]}]})
        (c,) = norm.dnf(norm.root_formula)
        assert c.obj.clauses and not c.obj.required
    any_of = normalizer({"anyOf": [{"required": ["a"]}, {}]})
    (c,) = any_of.dnf(any_of.root_formula)
    assert c.is_top  # a branch without constraints: the anyOf always holds


def test_one_of_disjoint_branches_is_their_union():
    norm = normalizer({"oneOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}, {"type": "null"}]})
    dnf = norm.dnf(norm.root_formula)
    assert len(dnf) == 3
    assert sorted(sorted(c.types()) for c in dnf) == [["null"], ["number"], ["string"]]


def test_enum_values_are_deduplicated_and_filtered():
    norm = normalizer({"enum": [1, 1.0, True, "a", {"x": 1, "y": 2}, {"y": 2, "x": 1.0}, 2], "type": ["integer", "boolean", "object"]})
    (c,) = norm.dnf(norm.root_formula)
    assert c.values == (1, True, {"x": 1, "y": 2}, 2)
    empty = normalizer({"enum": ["a"], "type": "integer"})
    assert empty.dnf(empty.root_formula) == []


def test_members_are_ordered_by_the_keyword_that_first_names_them():
    norm = normalizer({"allOf": [{"properties": {"b": {}}}], "properties": {"a": {}}, "required": ["c"]})
    (c,) = norm.dnf(norm.root_formula)
    assert c.obj.order == ("b", "a", "c")
    norm = normalizer({"properties": {"a": {}}, "required": ["c"], "allOf": [{"properties": {"b": {}}}]})
    (c,) = norm.dnf(norm.root_formula)
    assert c.obj.order == ("a", "c", "b")


def test_an_overlapping_one_of_with_an_inexpressible_complement_is_refused():
    # the branches overlap ([1, 1] is in both) and 'not uniqueItems' cannot be expressed
    schema = {"oneOf": [{"type": "array", "uniqueItems": True}, {"type": "array", "maxItems": 2}]}
    with pytest.raises(SchemaError) as e:
        norm = normalizer(schema)
        norm.dnf(norm.root_formula)
    assert (e.value.keyword, e.value.pointer) == ("oneOf", "/oneOf")
    loose = normalizer(schema, strict=False)
    assert loose.dnf(loose.root_formula) and ("oneOf", "/oneOf") in loose.reporter.unenforced


@pytest.mark.parametrize(
    "schema,keyword",
    [
        ({"allOf": []}, "allOf"),
        ({"anyOf": {"type": "string"}}, "anyOf"),
        ({"enum": "a"}, "enum"),
        ({"enum": [1, float("nan")]}, "enum"),
        ({"const": float("inf")}, "enum"),
        ({"dependentRequired": ["a"]}, "dependentRequired"),
        ({"dependentRequired": {"a": [1]}}, "dependentRequired"),
    ],
)
def test_malformed_applicators_are_invalid_schemas(schema, keyword):
    with pytest.raises(SchemaError) as e:
        norm = normalizer(schema, strict=False)
        norm.dnf(norm.root_formula)
    assert e.value.keyword == keyword
