"""schema.normalize (the Normalizer's root): formula constructors share one formula per distinct
subschema content (annotations ignored, base URI and dialect kept apart); `view` hides keywords
the declared draft does not define; `holds` is the jsonschema judge (formats asserted unless
formats="annotate"), with MAX_ENUM_FILTER bounding its work; bad options and a non-string `$id`
are clear errors."""

from __future__ import annotations

import pytest

from strictgen.errors import GrammarTooLargeError, SchemaError, StrictgenError
from strictgen.grammar.schema.ir import FALSE, TRUE
from strictgen.grammar.schema import normalize as normalize_module
from strictgen.grammar.schema.normalize import MAX_ENUM_FILTER, Normalizer

from .oracle import normalizer, normalizer_and_emitter


def defs(norm, *names):
    return [norm.sub(norm.root_formula, norm.root["$defs"][n], "$defs", n) for n in names]


def test_equal_content_is_one_formula_and_annotations_do_not_count():
    norm = normalizer({"$defs": {
        "a": {"type": "integer", "title": "A"},
        "b": {"type": "integer", "description": "B", "examples": [1]},
        "c": {"type": "integer", "minimum": 0},
        "d": {"type": "integer", "$comment": "x", "default": 3},
    }})
    a, b, c, d = defs(norm, "a", "b", "c", "d")
    assert a is b is d and a is not c


def test_the_same_content_under_another_base_uri_is_another_formula():
    inner = {"$ref": "#/$defs/t"}
    norm = normalizer({"$defs": {
        "x": {"$id": "https://ex.test/x", "$defs": {"t": {"type": "string"}}, "allOf": [inner]},
        "y": {"$id": "https://ex.test/y", "$defs": {"t": {"type": "integer"}}, "allOf": [dict(inner)]},
    }})
    x, y = defs(norm, "x", "y")
    (cx,), (cy,) = norm.dnf(x), norm.dnf(y)
    assert cx.types() == {"string"} and cy.types() == {"number"}


def test_boolean_subschemas_are_the_constants():
    norm = normalizer({"$defs": {"t": True, "f": False}})
    assert defs(norm, "t", "f") == [TRUE, FALSE]
    assert normalizer(True).root_formula is TRUE and normalizer(False).root_formula is FALSE


def test_view_hides_keywords_outside_the_declared_draft_only():
    schema = {"$schema": "http://json-schema.org/draft-06/schema#", "if": {}, "const": 1, "x-custom": 2, "minimum": 0}
    norm = normalizer(schema)
    assert norm.view(norm.root_formula) == {"$schema": schema["$schema"], "const": 1, "x-custom": 2, "minimum": 0}
    plain = normalizer({"if": {}, "dependencies": {}, "x-custom": 2})
    assert plain.view(plain.root_formula) == {"if": {}, "dependencies": {}, "x-custom": 2}


def test_holds_is_the_jsonschema_judge_with_formats_as_asked():
    schema = {"type": "string", "format": "date"}
    strict = normalizer(schema)
    assert strict.satisfies(strict.root_formula, "2020-01-01") and not strict.satisfies(strict.root_formula, "2020-13-01")
    annotated = Normalizer(schema, formats="annotate")
    assert annotated.satisfies(annotated.root_formula, "2020-13-01")
    assert not strict.satisfies(strict.root_formula, 3)
    f = strict.root_formula
    assert strict.satisfies(strict.or_(f, strict.const_(3)), 3) and not strict.satisfies(strict.not_(f), "2020-01-01")


def test_enum_filtering_is_bounded(monkeypatch):
    monkeypatch.setattr(normalize_module, "MAX_ENUM_FILTER", 50)  # the real bound is 20,000 checks
    with pytest.raises(GrammarTooLargeError, match="enum/const checks"):
        norm = normalizer({"enum": list(range(60)), "minimum": 0})  # each value goes to the judge
        norm.dnf(norm.root_formula)
    typed = normalizer({"enum": list(range(60)), "type": "integer"})  # the type check alone
    (c,) = typed.dnf(typed.root_formula)
    assert c.values == tuple(range(60))
    assert MAX_ENUM_FILTER >= 10_000


