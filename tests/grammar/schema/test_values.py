"""schema.values: JSON equality and value keys as jsonschema's uniqueness defines them (1 == 1.0,
true != 1, key order irrelevant, exact decimals), dedupe_values, to_fraction, json_type,
is_number, load_schema (dict / bool / text / bytes / pydantic; clear errors), nonneg_int,
escape_pointer and the Reporter (strict raises, loose records once)."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictgen.errors import GrammarTooLargeError, SchemaError
from strictgen.grammar.schema.values import (
    Reporter, dedupe_values, escape_pointer, is_number, json_equal, json_type, load_schema, nonneg_int, to_fraction,
    value_key,
)

from .oracle import json_values

FEW = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
UNIQUE = jsonschema.Draft202012Validator({"uniqueItems": True})


def jsonschema_equal(a, b) -> bool:
    """jsonschema's own equality: two items that make uniqueItems fail."""
    return not UNIQUE.is_valid([a, b])


def variant(v):
    """A JSON-equal value spelled differently: integral numbers as floats, object keys reversed."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return float(v)
    if isinstance(v, float):
        return int(v) if v.is_integer() else v
    if isinstance(v, list):
        return [variant(x) for x in v]
    return {k: variant(v[k]) for k in reversed(list(v))}


@FEW
@given(st.data())
def test_value_key_and_json_equal_agree_with_jsonschema_uniqueness(data):
    a = data.draw(json_values)
    b = data.draw(st.one_of(json_values, st.just(variant(a)), st.just(a)))
    same = jsonschema_equal(a, b)
    assert json_equal(a, b) == same
    assert (value_key(a) == value_key(b)) == same
    assert json_equal(a, variant(a)) and value_key(a) == value_key(variant(a))


@pytest.mark.parametrize(
    "a,b,equal",
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (None, False, False),
        ("1", 1, False),
        ({"a": 1, "b": 2}, {"b": 2.0, "a": 1}, True),
        ([1, 2], [2, 1], False),
        ([[1]], [[1.0]], True),
        ({"a": True}, {"a": 1}, False),
        # the decimal a float was written as, not its binary value: JSON Schema's equality of the
        # numbers 1e30 and 10^30 (Python's, hence jsonschema's, says they differ)
        (10**30, 1e30, True),
        (0.1 + 0.2, 0.3, False),
        ({}, [], False),
    ],
)
def test_json_equality_cases(a, b, equal):
    assert json_equal(a, b) == equal == json_equal(b, a)
    assert (value_key(a) == value_key(b)) == equal


def test_dedupe_values_keeps_first_occurrences_in_order():
    values = [1, "a", 1.0, True, {"x": 1, "y": 2}, {"y": 2, "x": 1}, [1], [1.0], None, "a", False, 0]
    assert dedupe_values(values) == (1, "a", True, {"x": 1, "y": 2}, [1], None, False, 0)
    out = dedupe_values(values)
    assert type(out[0]) is int  # the first spelling is the one kept
    # strings that spell another value's key (JSON text, "n:1/1") are kept beside that value
    lookalikes = ["true", True, "null", None, "n:1/1", 1, "[1]", [1], '"a"', "a", "a", "é", "é"]
    assert dedupe_values(lookalikes) == ("true", True, "null", None, "n:1/1", 1, "[1]", [1], '"a"', "a", "é")


def test_dedupe_values_is_linear_on_a_large_enum():
    values = list(range(50_000)) + [float(i) for i in range(50_000)]
    assert len(dedupe_values(values)) == 50_000


@pytest.mark.parametrize(
    "v,exact",
    [(0.1, Fraction(1, 10)), (1, Fraction(1)), (2.5e-3, Fraction(1, 400)), (Decimal("1.10"), Fraction(11, 10)), (-7, Fraction(-7)), (1e300, Fraction(10**300))],
)
def test_to_fraction_is_the_decimal_value(v, exact):
    assert to_fraction(v) == exact


@pytest.mark.parametrize("v", [float("nan"), float("inf"), float("-inf")])
def test_to_fraction_refuses_non_finite_numbers(v):
    with pytest.raises(ValueError):
        to_fraction(v)


def test_json_type_and_is_number():
    cases = {None: "null", True: "boolean", 0: "number", 1.5: "number", "s": "string"}
    for v, t in cases.items():
        assert json_type(v) == t
    assert json_type([]) == "array" and json_type({}) == "object"
    assert is_number(3) and is_number(3.5) and not is_number(True) and not is_number("3")
    with pytest.raises(TypeError):
        json_type(object())


class _Model:
    """Stands for a pydantic model class (only its model_json_schema is called)."""

    @classmethod
    def model_json_schema(cls):
        return {"type": "object", "properties": {"a": {"type": "integer"}}}


def test_load_schema_accepts_every_documented_form():
    schema = {"type": "array", "items": {"type": "string"}}
    text = json.dumps(schema)
    assert load_schema(schema) is schema
    assert load_schema(text) == schema
    assert load_schema(text.encode()) == schema
    assert load_schema(True) is True and load_schema(False) is False
    assert load_schema(_Model) == _Model.model_json_schema()
    pydantic = pytest.importorskip("pydantic")

    class Point(pydantic.BaseModel):
        x: int

    assert load_schema(Point)["properties"]["x"]["type"] == "integer"


@pytest.mark.parametrize("bad", ["{not json", "[1, 2]", "3", 7, None, [{"type": "string"}]])
def test_load_schema_refuses_what_is_not_a_schema(bad):
    with pytest.raises(SchemaError):
        load_schema(bad)


def test_load_schema_refuses_deep_nesting_clearly():
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(GrammarTooLargeError, match="MAX_SCHEMA_DEPTH"):
        load_schema('{"enum": ' + deep + "}")


@pytest.mark.parametrize("v,n", [(0, 0), (3, 3), (4.0, 4)])
def test_nonneg_int_accepts_non_negative_integers(v, n):
    got = nonneg_int(v, "maxItems", "/x")
    assert got == n and type(got) is int


@pytest.mark.parametrize("v", [-1, 1.5, True, "3", None])
def test_nonneg_int_refuses_others_naming_keyword_and_pointer(v):
    with pytest.raises(SchemaError) as e:
        nonneg_int(v, "maxItems", "/x")
    assert e.value.keyword == "maxItems" and e.value.pointer == "/x"


def test_escape_pointer_follows_rfc_6901():
    assert escape_pointer("a/b~c") == "a~1b~0c"
    assert escape_pointer("~1") == "~01"  # ~ first, so an escaped '/' is not unescaped twice


def test_reporter_strict_raises_and_loose_records_each_keyword_once():
    with pytest.raises(SchemaError, match="strict=False") as e:
        Reporter(True).refuse("cannot", "uniqueItems", "/p")
    assert e.value.keyword == "uniqueItems" and e.value.pointer == "/p"
    loose = Reporter(False)
    loose.refuse("cannot", "uniqueItems", "/p")
    loose.refuse("again", "uniqueItems", "/p")
    loose.refuse("cannot", "not", "/q")
    assert loose.unenforced == [("uniqueItems", "/p"), ("not", "/q")]


def test_a_loaded_schema_is_read_once():
    """loaded_schema reads text once: load_schema hands back that very value (no second parse or
    bounds check); a dict is not kept (the caller may change it) but read again from its text."""
    from strictgen.grammar.json_schema import json_schema_grammar, loaded_schema, schema_cache_text

    schema = {"type": "object", "properties": {"a": {"enum": [1, 2.5, "x"]}}, "required": ["a"]}
    text = json.dumps(schema)
    from_text = loaded_schema(text)
    assert from_text.text == schema_cache_text(text) == schema_cache_text(schema)
    assert from_text.value == schema and load_schema(from_text) is from_text.value
    from_dict = loaded_schema(schema)
    assert from_dict.value is None and from_dict.text == from_text.text
    again = load_schema(from_dict)
    assert again == schema and again is not schema
    with_tuple = {"enum": ("a", "b")}  # a tuple reads as the JSON array its text holds, as before
    assert load_schema(loaded_schema(with_tuple)) == {"enum": ["a", "b"]}
    expected = json_schema_grammar(text)[0]
    for loaded in (from_text, from_dict):
        got = json_schema_grammar(loaded)[0]
        assert got.root == expected.root and list(got.rules) == list(expected.rules)
        assert all(got.rules[k] == expected.rules[k] for k in got.rules)


def test_compile_json_schema_parses_schema_text_once(monkeypatch):
    import strictgen as sg
    import strictgen.grammar.schema.values as values

    parses = []
    real = values.json.loads
    monkeypatch.setattr(values.json, "loads", lambda text, *a, **k: parses.append(text) or real(text, *a, **k))
    tok = sg.TokenizerInfo.from_vocab([bytes([b]) for b in range(256)] + [b""], eos_token_ids=[256])
    sg.GrammarCompiler(tok).compile_json_schema('{"type": "object", "properties": {"n": {"type": "integer"}}}')
    assert len(parses) == 1
