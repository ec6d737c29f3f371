"""schema.key_space: `allowed_keys` is exactly the keys some valid member can have (judged by
jsonschema); `objects_keys_disjoint` is never wrong when True (no object is valid under both)
and finds the disjoint pairs below. Both are asked by the normaliser alone, with no emitter."""

from __future__ import annotations

import pytest

from strictgen.grammar.automata import Language
from strictgen.grammar.schema.key_space import allowed_keys, objects_keys_disjoint

from .oracle import normalizer, validator
from .test_emit_objects import ALL, VALUES


def test_allowed_keys_are_the_keys_of_some_valid_member():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "n": False}, "patternProperties": {"^x": {"type": "string"}}, "additionalProperties": False}
    norm = normalizer(schema)
    (c,) = norm.dnf(norm.root_formula)
    allowed = Language(allowed_keys(norm.normalized, c.obj))
    judge = validator(schema)
    for key in ["a", "n", "x", "xa", "b", "ax", ""]:
        assert allowed.accepts(key.encode()) == any(judge.is_valid({key: v}) for v in VALUES), key


@pytest.mark.parametrize(
    "a,b,disjoint",
    [
        ({"required": ["a"], "additionalProperties": False, "properties": {"a": True}}, {"required": ["b"], "additionalProperties": False, "properties": {"b": True}}, True),
        ({"required": ["a"], "propertyNames": {"pattern": "^a"}}, {"minProperties": 1, "propertyNames": {"pattern": "^b"}}, True),
        ({"required": ["a"]}, {"required": ["b"]}, False),
        ({"propertyNames": {"pattern": "^a"}}, {"propertyNames": {"pattern": "^b"}}, False),  # {} is in both
    ],
)
def test_objects_keys_disjoint(a, b, disjoint):
    norm = normalizer({"$defs": {"a": {"type": "object", **a}, "b": {"type": "object", **b}}})
    (ca,) = norm.dnf(norm.sub(norm.root_formula, norm.root["$defs"]["a"], "$defs", "a"))
    (cb,) = norm.dnf(norm.sub(norm.root_formula, norm.root["$defs"]["b"], "$defs", "b"))
    assert objects_keys_disjoint(norm.normalized, ca.obj, cb.obj) == disjoint
    ja, jb = validator({"type": "object", **a}), validator({"type": "object", **b})
    both = [d for d in ALL + [{"ab": 1}, {"ba": 1}] if ja.is_valid(d) and jb.is_valid(d)]
    assert bool(both) != disjoint
