"""compile.rule_facts.finishes_with_calls, the productive rules' question of a determinised rule
DFA, against the DFA's own walk (`can_finish`) on random grammars' rules (its shortcut taken
whatever the DFA's size), with every rule, none and random rules flagged productive; and the
fact the shortcut stands on: determinising makes only states the start reaches by bytes and calls."""

from __future__ import annotations

import random

import numpy as np
import pytest

from strictgen.compile import automaton, rule_facts
from strictgen.errors import StrictgenError
from strictgen.compile.rule_facts import finishes_with_calls
from strictgen.grammar.json_schema import json_schema_grammar
from tests.fuzz.languages import gbnf_grammar, random_gbnf

SCHEMAS = [
    {"type": "object", "properties": {"a": {"$ref": "#"}, "b": {"type": "array", "items": {"$ref": "#"}}}},
    {"$defs": {"n": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/n"}, "minItems": 1}]}}, "$ref": "#/$defs/n"},
    {"type": "object", "properties": {"s": {"type": "string", "maxLength": 300}, "t": {"$ref": "#"}}, "required": ["s"]},
]


def determinised(grammar) -> list:
    """The rule DFAs `compile_automaton` determinised for `grammar` (not trimmed yet), as the
    productive rules are asked of them; none where the grammar fails to compile."""
    got: list = []
    ask = rule_facts.productive_rules

    def capture(built, *args):
        got.extend(d for d in built if d is not None)
        return ask(built, *args)

    rule_facts.productive_rules = capture
    try:
        automaton.compile_automaton(grammar, None)
    except StrictgenError:  # an empty language, left recursion: the DFAs seen before the refusal stay
        pass
    finally:
        rule_facts.productive_rules = ask
    return got


def reachable(dfa) -> set[int]:
    """The states the start reaches by bytes and calls (every call taken)."""
    table, classmap = dfa.compact()
    rows = np.frombuffer(table, dtype=np.int32).reshape(dfa.num_states, -1)
    seen, work = {0}, [0]
    while work:
        s = work.pop()
        for t in [int(t) for t in rows[s] if t >= 0] + [ret for _, ret in dfa.calls(s)]:
            if t not in seen:
                seen.add(t)
                work.append(t)
    return seen


def grammars():
    rnd = random.Random(29)
    for _ in range(60):
        yield gbnf_grammar(random_gbnf(rnd))
    for schema in SCHEMAS:
        yield json_schema_grammar(schema)[0]


@pytest.mark.parametrize("grammar", list(grammars()))
def test_finishing_with_calls_is_the_dfa_walk(grammar, monkeypatch):
    monkeypatch.setattr(rule_facts, "WALKED_STATES", 0)  # the shortcut for every DFA, small ones too
    rnd = random.Random(7)
    for dfa in determinised(grammar):
        assert reachable(dfa) == set(range(dfa.num_states))  # what the shortcut stands on
        callees = np.frombuffer(dfa.call_arrays()[1], dtype=np.int32)
        rules = int(callees.max()) + 1 if len(callees) else 1
        for flags in (bytearray(b"\x01" * rules), bytearray(rules), bytearray(rnd.random() < 0.7 for _ in range(rules)), bytearray(b"\x01" * (rules - 1))):
            assert finishes_with_calls(dfa, flags) == dfa.can_finish(flags)
