"""schema.emit_arrays (emit_array): the array part of a conjunct emits exactly the array texts
jsonschema finds valid: prefixItems then items, length bounds, contains with min/maxContains
(counted), and uniqueItems over a small finite item domain (item sets built ahead). Every array
of up to four items over a few values is judged; both JSON styles of separators are fed."""

from __future__ import annotations

import itertools
import json

import pytest

from strictgen.grammar.schema.emit_arrays import emit_array
from strictgen.grammar.schema.ir import TRUE

from .oracle import emitter, language_of, validator

VALUES = [1, "s", True, None, [1]]
SCHEMAS = [
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": False},
    {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": ["integer", "null"]}, "minItems": 2},
    {"type": "array", "contains": {"type": "integer"}},
    {"type": "array", "contains": {"type": "string"}, "minContains": 2, "maxContains": 3},
    {"type": "array", "contains": {"type": "boolean"}, "maxContains": 1, "maxItems": 3},
    {"type": "array", "items": {"enum": [1, "s", True]}, "uniqueItems": True},
    {"type": "array", "items": {"enum": [1, True, None]}, "uniqueItems": True, "minItems": 3},
    {"type": "array", "prefixItems": [{"const": 1}], "contains": {"const": 1}, "minContains": 2},
    {"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 1}},
]


def arrays():
    for n in range(5):
        yield from (list(p) for p in itertools.product(VALUES, repeat=n))


ALL = list(arrays())


def emitted(schema):
    em = emitter(schema)
    (c,) = [c for c in em.normalized.dnf(em.normalized.root) if c.arr is not None]
    expr = emit_array(em, c.arr)
    em.build(TRUE)  # the rules of the items the array refers to
    return language_of(em, expr)


@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
def test_array_texts_are_exactly_the_valid_arrays(schema):
    accepts = emitted(schema)
    judge = validator(schema)
    for doc in ALL:
        valid = judge.is_valid(doc)
        for text in (json.dumps(doc), json.dumps(doc, separators=(",", ":"))):
            assert accepts(text) == valid, (schema, text)


def test_the_array_part_rejects_what_is_not_an_array():
    accepts = emitted({"type": "array", "items": {"type": "integer"}})
    assert accepts("[]") and accepts("[1, 2]")
    for text in ("{}", "1", '"[1]"', "[1,]", "[,1]", "[1 2]"):
        assert not accepts(text), text
