"""Normalizer.emitting: while the emission runs, the formula algebra's lazy steps are taken by
the compile's normaliser itself (no working Normalizer made per outermost step), and when it
ends nothing holds the compile's tables: the source's reference to the normaliser, a cycle
through the algebra while the block runs, is dropped, so reference counting frees them (a
compile pauses the cyclic collector)."""

from __future__ import annotations

import gc
import weakref

import pytest

from strictgen.grammar.json_schema import json_schema_grammar
from strictgen.grammar.schema import formulas, normalize

SCHEMA = {
    "type": "object",
    "properties": {f"p{i}": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"$ref": "#/$defs/d"}}} for i in range(5)},
    "$defs": {"d": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"$ref": "#/$defs/d"}}]}},
}


def test_no_working_normaliser_is_made_while_emitting(monkeypatch):
    made = []
    real = normalize.Normalizer.working
    monkeypatch.setattr(normalize.Normalizer, "working", classmethod(lambda cls, *a: made.append(a) or real(*a)))
    grammar, _ = json_schema_grammar(SCHEMA)
    assert made == [] and len(grammar.rules) > 5


def test_the_compile_s_tables_are_freed_without_the_collector(monkeypatch):
    algebras = []
    real = formulas.FormulaAlgebra.__init__

    def init(self, *a, **k):
        real(self, *a, **k)
        algebras.append(weakref.ref(self))

    monkeypatch.setattr(formulas.FormulaAlgebra, "__init__", init)
    gc.disable()
    try:
        json_schema_grammar(SCHEMA)
        assert len(algebras) == 1 and algebras[0]() is None
    finally:
        gc.enable()


def test_the_block_s_end_drops_the_normaliser_also_on_an_error():
    norm = normalize.Normalizer(SCHEMA)
    with norm.emitting() as normalized:
        assert norm.source._working is norm
        normalized.dnf(normalized.root)
    assert norm.source._working is None
    with pytest.raises(KeyError):
        with norm.emitting():
            raise KeyError("in the emission")
    assert norm.source._working is None
