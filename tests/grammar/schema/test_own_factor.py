"""applicators._norm_core: a schema with no applicator (no $ref, allOf, anyOf, oneOf, not, if,
dependencies) has its own keywords as its one factor, so its conjuncts are own_keywords' conjunct,
taken without _factors and the product of one factor. It must be exactly what those make, and a
schema with any applicator keyword must still go the general way."""

from __future__ import annotations

import pytest

from strictgen.grammar.schema import applicators
from strictgen.grammar.schema.algebra import product

from .oracle import normalizer

PLAIN = [
    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer", "minimum": 3}}, "required": ["a"]},
    {"type": ["string", "null"], "maxLength": 4},
    {"type": "array", "items": {"type": "number"}, "minItems": 1, "uniqueItems": False},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "maxProperties": 0},  # admits no object
    {"type": "string", "minLength": 3, "maxLength": 2},  # admits nothing
    {"minimum": 2, "patternProperties": {"^x": {"type": "null"}}, "additionalProperties": False},
]


def general_way(norm, f):
    factors = applicators._factors(norm, f)
    return [] if factors is None else product(norm.formulas, [pos_dnf[1]() for pos_dnf in factors], f)


@pytest.mark.parametrize("schema", PLAIN)
def test_own_keywords_alone_are_what_the_general_path_makes(schema, monkeypatch):
    norm = normalizer(schema)
    calls = []
    real = applicators._factors
    monkeypatch.setattr(applicators, "_factors", lambda *a: calls.append(a) or real(*a))
    fast = norm.dnf(norm.root_formula)
    assert calls == []  # (the root went the short way)
    monkeypatch.undo()
    other = normalizer(schema)  # (formulas are equal across normalisers: by their keys)
    assert fast == general_way(other, other.root_formula)


@pytest.mark.parametrize("kw,value", [("allOf", [{"minimum": 1}]), ("not", {"type": "null"}), ("dependentRequired", {"a": ["b"]}), ("if", {"type": "string"})])
def test_an_applicator_goes_the_general_way(kw, value, monkeypatch):
    calls = []
    real = applicators._factors
    monkeypatch.setattr(applicators, "_factors", lambda *a: calls.append(a) or real(*a))
    norm = normalizer({"type": ["object", "number"], "properties": {"a": {}}, kw: value})
    norm.dnf(norm.root_formula)
    assert calls
