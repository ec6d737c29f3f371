"""SchemaSource.content, the text a subschema is keyed by (equal texts share one formula, and
formulas sort by it): written by a C encoder made once and without circular-reference markers,
it must stay exactly `json.dumps(kept, ensure_ascii=False, separators=(",", ":"))`, fall back to
the object's identity for what JSON cannot write, and a cyclic Python schema must stay a clear
error (the schema bounds), never a crash."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from strictgen.errors import StrictgenError
from strictgen.grammar.json_schema import json_schema_grammar
from strictgen.grammar.schema.normalize import SchemaSource

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _VALUES, max_size=4))
def test_content_is_the_compact_json_text_of_the_asserting_keywords(schema):
    kept = {k: v for k, v in schema.items() if k not in ("title", "description", "default", "examples", "example", "$comment", "deprecated", "readOnly", "writeOnly")}
    expected = json.dumps(kept, ensure_ascii=False, separators=(",", ":"))
    assert SchemaSource({}).content(schema) == expected


def test_content_writes_non_ascii_escapes_and_non_finite_numbers_as_json_dumps():
    schema = {"enum": ["é\u2028\"\\\n", 1.5, 1e300, float("inf"), float("-inf"), 10**30, True, None], "type": "string"}
    assert SchemaSource({}).content(schema) == json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


def test_a_value_json_cannot_write_keys_the_object_by_identity():
    source = SchemaSource({})
    a, b = {"enum": [{1, 2}]}, {"enum": [{1, 2}]}
    assert source.content(a) != source.content(b)  # not merged: equal-looking, but no text says so
    assert source.content(a) == source.content(a)


def test_a_cyclic_schema_is_a_clear_error():
    schema: dict = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    with pytest.raises(StrictgenError):  # (the bounds: nested too deeply)
        json_schema_grammar(schema)
