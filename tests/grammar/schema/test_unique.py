"""Which items uniqueItems is enforced for (schema/unique.py): those whose unfinished items
can always still become a new value; the rest are refused with a SchemaError naming uniqueItems.
The item spec the matcher reads travels in the array rule's name."""

from __future__ import annotations

import json

import pytest

from strictgen.errors import SchemaError
from strictgen.grammar.json_schema import JsonStyle, json_schema_grammar
from strictgen.grammar.schema.unique import UNIQUE_MARK


def specs(schema: dict, **kw) -> list:
    grammar, _ = json_schema_grammar(schema, **kw)
    names = [n for n in grammar.rules if UNIQUE_MARK in n]  # the outermost array's rule comes first
    return json.loads(names[0].split(UNIQUE_MARK, 1)[1])


@pytest.mark.parametrize(
    "items, kinds",
    [
        (True, "anos"),
        ({"type": "string", "pattern": "^[a-z0-9_]+$"}, "s"),
        ({"type": "string", "pattern": "x"}, "s"),  # unanchored: anything around an x
        ({"type": "string", "format": "uri"}, "s"),
        ({"type": "string", "not": {"enum": ["a"]}}, "s"),
        ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, "o"),
        ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "a"),
        ({"type": ["integer", "boolean"]}, "i"),
        ({"anyOf": [{"enum": [f"v{i}" for i in range(20)]}, {"type": "string", "minLength": 3}]}, "s"),  # "v1" can go on as "v1x"
    ],
)
def test_items_followed(items, kinds):
    assert specs({"type": "array", "items": items, "uniqueItems": True})[-1]["k"] == kinds


@pytest.mark.parametrize(
    "items",
    [
        {"type": "integer", "minimum": 0},
        {"enum": [[1], [2]] + list(range(20))},
        {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "object", "propertyNames": {"maxLength": 3}},
        {"type": "array", "prefixItems": [True, False]},
        {"type": "array", "items": {"type": "string", "maxLength": 2}, "uniqueItems": True},
    ],
)
def test_items_refused_by_name(items):
    with pytest.raises(SchemaError) as info:
        json_schema_grammar({"type": "array", "items": items, "uniqueItems": True})
    assert info.value.keyword == "uniqueItems" and info.value.pointer == "/uniqueItems"


@pytest.mark.parametrize(
    "items",
    [
        {"type": "string", "pattern": "^a+b?$"},  # after "ab" only "ab" itself
        {"type": "string", "pattern": "^#[0-9a-f]{6}$"},
        {"type": "string", "format": "date"},
        {"type": "string", "maxLength": 30},
        {"anyOf": [{"enum": [f"v{i}" for i in range(20)]}, {"type": "string", "pattern": "^#[0-9]{3}$"}]},
    ],
)
def test_strings_that_can_run_out_are_counted(items):
    spec = specs({"type": "array", "items": items, "uniqueItems": True})[-1]
    assert "s" not in spec["k"] and spec["s"] is None and "r" in spec


def test_enums_positions_and_numbers():
    colors = [f"c{i}" for i in range(20)]
    got = specs({"type": "array", "items": {"enum": colors + [None, True]}, "uniqueItems": True})
    assert got == [{"k": "", "s": sorted(colors), "l": [None, True]}]
    got = specs({"prefixItems": [{"type": "boolean"}, {"const": "x"}], "items": {"type": "number"}, "uniqueItems": True})
    assert [s["k"] for s in got] == ["", "", "n"] and got[1]["s"] == ["x"]
    assert specs({"type": "array", "items": {"type": "number"}, "uniqueItems": True}, style=JsonStyle(numbers="canonical"))[-1]["k"] == "d"
    with pytest.raises(SchemaError):  # the second needed item could only repeat the first
        json_schema_grammar({"prefixItems": [{"const": "x"}, {"const": "x"}], "items": {"type": "string"}, "minItems": 2, "uniqueItems": True})
