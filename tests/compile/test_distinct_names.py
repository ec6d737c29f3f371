"""minProperties counted in distinct names (schema.emit_objects, compile/distinct_names.py): where
members with names no property lists could reach the count by repeating a name, the matcher
refuses the repeat, so the grammar's count of members is jsonschema's count of properties.

Property tests against jsonschema on Qwen's vocabulary (its own encoding and a random split):
documents without a repeated name are accepted exactly when jsonschema validates them; a document
with a repeated name is never accepted unless jsonschema validates what a JSON parser reads (the
last member of each name), which only a branch without the count can give; sampled masks allow
only tokens that still complete to a valid document (no dead end)."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile.distinct_names import DistinctNames
from strictgen.compile.tracked_rules import Trackers
from strictgen.errors import SchemaError
from tests.helpers import allowed_ids, canonical_ids, random_split
from tests.lazy_checks import Judge, check_mask

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
LISTED = ["a", "b"]
UNLISTED = ["x", "y", "\u00e9", "xa", "xb"]


@pytest.fixture(scope="module")
def compiler(qwen) -> sg.GrammarCompiler:
    return sg.GrammarCompiler(qwen)


@st.composite
def object_cases(draw):
    """(schema, the object's listed names in schema order, documents as lists of (name, value)
    pairs, some with a repeated name)."""
    listed = draw(st.lists(st.sampled_from(LISTED), unique=True, max_size=2))
    obj: dict = {"type": "object", "minProperties": draw(st.integers(2, 4))}
    if listed:
        obj["properties"] = {k: {"type": "integer"} for k in listed}
        if draw(st.booleans()):
            obj["required"] = listed[:1]
    extra = draw(st.sampled_from(["any", "integer", "pattern", "names"]))
    if extra == "integer":
        obj["additionalProperties"] = {"type": "integer"}
    elif extra == "pattern":  # keys starting x (infinitely many from every prefix), nothing else
        obj["patternProperties"] = {"^x": {"type": "integer"}}
        obj["additionalProperties"] = False
    elif extra == "names":
        obj["propertyNames"] = {"minLength": 1}
    if draw(st.booleans()):
        obj["maxProperties"] = obj["minProperties"] + draw(st.integers(0, 2))
    shape = draw(st.sampled_from(["bare", "anyOf", "nested"]))
    if shape == "anyOf":
        schema = {"anyOf": [obj, {"type": "object", "additionalProperties": {"type": "string"}}]}
    elif shape == "nested":
        schema = {"type": "object", "properties": {"o": obj}, "required": ["o"], "additionalProperties": False}
    else:
        schema = obj
    docs = []
    for _ in range(4):
        names = draw(st.lists(st.sampled_from(listed + UNLISTED), unique=True, min_size=2, max_size=6))
        names = [k for k in listed if k in names] + [k for k in names if k not in listed]  # the grammar's order
        pairs = [(k, draw(st.sampled_from([1, "s"])) if shape == "anyOf" else 1) for k in names]
        if draw(st.booleans()) and any(k not in listed for k in names):  # an unlisted name again, at the end
            pairs.append((draw(st.sampled_from([k for k in names if k not in listed])), pairs[-1][1]))
        docs.append(pairs)
    return schema, shape, docs


def _text(pairs, shape: str, rnd: random.Random) -> str:
    members = [f"{json.dumps(k) if rnd.random() < 0.7 else _escaped(k)}: {json.dumps(v)}" for k, v in pairs]
    body = "{" + ", ".join(members) + "}"
    return '{"o": %s}' % body if shape == "nested" else body


def _escaped(name: str) -> str:
    """Another spelling of the same name: every character \\u-escaped."""
    return '"' + "".join(f"\\u{ord(c):04x}" for c in name) + '"'


def _parsed_valid(validator, text: str) -> bool:
    """jsonschema's verdict on what a JSON parser reads (the last member of each name)."""
    return validator.is_valid(json.loads(text))


def _feed(g, tok, text: str, ids: list[int], judge: Judge | None, rnd: random.Random) -> bool:
    m = sg.GrammarMatcher(g)
    prefix = b""
    for t in ids:
        if judge is not None and rnd.random() < 0.15:
            check_mask(m, prefix, judge, rnd, t if judge.valid(text) else None)
        if not m.accept_token(t):
            return False
        prefix += tok.token_bytes(t)
    return m.accept_token(tok.eos_token_ids[0])


