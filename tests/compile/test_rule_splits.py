"""A rule's horizon classes read off the history of its minimisation (`RuleDFA.splits`, from
`regular.minimal_with_splits`) are the classes a refinement of its own finds (the path for rules
without a history, e.g. read from the disk cache), for compile-time and run-time rules alike."""

from __future__ import annotations

import pytest

import numpy as np

from strictgen import regular
from strictgen.compile.automaton import RuleDFA, apart_within, compile_automaton, horizon_classes
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


def _rules_of_a_walk():
    automaton = compile_automaton(json_schema_grammar(SCHEMA)[0], 0)
    machine = PushdownMachine(automaton)
    doc = b'{"name": "' + b"x" * 50 + b'", "kids": [{"name": "a", "code": "AB"}]}'
    assert machine.step_bytes(machine.start, doc) != DEAD
    return machine, [*automaton.rules, *machine.added.values()]


@pytest.mark.parametrize("horizon", [1, 9, 33, 129, 259])
def test_apart_within_only_where_a_refinement_keeps_every_state_apart(horizon):
    """`apart_within` (what HorizonKeys asks before reading a rule's call edges) claims a rule only
    where a refinement of its own leaves every state alone; a rule without history is claimed only
    by its size."""
    _, rules = _rules_of_a_walk()
    claimed = 0
    for rule in rules:
        raw, _ = regular.refine(rule.dfa, horizon)
        all_apart = len(set(np.frombuffer(raw, dtype=np.int32).tolist())) == rule.num_states
        assert apart_within(rule, horizon) == all_apart, (rule.name, horizon)  # exact with a history
        assert not apart_within(RuleDFA(rule.name, rule.dfa), horizon) or rule.num_states <= horizon + 1
        claimed += all_apart
    assert claimed or horizon < 9  # most rules are apart within a token's length

