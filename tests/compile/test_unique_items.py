"""uniqueItems on arrays of scalars that can take unboundedly many values (schema/unique.py,
compile/unique_items.py): the matcher accepts exactly the arrays jsonschema validates, with
duplicates written in other spellings (1, 1.0, 1e0, 10e-1; "a" and "\\u0061"), fed token by token
through Qwen's vocabulary (its own encoding and a random split); sampled masks allow only tokens
that still complete to a valid document and refuse the ones that would repeat an item."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.errors import SchemaError
from tests.helpers import allowed_ids, respell_strings
from tests.lazy_checks import Judge, feed_all

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
KINDS = [["string"], ["integer"], ["number"], ["string", "integer", "boolean", "null"], ["number", "string", "null"]]


@pytest.fixture(scope="module")
def compiler(qwen) -> sg.GrammarCompiler:
    return sg.GrammarCompiler(qwen)


def spell(v, kinds, rnd: random.Random) -> str:
    """One JSON spelling of scalar v that the item grammar accepts (numbers="any")."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, int):
        options = [str(v), f"{v}.0", f"{v}.00"] + (["-0"] if v == 0 else [])
        if "number" in kinds:
            options += [f"{v}e0", f"{v}0e-1", f"{v}E+0"]
        return rnd.choice(options)
    return rnd.choice([repr(v), f"{repr(v)}e0"] if "e" not in repr(v) else [repr(v)])


@st.composite
def array_cases(draw):
    kinds = draw(st.sampled_from(KINDS))
    schema = {"type": "array", "items": {"type": kinds if len(kinds) > 1 else kinds[0]}, "uniqueItems": True}
    if draw(st.booleans()):
        schema["minItems"] = draw(st.integers(0, 3))
        schema["maxItems"] = schema["minItems"] + draw(st.integers(0, 4))
    scalar = {"string": st.text("ab\u00e9\"\\\U0001f600", max_size=3), "integer": st.integers(-20, 20), "boolean": st.booleans(),
              "null": st.none(), "number": st.one_of(st.integers(-20, 20), st.sampled_from([0.5, -2.25, 1e-7, 3.0]))}
    docs = []
    for _ in range(3):
        values = draw(st.lists(st.one_of(*(scalar[k] for k in kinds)), max_size=7))
        if values and draw(st.booleans()):  # an earlier value again, maybe in another spelling
            values.insert(draw(st.integers(0, len(values))), draw(st.sampled_from(values)))
        docs.append(values)
    return schema, kinds, docs


@SETTINGS
@given(array_cases())
def test_unique_scalars_match_jsonschema(compiler, qwen, case):
    schema, kinds, docs = case
    judge = Judge(schema)
    g = compiler.compile_json_schema(schema)
    rnd = random.Random(0)
    for values in docs:
        for form in range(3):
            sep = [", ", ",", " ,\n "][form]
            text = "[" + sep.join(spell(v, kinds, rnd) for v in values) + "]"
            feed_all(g, qwen, judge, respell_strings(text, rnd) if form == 2 else text, rnd, check_masks=form == 0)


def test_spellings_of_one_value_are_one_item(compiler):
    g = compiler.compile_json_schema({"type": "array", "items": {"type": ["number", "string", "boolean", "null"]}, "uniqueItems": True})
    for text, ok in [('[1, 2, "1", true, null]', True), ("[1, 1.0]", False), ("[10e-1, 1]", False), ("[0, -0]", False),
                     ('["a", "\\u0061"]', False), ('["\\ud83d\\ude00", "\U0001f600"]', False), ("[true, false, true]", False),
                     ("[0.5, 5e-1]", False), ("[1, true]", True)]:
        m = sg.GrammarMatcher(g)
        assert (m.accept_string(text) and m.can_end()) == ok, text


