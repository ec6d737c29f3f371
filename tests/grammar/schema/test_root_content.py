"""SchemaSource's content of the root and of its subschemas, cut from the root's JSON text (the one
schema_cache_text writes, which the compiler has) instead of encoded again: it must be exactly the
text content() encodes (the subschema's members without its annotations). The cut's spans come
from C (_json_spans), checked here against the Python encoder on every object."""

from __future__ import annotations

import json

import pytest

from strictgen.grammar.json_schema import loaded_schema
from strictgen.grammar.schema._json_spans import member_spans, object_spans
from strictgen.grammar.schema.normalize import SchemaSource, _content_cut

CASES = [
    {},
    {"type": "string"},
    {"title": "t", "description": "d", "type": "object", "properties": {"a": {"title": "inner", "type": "integer"}}},
    {"type": "object", "description": "in the middle", "required": ["é"], "examples": [{"é": 1.5e300}], "default": None},
    {"properties": {"x": {"description": "ü\u2028\"\\/"}}, "$comment": "at the end"},
    {"title": "only annotations", "description": "", "deprecated": True},
    {"$defs": {"big": {"enum": list(range(200))}}, "title": "after a big member", "type": "array"},
    {"minimum": -0.0, "maximum": 1e-7, "readOnly": False, "multipleOf": 0.1, "x-nan": float("nan")},
    {"pattern": "^\\\\\"{2}[}{]\\\\$", "enum": [[], {}, [{"a": {"b": []}}], "x\\", "\\\"", 10**30, -1.5e-300, True, None]},
    {"description": "\U0001f600 wide", "properties": {"\U0001f600": {"const": "\\\"}"}}},
]


def encoded(schema: dict) -> str:
    """What content() encodes for `schema` (a source without a root text)."""
    source = SchemaSource({})
    return source.content(schema)


def objects(value):
    """Every dict inside `value` (itself included)."""
    work = [value]
    while work:
        v = work.pop()
        if isinstance(v, dict):
            yield v
            work.extend(v.values())
        elif isinstance(v, list):
            work.extend(v)


def check_cuts(text: str) -> int:
    """Every object of the value of `text` has its span, and its cut content is the encoded one."""
    value = json.loads(text)
    spans = object_spans(value, text)
    assert spans is not None
    found = list(objects(value))
    assert len(spans) == len(found)
    source = SchemaSource(value, root_text=text)
    for d in found:
        start, end = spans[id(d)]
        assert text[start:end] == json.dumps(d, ensure_ascii=False, separators=(",", ":"))
        assert _content_cut(text, (start, end), d) == encoded(d)
        assert source.content(d) == encoded(d)
    return len(found)


@pytest.mark.parametrize("schema", CASES)
def test_contents_cut_from_the_text_are_the_encoded_ones(schema):
    check_cuts(loaded_schema(schema).text)


def test_a_text_that_is_not_the_value_s_gives_no_spans():
    value = {"title": "t", "type": "string", "items": [1, {"a": 2}]}
    assert object_spans(value, '{"title":"t","type":"string"}') is None
    assert object_spans(value, '{"title":"t","type":"string","items":[1,2]}') is None
    assert object_spans(value, '{"title":"t","type":"string","items":{"a":2}}') is None
    assert object_spans((1, 2), "[1,2]") is None  # (a container the cut does not know: encoded instead)
    assert member_spans({"a": 1}, '{"a":1}', 1) is None
    assert member_spans({"a": 1, "b": [2]}, '{"a":1,"b":[2]}', 0) == [(1, 6), (7, 14)]
    # (that the text is the value's own is the caller's word, loaded_schema's: only its shape is checked)
    text = '{"title":"t","type":"string","properties":{}}'
    source = SchemaSource(json.loads(text), root_text='{"title":"t","type":"string","properties":[]}')
    assert source.content(source.root) == '{"type":"string","properties":{}}'  # (encoded)


def test_a_deep_value_falls_back_to_encoding():
    value: dict = {}
    for _ in range(3000):
        value = {"not": value}
    text = '{"not":' * 3000 + "{}" + "}" * 3000  # (past the encoder's own recursion limit)
    assert object_spans(value, text) is None
    assert object_spans(value["not"]["not"], text) is None
    shallow = json.loads('{"not":' * 900 + "{}" + "}" * 900)
    assert len(object_spans(shallow, '{"not":' * 900 + "{}" + "}" * 900)) == 901


def test_the_bench_schemas():
    from strictgen.bench import default_schemas_dir, load_cases

    if not default_schemas_dir().is_dir():
        pytest.skip(f"{default_schemas_dir()} is absent: ../shared/data is not beside this clone")
    assert sum(check_cuts(loaded_schema(case.schema_text).text) for case in load_cases(default_schemas_dir())) > 1000
