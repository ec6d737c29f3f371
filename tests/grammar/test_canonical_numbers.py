"""JsonStyle(numbers="canonical"): generation writes numbers as json.dumps does; the default stays
spec-complete (every JSON spelling of a valid number is accepted, as a validator needs)."""

from __future__ import annotations

import json

import jsonschema
import pytest

import strictgen as sg
from strictgen.grammar.json_value import JsonStyle
from tests.grammar.test_json_schema import Schema

CANON = JsonStyle("spaced", numbers="canonical")


def test_integers_have_no_fraction_or_negative_zero():
    schema = {"type": "integer", "minimum": -60, "maximum": 60}
    canon, full = Schema(schema, style=CANON), Schema(schema)
    for text in ("25", "-4", "0", "60"):
        assert text in canon and text in full
    for text in ("25.0", "25.00", "-0", "-0.0", "0.0"):
        assert text not in canon and text in full, text
    assert "61" not in canon and "2.5e1" not in canon


@pytest.mark.parametrize("schema", [{"type": "number"}, {"type": "number", "minimum": 0, "maximum": 1000}, {"type": "number", "exclusiveMinimum": 0}])
def test_numbers_in_json_dumps_spelling(schema):
    canon, full = Schema(schema, style=CANON), Schema(schema)
    for value in (1.5, 199.5, 360, 360.0, 0.25, 12.0):
        text = json.dumps(value)
        assert text in canon and text in full, text
    for text in ("1.5e0", "36e1", "-0", "-0.0", "0." + "0" * 18, "1." + "1" * 18):
        assert text not in canon, text
    # trailing zeros stay (a model copying "1,250.00" must not be trapped), up to 17 fraction digits
    for text in ("1.50", "360.00", "0.00000000000000001", "1." + "0" * 17):
        assert text in canon and text in full, text
    if len(schema) == 1:  # unbounded: negatives below 1 too
        assert "-0.5" in canon and "-0.00000000000000001" in canon and "-0.000" not in canon


def test_enum_numbers_and_any_json():
    s = Schema({"enum": [1.5, 2, "x"]}, style=CANON)
    assert "1.5" in s and "2" in s and "1.50" not in s and "2.0" not in s  # enum values: json.dumps's text only
    tok = sg.TokenizerInfo.from_name("smollm2")
    compiler = sg.GrammarCompiler(tok)
    g = compiler.compile_json(whitespace="spaced", numbers="canonical")
    assert sg.GrammarMatcher(g).accept_string('{"a": [1, 2.5, -3]}')
    assert not sg.GrammarMatcher(g).accept_string('{"a": 1e5}')
    assert sg.GrammarMatcher(compiler.compile_json()).accept_string('{"a": 1e5}')  # the default: every spelling


def test_canonical_documents_stay_valid():
    """Soundness is untouched: canonical spellings of valid values, and only those, are accepted."""
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}, "x": {"type": "number", "maximum": 2}},
              "required": ["n", "x"], "additionalProperties": False}
    s = Schema(schema, style=CANON)
    for doc in ({"n": 1, "x": 2}, {"n": 7, "x": -0.5}, {"n": 3, "x": 1.0}):
        jsonschema.validate(doc, schema)
        assert json.dumps(doc) in s
    for text in ('{"n": 0, "x": 1}', '{"n": 1, "x": 2.5}', '{"n": 1.0, "x": 1}', '{"n": 1, "x": -0}'):
        assert text not in s
    with pytest.raises(ValueError):
        JsonStyle(numbers="short")
