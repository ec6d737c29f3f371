"""oneOf's pairwise disjointness proofs reuse their answers (disjointness.disjointness_memo), and the
value formula of an object's member and the names an object forbids are found once per object
(algebra.value_formula, ir.ObjectConstraints.forbidden). None of it may change what a schema
compiles to: each schema below gives the same grammar, the same refusals and the same count of
judge checks (MAX_ENUM_FILTER) with the memo as with it turned off, and `meets` says what `meet`
says on random object constraints."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen.grammar.schema.disjointness as disjointness
import strictgen.grammar.schema.applicators as applicators
import strictgen.grammar.schema.normalize as normalize
from strictgen.grammar.json_schema import json_schema_grammar
from strictgen.grammar.schema.ir import FALSE, TRUE, KeyRule, ObjectConstraints

from .oracle import compile_outcome


class _NoMemo:
    """disjointness_memo turned off: every proof computed again."""

    def __init__(self, alg):
        pass

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def _module(tag: str, source: str) -> dict:
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {"type": {"type": "string", "pattern": f"^{tag}$"}, "source": {"$ref": source}, "note": {"$ref": "#/$defs/note"}},
        "required": ["type", "source"],
    }


# o17072's shape (41 tagged modules whose member schemas are a few shared $defs), smaller
MODULES = {
    "$defs": {
        "one": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": 1}]},
        "two": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
        "note": {"type": "string"},
    },
    "type": "object",
    "additionalProperties": {"oneOf": [_module(f"M{i}", "#/$defs/one" if i % 2 else "#/$defs/two") for i in range(12)]},
}

SCHEMAS = [
    MODULES,
    # members with finite values: the judge is asked (counted checks), so those answers are not kept
    {"oneOf": [{"properties": {"k": {"const": i}, "v": {"enum": [1, 2, i]}}, "required": ["k", "v"]} for i in range(6)]},
    {"oneOf": [{"properties": {"k": {"type": "integer", "minimum": i, "maximum": i}}, "required": ["k"]} for i in range(5)] + [{"type": "string"}]},
    # overlapping branches: the exact construction follows the proofs
    {"oneOf": [{"properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["a"]}, {"properties": {"a": {"$ref": "#/$defs/n"}, "b": {}}, "required": ["b"]}, {"type": "array"}], "$defs": {"n": {"type": "integer"}}},
    # a recursive schema whose branches refer back to it (proofs inside a normalisation of it)
    {"$defs": {"t": {"oneOf": [{"type": "object", "properties": {"kind": {"const": "leaf"}, "v": {"type": "integer"}}, "required": ["kind"]},
                               {"type": "object", "properties": {"kind": {"const": "node"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}}, "required": ["kind"]}]}},
     "$ref": "#/$defs/t"},
    # nested oneOfs: each pairwise loop keeps its own answers
    {"oneOf": [{"properties": {"x": {"oneOf": [{"type": "integer"}, {"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "^b"}]}}, "required": ["x"]},
               {"properties": {"x": {"type": "boolean"}}, "required": ["x"]}, {"properties": {"y": {"type": "null"}}, "required": ["y"]}]},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
@pytest.mark.parametrize("strict", [True, False])
def test_same_grammar_with_and_without_the_memo(schema, strict, monkeypatch):
    with_memo = compile_outcome(schema, strict=strict)
    monkeypatch.setattr(applicators, "disjointness_memo", _NoMemo)
    assert compile_outcome(schema, strict=strict) == with_memo


def test_the_memo_saves_proofs_on_a_tagged_union(monkeypatch):
    monkeypatch.setattr(applicators, "tag_disjoint_pairs", lambda *a: set())  # every pair proved (test_tag_pairs)
    calls = []
    real = disjointness._disjoint
    monkeypatch.setattr(disjointness, "_disjoint", lambda *a: calls.append(1) or real(*a))
    json_schema_grammar(MODULES)
    with_memo = len(calls)
    calls.clear()
    monkeypatch.setattr(applicators, "disjointness_memo", _NoMemo)
    json_schema_grammar(MODULES)
    assert with_memo < len(calls) / 2  # the shared members' proofs are computed once each


@pytest.mark.parametrize("limit", [10, 68, 69, 70, 71, 200])
def test_judge_checks_counted_as_without_the_memo(limit, monkeypatch):
    """Answers that asked the jsonschema judge are not kept: MAX_ENUM_FILTER refuses the same
    schemas at every limit (this one needs 70 checks: refused up to 69, compiled from 70)."""
    schema = SCHEMAS[1]
    monkeypatch.setattr(normalize, "MAX_ENUM_FILTER", limit)
    with_memo = compile_outcome(schema)
    assert (with_memo[0] == "refused") == (limit < 70)
    monkeypatch.setattr(applicators, "disjointness_memo", _NoMemo)
    assert compile_outcome(schema) == with_memo


def test_the_memo_ends_with_its_loop():
    schema = SCHEMAS[0]
    from strictgen.grammar.schema.normalize import Normalizer

    norm = Normalizer(schema)
    norm.formulas.dnf(norm.root_formula)
    assert norm.formulas.tables.disjoint_memo is None


_names = st.sampled_from(["a", "b", "c"])
_rules = st.lists(st.tuples(_names, st.booleans()).map(lambda t: KeyRule("name", FALSE if t[1] else TRUE, name=t[0])), max_size=3)
_objects = st.builds(
    lambda rules, req, lo, hi: ObjectConstraints(rules=tuple(rules), required=frozenset(req), min=lo, max=hi),
    _rules, st.sets(_names), st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3)),
)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(_objects, _objects)
def test_meets_is_meet_not_none(a, b):
    assert a.meets(b) == (a.meet(b) is not None)
    assert a.forbidden == frozenset(r.name for r in a.rules if r.schema is FALSE)
