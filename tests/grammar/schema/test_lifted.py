"""Refusals lifted for maskbench-dev (issue 15): each schema here was refused before and is now
enforced exactly. Every document's expectation is checked against `jsonschema` first, and each
valid one is tried in the three serialisations the suite harness uses: `json.dumps` with raw
UTF-8, compact separators, and ensure_ascii (non-ASCII as \\u escapes)."""

from __future__ import annotations

import json

import jsonschema

from tests.grammar.test_json_schema import Schema


def forms(doc) -> list[str]:
    """The three serialisations of a document."""
    return [
        json.dumps(doc, ensure_ascii=False),
        json.dumps(doc, ensure_ascii=False, separators=(",", ":")),
        json.dumps(doc),
    ]


def check_exact(schema, valid, invalid):
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    s = Schema(schema)
    for doc in valid:
        assert validator.is_valid(doc), f"test error: {doc!r} is invalid"
        for text in forms(doc):
            assert text in s, f"{text} should be accepted"
    for doc in invalid:
        assert not validator.is_valid(doc), f"test error: {doc!r} is valid"
        for text in forms(doc):
            assert text not in s, f"{text} should be rejected"


def test_long_length_bound_with_a_pattern_whose_product_is_small():
    # 99 pattern states x maxLength 254 was refused on an estimate of ~100,000 product states;
    # the product itself has ~24,000 (maskbench-dev Github_easy---o21456)
    pattern = "^[^@^\\s]+@[^@^\\.^\\s]+(\\.[^@^\\.^\\s]*)*.gov.uk"
    schema = {"type": "string", "pattern": pattern, "maxLength": 254}
    at_bound = "é" * 243 + "@b.gov.uk"  # 252 code points, far more bytes and \u escapes
    assert len(at_bound) <= 254
    check_exact(
        schema,
        valid=["a@b.gov.uk", at_bound, "x@y.z.gov.uk", "a@b.gov.ukextra"],
        invalid=["a@b.com", "@b.gov.uk", "a b@c.gov.uk", "a" * 250 + "@b.gov.uk", 7],
    )


def test_long_length_bound_with_an_email_format():
    schema = {"type": "string", "format": "email", "maxLength": 1024}
    s = Schema(schema)  # refused before: an estimate of 618,496 states for 11,436 real ones
    for doc in ["joe@example.com", "a.b+c@d.org"]:
        for text in forms(doc):
            assert text in s
    for doc in ["joe", "a" * 1020 + "@b.co"]:
        assert json.dumps(doc) not in s


def test_a_truly_large_length_product_is_built_at_run_time():
    # an alternation of 49 words: the product with maxLength 500 is past the core's budget, so its
    # (pattern state, count) rules are built as a document reaches them (test_length_product.py)
    s = Schema({"type": "string", "pattern": "^(?:\\S+\\s+){0,49}\\S+$", "maxLength": 500})
    assert '"a  b"' in s and '"a "' not in s


def test_one_of_where_a_branch_with_a_large_complement_is_disjoint_from_the_others():
    # tagged-union shape: the closed branch cannot meet the others (they each require a key it
    # forbids), so its complement (24 properties that may each be violated) is never built;
    # before, b_i AND NOT b_j over every pair was refused as too large
    closed = {
        "type": "object",
        "properties": {f"p{i}": {"type": t} for i, t in enumerate(["string", "integer", "boolean", "array", "string", "number", "object", "null"] * 3)},
        "additionalProperties": False,
    }
    schema = {
        "oneOf": [
            {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
            {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
            {"type": "object", "properties": {"kind": {"enum": ["line", "area"]}, "filter": {"type": "object"}}, "required": ["kind", "filter"]},
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            closed,
        ]
    }
    check_exact(
        schema,
        valid=[{"url": "x"}, {"name": "é"}, {"kind": "area", "filter": {"a": 1}}, {}, {"p0": "a", "p1": 3}],
        invalid=[
            {"url": "x", "id": "y"},  # two branches
            {"kind": "line", "filter": {}, "name": "n"},  # two branches
            {"p0": 1},  # none
            {"url": 1},  # none
            {"kind": "dot", "filter": {}},  # none
        ],
    )


def test_four_existential_member_constraints_from_not():
    # not anyOf of four "no key matching P" forms: four keys must exist (maskbench-dev
    # Handwritten---pnmp9, with dependentSchemas for the draft-7 dependencies); it was refused
    # past three existential constraints
    schema = {
        "type": "object",
        "patternProperties": {"^[0-9]$": {"type": "array", "minItems": 2}},
        "additionalProperties": False,
        "not": {
            "anyOf": [
                {"patternProperties": {"^(1|3|4)$": False}},
                {"patternProperties": {"^(2|5|11)$": False}},
                {"patternProperties": {"^(2|4|5)$": False}},
                {"patternProperties": {"^(1|2)$": False}},
                {"required": ["1", "3", "5"]},
            ]
        },
        "dependentSchemas": {"3": {"not": {"required": ["2"]}}},
        "maxProperties": 2,
    }
    check_exact(
        schema,
        valid=[{"1": [1, 2], "2": ["a", "é"]}, {"1": [0, 0], "5": [[], {}]}, {"2": [1, 1], "4": [2, 2]}, {"4": [2, 2], "2": [1, 1]}],
        invalid=[
            {"2": [1, 1], "3": [1, 1]},  # the dependency
            {"4": [1, 1], "5": [1, 1]},  # no key in {1, 2}
            {"1": [1], "2": [1, 2]},  # minItems
            {"1": [1, 2]},
            {"1": [1, 2], "2": [1, 2], "5": [1, 2]},  # maxProperties
            {"1": [1, 2], "x": [1, 2]},
        ],
    )


def test_the_complement_of_a_long_length_bound_is_two_length_bounds():
    # `not` of a length bound was a "not" atom decided on automata: maxLength 40,000 unrolled past
    # the NFA budget (refused), and a oneOf over long bounds asked the same costly question for
    # every pair of branches (maskbench-dev Github_hard---o9882 ran into its compile timeout)
    check_exact(
        {"type": "array", "items": {"not": {"type": "string", "minLength": 2, "maxLength": 40000}}},
        valid=[["a", 1, ""], [None, {"k": "ab"}], ["é" * 40001]],
        invalid=[["ab"], [None, "abc"], ["é" * 40000]],
    )
    check_exact(
        {
            "oneOf": [
                {"type": "object", "properties": {"d": {"type": "string", "maxLength": 32767}}},
                {"type": "object", "properties": {"d": {"type": "string", "minLength": 40000}}},
            ]
        },
        valid=[{"d": "x"}, {"d": ""}],
        invalid=[{}, {"e": 1}, {"d": 5}],
    )
