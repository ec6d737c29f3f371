"""schema.rule_sizes.call_big_rules reads each rule's references off its size terms and hands
them to ir.rule_references: they must be exactly what a plain walk of the final rules finds,
or the automaton compiler's cycle search would miss a call."""

from __future__ import annotations

import random

import pytest

from strictgen.bench import default_schemas_dir, load_cases
from strictgen.grammar.ir import Alt, Lazy, RuleRef, Seq, Spelled, rule_references
from strictgen.grammar.json_schema import json_schema_grammar, schema_cache_text


def walked(expr) -> frozenset[str]:
    """The rules `expr` refers to, by a walk that knows nothing of the size terms."""
    out, seen, stack = set(), set(), [expr]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, RuleRef):
            out.add(e.name)
        elif isinstance(e, Lazy):
            stack.extend(e.uses)
        elif isinstance(e, Spelled):
            stack.append(e.item)
        else:
            for field in ("items", "item", "base", "minus"):
                v = getattr(e, field, None)
                stack.extend(v if isinstance(v, tuple) else [v] if v is not None else [])
    return frozenset(out)


def _schemas():
    from strictgen.errors import StrictgenError

    many = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(14)}, "required": ["p0", "p7"]}
    deep = {"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}, "v": {"type": "string"}}}}, "$ref": "#/$defs/n"}
    built = [("any_order 14", many, True), ("recursive", deep, False)]
    bench = default_schemas_dir()
    if not bench.is_dir():  # a lone clone: the built cases still run
        reason = f"{bench} is absent: ../shared/data is not beside this clone"
        return [pytest.param("bench schemas", None, False, marks=pytest.mark.skip(reason=reason)), *built]
    picked = []
    for c in random.Random(0).sample(load_cases(bench), 14):
        try:  # the bench schemas this compiles (a few are refused, which is not this test's business)
            json_schema_grammar(schema_cache_text(c.schema), strict=False)
            picked.append(c)
        except StrictgenError:
            pass
    return [(c.name, c.schema, False) for c in picked] + built


@pytest.mark.parametrize("name,schema,any_order", _schemas(), ids=lambda x: x if isinstance(x, str) else None)
def test_references_handed_over_are_the_walked_ones(name, schema, any_order):
    grammar, _ = json_schema_grammar(schema_cache_text(schema), strict=False, any_order=any_order)
    assert grammar.rules
    for rule, expr in grammar.rules.items():
        assert rule_references(expr) == walked(expr), rule
    if any_order:  # the key sets past nine properties are Lazy calls, whose uses are references
        assert any(isinstance(e, Lazy) for e in _nodes(grammar.rules.values()))


def _nodes(roots):
    seen, stack = set(), list(roots)
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        if isinstance(e, (Seq, Alt)):
            stack.extend(e.items)
        for field in ("item", "base", "minus"):
            v = getattr(e, field, None)
            if v is not None:
                stack.append(v)
