"""schema.limits: check_schema_bounds refuses a document nested deeper than MAX_SCHEMA_DEPTH or
holding more than MAX_SCHEMA_NODES values with a GrammarTooLargeError that names the limit and the
JSON pointer (and walks iteratively: no RecursionError at any depth); json_pointer escapes per
RFC 6901 (checked against `referencing`'s own pointer lookup); malformed_subschema names the
first applicator keyword of the wrong shape, and passes every well-formed one."""

from __future__ import annotations

import pytest
import referencing
import referencing.jsonschema as rj

from strictgen.errors import GrammarTooLargeError
from strictgen.grammar.schema.limits import MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, check_schema_bounds, json_pointer, malformed_subschema


def nested(depth: int) -> dict:
    """A schema with `depth` levels of objects: {"not": {"not": ... {}}}."""
    schema: dict = {}
    for _ in range(depth - 1):
        schema = {"not": schema}
    return schema


def test_depth_at_the_limit_passes_and_one_more_is_refused_with_its_pointer():
    check_schema_bounds(nested(MAX_SCHEMA_DEPTH))
    with pytest.raises(GrammarTooLargeError, match="MAX_SCHEMA_DEPTH") as e:
        check_schema_bounds(nested(MAX_SCHEMA_DEPTH + 1))
    assert ("/not" * MAX_SCHEMA_DEPTH) in str(e.value)
    assert ("/not" * (MAX_SCHEMA_DEPTH + 1)) not in str(e.value)


def test_arrays_count_as_levels_and_custom_limits_apply():
    with pytest.raises(GrammarTooLargeError, match=r"#/enum/0/0/0"):
        check_schema_bounds({"enum": [[[[1]]]]}, max_depth=4)
    check_schema_bounds({"enum": [[[1]]]}, max_depth=4)


def test_no_recursion_error_at_any_depth():
    deep: list = []
    for _ in range(200_000):
        deep = [deep]
    with pytest.raises(GrammarTooLargeError):
        check_schema_bounds({"const": deep})


def test_node_count_limit():
    check_schema_bounds({"enum": list(range(99))}, max_nodes=101)  # the object, its array, 99 items
    with pytest.raises(GrammarTooLargeError, match="JSON values") as e:
        check_schema_bounds({"enum": list(range(100))}, max_nodes=101)
    assert "#/enum/" in str(e.value)
    assert MAX_SCHEMA_NODES >= 100_000


@pytest.mark.parametrize("path", [["a"], ["a/b", "c~d"], ["$defs", "x y", 0], ["~1", "/"], []])
def test_json_pointer_resolves_back_with_referencing(path):
    doc: dict = {}
    node = doc
    for p in path[:-1]:
        node = node.setdefault(p, {}) if isinstance(p, str) else node
    target = {"type": "string"}
    if path:
        node[path[-1] if isinstance(path[-1], str) else str(path[-1])] = target
    else:
        doc = target
    resource = rj.DRAFT202012.create_resource(doc)
    resolver = referencing.Registry().with_resource("urn:t", resource).resolver("urn:t")
    assert resolver.lookup("urn:t#" + json_pointer([str(p) for p in path])).contents is target


WELL_FORMED = [
    {"type": "object", "properties": {"a": {"type": "string"}, "b": True}, "additionalProperties": False},
    {"items": [{"type": "integer"}, False], "additionalItems": {"type": "string"}},
    {"prefixItems": [True], "items": {"$ref": "#"}, "contains": {}},
    {"allOf": [{"anyOf": [{}, {"oneOf": [True]}]}], "not": {"if": {}, "then": {}, "else": False}},
    {"$defs": {"x": {"patternProperties": {"^a": {}}}}, "dependentSchemas": {"a": {}}},
    {"enum": [{"properties": 3}], "const": {"items": 1}, "default": {"allOf": 1}},  # values, not schemas
]


@pytest.mark.parametrize("schema", WELL_FORMED)
def test_malformed_subschema_passes_well_formed_schemas(schema):
    assert malformed_subschema(schema) is None


@pytest.mark.parametrize(
    "schema,expected",
    [
        ({"properties": []}, ("properties", "#/properties", "an object whose values are schemas")),
        ({"properties": {"a": 3}}, ("properties", "#/properties", "an object whose values are schemas")),
        ({"allOf": {"a": {}}}, ("allOf", "#/allOf", "an array of schemas")),
        ({"anyOf": [{}, 1]}, ("anyOf", "#/anyOf", "an array of schemas")),
        ({"items": [{}, "x"]}, ("items", "#/items", "a schema or an array of schemas")),
        ({"not": []}, ("not", "#/not", "a schema (an object or a boolean)")),
        ({"properties": {"a/b": {"items": [{"contains": 2}]}}}, ("contains", "#/properties/a~1b/items/0/contains", "a schema (an object or a boolean)")),
        ({"$defs": {"d": {"oneOf": None}}}, ("oneOf", "#/$defs/d/oneOf", "an array of schemas")),
    ],
)
def test_malformed_subschema_names_keyword_pointer_and_shape(schema, expected):
    assert malformed_subschema(schema) == expected
    # the normaliser's index of the document (SchemaSource._index) sees each of them on its walk
    # and refuses the schema as malformed_subschema names it (no $id: referencing never imported;
    # a $ref: the registry made without a crawl)
    from strictgen.errors import SchemaError
    from strictgen.grammar.schema.normalize import SchemaSource

    keyword, pointer, shape = expected
    for root in (schema, {**schema, "$ref": "#/$defs/none", "$defs": {**schema.get("$defs", {}), "none": {}}}):
        with pytest.raises(SchemaError) as got:
            SchemaSource(root)
        assert (got.value.keyword, got.value.pointer, str(got.value).split(" (keyword")[0]) == (keyword, pointer.lstrip("#"), f"{keyword} must be {shape}")


@pytest.mark.parametrize("schema", WELL_FORMED)
def test_the_normalisers_index_passes_well_formed_schemas(schema):
    from strictgen.grammar.schema.normalize import SchemaSource

    SchemaSource(schema)  # (no SchemaError: no shape suspected, or malformed_subschema clears it)
