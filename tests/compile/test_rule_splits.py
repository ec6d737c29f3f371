"""A rule's horizon classes read off the history of its minimisation (`RuleDFA.splits`, from
`regular.minimal_with_splits`) are the classes a refinement of its own finds (the path for rules
without a history, e.g. read from the disk cache), for compile-time and run-time rules alike."""

from __future__ import annotations

import pytest

from strictgen.compile.automaton import RuleDFA, compile_automaton, horizon_classes
from strictgen.compile.machine import DEAD, PushdownMachine
from strictgen.grammar.json_schema import json_schema_grammar

SCHEMA = {  # long counters (maxLength, maxItems) in a recursive rule, which is built at run time here
    "$defs": {"node": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 300},
            "code": {"type": "string", "pattern": "^[A-Z]{2,90}$"},
            "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 30},
        },
        "required": ["name"],
    }},
    "$ref": "#/$defs/node",
}


def same_partition(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    a, b = a.tolist(), b.tolist()
    return len(set(a)) == len(set(b)) == len(set(zip(a, b)))


@pytest.mark.parametrize("horizon", [1, 9, 33, 129, 259])
def test_classes_from_the_history_are_a_refinements(horizon):
    automaton = compile_automaton(json_schema_grammar(SCHEMA)[0], 0)  # the root now, the rest when entered
    machine = PushdownMachine(automaton)
    doc = b'{"name": "' + b"x" * 50 + b'", "kids": [{"name": "a", "code": "AB"}]}'
    assert machine.step_bytes(machine.start, doc) != DEAD
    assert machine.added  # rules built at run time
    rules = [*automaton.rules, *machine.added.values()]
    assert all(rule.splits is not None for rule in rules)
    merged = 0
    for rule in rules:
        got = horizon_classes(rule, horizon)
        want = horizon_classes(RuleDFA(rule.name, rule.dfa), horizon)  # no history: refined on its own
        assert same_partition(got, want), (rule.name, horizon)
        merged += got is not None
    assert merged or horizon > 90  # the counters merge states at the short horizons
