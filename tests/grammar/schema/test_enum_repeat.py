"""An enum long enough to be one called rule (SchemaEmitter.enum, past SHORT_ENUM characters of
strings) is built once per compile, however many places repeat it (o69207 repeats one twelve
times): a later use is the rule's reference, before its spelling (`spelled_choice`) is asked for. Short enums
stay inline at every use. The grammar accepts exactly the enum's values at each place."""

from __future__ import annotations

import json

import strictgen.grammar.schema.emitter as emitter
from strictgen.compile.automaton import compile_automaton
from strictgen.compile.machine import DEAD, PushdownMachine
from strictgen.grammar.json_schema import json_schema_grammar

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
    assert len(calls) == 6
    assert not [name for name in g.rules if name.startswith("enum_")]
    assert matches(g, json.dumps({f"p{i}": "ab"[i % 2] for i in range(6)}))
