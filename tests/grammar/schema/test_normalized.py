"""schema.normalized: the emitter reads the normaliser only through `NormalizedSchema`, a read-only
view that answers the emitter's questions (dnf, formula constructors, membership, value formulas,
emptiness) and nothing else."""

from __future__ import annotations

import ast
import gc
import types
from pathlib import Path

import pytest

from strictgen.grammar.schema import emitter as emitter_module
from strictgen.grammar.schema.ir import FALSE, TRUE
from strictgen.grammar.schema.normalized import NormalizedSchema

from .oracle import normalizer, normalizer_and_emitter

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


def test_the_emitter_modules_do_not_import_the_normaliser_or_read_the_views_inside():
    """Statically: no emitter module imports schema.normalize (nor its mixins) or reads a private
    attribute of the view (`._norm`)."""
    normaliser_side = {"normalize", "algebra", "applicators", "keywords", "refs", "vocabularies", "documents"}
    assert len(EMITTER_MODULES) >= 10
    for name in EMITTER_MODULES:
        tree = ast.parse((SCHEMA_DIR / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert (node.module or "").rsplit(".", 1)[-1] not in normaliser_side, (name, node.module)
            if isinstance(node, ast.Attribute):
                assert node.attr != "_norm", name


def test_after_an_emission_the_emitter_reaches_the_normaliser_only_through_the_view():
    """Dynamically: what the emitter holds after a whole emission (oneOf disjointness, key regions,
    contains bits, uniqueItems, `not` of a member) reaches the normaliser only through the
    NormalizedSchema (no attribute, rule or bound method of the emitter holds the normaliser)."""
    norm, em = normalizer_and_emitter(SCHEMA)
    em.build(em.normalized.root)
    reachable, work, seen = 0, [em], {id(em)}
    while work:  # what the emitter's data reaches, stopping at the view (not through code)
        for x in gc.get_referents(work.pop()):
            if id(x) in seen or isinstance(x, (type, types.ModuleType, types.FunctionType, NormalizedSchema)):
                continue
            seen.add(id(x))
            assert x is not norm and getattr(x, "__self__", None) is not norm
            reachable += 1
            work.append(x)
    assert reachable > 100  # the walk saw the emitter's rules
    assert em.normalized._norm is norm  # (the test's own look inside: the view is over this normaliser)


def test_the_view_answers_as_the_normaliser_and_is_read_only():
    norm = normalizer({"type": "object", "properties": {"a": {"type": "integer"}}, "patternProperties": {"^b": {"type": "string"}}})
    view = norm.normalized
    assert isinstance(view, NormalizedSchema)
    root = view.root
    assert root is norm.root_formula and view.strings is norm.strings and view.compile_reporter is norm.compile_reporter
    (c,) = [c for c in view.dnf(root) if c.obj is not None]
    a = view.value_formula(c.obj, "a")
    assert a is norm.value_formula(c.obj, "a") and a is not TRUE
    assert view.satisfies(a, 3) and not view.satisfies(a, "3")
    assert view.and_(a, view.not_(a)) is norm.and_(a, norm.not_(a))
    assert view.is_empty(view.and_(a, view.not_(a))) and not view.is_empty(a) and view.is_empty(FALSE)
    (pattern,) = [r for r in c.obj.rules if r.kind == "pattern"]
    assert view.rule_applies(pattern, "bx") and not view.rule_applies(pattern, "xb")
    with pytest.raises(AttributeError):
        view._norm = None
    with pytest.raises(AttributeError):
        view.extra = 1
    public = {n for n in dir(NormalizedSchema) if not n.startswith("_")}
    assert public == {"root", "strings", "compile_reporter", "dnf", "and_", "not_", "satisfies", "value_formula", "rule_applies", "is_empty"}


def test_a_normaliser_is_freed_when_its_compile_ends_without_the_garbage_collector():
    """No reference cycle holds a normaliser (its view made one once: every compile's formulas,
    conjuncts and tables then waited for the collector, ~5% more front-end CPU time): with the
    collector off, it is freed as soon as the emitter and its view are dropped."""
    import weakref

    gc.collect()
    gc.disable()
    try:
        norm, em = normalizer_and_emitter(SCHEMA)
        em.build(em.normalized.root)
        assert norm.normalized.dnf(norm.normalized.root)
        freed = weakref.ref(norm)
        del norm, em
        assert freed() is None
    finally:
        gc.enable()
