"""schema.kept_pieces: a piece kept for the process is handed out as the expression a fresh build
writes. Its nodes that a build makes anew are new objects at each use (ir.alt keeps two equal
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
from strictgen.grammar.schema.kept_pieces import build_kept, fresh_copy
from strictgen.lru import BoundedLRU

CONSTANT = Seq((lit("a"), Repeat(lit("b"))))


def build():
    inner = Seq((lit("x"), CONSTANT))
    return Alt((Seq((inner, lit("y"))), Seq((lit("z"), inner))))  # `inner` twice: the build's own sharing


def test_fresh_nodes_are_copied_shared_ones_kept():
    first, piece = build_kept(build)
    assert first == build()
    copy = fresh_copy(piece)
    assert copy == first and copy is not first
    assert copy.items[0] is not first.items[0] and copy.items[0].items[0] is not first.items[0].items[0]
    assert copy.items[0].items[0].items[1] is CONSTANT  # what every build shares stays shared
    assert copy.items[0].items[0] is copy.items[1].items[1]  # the DAG's own sharing, kept


def test_alt_keeps_what_it_keeps_of_fresh_builds():
    _, piece = build_kept(build)
    assert len(alt(build(), build()).items) == len(alt(fresh_copy(piece), fresh_copy(piece)).items) == 4


def test_a_leaf_top_is_a_new_object():
    _, piece = build_kept(lambda: lit("q"))
    assert fresh_copy(piece) == lit("q") and fresh_copy(piece) is not fresh_copy(piece)


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
    monkeypatch.setattr(emitter, "ENUM_PARTS", BoundedLRU(64, 1 << 20, lambda got: got[1]))
    json_schema_grammar(schema)  # every piece kept
    kept, _ = json_schema_grammar(schema)
    assert {n: repr(e) for n, e in kept.rules.items()} == {n: repr(e) for n, e in fresh.rules.items()}
