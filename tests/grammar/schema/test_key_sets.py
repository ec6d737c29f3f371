"""any_order=True past nine properties (schema/key_sets.py, rules built at run time by
compile/lazy_rules.py): the matcher accepts exactly the objects jsonschema validates that have no
duplicate key, in any key order and every JSON spelling, fed token by token through Qwen's
vocabulary (its own encoding and random splits); sampled masks allow only tokens that still
complete to a valid document (`tests.lazy_checks.check_mask`)."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.errors import GrammarTooLargeError
from tests.helpers import respell_strings
from tests.lazy_checks import Judge, feed_all

SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
TYPES = {"integer": st.integers(-10**6, 10**6), "string": st.text("ab\u00e9\"\\\u20ac\U0001f600", max_size=4),
         "boolean": st.booleans(), "null": st.none()}


@pytest.fixture(scope="module")
def compiler(qwen) -> sg.GrammarCompiler:
    return sg.GrammarCompiler(qwen)


@st.composite
def object_cases(draw):
    """(schema, documents): 13-20 typed properties, some required, additional ones forbidden or
    integers; documents valid or not (a member twice, in another spelling; a required one left out)."""
    n = draw(st.integers(13, 20))
    types = [draw(st.sampled_from(sorted(TYPES))) for _ in range(n)]
    names = [f"p{i}" if i % 3 else f"key_{i}\u00e9" for i in range(n)]
    required = sorted(draw(st.sets(st.sampled_from(names), max_size=n)))
    additional = draw(st.sampled_from([False, {"type": "integer"}]))
    schema = {"type": "object", "properties": {k: {"type": t} for k, t in zip(names, types)}, "additionalProperties": additional}
    if required:
        schema["required"] = required
    if draw(st.booleans()):  # counts: a key set that could not close any more is never entered
        schema["maxProperties"] = len(required) + draw(st.integers(0, 2))
        # two additional members could meet a higher count by repeating a name: refused (emit_objects)
        schema["minProperties"] = draw(st.integers(0, min(schema["maxProperties"], len(required) + 1) if additional else schema["maxProperties"]))
    docs = []
    for _ in range(3):
        keys = draw(st.lists(st.sampled_from(names), unique=True))
        keys += [k for k in required if k not in keys and (not docs or draw(st.booleans()))]  # the first has them all
        if additional and draw(st.booleans()):
            keys.append("extra")
        draw(st.randoms()).shuffle(keys)
        members = [(k, draw(TYPES[dict(zip(names, types)).get(k, "integer")])) for k in keys]
        if members and draw(st.booleans()):  # the same key again, spelled with an escape
            k, v = draw(st.sampled_from(members))
            members.insert(draw(st.integers(0, len(members))), ("\\u%04x" % ord(k[0]) + k[1:], v))
        docs.append(members)
    return schema, docs


def render(members, form: int, rnd: random.Random) -> str:
    """An object text from (key, value) members: key texts are taken as JSON string bodies."""
    sep, colon = [(", ", ": "), (",", ":"), (",\n  ", " : ")][form]
    text = "{" + sep.join(f'"{k}"{colon}{json.dumps(v, ensure_ascii=form == 1)}' for k, v in members) + "}"
    return respell_strings(text, rnd) if form == 2 else text


@SETTINGS
@given(object_cases())
def test_any_order_many_properties_matches_jsonschema(compiler, qwen, case):
    schema, docs = case
    judge = Judge(schema)
    g = compiler.compile_json_schema(schema, any_order=True)
    rnd = random.Random(0)
    for members in docs:
        for form in range(3):
            text = render(members, form, rnd)
            feed_all(g, qwen, judge, text, rnd, check_masks=form == 0)


def test_required_and_duplicates_exactly(compiler, qwen):
    names = [f"k{i}" for i in range(16)]
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in names}, "required": names[:14], "additionalProperties": False}
    g = compiler.compile_json_schema(schema, any_order=True)
    judge = Judge(schema)
    rnd = random.Random(1)
    order = names[:]
    rnd.shuffle(order)
    whole = "{" + ", ".join(f'"{k}": {i}' for i, k in enumerate(order)) + "}"
    assert judge.valid(whole)
    feed_all(g, qwen, judge, whole, rnd, check_masks=True)
    m = sg.GrammarMatcher(g)
    assert not m.accept_string('{"k3": 1, "k\\u0033": 2')  # the same key in another spelling
    m = sg.GrammarMatcher(g)
    assert m.accept_string("{" + ", ".join(f'"{k}": 1' for k in reversed(names[:13])))
    assert not m.accept_string("}")  # k13 is still missing
    assert m.accept_string(', "k13": 0}') and m.can_end()


def test_key_sets_built_per_document_not_ahead(compiler):
    names = [f"k{i}" for i in range(20)]
    g = compiler.compile_json_schema({"type": "object", "properties": {k: {"type": "boolean"} for k in names}}, any_order=True)
    machine = g.machine
    m = sg.GrammarMatcher(g)
    assert m.accept_string("{" + ", ".join(f'"{k}": true' for k in names[::-1])) and m.accept_string("}") and m.can_end()
    assert len(machine.added) <= 2 * (len(names) + 1)  # one rule per key set visited (2**20 exist)
    m.rollback(1)
    assert m.accept_string("}") and m.can_end()


def test_compact_style_and_refusals(compiler):
    names = [f"k{i}" for i in range(14)]
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in names}, "required": ["k1"]}
    g = compiler.compile_json_schema(schema, any_order=True, whitespace="compact")
    m = sg.GrammarMatcher(g)
    assert m.accept_string('{"k9":1,"k1":2,"k0":3}') and m.can_end()
    m = sg.GrammarMatcher(g)
    assert not m.accept_string('{"k9": 1')  # compact: no whitespace
    with pytest.raises(GrammarTooLargeError, match="'not' member constraints"):
        # (an existential member whose value any repeat of its name keeps: not refused for that)
        compiler.compile_json_schema({**schema, "not": {"additionalProperties": False}}, any_order=True)
    assert jsonschema.Draft202012Validator(schema).is_valid(json.loads('{"k9":1,"k1":2,"k0":3}'))


def test_in_an_embedded_grammar(qwen):
    """A schema embedded under renamed rules (tool calls, structural tags) keeps its families' calls."""
    from strictgen.grammar.ir import Grammar, lit, seq
    from strictgen.grammar.json_value import JsonStyle
    from strictgen.grammar.structural_tag import embed_schema

    names = [f"k{i}" for i in range(13)]
    rules: dict = {}
    ref = embed_schema({"type": "object", "properties": {k: {"type": "integer"} for k in names}, "required": ["k12"]}, "t_", rules,
                       JsonStyle(), any_order=True)
    rules["root"] = seq(lit("<call>"), ref, lit("</call>"))
    g = sg.GrammarCompiler(qwen).compile_ir(Grammar(rules, "root"))
    m = sg.GrammarMatcher(g)
    assert m.accept_string('<call>{"k12": 1, "k0": 2}</call>') and m.can_end()
    m = sg.GrammarMatcher(g)
    assert not m.accept_string('<call>{"k0": 2}</call>')