def test_the_mask_refuses_a_repeat(compiler, qwen):
    g = compiler.compile_json_schema({"type": "array", "items": {"type": "integer"}, "uniqueItems": True})
    m = sg.GrammarMatcher(g)
    assert m.accept_string("[7, 0, 12")
    for text, ok in [(",", True), ("]", True), ("3", True)]:
        assert m.accept_string(text) == ok
        m.rollback(1)
    assert m.accept_string(", 7")
    mask = sg.allocate_token_bitmask(1, qwen.vocab_size)
    m.fill_next_token_bitmask(mask)
    comma = next(i for i in range(qwen.vocab_size) if qwen.token_bytes(i) == b",")
    digit = next(i for i in range(qwen.vocab_size) if qwen.token_bytes(i) == b"5")
    assert not (mask[0, comma // 32] >> (comma % 32)) & 1  # 7 again
    assert (mask[0, digit // 32] >> (digit % 32)) & 1  # 75 is new
    assert not m.accept_string(",") and not m.accept_string(".0]") and m.accept_string("5]")
    m = sg.GrammarMatcher(g)
    assert m.accept_string("[0, ") and not m.accept_string("0") and not m.accept_string("-0")  # 0 is fixed at once


def test_unique_arrays_inside_objects_each_start_fresh(compiler):
    tags = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    g = compiler.compile_json_schema({"type": "object", "properties": {"a": tags, "b": {"type": "array", "items": tags}}})
    m = sg.GrammarMatcher(g)
    assert m.accept_string('{"a": ["x", "y"], "b": [["x"], ["x", "y"], []]}') and m.can_end()
    m = sg.GrammarMatcher(g)
    assert m.accept_string('{"a": ["x"], "b": [["y", "z"], ["z"') and not m.accept_string(', "z"')


def test_items_it_cannot_follow_are_refused_by_name(compiler):
    for items in [{"type": "integer", "maximum": 100}, {"enum": list(range(20))}, {"type": "object", "maxProperties": 3}, {"type": "array", "maxItems": 2},
                  {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "integer"}}}]:
        with pytest.raises(SchemaError) as info:
            compiler.compile_json_schema({"type": "array", "items": items, "uniqueItems": True})
        assert info.value.keyword == "uniqueItems" and info.value.pointer == "/uniqueItems"


def test_no_unique_arrays_no_tracking(compiler):
    g = compiler.compile_json_schema({"type": "array", "items": {"type": "string"}})
    assert g.unique_items is None


def _plain_starts_item(t: bytes) -> bool:
    """The definition, token by token: after leading whitespace, a string open without its closing
    quote, digits 1-9 then digits only, or an opening bracket with no other bracket; no comma."""
    s = t.lstrip(b" \t\n\r")
    if not s or b"," in s:
        return False
    if s[0] == 0x22:
        return b'"' not in s[1:]
    if s[0] in b"123456789":
        return all(c in b"0123456789" for c in s)
    if s[0] in b"[{":
        return not any(c in b"[]{}" for c in s[1:])
    return False


_PLAIN_CLASSES = {  # class name: the tokens it leaves out (special tokens are in every class)
    "no_quote": lambda t: b'"' in t,
    "no_comma": lambda t: b"," in t,
    "not_opening": lambda t: b"[" in t and b"," in t,
    "no_bracket": lambda t: b"[" in t or b"]" in t or b"}" in t,
    "no_close": lambda t: b"]" in t or b"}" in t,
    "starts_item": lambda t: not _plain_starts_item(t),
}


def test_token_classes_are_their_definitions_token_by_token(vocab):
    """The classes are computed with array arithmetic over the vocabulary's token facts; every
    token of each real vocabulary is in a class exactly when the plain definition says so."""
    _, info = vocab
    compiled = sg.GrammarCompiler(info).compile_json_schema({"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    classes = compiled.unique_items.classes
    tokens, special = info.all_token_bytes, info.is_special
    for name, leaves_out in _PLAIN_CLASSES.items():
        expected = [bool(special[i]) or not leaves_out(t) for i, t in enumerate(tokens)]
        assert classes[name].tolist() == expected, name
    assert classes["special"].tolist() == [bool(x) for x in special]


@st.composite
def any_of_cases(draw):
    """An anyOf of a unique array and an overlapping one without uniqueItems (fuzz finding B),
    bare or as a member of objects whose other member then tells the branches apart."""
    kinds = draw(st.sampled_from(KINDS))
    unique = {"type": "array", "items": {"type": kinds if len(kinds) > 1 else kinds[0]}, "uniqueItems": True}
    free = draw(st.sampled_from([{"type": "array"}, {"type": "array", "maxItems": 3}, {"type": "array", "items": {"type": "integer"}},
                                 {"type": "array", "items": {"type": "string"}}, {"type": "array", "uniqueItems": True, "items": {"type": "string"}}]))
    shape = draw(st.sampled_from(["bare", "wrapped", "nested"]))
    wrapped = shape == "wrapped"
    if shape == "nested":  # the unique array one level down in one branch, one level up in the other (finding E)
        inner = {"type": "array", "items": unique["items"]}
        schema = {"anyOf": [{"type": "array", "items": unique}, {"type": "array", "items": inner, "uniqueItems": True}]}
    elif wrapped:
        def member(a, b):
            return {"type": "object", "properties": {"a": a, "b": {"type": b}}, "required": ["a", "b"], "additionalProperties": False}
        schema = {"anyOf": [member(unique, "integer"), member(free, "string")]}
    else:
        schema = {"anyOf": [unique, free]} if draw(st.booleans()) else {"anyOf": [free, unique]}
    scalar = {"string": st.sampled_from(["a", "b", "\u00e9"]), "integer": st.integers(-2, 2), "boolean": st.booleans(), "null": st.none(),
              "number": st.sampled_from([0.5, 1, 2])}
    docs = []
    for _ in range(3):
        values = draw(st.lists(st.one_of(*(scalar[k] for k in kinds)), max_size=5))
        if values and draw(st.booleans()):
            values.insert(draw(st.integers(0, len(values))), draw(st.sampled_from(values)))
        text = json.dumps(values)
        if shape == "nested":
            text = json.dumps([values] * draw(st.integers(1, 2)) + [values[:1]] * draw(st.integers(0, 1)))
        docs.append('{"a": %s, "b": %s}' % (text, draw(st.sampled_from(["1", '"x"']))) if wrapped else text)
    return schema, docs


@SETTINGS
@given(any_of_cases())
def test_an_any_of_of_unique_and_free_arrays_is_exact(compiler, qwen, case):
    """A repeat rules out only the parses inside the unique array: the free branch still accepts
    the document, and once it dies (a member the unique branch alone allows) the repeat counts."""
    schema, docs = case
    g = compiler.compile_json_schema(schema, strict=True)
    judge = Judge(schema)
    rnd = random.Random(1)
    for text in docs:  # verdicts only: the masks' completion search (lazy_checks) cannot finish a free array's items in time
        feed_all(g, qwen, judge, text, rnd, check_masks=False)


def test_a_repeat_drops_only_the_unique_parses(compiler):
    """Fuzz finding B and the case a rule "constrain only where every stack is inside" gets
    wrong: the free branch accepts [1,1] for the moment, then dies at "b": 1; and finding E."""
    g = compiler.compile_json_schema({"anyOf": [{"uniqueItems": True}, {}]}, strict=True)
    for text, ok in [("[null,null]", True), ("[[1],[1]]", True), ('["a","\\u0061"]', True), ("[1,2]", True)]:
        m = sg.GrammarMatcher(g)
        assert (m.accept_string(text) and m.can_end()) == ok, text
    member = lambda a, b: {"type": "object", "properties": {"a": a, "b": {"type": b}}, "required": ["a", "b"], "additionalProperties": False}  # noqa: E731
    g = compiler.compile_json_schema({"anyOf": [member({"type": "array", "uniqueItems": True}, "integer"), member({"type": "array"}, "string")]})
    for text, ok in [('{"a":[1,1],"b":1}', False), ('{"a":[1,2],"b":1}', True), ('{"a":[1,1],"b":"x"}', True), ('{"a":[1,2],"b":"x"}', True)]:
        m = sg.GrammarMatcher(g)
        assert (m.accept_string(text) and m.can_end()) == ok, text
    m = sg.GrammarMatcher(g)
    assert m.accept_string('{"a":[1,1],"b":') and not m.accept_string("1") and m.accept_string('"x"}')
    # finding E: one branch's unique array opened by the same "[" as the other's free one
    nested = compiler.compile_json_schema({"anyOf": [{"type": "array", "uniqueItems": True, "items": {"type": "array", "items": {"type": "string"}}},
                                                {"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}}]}, strict=True)
    for text, ok in [("[[1,1]]", False), ("[[1,2]]", True), ('[["a","a"]]', True), ("[[1,2],[1,2]]", True), ('[["a"],["a"]]', False)]:
        m = sg.GrammarMatcher(nested)
        assert (m.accept_string(text) and m.can_end()) == ok, text
    # the mask agrees with accept: after a repeat only the free branch's tokens are left, and
    # while neither parse has repeated anything both branches' tokens are
    info = compiler.tokenizer_info
    for prefix, allowed, refused in [('{"a":[1,1],"b":', b'"', b"1"), ('{"a":[1,2],"b":', b'"', b"1"), ('{"a":[1,1', b"]", None)]:
        m = sg.GrammarMatcher(g)
        assert m.accept_string(prefix)
        ids = set(allowed_ids(m).tolist())
        assert _token(info, allowed) in ids
        if refused is not None:
            assert (_token(info, refused) in ids) == prefix.endswith("2],\"b\":")


def _token(info, text: bytes) -> int:
    return next(i for i in range(info.vocab_size) if info.token_bytes(i) == text)
