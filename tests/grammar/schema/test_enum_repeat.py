"""An enum long enough to be one called rule (SchemaEmitter.enum, past SHORT_ENUM characters of
strings) is built once per compile, however many places repeat it (o69207 repeats one twelve
times): a later use is the rule's reference, before its spelling (`spelled_choice`) is asked for. Short enums
stay inline at every use. The grammar accepts exactly the enum's values at each place. An enum of
scalars is spelled once a process (`ENUM_PARTS`): a later compile reuses its alternatives, under a
body object of its own, writing the grammar a fresh build writes."""

from __future__ import annotations

import json

import strictgen.grammar.schema.emitter as emitter
from strictgen.compile.automaton import compile_automaton
from strictgen.compile.machine import DEAD, PushdownMachine
from strictgen.grammar.json_schema import json_schema_grammar
from strictgen.lru import BoundedLRU
import pytest

TYPES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string", "record"]


def matches(grammar, text: str) -> bool:
    machine = PushdownMachine(compile_automaton(grammar))
    state = machine.step_bytes(machine.start, text.encode())
    return state != DEAD and machine.accepting[state]


def schema(values) -> dict:
    """Six properties with the enum, each its own subschema (a maxLength every value meets), so
    that each is emitted on its own."""
    props = {f"p{i}": {"enum": values, "maxLength": 40 + i} for i in range(6)}
    return {"type": "object", "properties": props, "required": list(props)}


@pytest.fixture(autouse=True)
def no_kept_enums(monkeypatch):
    """Each test starts with no enum spelled by an earlier one."""
    monkeypatch.setattr(emitter, "ENUM_PARTS", BoundedLRU(emitter.ENUMS_KEPT))


def test_a_long_enum_is_built_once(monkeypatch):
    calls = []
    real = emitter.spelled_choice
    monkeypatch.setattr(emitter, "spelled_choice", lambda *a, **k: calls.append(1) or real(*a, **k))
    enums = []
    real_enum = emitter.SchemaEmitter.enum
    monkeypatch.setattr(emitter.SchemaEmitter, "enum", lambda self, values: enums.append(1) or real_enum(self, values))
    g, _ = json_schema_grammar(schema(TYPES))
    assert len(enums) == 6  # asked at each place
    assert len(calls) == 1  # spelled once
    enum_rules = [name for name in g.rules if name.startswith("enum_")]
    assert len(enum_rules) == 1
    doc = {f"p{i}": TYPES[i] for i in range(6)}
    assert matches(g, json.dumps(doc))
    assert not matches(g, json.dumps(doc | {"p3": "int8"}))


def test_a_short_enum_stays_inline(monkeypatch):
    calls = []
    real = emitter.spelled_choice
    monkeypatch.setattr(emitter, "spelled_choice", lambda *a, **k: calls.append(1) or real(*a, **k))
    g, _ = json_schema_grammar(schema(["a", "b"]))
    assert len(calls) == 2  # spelled at the first two places (schema.kept_pieces), then kept
    assert not [name for name in g.rules if name.startswith("enum_")]
    assert matches(g, json.dumps({f"p{i}": "ab"[i % 2] for i in range(6)}))
    bodies = [g.rules[name] for name in g.rules if name.startswith("s") and name != "s0"]
    assert len({id(b) for b in bodies}) == len(bodies) == 6  # inline: a body of its own at each use


@pytest.mark.parametrize("long", [False, True])
def test_a_later_compile_reuses_the_spelling_not_the_rule(monkeypatch, long):
    values = TYPES if long else ["a", "b"]
    json_schema_grammar(schema(values))  # (a long enum is built at its first place only: a second
    first, _ = json_schema_grammar(schema(values))  # compile's build tells what each build makes anew)
    calls = []
    real = emitter.spelled_choice
    monkeypatch.setattr(emitter, "spelled_choice", lambda *a, **k: calls.append(1) or real(*a, **k))
    again, _ = json_schema_grammar(schema(values))
    assert calls == []  # kept from the first compile
    assert again.rules == first.rules  # the same grammar ...
    # ... whose rule bodies are new objects: a body met in an earlier compile would be built ahead
    # (the pieces every grammar of a style shares, "ws" and "any", are the same by design)
    enum_rules = [name for name in first.rules if name.startswith(("s", "enum_")) and name != "s0"]
    assert len(enum_rules) == (7 if long else 6)
    assert all(again.rules[name] is not first.rules[name] for name in enum_rules)


def test_numbers_true_and_equal_numbers_are_told_apart():
    """The key is the values' JSON text: 1, 1.0 and true are equal in Python, not in the enum."""
    for values, yes, no in (([1], "1", "true"), ([True], "true", "1"), ([1.5, 1], "1.5", "true")):
        g, _ = json_schema_grammar({"enum": values})
        assert matches(g, yes) and not matches(g, no), values