def test_presence_clauses_over_many_properties(compiler, qwen):
    """dependentRequired and anyOf of required lists over many order-free properties: a key set is
    entered only when some way on still satisfies every clause (masks checked on the first form)."""
    names = [f"k{i}" for i in range(15)]
    schema = {
        "type": "object",
        "properties": {k: {"type": "integer"} for k in names},
        "additionalProperties": False,
        "required": ["k14"],
        "dependentRequired": {"k0": ["k1", "k2"], "k3": ["k0"]},
        "anyOf": [{"required": ["k5"]}, {"required": ["k6", "k7"]}],
        "not": {"required": ["k8", "k9"]},
    }
    g = compiler.compile_json_schema(schema, any_order=True)
    judge = Judge(schema)
    rnd = random.Random(4)
    for i in range(24):
        keys = rnd.sample(names, rnd.randint(0, len(names)))
        if i % 2:
            keys = [k for k in keys if k not in ("k8", "k0", "k3")] + ["k14", "k5"]
        rnd.shuffle(keys)
        text = "{" + ", ".join(f'"{k}": {j}' for j, k in enumerate(dict.fromkeys(keys))) + "}"
        feed_all(g, qwen, judge, text, rnd, check_masks=i < 4)
    m = sg.GrammarMatcher(g)
    assert m.accept_string('{"k3": 1, "k14": 2, "k5": 3')
    assert not m.accept_string("}")  # k3 needs k0, which needs k1 and k2


def test_key_sets_times_counts_too_many_to_build_ahead(compiler, qwen):
    """12 properties with a member count and additional members: key sets and counts built at run time."""
    names = [f"k{i}" for i in range(12)]
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in names}, "required": names[:3],
              "maxProperties": 12, "additionalProperties": {"type": "boolean"}}
    g = compiler.compile_json_schema(schema, any_order=True)
    judge = Judge(schema)
    rnd = random.Random(5)
    for i in range(16):
        keys = rnd.sample(names + ["x", "y", "z"], rnd.randint(0, 13))
        keys += [k for k in names[:3] if k not in keys and i % 2]
        rnd.shuffle(keys)
        text = "{" + ", ".join(f'"{k}": {"true" if k in "xyz" else j}' for j, k in enumerate(keys)) + "}"
        feed_all(g, qwen, judge, text, rnd, check_masks=i < 3)
