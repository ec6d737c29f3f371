"""schema.normalized: the normaliser hands the emitter an immutable value, `NormalizedSchema` (the
root formula and the answers of the compile's formula algebra, schema.formulas, to exactly the
emitter's questions: dnf, formula constructors, membership, value formulas, emptiness); neither the
value, nor the algebra, nor anything the emitter holds refers to the `Normalizer`."""

from __future__ import annotations

import ast
import dataclasses
import gc
import json
import types
import weakref
from pathlib import Path

import pytest

from strictgen.grammar.schema import emitter as emitter_module
from strictgen.grammar.schema.emitter import SchemaEmitter
from strictgen.grammar.json_value import JsonStyle
from strictgen.grammar.schema.formulas import FormulaAlgebra
from strictgen.grammar.schema.ir import FALSE, TRUE
from strictgen.grammar.schema.normalize import Normalizer
from strictgen.grammar.schema.normalized import NormalizedSchema

from .oracle import language_of, normalizer, normalizer_and_emitter, validator

SCHEMA_DIR = Path(emitter_module.__file__).parent
# the emitter's side of the package: the core, the per-type emitters and what only they use
EMITTER_MODULES = sorted(
    [p.name for p in SCHEMA_DIR.glob("emit*.py")]
    + ["unique.py", "unique_strings.py", "rule_sizes.py", "length_product.py", "counting.py", "key_sets.py"]
)
SCHEMA = {
    "oneOf": [
        {"type": "object", "required": ["a"], "patternProperties": {"^a": {"type": "string", "pattern": "^x"}}, "additionalProperties": False},
        {"type": "object", "required": ["b"], "propertyNames": {"pattern": "^b"}, "not": {"properties": {"b": {"const": 1}}}},
        {"type": "array", "contains": {"type": "integer"}, "maxContains": 2, "uniqueItems": True, "items": {"enum": [1, 2, "x"]}},
    ]
}


def test_the_emitter_modules_do_not_import_the_normaliser():
    """Statically: no emitter module imports schema.normalize, the functions of the normaliser or the
    formula algebra's module (the emitter asks the algebra only through the value it receives)."""
    normaliser_side = {"normalize", "algebra", "applicators", "keywords", "refs", "vocabularies", "documents", "formulas"}
    assert len(EMITTER_MODULES) >= 10
    for name in EMITTER_MODULES:
        tree = ast.parse((SCHEMA_DIR / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert (node.module or "").rsplit(".", 1)[-1] not in normaliser_side, (name, node.module)


def test_the_formula_algebra_does_not_import_the_normaliser():
    """Statically: the formula algebra (formulas, algebra) and the services both stages ask
    (key_space, strings) import no module of the normaliser's side, not even for type hints: the
    algebra reaches raw schemas only through the lazy step it is handed (formulas.RawSchemas)."""
    normaliser_side = {"normalize", "applicators", "keywords", "refs", "vocabularies", "documents"}
    for name in ("formulas.py", "algebra.py", "key_space.py", "strings.py", "normalized.py"):
        tree = ast.parse((SCHEMA_DIR / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert (node.module or "").rsplit(".", 1)[-1] not in normaliser_side, (name, node.module)
            if isinstance(node, ast.Name):
                assert node.id != "Normalizer", (name, node.lineno)


def _reachable(start: object) -> list:
    """What `start`'s data reaches (not through code: modules, classes, functions)."""
    out, work, seen = [], [start], {id(start)}
    while work:
        for x in gc.get_referents(work.pop()):
            if id(x) in seen or isinstance(x, (type, types.ModuleType, types.FunctionType)):
                continue
            seen.add(id(x))
            out.append(x)
            work.append(x)
    return out


def test_after_an_emission_nothing_the_emitter_holds_refers_to_a_normaliser():
    """Dynamically: everything the emitter's data reaches after a whole emission (oneOf
    disjointness, key regions, contains bits, uniqueItems, `not` of a member), through the value
    it received, the formula algebra, every formula and the algebra's lazy step, holds no
    Normalizer and no bound method of one (the working normalisers of the lazy step live for
    their call only)."""
    norm, em = normalizer_and_emitter(SCHEMA)
    em.build(em.normalized.root)
    reachable = _reachable(em)
    assert len(reachable) > 1000  # the walk went past the value into the algebra and its tables
    assert any(isinstance(x, FormulaAlgebra) for x in reachable)
    for x in reachable:
        assert not isinstance(x, Normalizer) and not isinstance(getattr(x, "__self__", None), Normalizer), type(x)


def test_the_value_is_immutable_and_answers_as_the_formula_algebra():
    norm = normalizer({"type": "object", "properties": {"a": {"type": "integer"}}, "patternProperties": {"^b": {"type": "string"}}})
    value = norm.normalized
    assert isinstance(value, NormalizedSchema)
    root = value.root
    assert root is norm.root_formula and value.strings is norm.strings and value.compile_reporter is norm.compile_reporter
    (c,) = [c for c in value.dnf(root) if c.obj is not None]
    a = value.value_formula(c.obj, "a")
    assert a is norm.value_formula(c.obj, "a") and a is not TRUE
    assert value.satisfies(a, 3) and not value.satisfies(a, "3")
    assert value.and_(a, value.not_(a)) is norm.and_(a, norm.not_(a))
    assert value.is_empty(value.and_(a, value.not_(a))) and not value.is_empty(a) and value.is_empty(FALSE)
    (pattern,) = [r for r in c.obj.rules if r.kind == "pattern"]
    assert value.rule_applies(pattern, "bx") and not value.rule_applies(pattern, "xb")
    for name in ("root", "dnf"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, None)
    with pytest.raises((AttributeError, TypeError)):  # no new attribute (slots; 3.11 says TypeError)
        value.extra = None
    fields = {f.name for f in dataclasses.fields(NormalizedSchema)}
    assert fields == {"root", "strings", "compile_reporter", "dnf", "and_", "not_", "satisfies", "value_formula", "rule_applies", "is_empty"}
    # every answer is the formula algebra's own (no layer of the normaliser in between)
    answers = [getattr(value, n) for n in fields - {"root", "strings", "compile_reporter"}]
    assert all(getattr(m, "__self__", None) is norm.formulas for m in answers)
    assert not any(isinstance(x, Normalizer) for x in _reachable(norm.formulas))


def test_the_emission_needs_no_normaliser():
    """The normaliser can be dropped once it has handed its value over (json_schema_grammar does):
    it is freed at once, without the garbage collector (no reference cycle holds it or the
    algebra), and the emission, which normalises the subschemas it reaches through the algebra's
    lazy step, gives the grammar of the schema (its language agrees with jsonschema)."""
    gc.collect()
    gc.disable()
    try:
        norm = normalizer(SCHEMA)
        value, freed = norm.normalized, weakref.ref(norm)
        del norm
        assert freed() is None
        em = SchemaEmitter(value, JsonStyle("compact"), False, value.compile_reporter)
        em.build(value.root)
        accepts = language_of(em, em.ref(value.root))
        algebra = weakref.ref(em.normalized.dnf.__self__)
        del em, value
        assert algebra() is None  # nor does one hold the algebra, its formulas and tables
    finally:
        gc.enable()
    judge = validator(SCHEMA)
    texts = ["[1]", "[1,2]", '["x",1]', "[1,1]", '{"a":"xy"}', '{"a":"y"}', '{"b":2}', '{"b":1}', "[]", '{"c":1,"b":2}']
    accepted = [accepts(t) for t in texts]
    assert any(accepted) and not all(accepted)
    for text, ok in zip(texts, accepted):
        assert ok == judge.is_valid(json.loads(text)), text
