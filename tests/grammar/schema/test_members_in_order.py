"""schema.emit_objects' members in the fixed order without counts, presence clauses or existential
members: listed from the last slot back instead of explored by counting_language, they must be
the very expression the exploration writes. Each schema is emitted twice, once as it is and once
with the listing switched off (emit_objects.MAX_DP_STATES = 0 sends every object to the
exploration), and the two grammars must be equal node for node: on random object schemas
(hypothesis) and on every bench schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.errors import StrictgenError
from strictgen.grammar.ir import Expr, Lazy
from strictgen.grammar.json_schema import json_schema_grammar
from strictgen.grammar.schema import emit_objects

BENCH = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "bench"


def canonical(grammar) -> tuple:
    """The grammar as numbered nodes: equal nodes (by structure) get one number, so two DAGs are
    compared in time linear in their nodes (dataclass equality re-walks shared suffixes)."""
    table: dict = {}
    memo: dict[int, int] = {}

    def number(e) -> int:
        got = memo.get(id(e))
        if got is not None:
            return got
        if isinstance(e, Lazy):
            key = ("Lazy", type(e.family).__name__, repr(e.key), tuple(number(u) for u in e.uses))
        elif isinstance(e, Expr) and hasattr(e, "items"):
            key = (type(e).__name__, tuple(number(i) for i in e.items))
        elif isinstance(e, Expr) and hasattr(e, "item"):
            key = (type(e).__name__, number(e.item), getattr(e, "min", None), getattr(e, "max", None))
        elif isinstance(e, Expr) and hasattr(e, "base"):
            key = ("Difference", number(e.base), number(e.minus))
        else:
            key = e  # a leaf: hashable by value
        got = memo[id(e)] = table.setdefault(key, len(table))
        return got

    return grammar.root, tuple((name, number(body)) for name, body in grammar.rules.items())


def both_ways(schema, monkeypatch) -> tuple[tuple, tuple, int]:
    """(canonical grammar listed, canonical grammar explored, objects listed)."""
    listed = [0]
    real = emit_objects._members_in_order

    def counted(*args):
        listed[0] += 1
        return real(*args)

    with monkeypatch.context() as m:
        m.setattr(emit_objects, "_members_in_order", counted)
        fast = canonical(json_schema_grammar(schema)[0])
    with monkeypatch.context() as m:
        m.setattr(emit_objects, "MAX_DP_STATES", 0)
        slow = canonical(json_schema_grammar(schema)[0])
    return fast, slow, listed[0]


VALUES = st.sampled_from(
    [{"type": "integer"}, {"type": "string"}, {"type": "boolean"}, {}, {"type": "object"}, {"enum": [1, "a"]}, False]
)
NAMES = ["a", "b", "cd", "x1", "é"]


@st.composite
def object_schemas(draw, depth: int = 0):
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=5))
    values = VALUES if depth else st.one_of(VALUES, object_schemas(depth=1))
    schema: dict = {"type": "object", "properties": {n: draw(values) for n in names}}
    required = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3))
    if required:
        schema["required"] = required
    extra = draw(st.sampled_from([None, False, True, {"type": "integer"}]))
    if extra is not None:
        schema["additionalProperties"] = extra
    if draw(st.booleans()):
        schema["patternProperties"] = {"^x": {"type": "integer"}}
    return schema


@settings(max_examples=60, deadline=None)
@given(object_schemas())
def test_listed_equals_explored_on_random_objects(schema):
    with pytest.MonkeyPatch.context() as monkeypatch:
        try:
            fast, slow, listed = both_ways(schema, monkeypatch)
        except StrictgenError:
            return  # no object at all (a required property that is false): nothing emitted either way
        assert fast == slow


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["b"]},
        {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
        {"type": "object", "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
    ],
)
def test_plain_objects_take_the_listing(schema, monkeypatch):
    fast, slow, listed = both_ways(schema, monkeypatch)
    assert listed == 1 and fast == slow


def test_listed_equals_explored_on_the_bench_schemas(monkeypatch):
    if not BENCH.is_dir():
        pytest.skip(f"{BENCH} is absent: ../shared/data is not beside this clone")
    listed = 0
    for path in sorted(BENCH.glob("*.json")):
        schema = json.loads(path.read_text())
        schema = schema.get("schema", schema) if isinstance(schema, dict) and "schema" in schema else schema
        try:
            fast, slow, n = both_ways(schema, monkeypatch)
        except StrictgenError:
            continue
        assert fast == slow, path.name
        listed += n
    assert listed > 50  # most objects of real schemas take the listing


def test_a_wrong_listing_is_caught(monkeypatch):
    """The comparison can fail: a listing that forgets the additional members differs."""
    real = emit_objects._members_in_order
    monkeypatch.setattr(emit_objects, "_members_in_order", lambda em, slots, extras, cf, cm: real(em, slots, [], cf, cm))
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    fast = canonical(json_schema_grammar(schema)[0])
    monkeypatch.setattr(emit_objects, "MAX_DP_STATES", 0)
    assert canonical(json_schema_grammar(schema)[0]) != fast
