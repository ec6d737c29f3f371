"""SchemaSource's content of the root, cut from the root's JSON text (the one schema_cache_text
writes, which the compiler has) instead of encoded again: it must be exactly the text content()
encodes (the subschema's members without its annotations), or nothing (content() then encodes)."""

from __future__ import annotations

import json

import pytest

from strictgen.grammar.json_schema import loaded_schema
from strictgen.grammar.schema.normalize import SchemaSource, _content_of_text

CASES = [
    {},
    {"type": "string"},
    {"title": "t", "description": "d", "type": "object", "properties": {"a": {"title": "inner", "type": "integer"}}},
    {"type": "object", "description": "in the middle", "required": ["é"], "examples": [{"é": 1.5e300}], "default": None},
    {"properties": {"x": {"description": "ü\u2028\"\\/"}}, "$comment": "at the end"},
    {"title": "only annotations", "description": "", "deprecated": True},
    {"$defs": {"big": {"enum": list(range(200))}}, "title": "after a big member", "type": "array"},
    {"minimum": -0.0, "maximum": 1e-7, "readOnly": False, "multipleOf": 0.1, "x-nan": float("nan")},
]


def encoded(schema: dict) -> str:
    """What content() encodes for `schema`."""
    source = SchemaSource({})
    return source.content(schema)


@pytest.mark.parametrize("schema", CASES)
def test_the_root_content_cut_from_its_text_is_the_encoded_one(schema):
    text = loaded_schema(schema).text
    got = _content_of_text(text, schema)
    assert got is None or got == encoded(schema)
    if schema and "$defs" not in schema:  # (a big member before the annotations: encoded instead)
        assert got is not None
    source = SchemaSource(json.loads(text), root_text=text)
    assert source.content(source.root) == encoded(schema)


def test_a_text_that_is_not_the_schema_s_is_not_used():
    schema = {"title": "t", "type": "string"}
    assert _content_of_text('{"title":"u","type":"string"}', schema) is None


def test_the_bench_roots(bench_schemas=None):
    from strictgen.bench import default_schemas_dir, load_cases

    if not default_schemas_dir().is_dir():
        pytest.skip(f"{default_schemas_dir()} is absent: ../shared/data is not beside this clone")
    cut = 0
    for case in load_cases(default_schemas_dir()):
        schema = json.loads(case.schema_text)
        if isinstance(schema, dict):
            got = _content_of_text(loaded_schema(case.schema_text).text, schema)
            assert got is None or got == encoded(schema), case.name
            cut += got is not None
    assert cut > 50