def test_bad_options_and_ids_are_clear_errors():
    with pytest.raises(StrictgenError, match="formats must be one of"):
        Normalizer({}, formats="check")
    with pytest.raises(SchemaError) as e:
        Normalizer({"$id": 3})
    assert e.value.keyword == "$id"
    with pytest.raises(SchemaError) as e:
        normalizer({"properties": {"a": 3}}, strict=False)
    assert (e.value.keyword, e.value.pointer) == ("properties", "/properties")


def test_the_normaliser_never_refers_to_the_emitter():
    """Data flows one way (DESIGN.md §1): after a whole emission, including oneOf disjointness
    proofs that ask string and key questions, nothing the normaliser holds is the emitter or one
    of its methods (they used to be hooks installed on it)."""
    import gc
    import types

    schema = {
        "oneOf": [
            {"type": "object", "required": ["a"], "patternProperties": {"^a": {"type": "string", "pattern": "^x"}}, "additionalProperties": False},
            {"type": "object", "required": ["b"], "propertyNames": {"pattern": "^b"}},
        ]
    }
    norm, em = normalizer_and_emitter(schema)
    em.build(em.normalized.root)
    reachable, work, seen = [], [norm], {id(norm)}
    while work:  # what the normaliser's data reaches (not through code: modules, classes, functions)
        for x in gc.get_referents(work.pop()):
            if id(x) not in seen and not isinstance(x, (type, types.ModuleType, types.FunctionType)):
                seen.add(id(x))
                reachable.append(x)
                work.append(x)
    assert len(reachable) > 100  # the walk saw the normaliser's tables
    assert not any(x is em or getattr(x, "__self__", None) is em for x in reachable)


def test_the_normaliser_is_one_class_and_its_modules_read_no_private_names():
    """The normaliser is a class without mixins (references, applicators and keywords are
    functions of it; the boolean algebra is the formula algebra's, schema.formulas); no module of the schema package imports another's private name
    or reads another object's private attribute, and referencing's private `_base_uri` is read in
    one place only (refs.base_uri: referencing has no public accessor for it)."""
    import ast
    from pathlib import Path

    assert Normalizer.__bases__ == (object,)
    reads = []
    for path in sorted(Path(normalize_module.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        own = {"self", "cls"} | {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}  # a class's own privates
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert not any(a.name.startswith("_") for a in node.names), (path.name, node.module)
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                assert isinstance(node.value, ast.Name) and node.value.id in own, (path.name, node.attr, node.lineno)
            elif isinstance(node, ast.Constant) and node.value in ("_base_uri", "_specification"):
                reads.append((path.name, node.value))
    assert reads == [("refs.py", "_base_uri")]


def test_nested_lazy_steps_share_one_working_normaliser_dropped_after(monkeypatch):
    """SchemaSource._outermost_step: the steps nested in the outermost one (a schema's subschemas) use its
    working Normalizer; it is dropped when that step ends (the source holds no algebra after)."""
    from strictgen.grammar.schema import applicators

    seen: list = []
    inner = applicators.src_conjuncts

    def spy(norm, f):
        seen.append((norm, norm.source._working is norm))
        return inner(norm, f)

    monkeypatch.setattr(applicators, "src_conjuncts", spy)
    schema = {"type": "object", "properties": {"a": {"anyOf": [{"type": "string", "minLength": 2}, {"$ref": "#/$defs/n"}]}},
              "$defs": {"n": {"allOf": [{"type": "integer"}, {"minimum": 3}]}}}
    norm = Normalizer(schema)
    a = norm.dnf(norm.root_formula)[0].obj.rules[0].schema
    assert norm.dnf(a)  # the anyOf normalises its branches, and the $ref its allOf, inside its own step
    assert len(seen) >= 4 and all(held for _, held in seen)
    assert len({id(n) for n, _ in seen[1:]}) == 1  # the root's step, then one shared by the nested ones
    assert norm.source._working is None
