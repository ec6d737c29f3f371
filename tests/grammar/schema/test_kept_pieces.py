"""schema.kept_pieces: a piece kept for the process is handed out as the expression a fresh build
writes (the first two uses are builds; the second tells the nodes a build makes anew). Those
are new objects at each use (ir.alt keeps two equal
alternatives whose children are distinct objects, and drops one whose children are the very
objects of another; the automaton compiler builds ahead a rule body met before), the nodes every
build shares (constants, caches beneath) stay shared, and so does the DAG's own sharing. Number
ranges (emit_numbers) and enums of scalars (SchemaEmitter.enum) are such pieces: the grammars of
a compile with every piece kept equal those of one that keeps none, expression for expression."""

from __future__ import annotations

import pytest

import strictgen.grammar.schema.emit_numbers as emit_numbers
import strictgen.grammar.schema.emitter as emitter
from strictgen.grammar.ir import Alt, Repeat, Seq, alt, lit
from strictgen.grammar.json_schema import json_schema_grammar
from strictgen.grammar.schema.kept_pieces import kept, kept_entry_size
from strictgen.lru import BoundedLRU

CONSTANT = Seq((lit("a"), Repeat(lit("b"))))


def build():
    inner = Seq((lit("x"), CONSTANT))
    return Alt((Seq((inner, lit("y"))), Seq((lit("z"), inner))))  # `inner` twice: the build's own sharing


def uses(make, n: int) -> list:
    """`n` uses of the piece `make` builds, kept in a cache of its own; and the builds made."""
    cache, built = BoundedLRU(8), []
    got = [kept(cache, "k", lambda: built.append(1) or make()) for _ in range(n)]
    return got, built


def test_fresh_nodes_are_copied_shared_ones_kept():
    (first, second, copy, again), built = uses(build, 4)
    assert len(built) == 2  # the first two uses build
    assert copy == again == first == second and copy is not first and copy is not again
    assert copy.items[0] is not first.items[0] and copy.items[0].items[0] is not first.items[0].items[0]
    assert copy.items[0].items[0].items[1] is CONSTANT  # what every build shares stays shared
    assert copy.items[0].items[0] is copy.items[1].items[1]  # the DAG's own sharing, kept


def test_alt_keeps_what_it_keeps_of_fresh_builds():
    got, _ = uses(build, 4)
    assert len(alt(build(), build()).items) == len(alt(got[2], got[3]).items) == 4


def test_a_leaf_top_is_a_new_object():
    got, built = uses(lambda: lit("q"), 4)
    assert all(x == lit("q") for x in got) and len({id(x) for x in got}) == 4 and len(built) == 2


SCHEMAS = [
    # two number parts in one alternation (the JSON-Schema-Test-Suite's anyOf #5)
    {"anyOf": [{"properties": {"bar": {"type": "integer"}}, "required": ["bar"]}, {"properties": {"foo": {"type": "string"}}, "required": ["foo"]}]},
    {"anyOf": [{"type": "integer", "minimum": 3}, {"type": "integer", "minimum": 3, "maximum": 90}, {"type": ["integer", "string"], "minimum": 3}]},
    {"anyOf": [{"enum": [1, 2.5, "a"]}, {"enum": [1, 2.5, "a"], "maxLength": 4}, {"const": 1}], "oneOf": [{"type": "number"}, {"type": "string"}]},
    {"type": "array", "prefixItems": [{"enum": ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]}] * 3, "items": {"type": "integer", "maximum": 7}},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_kept_pieces_change_no_grammar(monkeypatch, schema):
    """The grammar with nothing kept (each use a fresh build) is the grammar with every piece
    kept from an earlier compile, to each rule's repr."""
    monkeypatch.setattr(emit_numbers, "_plain_ranges", BoundedLRU(0))
    monkeypatch.setattr(emitter, "ENUM_PARTS", BoundedLRU(0))
    fresh, _ = json_schema_grammar(schema)
    monkeypatch.setattr(emit_numbers, "_plain_ranges", BoundedLRU(64))
    monkeypatch.setattr(emitter, "ENUM_PARTS", BoundedLRU(64, 1 << 20, kept_entry_size))
    json_schema_grammar(schema)  # every piece kept (two compiles: the second use tells what a build makes anew)
    json_schema_grammar(schema)
    warm, _ = json_schema_grammar(schema)
    assert {n: repr(e) for n, e in warm.rules.items()} == {n: repr(e) for n, e in fresh.rules.items()}
