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


def _called(grammar) -> set[str]:
    """The rules call_big_rules kept as calls (their bodies are `called_body`'s)."""
    return {n for n, e in grammar.rules.items() if isinstance(e, Alt) and e.items[-1:] == (Seq((Alt(()), RuleRef(n))),)}


def test_a_rule_made_a_call_counts_as_one_state_everywhere_after():
    """Rule a (1,000 states) is shared by rules b and c through one node; b copies it six times
    (a repeat of at most 3 of two uses), so a becomes a call there. c, planned after b, then
    counts a as one state: 2,500 + 2, under BIG_RULE, so c stays inlined (with a's size remembered
    from before, c would count 4,500 and become a call too)."""
    from strictgen.grammar.ir import Grammar, lit, repeat, seq
    from strictgen.grammar.schema.rule_sizes import BIG_RULE, call_big_rules

    shared = seq(RuleRef("a"), RuleRef("a"))
    rules = {
        "root": seq(RuleRef("b"), RuleRef("c")),
        "a": lit("x" * 1000),
        "b": repeat(shared, 0, 3),
        "c": seq(shared, lit("y" * 2500)),
    }
    grammar = Grammar(dict(rules), "root")
    call_big_rules(grammar)
    assert _called(grammar) == {"a"}
    assert 2 * 1000 + 2500 > BIG_RULE
    for n in rules:  # the references handed over are the final rules' own
        assert rule_references(grammar.rules[n]) == walked(grammar.rules[n])


def test_a_rule_over_the_bound_by_itself_becomes_a_call_and_the_root_never():
    """A rule bigger than BIG_RULE with nothing to call becomes a call itself, the root never; a
    rule whose references are small (32 states or fewer) is not relieved by calling them."""
    from strictgen.grammar.ir import Grammar, lit, repeat, seq
    from strictgen.grammar.schema.rule_sizes import call_big_rules

    rules = {
        "root": seq(RuleRef("big"), RuleRef("many"), lit("z" * 5000)),
        "big": lit("x" * 4500),
        "many": repeat(RuleRef("small"), 0, 500),
        "small": lit("s" * 20),
    }
    grammar = Grammar(dict(rules), "root")
    call_big_rules(grammar)
    assert _called(grammar) == {"big", "many"}
