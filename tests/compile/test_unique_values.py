"""uniqueItems over items of any kind (schema/unique.py, compile/unique_items.py): any JSON
value, nested arrays and objects (equal whatever their key order, true != 1, 1 == 1.0), enum
strings past the item-set construction, strings of an infinite pattern, open objects, prefixItems
by position and unique arrays inside unique arrays, on Qwen's vocabulary.

Two properties, each on every schema here: random token walks under the mask, steered to repeat
earlier items, never reach a dead end (every sampled allowed token completes to a document the
judge accepts, and the walk's own end does too); and documents (duplicates written in other
spellings included) are accepted exactly when the judge says they are valid, in json.dumps's
default, compact and ensure_ascii forms, under Qwen's encoding and a random split. The judge is
jsonschema over numbers read exactly (Decimal), so 0.1 and 0.10000000000000001 stay two values."""

from __future__ import annotations

import json
import random
from decimal import Decimal

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.errors import SchemaError
from strictgen.grammar.json_value import MAX_FRACTION_DIGITS
from tests.helpers import allowed_ids, canonical_ids, respell_strings
from tests.lazy_checks import Judge, check_mask, completion, feed_all

SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
COLORS = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white", "bold", "default", "reverse", "under", "strike", "é", "x/y", "\U0001f600"]

# (schema, item values to build documents from: repeats of them are what the matcher must refuse)
CASES = {
    "any": ({"uniqueItems": True}, [1, 1.0, True, None, "a", [1], [True], {"a": 1, "b": [2]}, {"b": [2], "a": 1}, [], {}, "\u00e9", 0.5]),
    "prefix": ({"prefixItems": [{"type": "boolean"}, {"type": "boolean"}], "uniqueItems": True}, [True, False, "foo", 1, [False], {"x": None}]),
    "enum": ({"type": "array", "items": {"enum": COLORS + [None]}, "uniqueItems": True}, COLORS + [None]),
    "pattern": ({"type": "array", "items": {"type": "string", "pattern": "^[a-c]+$"}, "uniqueItems": True, "minItems": 1}, ["a", "b", "ab", "abc", "c"]),
    "short": ({"type": "array", "items": {"anyOf": [{"type": "string", "pattern": "^[ab]{1,2}$"}, {"enum": ["c", "\u00e9"]}]}, "uniqueItems": True},
              ["a", "b", "aa", "ab", "ba", "bb", "c", "\u00e9"]),
    "objects": (
        {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}, "t": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}},
                                    "required": ["a"]}, "uniqueItems": True},
        [{"a": 1}, {"a": 1.0}, {"a": 2, "t": ["x"]}, {"t": ["x"], "a": 2}, {"a": 1, "z": None}],
    ),
    "nested": ({"type": "array", "items": {"type": "array", "items": {"type": ["string", "integer"]}, "uniqueItems": True}, "uniqueItems": True},
               [[], ["a"], ["a", 1], [1, "a"], [1], ["\u00e9"]]),
}


class ExactJudge(Judge):
    """The judge with numbers read as Decimals (integers as ints; 1.0 still an integer)."""

    def __init__(self, schema):
        super().__init__(schema)
        checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
            "integer", lambda _, v: not isinstance(v, bool) and (isinstance(v, int) or (isinstance(v, Decimal) and v == v.to_integral_value())))
        self.validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=checker)(schema)

    def valid(self, text: str) -> bool:
        try:
            value = json.loads(text, parse_float=Decimal)
        except ValueError:
            return False
        return self.validator.is_valid(value)


@pytest.fixture(scope="module")
def compiler(qwen) -> sg.GrammarCompiler:
    return sg.GrammarCompiler(qwen)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(seed=st.integers(0, 2**32))
def test_walks_under_the_mask_never_dead_end(compiler, qwen, name, seed):
    schema, values = CASES[name]
    judge, rnd = ExactJudge(schema), random.Random(seed)
    g = compiler.compile_json_schema(schema)
    m = sg.GrammarMatcher(g)
    prefix = b""

    def take(t: int) -> bool:
        nonlocal prefix
        allowed = set(allowed_ids(m).tolist())
        ok = m.accept_token(t)
        assert ok == (t in allowed)  # the mask is what accept_token does
        if ok:
            prefix += qwen.token_bytes(t)
        return ok

    assert take(canonical_ids("qwen", "[")[0])
    for _ in range(8):
        if rnd.random() < 0.7:  # an item of the pool, often one written before: refused somewhere
            text = ("" if prefix.rstrip().endswith((b"[", b",")) else ", ") + json.dumps(rnd.choice(values), ensure_ascii=rnd.random() < 0.5)
            for t in canonical_ids("qwen", text):
                if not take(t):
                    break
        else:
            allowed = [t for t in allowed_ids(m).tolist() if not qwen.is_special[t]]
            assert allowed, prefix
            assert take(rnd.choice(allowed))
        if rnd.random() < 0.4:
            check_mask(m, prefix, judge, rnd, None)
    rest = completion(m)
    assert rest is not None, prefix
    assert judge.valid((prefix + rest).decode("utf-8")), prefix + rest


