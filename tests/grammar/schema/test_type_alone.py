"""keywords.type_alone: a schema whose one assertion is a single `type` (most leaves) gets its
conjunct from a table, skipping each type's keywords and the applicators. It must be exactly what
the general path makes: `minLength: 0` asserts nothing, yet sends the same schema the general way."""

from __future__ import annotations

import pytest

from strictgen.errors import SchemaError
from strictgen.grammar.json_schema import json_schema_grammar
from strictgen.grammar.schema.ir import TOP
from strictgen.grammar.schema.keywords import type_alone

from .oracle import normalizer

TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")


def dnf(schema):
    norm = normalizer(schema)
    return norm.dnf(norm.root_formula)


@pytest.mark.parametrize("t", TYPES)
def test_a_type_alone_is_what_the_general_path_makes(t):
    leaf = {"type": t, "description": "a leaf", "x-extension": {"minLength": 3}}
    assert type_alone(leaf) is not None
    assert type_alone({"type": t, "minLength": 0}) is None  # the general path
    assert dnf(leaf) == dnf({"type": t, "minLength": 0}) == [type_alone(leaf)]


def test_nothing_asserted_is_top():
    assert type_alone({}) is TOP and type_alone({"title": "t", "examples": [1]}) is TOP
    assert dnf({"title": "t"}) == [TOP]


@pytest.mark.parametrize("schema", [{"type": ["string", "null"]}, {"type": "string", "format": "date"}, {"type": "strng"}, {"type": []}])
def test_anything_else_goes_the_general_way(schema):
    assert type_alone(schema) is None


def test_a_wrong_type_is_still_refused_with_keyword_and_pointer():
    with pytest.raises(SchemaError) as e:
        json_schema_grammar({"type": "object", "properties": {"a": {"type": "strng", "description": "typo"}}})
    assert (e.value.keyword, e.value.pointer) == ("type", "/properties/a/type")