@SETTINGS
@given(object_cases())
def test_min_properties_counts_distinct_names(compiler, qwen, case):
    schema, shape, docs = case
    g = compiler.compile_json_schema(schema)
    obj = schema["anyOf"][0] if shape == "anyOf" else schema["properties"]["o"] if shape == "nested" else schema
    if obj["minProperties"] - len(obj.get("required", [])) > 1:  # two or more members may have unlisted names
        assert isinstance(g.tracker, DistinctNames)  # the count is enforced, not refused
    validator = jsonschema.Draft202012Validator(schema)
    judge = Judge(schema)  # jsonschema on the parsed document (no property is listed at the top of these)
    rnd = random.Random(2)
    for pairs in docs:
        text = _text(pairs, shape, rnd)
        repeated = len({k for k, _ in pairs}) != len(pairs)
        valid = _parsed_valid(validator, text)
        for ids in (canonical_ids("qwen", text), random_split(qwen, text.encode("utf-8"), rnd)):
            accepted = _feed(g, qwen, text, ids, judge if not repeated else None, rnd)
            if repeated:
                assert not accepted or valid, text  # 0 false accepts
                if shape != "anyOf":
                    assert not accepted, text  # a repeated name in a counted object is refused
            else:
                assert accepted == valid, (text, accepted)


def test_a_repeated_name_counts_once(compiler, qwen):
    g = compiler.compile_json_schema({"type": "object", "minProperties": 2})
    for text, ok in [('{"a":1,"b":2}', True), ('{"a":1,"a":2}', False), ('{"a":1,"\\u0061":2}', False), ('{"a":1,"b":{"a":1,"a":2}}', True),
                     ('{"a":1,"b":2,"a":3}', False), ('{"a":{"c":1,"d":2},"b":2}', True), ('{"a":"\\"a","b":1}', True)]:
        m = sg.GrammarMatcher(g)
        assert (m.accept_string(text) and m.can_end()) == ok, text
    m = sg.GrammarMatcher(g)
    assert m.accept_string('{"ab": 1, "ab')
    ids = set(allowed_ids(m).tolist())
    quote = next(i for i in range(qwen.vocab_size) if qwen.token_bytes(i) == b'"')
    c = next(i for i in range(qwen.vocab_size) if qwen.token_bytes(i) == b"c")
    assert quote not in ids and c in ids  # "ab" again is refused at its closing quote; "abc" is new
    assert not m.accept_string('":') and m.accept_string('c": 2}') and m.can_end()


def test_only_the_counted_parses_drop_a_repeat(compiler):
    """Under anyOf with an object without the count, a repeated name drops only the counted
    parses: the other branch reads on, and once it dies the repeat counts."""
    g = compiler.compile_json_schema({"anyOf": [{"type": "object", "minProperties": 2}, {"type": "object", "additionalProperties": {"type": "string"}}]})
    for text, ok in [('{"a":"s","a":"t"}', True), ('{"a":1,"a":2}', False), ('{"a":"s","a":"t","b":1}', False), ('{"a":"s","b":1}', True)]:
        m = sg.GrammarMatcher(g)
        assert (m.accept_string(text) and m.can_end()) == ok, text


def test_unique_arrays_of_counted_objects(compiler):
    """Both trackers on one grammar (tracked_rules.Trackers)."""
    g = compiler.compile_json_schema({"type": "array", "uniqueItems": True, "items": {"type": "object", "minProperties": 2}})
    assert isinstance(g.tracker, Trackers)
    for text, ok in [('[{"a":1,"b":2},{"a":1,"c":2}]', True), ('[{"a":1,"b":2},{"b":2,"a":1}]', False), ('[{"a":1,"a":2}]', False),
                     ('[{"a":1,"b":2},{"a":1,"a":2,"c":3}]', False)]:
        m = sg.GrammarMatcher(g)
        assert (m.accept_string(text) and m.can_end()) == ok, text


def test_any_order_objects_count_distinct_names(compiler):
    g = compiler.compile_json_schema({"type": "object", "properties": {"p": {}, "q": {}}, "minProperties": 4}, any_order=True)
    for text, ok in [('{"q":1,"x":1,"p":1,"y":1}', True), ('{"q":1,"x":1,"p":1,"x":1}', False), ('{"x":1,"y":1,"z":1,"x":2}', False)]:
        m = sg.GrammarMatcher(g)
        assert (m.accept_string(text) and m.can_end()) == ok, text


def test_names_that_can_run_out_stay_refused(compiler):
    """Keys from a finite set (or a pattern with a prefix that ends it) could leave a refused
    repeat no way on: refused by name, as before."""
    for obj in [{"patternProperties": {"^(a|b|c)$": {}}, "additionalProperties": False},
                {"propertyNames": {"maxLength": 2}},
                {"patternProperties": {"^(q|x+)$": {}}, "additionalProperties": False}]:
        with pytest.raises(SchemaError) as info:
            compiler.compile_json_schema({"type": "object", "minProperties": 2, **obj})
        assert info.value.keyword == "minProperties" and info.value.pointer == "/minProperties"