@st.composite
def documents(draw):
    name = draw(st.sampled_from(sorted(CASES)))
    schema, values = CASES[name]
    items = draw(st.lists(st.sampled_from(values), max_size=5))
    if items and draw(st.booleans()):  # an earlier item again, maybe another spelling of it
        items.insert(draw(st.integers(0, len(items))), draw(st.sampled_from(items)))
    return schema, items


@SETTINGS
@given(documents())
def test_documents_match_the_judge_in_every_form(compiler, qwen, case):
    schema, items = case
    judge, rnd = ExactJudge(schema), random.Random(len(items))
    g = compiler.compile_json_schema(schema)
    for n, text in enumerate([json.dumps(items, ensure_ascii=False), json.dumps(items, separators=(",", ":"), ensure_ascii=False), json.dumps(items)]):
        feed_all(g, qwen, judge, respell_strings(text, rnd) if n == 2 else text, rnd, check_masks=n == 0)


def test_equal_values_are_one_item(compiler):
    g = compiler.compile_json_schema({"uniqueItems": True})
    for text, ok in [('[{"a": 1, "b": [2]}, {"b": [2.0], "a": 1}]', False), ("[[1], [true]]", True), ("[1, true, 1.0]", False),
                     ('[{"a": "]"}, {"a": "}"}]', True), ('[{"a": "]"}, {"a": "\\u005d"}]', False), ("[[], {}, [[]], [{}]]", True),
                     ("[0.1, 0.10000000000000001]", True), ("[1e999999999, 10e999999998]", False), ('[null, "null"]', True)]:
        m = sg.GrammarMatcher(g)
        assert (m.accept_string(text) and m.can_end()) == ok, text


def test_an_enum_runs_out(compiler):
    """Once every value is used the `,` that would start another item is refused; an enum
    string is refused as soon as every value it can still become is used."""
    g = compiler.compile_json_schema({"type": "array", "items": {"enum": ["ab", "abc", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"]}, "uniqueItems": True})
    m = sg.GrammarMatcher(g)
    assert m.accept_string('["ab", "abc", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"')
    assert m.accept_string(', "') and not m.accept_string("a") and not m.accept_string("\\u0061") and m.accept_string('l"')
    assert not m.accept_string(",") and m.accept_string(" ]") and m.can_end()
    with pytest.raises(SchemaError) as info:  # a third needed item with only two booleans to be: refused, not a dead end
        compiler.compile_json_schema({"prefixItems": [{"type": "boolean"}] * 3, "items": {"type": "string"}, "minItems": 3, "uniqueItems": True})
    assert info.value.keyword == "uniqueItems"


def test_prefix_positions_keep_their_kinds(compiler):
    g = compiler.compile_json_schema({"prefixItems": [{"type": "boolean"}, {"type": "boolean"}], "uniqueItems": True})
    m = sg.GrammarMatcher(g)
    assert m.accept_string("[true, ") and not m.accept_string("t") and m.accept_string("false, true") is False
    assert m.accept_string("false, 1, [true]]") and m.can_end()


def test_canonical_numbers_run_out_of_fraction_digits(compiler, qwen):
    """numbers="canonical" stops a fraction at MAX_FRACTION_DIGITS: once the ten numbers one
    digit can still make are all used, that digit is refused (and nothing dead-ends)."""
    g = compiler.compile_json_schema({"type": "array", "items": {"type": "number"}, "uniqueItems": True}, numbers="canonical")
    head = "0." + "1" * (MAX_FRACTION_DIGITS - 2)
    m = sg.GrammarMatcher(g)
    prefix = "[" + ", ".join(f"{head}5{d}" for d in range(10)) + ", " + head
    assert m.accept_string(prefix)
    assert not m.accept_string("5") and m.accept_string("4")
    check_mask(m, (prefix + "4").encode(), ExactJudge({"type": "array", "items": {"type": "number"}, "uniqueItems": True}), random.Random(0), None)
    m = sg.GrammarMatcher(g)
    assert m.accept_string("[-0.5, 0.5, 1, 1") and not m.accept_string(".0]") and m.accept_string(".25]") and m.can_end()
    assert compiler.compile_json_schema({"uniqueItems": True}, numbers="canonical").unique_items is not None


def test_a_language_that_runs_out_is_counted(compiler):
    """Strings of a finite language: a byte is refused once every string it leaves possible is an
    item, raw or escaped (an escape half written counts the characters it can still become)."""
    g = compiler.compile_json_schema({"type": "array", "items": {"type": "string", "pattern": "^#[0-9a-f]{2}$"}, "uniqueItems": True})
    used = "[" + ", ".join(f'"#0{c}"' for c in "0123456789abcdef")
    for text, ok in [(', "#0', False), (', "#\\u0030', False), (', "#\\u003', True), (', "#\\u0031', True), (', "#1', True), (', "#', True)]:
        m = sg.GrammarMatcher(g)
        assert m.accept_string(used) and m.accept_string(text) == ok, text
    g = compiler.compile_json_schema({"type": "array", "items": {"type": "string", "maxLength": 1, "pattern": "^[ab]*$"}, "uniqueItems": True})
    m = sg.GrammarMatcher(g)
    assert m.accept_string('["", "b", "\\u0061"') and not m.accept_string(",") and m.accept_string("]") and m.can_end()
