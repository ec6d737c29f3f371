"""JSON Schema → grammar (strictgen.grammar.json_schema): keyword by keyword, errors, options, caching,
and a hypothesis property against the jsonschema validator.

Membership is decided by the real engine (compile_automaton + PushdownMachine) on exact texts;
a few tests go through the public API (GrammarCompiler.compile_json_schema + GrammarMatcher) on
the Qwen vocabulary.
"""

from __future__ import annotations

import json
import os
import random
from decimal import Decimal
from fractions import Fraction

import jsonschema
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile.automaton import EmptyLanguageError, compile_automaton
from strictgen.compile.machine import DEAD, PushdownMachine
from strictgen.errors import GrammarTooLargeError, SchemaError
from strictgen.grammar.ir import ByteSet, CharSet, Grammar, Literal, Seq, charset, intersect, lit, repeat
from strictgen.grammar.json_schema import json_schema_grammar
from strictgen.grammar.schema.emit_strings import spelled
from strictgen.grammar.json_value import JsonStyle

SETTINGS = settings(
    max_examples=int(os.environ.get("STRICTGEN_SCHEMA_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


class Schema:
    """A compiled schema: membership of exact document texts."""

    def __init__(self, schema, **kw):
        grammar, self.unenforced = json_schema_grammar(schema, **kw)
        self.machine = PushdownMachine(compile_automaton(grammar))

    def __contains__(self, doc) -> bool:
        text = doc if isinstance(doc, str) else json.dumps(doc, ensure_ascii=False)
        m = self.machine
        state = m.step_bytes(m.start, text.encode("utf-8"))
        return state != DEAD and bool(m.accepting[state])


def check(schema, accept=(), reject=(), **kw):
    s = Schema(schema, **kw)
    for doc in accept:
        assert doc in s, f"{doc!r} should be accepted by {schema}"
    for doc in reject:
        assert doc not in s, f"{doc!r} should be rejected by {schema}"
    return s


# ---- types and values ----------------------------------------------------------------------------


def test_types():
    check({"type": "null"}, ["null"], ["0", '"null"', "false"])
    check({"type": "boolean"}, ["true", "false"], ["null", "1"])
    check({"type": "string"}, ['"a"', '""', '"\\u0041\\n"'], ["a", "1"])
    check({"type": ["string", "null"]}, ['"x"', "null"], ["1", "[]"])
    check({"type": "array"}, ["[]", "[1, [2], {}]"], ["{}"])
    check({"type": "object"}, ["{}", '{"a": [1]}'], ["[]"])


def test_integer_accepts_integral_spellings():
    check({"type": "integer"}, ["0", "-7", "12", "1.0", "1.00", "-0"], ["1.5", "01", "1e2", '"1"', "1."])
    check({"type": "number"}, ["1.5", "-0.25", "1e2", "3E-4", "7"], ["1.", ".5", "+1", "NaN"])


def test_number_bounds_and_multiple_of():
    check({"type": "integer", "minimum": 3, "exclusiveMaximum": 6}, ["3", "5", "5.0"], ["2", "6", "5.5"])
    check({"type": "number", "exclusiveMinimum": 0, "maximum": 1.5}, ["0.1", "1.5", "1.50"], ["0", "-0.1", "1.51"])
    check({"type": "integer", "multipleOf": 3}, ["0", "9", "-12", "3.0"], ["4", "1.5"])
    check({"type": "number", "multipleOf": 0.25, "minimum": 0, "maximum": 1}, ["0.25", "1", "0.750"], ["0.3", "1.25"])
    # draft-04 boolean exclusiveMinimum
    check({"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 5, "exclusiveMinimum": True}, ["6", "5.5"], ["5", "4"])


def test_enum_const_json_equality():
    check({"enum": [1, "a", None, [1, 2], {"k": True}]}, ["1", "1.0", "1.00", '"a"', "null", "[1, 2]", '{"k": true}'], ["2", '"b"', "[2, 1]", "true"])
    check({"const": {"a": 1, "b": [False]}}, ['{"a": 1, "b": [false]}', '{"a":1.0,"b":[false]}'], ['{"a": 1}', "{}"])
    # enum values are filtered by the rest of the subschema
    check({"type": "string", "enum": ["a", "bb", 3], "maxLength": 1}, ['"a"'], ['"bb"', "3"])
    check({"enum": [True, 1]}, ["true", "1"], ["false", "1.5"])


# ---- strings ----------------------------------------------------------------------------------------


def test_string_length_counts_code_points():
    s = check({"type": "string", "minLength": 2, "maxLength": 3}, ['"ab"', '"éé"', '"😀😀😀"', '"a\\nb"'], ['"a"', '"abcd"', '"😀"'])
    # every spelling counts one code point per character: \u escapes, a surrogate pair, \/
    for doc in ['"\\u00e9\\u00E9"', '"\\ud83d\\ude00\\uD83D\\uDE00"', '"\\/\\u0061\\t"']:
        assert doc in s, doc
    for doc in ['"\\ud83d\\ude00"', '"\\u0061\\u0062\\/\\/"']:
        assert doc not in s, doc
    long = check({"type": "string", "maxLength": 300}, ['"' + "é" * 300 + '"', '""'], ['"' + "a" * 301 + '"'])
    assert '"' + "\\t" * 300 + '"' in long


def test_pattern_is_unanchored_and_combines_with_length_and_format():
    check({"type": "string", "pattern": "b+"}, ['"abbc"', '"b"'], ['"ac"'])
    check({"type": "string", "pattern": "^[a-z]+$", "maxLength": 3}, ['"abc"'], ['"abcd"', '""', '"A"'])
    check({"type": "string", "format": "date", "pattern": "^2024"}, ['"2024-02-29"'], ['"2023-02-28"', '"2024-02-30"'])
    check({"type": "string", "pattern": '"'}, ['"a\\"b"'], ['"ab"'])


def test_pattern_with_leading_negative_lookahead():
    check({"type": "string", "pattern": "^(?!io\\.)[a-z.]+$"}, ['"com.x"', '"iox"'], ['"io.x"', '"Com"'])


def test_format():
    check({"type": "string", "format": "uuid"}, ['"123e4567-e89b-12d3-a456-426614174000"'], ['"123"'])
    check({"type": "string", "format": "hostname"}, ['"example.com"'], ['"-x.com"', '"' + "a." * 130 + 'a"'])
    check({"format": "made-up"}, ['"anything"', "1"])  # unknown formats are annotations


def _spellings(c: str) -> list[str]:
    """Every JSON spelling of one character (hex digits in both cases, surrogate pairs)."""
    cp = ord(c)
    out = {json.dumps(c, ensure_ascii=False)[1:-1], json.dumps(c)[1:-1]}
    short = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if c in short:
        out.add(short[c])
    units = [cp] if cp < 0x10000 else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)]
    out.add("".join(f"\\u{u:04x}" for u in units))
    out.add("".join(f"\\u{u:04X}" for u in units))
    return sorted(out)


def test_escape_every_spelling():
    e = spelled(charset([(0, 0x7F), (0xE9, 0xE9), (0x1F600, 0x1F600)]))
    g = PushdownMachine(compile_automaton(Grammar({"root": e})))
    for c in [*map(chr, range(0x80)), "é", "😀"]:
        for want in _spellings(c):
            s = g.step_bytes(g.start, want.encode())
            assert s != DEAD and g.accepting[s], (c, want)
    for bad in ["\\ud83d", "\\u00", "\\x41", '"', "\\", "\n", "\\u00e8"]:
        s = g.step_bytes(g.start, bad.encode())
        assert s == DEAD or not g.accepting[s], bad
    # decoding is a function: spelling distributes over intersection
    a = repeat(charset([(0x20, 0x7E), (0x0A, 0x0A)]), 0, 3)
    b = Seq((repeat(charset([(0, 0x10FFFF)])), lit("\n")))
    both = PushdownMachine(compile_automaton(Grammar({"root": spelled(intersect(a, b))})))
    for text, ok in [("ab\\n", True), ("\\u0061b\\u000A", True), ("\\n", True), ("abc\\n", False), ("a\n", False)]:
        s = both.step_bytes(both.start, text.encode())
        assert (s != DEAD and bool(both.accepting[s])) == ok, text


# ---- objects ----------------------------------------------------------------------------------------


def test_properties_required_additional():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    check(schema, ['{"a": 1}', '{"a": 1, "b": "x"}', '{\n  "a": 1,\n  "b": "x"\n}'], ['{"b": "x"}', '{"a": 1, "c": 2}', '{"a": "1"}', '{"a": 1, "a": 2}'])
    check({**schema, "additionalProperties": {"type": "boolean"}}, ['{"a": 1, "z": true}', '{"a": 1, "b": "", "z": false, "y": true}'], ['{"a": 1, "z": 1}', '{"a": 1, "\\u0062": true}'])
    check({"properties": {"a": {"const": 1}}}, ['{"a": 1}', '{"x": 2}', "[]", "3"], ['{"a": 2}'])


def test_pattern_properties_and_property_names():
    schema = {"patternProperties": {"^x": {"type": "integer"}, "y$": {"type": "string"}}, "additionalProperties": False}
    check(schema, ['{"x1": 1}', '{"ay": "s"}', "{}"], ['{"xy": 1}', '{"xy": "s"}', '{"q": 1}'])
    check({"propertyNames": {"maxLength": 2}}, ['{"ab": 1}', "{}"], ['{"abc": 1}'])
    check({"propertyNames": {"enum": ["a", "b"]}, "properties": {"c": {}}}, ['{"a": 1, "b": 2}'], ['{"c": 1}'])


def test_min_max_properties():
    schema = {"properties": {"a": {}, "b": {}}, "minProperties": 1, "maxProperties": 2}
    check(schema, ['{"a": 1}', '{"z": 1}', '{"a": 1, "z": 2}'], ["{}", '{"a": 1, "b": 2, "c": 3}'])


def test_dependencies():
    check({"dependentRequired": {"a": ["b"]}}, ['{"b": 1}', '{"a": 1, "b": 2}', "{}"], ['{"a": 1}'])
    check({"dependentSchemas": {"a": {"required": ["c"]}}}, ['{"a": 1, "c": 2}', '{"c": 1}'], ['{"a": 1}'])
    check({"dependencies": {"a": ["b"], "c": {"properties": {"d": {"type": "string"}}}}}, ['{"c": 1, "d": "x"}', '{"a": 1, "b": 1}'], ['{"a": 1}', '{"c": 1, "d": 2}'])


def test_presence_only_any_of_one_of():
    props = {"properties": {"a": {}, "b": {}, "c": {}}}
    check({**props, "anyOf": [{"required": ["a"]}, {"required": ["b", "c"]}]}, ['{"a": 1}', '{"b": 1, "c": 2}', "7"], ['{"b": 1}', "{}"])
    check({**props, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, ['{"a": 1}', '{"b": 1}'], ['{"a": 1, "b": 1}', "{}", "7"])
    check({**props, "not": {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}}, ['{"c": 1}', "{}"], ['{"a": 1}', "7"])


def test_not_of_object_constraints():
    check({"not": {"type": "object", "additionalProperties": False, "properties": {"a": {}}}}, ['{"b": 1}', '{"a": 1, "b": 2}', "1"], ["{}", '{"a": 1}'])
    # some x-member that is not an integer: one member at most, since a later "x1" could undo it
    check({"type": "object", "maxProperties": 1, "not": {"patternProperties": {"^x": {"type": "integer"}}}}, ['{"x1": "s"}', '{"x2": null}'],
          ["{}", '{"x1": 1}', '{"a": 1, "x2": null}'])
    with pytest.raises(sg.SchemaError, match="patternProperties"):  # {"x1": "s", "x1": 1} is one integer member
        Schema({"type": "object", "not": {"patternProperties": {"^x": {"type": "integer"}}}})
    check({"type": "object", "not": {"propertyNames": {"maxLength": 2}}}, ['{"abc": 1}'], ["{}", '{"ab": 1}'])


def test_dynamic_ref():
    schema = {
        "$id": "https://example.com/root",
        "$ref": "list",
        "$defs": {
            "foo": {"$dynamicAnchor": "items", "type": "string"},
            "list": {"$id": "list", "type": "array", "items": {"$dynamicRef": "#items"}, "$defs": {"items": {"$dynamicAnchor": "items"}}},
        },
    }
    check(schema, ['["a", "b"]', "[]"], ['["a", 1]'])


def test_any_order():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {}}, "required": ["a", "b"], "additionalProperties": False}
    check(schema, ['{"a": 1, "b": 2}'], ['{"b": 2, "a": 1}'])
    check(schema, ['{"a": 1, "b": 2}', '{"b": 2, "c": null, "a": 1}'], ['{"b": 2}', '{"a": 1, "a": 1, "b": 2}'], any_order=True)
    # one listed property and additional members: those may come first too
    one = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"], "additionalProperties": {"type": "integer"}}
    check(one, ['{"x": "a", "t": 1}'], ['{"t": 1, "x": "a"}'])
    check(one, ['{"x": "a", "t": 1}', '{"t": 1, "x": "a"}', '{"t": 1, "x": "a", "u": 2}'], ['{"t": 1}', '{"t": "a", "x": "a"}', '{"x": "a", "x": "b"}'], any_order=True)
    # const/enum objects: their members in any order too (past nine, key sets built at run time)
    pair = {"const": {"foo": "bar", "baz": {"a": 1, "b": 2}}}
    check(pair, ['{"foo": "bar", "baz": {"a": 1, "b": 2}}'], ['{"baz": {"a": 1, "b": 2}, "foo": "bar"}'])
    check(pair, ['{"foo": "bar", "baz": {"a": 1, "b": 2}}', '{"baz": {"b": 2, "a": 1}, "foo": "bar"}'],
          ['{"baz": {"a": 1, "b": 2}}', '{"foo": "bar", "foo": "bar"}', '{"foo": "bar", "baz": {"a": 1}}'], any_order=True)
    big = {f"k{i}": i for i in range(14)}
    check({"enum": [big, 3]}, [json.dumps(big), json.dumps(dict(reversed(list(big.items())))), "3"], [json.dumps({k: v for k, v in big.items() if k != "k3"})], any_order=True)


# ---- arrays ----------------------------------------------------------------------------------------


def test_items_prefix_items_counts():
    check({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}, ["[1]", "[1, 2, 3]"], ["[]", "[1, 2, 3, 4]", '["a"]'])
    check({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False}, ["[]", '["a"]', '["a", 1]'], ['["a", 1, 2]', "[1]"])
    check({"prefixItems": [{"type": "string"}], "items": {"type": "null"}, "minItems": 2}, ['["a", null]', '["a", null, null]'], ['["a"]', '["a", 1]'])
    # draft-07 tuple form
    check({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}}, ['["a", 1, 2]'], ['["a", "b"]'])


def test_contains():
    check({"contains": {"type": "integer"}}, ["[1]", '["a", 2]'], ["[]", '["a"]'])
    check({"contains": {"const": 1}, "minContains": 2, "maxContains": 3}, ["[1, 1]", "[1, 2, 1, 1]"], ["[1]", "[1, 1, 1, 1]"])
    check({"items": {"type": "integer"}, "contains": {"minimum": 5}, "maxContains": 1}, ["[1, 6]", "[6]"], ["[6, 7]", "[1, 2]"])


def test_unique_items_finite_domain():
    check({"items": {"enum": ["a", "b", "c"]}, "uniqueItems": True}, ['["a", "c"]', "[]", '["c", "b", "a"]'], ['["a", "a"]'])
    check({"items": {"type": "boolean"}, "uniqueItems": True}, ["[true, false]"], ["[true, true]"])
    check({"uniqueItems": True, "maxItems": 1}, ["[1]", "[]"], ["[1, 2]"])


# ---- combinators and references ----------------------------------------------------------------------


def test_all_any_one_of():
    check({"allOf": [{"type": "integer"}, {"minimum": 2}]}, ["2"], ["1", '"a"'])
    check({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]}, ["1", '"a"'], ['"ab"', "null"])
    check({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 10}]}, ["5", "10.5"], ["12"])
    check({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, ['{"a": 1}', '{"b": 1}'], ['{"a": 1, "b": 2}', "{}"])
    check(
        {"oneOf": [{"properties": {"kind": {"const": "x"}, "v": {"type": "integer"}}, "required": ["kind"]}, {"properties": {"kind": {"const": "y"}}, "required": ["kind"]}]},
        ['{"kind": "x", "v": 1}', '{"kind": "y", "v": "s"}'],
        ['{"kind": "x", "v": "s"}', '{"kind": "z"}'],
    )


def test_not_and_if_then_else():
    check({"not": {"type": "string"}}, ["1", "null", "{}"], ['"a"'])
    check({"type": "string", "not": {"enum": ["a", "b"]}}, ['"c"', '""'], ['"a"'])
    check({"type": "integer", "not": {"const": 3}}, ["2", "4"], ["3", "3.0"])
    check({"type": "number", "not": {"type": "integer"}}, ["1.5", "-0.25"], ["1", "2.0"])
    check({"not": {"type": "object", "required": ["a"]}}, ["{}", "1", '{"b": 1}'], ['{"a": 1}'])
    check({"if": {"properties": {"t": {"const": "n"}}}, "then": {"properties": {"v": {"type": "number"}}}, "else": {"properties": {"v": {"type": "string"}}}},
          ['{"t": "n", "v": 1}', '{"t": "s", "v": "x"}', '{"v": 1}'], ['{"t": "n", "v": "x"}', '{"v": "x"}', '{"t": "s", "v": 1}'])


def test_refs_and_recursion():
    tree = {
        "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"], "additionalProperties": False}},
        "$ref": "#/$defs/node",
    }
    check(tree, ['{"v": 1}', '{"v": 1, "kids": [{"v": 2, "kids": []}, {"v": 3}]}'], ['{"v": 1, "kids": [{}]}', '{"kids": []}'])
    check({"definitions": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/s"}}}, ['{"a": "x"}'], ['{"a": 1}'])
    check({"$defs": {"x": {"$anchor": "thing", "type": "null"}}, "items": {"$ref": "#thing"}}, ["[null]"], ["[1]"])
    # allOf with a recursive reference merges one level and keeps the recursion as a rule
    check({"$defs": {"l": {"type": "array", "items": {"$ref": "#/$defs/l"}}}, "allOf": [{"$ref": "#/$defs/l"}, {"maxItems": 1}]}, ["[]", "[[[], []]]"], ["[[], []]"])


def test_unevaluated_properties():
    schema = {"allOf": [{"properties": {"a": {}}}], "properties": {"b": {}}, "unevaluatedProperties": False}
    check(schema, ['{"a": 1, "b": 2}'], ['{"a": 1, "c": 3}'])
    check({"anyOf": [{"properties": {"a": {}}, "required": ["a"]}, {"properties": {"b": {}}, "required": ["b"]}], "unevaluatedProperties": False},
          ['{"a": 1}', '{"a": 1, "b": 2}'], ['{"a": 1, "c": 1}', "{}"])


def test_dialects():
    d4 = "http://json-schema.org/draft-04/schema#"
    # draft-04 has no const / if: they are annotations there (as jsonschema's Draft4Validator says)
    check({"$schema": d4, "type": "integer", "const": 3}, ["3", "4"], ['"a"'])
    # drafts up to 7 ignore the siblings of $ref
    check({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"s": {"type": "string"}}, "$ref": "#/definitions/s", "maxLength": 1}, ['"abc"'], ["1"])
    # 2020-12 applies them
    check({"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s", "maxLength": 1}, ['"a"'], ['"abc"', "1"])


def test_not_drops_annotations():
    schema = {"properties": {"foo": {"type": "string"}}, "not": {"not": {"properties": {"bar": {"const": "bar"}}, "required": ["bar"]}}, "unevaluatedProperties": False}
    check(schema, [], ['{"foo": "foo", "bar": "bar"}'])


def test_boolean_schemas_and_annotations():
    check(True, ["1", '{"a": [null]}'])
    with pytest.raises(SchemaError, match="admits no JSON value"):
        Schema(False)
    check({"title": "t", "description": "d", "examples": [1], "x-vendor": {"type": "string"}, "readOnly": True, "type": "integer"}, ["1"], ['"a"'])


def test_compact_whitespace():
    s = check({"type": "object", "properties": {"a": {"type": "array"}}}, ['{"a":[1,2]}'], ['{"a": [1]}'], style=JsonStyle("compact"))
    assert s.unenforced == []


# ---- not multipleOf: the complement of a remainder automaton ----------------------------------------


def _exact(text: str):
    """A JSON number as jsonschema's exact judge takes it: an int when integral, else a Fraction."""
    v = Fraction(Decimal(text))
    return int(v) if v.denominator == 1 else v


NOT_MULTIPLE_STEPS = st.sampled_from(["2", "3", "7", "12", "0.5", "2.5", "0.3"])


@SETTINGS
@given(
    kind=st.sampled_from(["integer", "number", None]),
    k=NOT_MULTIPLE_STEPS,
    also=st.one_of(st.none(), st.sampled_from(["2", "5", "1.5"])),
    lo=st.one_of(st.none(), st.integers(-500, 500)),
    ints=st.lists(st.integers(-(10**12), 10**12) | st.integers(-100, 100), max_size=12),
    fracs=st.lists(st.tuples(st.integers(-300, 300), st.sampled_from(["0", "5", "50", "3", "25", "75", "333"])), max_size=6),
)
def test_not_multiple_of_matches_jsonschema(kind, k, also, lo, ints, fracs):
    """`not: {multipleOf: k}` over an unbounded range, alone or with multipleOf, type and minimum:
    accepted exactly when jsonschema (given exact numbers, not floats) says valid."""
    parts, judge = [f'"not": {{"multipleOf": {k}}}'], {"not": {"multipleOf": Fraction(k)}}
    if kind:
        parts.append(f'"type": "{kind}"')
        judge["type"] = kind
    if also:
        parts.append(f'"multipleOf": {also}')
        judge["multipleOf"] = Fraction(also)
    if lo is not None:
        parts.append(f'"minimum": {lo}')
        judge["minimum"] = lo
    try:
        s = Schema("{" + ", ".join(parts) + "}")
    except EmptyLanguageError:  # e.g. integers that are not multiples of 0.5
        s = set()
    validator = jsonschema.Draft202012Validator(judge)
    for t in [str(i) for i in ints] + [f"{i}.{f}" for i, f in fracs] + ["0", "-0", "1.0", "6.00", "7.5"]:
        assert (t in s) == validator.is_valid(_exact(t)), (parts, t)


def test_not_multiple_of_examples():
    check({"type": "integer", "not": {"multipleOf": 3}}, ["1", "-2", "10", "10.0", "100000000000000000000001"], ["0", "-0", "3", "-9", "12.0", "1.5"])
    check({"type": "integer", "multipleOf": 2, "not": {"multipleOf": 3}}, ["2", "-4", "14.00"], ["6", "-12", "3", "0"])
    check({"type": "number", "multipleOf": 3.5, "not": {"type": "integer"}, "minimum": 0}, ["3.5", "10.50"], ["7", "0", "3.4", "-3.5"])
    check({"not": {"multipleOf": 0.5}, "minimum": 1}, ["1.25", "2.001"], ["1", "1.5", '"x"', "0.75"])


# ---- errors and strict=False ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema, keyword, pointer",
    [
        ({"properties": {"tags": {"type": "array", "items": {"maximum": 4}, "uniqueItems": True}}}, "uniqueItems", "/properties/tags/uniqueItems"),
        ({"properties": {"re": {"type": "string", "format": "regex"}}}, "format", "/properties/re/format"),
        ({"items": {"$ref": "http://example.com/remote.json"}}, "$ref", "/items/$ref"),
        ({"type": "string", "pattern": "(?=a)b"}, "pattern", "/pattern"),
        ({"not": {"uniqueItems": True, "type": "array"}}, "uniqueItems", "/not/uniqueItems"),
        ({"type": "integer", "not": {"multipleOf": 0.123456789}}, "multipleOf", "/not/multipleOf"),  # 123456789 remainders
    ],
)
def test_schema_error_names_keyword_and_pointer(schema, keyword, pointer):
    with pytest.raises(SchemaError) as info:
        json_schema_grammar(schema)
    assert info.value.keyword == keyword
    assert info.value.pointer == pointer
    assert keyword in str(info.value)


def test_invalid_schemas():
    for schema, keyword in [({"type": "strin"}, "type"), ({"minLength": -1}, "minLength"), ({"multipleOf": 0}, "multipleOf"), ({"required": "a"}, "required")]:
        with pytest.raises(SchemaError) as info:
            json_schema_grammar(schema)
        assert info.value.keyword == keyword


def test_non_strict_records_unenforced():
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "integer", "maximum": 9}, "uniqueItems": True}, "re": {"type": "string", "format": "regex"}}}
    s = check(schema, ['{"tags": [1, 1], "re": "("}'], ['{"tags": ["a"]}'], strict=False)
    assert sorted(s.unenforced) == [("format", "/properties/re/format"), ("uniqueItems", "/properties/tags/uniqueItems")]


def test_too_large_is_a_clear_error():
    props = {f"p{i}": {"type": "integer"} for i in range(16)}
    json_schema_grammar({"type": "object", "properties": props}, any_order=True)  # key sets built at run time
    json_schema_grammar({"type": "object", "properties": props, "dependentRequired": {"p0": ["p1"]}}, any_order=True)  # clauses too
    many = {f"p{i}": [f"p{i + 1}"] for i in range(15)}  # clauses over 16 members: 2**16 ways on per key set
    with pytest.raises(GrammarTooLargeError, match="presence clauses over more than"):
        json_schema_grammar({"type": "object", "properties": props, "dependentRequired": many}, any_order=True)
    with pytest.raises(GrammarTooLargeError, match="'not' member constraints"):  # those would need a search per key set
        json_schema_grammar({"type": "object", "properties": props, "not": {"additionalProperties": False}}, any_order=True)


# ---- public API ----------------------------------------------------------------------------------------


def _accepts(compiled, text, encode) -> bool:
    m = sg.GrammarMatcher(compiled)
    return all(m.accept_token(t) for t in encode(text)) and m.accept_token(compiled.tokenizer_info.eos_token_ids[0])


@pytest.fixture(scope="module")
def encode():
    from strictgen.tokenizer.info import text_encoder

    return text_encoder("qwen")


def test_public_api_compile_json_schema(qwen, encode):
    compiler = sg.GrammarCompiler(qwen)
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}, "required": ["name"]}
    g = compiler.compile_json_schema(schema)
    assert g.unenforced == []
    assert _accepts(g, '{"name": "Ada", "age": 36}', encode)
    assert not _accepts(g, '{"name": "Ada", "age": -1}', encode)
    # caching by content: the same dict, its JSON text, an equal dict -> the same object
    assert compiler.compile_json_schema(json.dumps(schema)) is g
    assert compiler.compile_json_schema(dict(schema)) is g
    assert compiler.compile_json_schema(schema, whitespace="compact") is not g
    short_tags = {"type": "array", "items": {"type": "integer", "maximum": 100}, "uniqueItems": True}  # bounded numbers
    loose = compiler.compile_json_schema(short_tags, strict=False)
    assert loose.unenforced == [("uniqueItems", "/uniqueItems")]
    with pytest.raises(sg.SchemaError):
        compiler.compile_json_schema(short_tags)


def test_many_pattern_properties_split_by_the_keys_they_match():
    names = ["^alpha$", "^beta$", "^gamma$", "^delta$", "^(eps|epsilon)$", "^x"]
    schema = {
        "type": "object",
        "patternProperties": {p: {"type": "integer", "minimum": i} for i, p in enumerate(names)},
        "additionalProperties": {"type": "string"},
    }
    check(
        schema,
        ['{"alpha": 0, "epsilon": 4}', '{"xbeta": 5}', '{"other": "s"}', '{"\\u0062eta": 1}'],
        ['{"beta": 0}', '{"eps": 3}', '{"xy": 4}', '{"other": 1}', '{"\\u0062eta": 0}', '{"x": "s"}'],
    )
    overlapping = {"type": "object", "patternProperties": {c: {"maxLength": 1} for c in "abcdef"}}
    with pytest.raises(SchemaError, match="overlap in more than"):
        json_schema_grammar(overlapping)


def test_whitespace_after_the_value_is_bounded_by_the_style():
    s = check({"type": "integer"}, ["1", "1\n", "1 \t ", "1\r\n  "], ["1\n\n", "1" + " " * 21, " 1"])
    assert "2\n" + " " * 20 in s
    check({"type": "integer"}, ["1"], ["1 ", "1\n"], style=JsonStyle("compact"))
    check({"type": "object"}, ['{"a": 1}\n'], ['{"a": 1}\n\n'], style=JsonStyle(max_indent=2))


def test_formats_annotate(qwen):
    schema = {"type": "string", "format": "date"}
    check(schema, ['"2020-01-31"'], ['"2020-01-32"', '"x"'])
    check(schema, ['"2020-01-32"', '"x"'], ["1"], formats="annotate")
    check({"format": "regex"}, ['"("'], formats="annotate")  # not refused: nothing to enforce
    compiler = sg.GrammarCompiler(qwen)
    assert compiler.compile_json_schema(schema, formats="annotate") is not compiler.compile_json_schema(schema)
    with pytest.raises(sg.StrictgenError, match="formats must be one of"):
        compiler.compile_json_schema(schema, formats="sometimes")


def test_pydantic_model(qwen, encode):
    import pydantic
    from typing import Literal as L
    from typing import Optional

    class Pet(pydantic.BaseModel):
        kind: L["cat", "dog"]
        name: str

    class Owner(pydantic.BaseModel):
        name: str
        pets: list[Pet]
        age: Optional[int] = None

    g = sg.GrammarCompiler(qwen).compile_json_schema(Owner)
    doc = Owner(name="Ann", pets=[Pet(kind="cat", name="Tom")], age=3).model_dump_json()
    assert _accepts(g, doc, encode)
    assert _accepts(g, '{"name": "Ann", "pets": [], "age": null}', encode)
    assert not _accepts(g, '{"name": "Ann", "pets": [{"kind": "cow", "name": "x"}]}', encode)


# ---- hypothesis: random schemas, generated and mutated documents, judged by jsonschema -------------------

PATTERNS = ["^[a-z]+$", "b", "^a", "[0-9]$", "^(ab|cd)*$", "^[é😀/a-c]{0,3}$", '["\\\\\n]']
ODD_STRINGS = ["é/", "😀", 'a"b', "\\", "\n\t", "/"]  # characters that have several spellings

scalar_schemas = st.one_of(
    st.builds(lambda lo, n: {"type": "string", "minLength": lo, "maxLength": lo + n}, st.integers(0, 3), st.integers(0, 4)),
    st.builds(lambda p: {"type": "string", "pattern": p}, st.sampled_from(PATTERNS)),
    st.builds(lambda lo, n: {"type": "integer", "minimum": lo, "maximum": lo + n}, st.integers(-20, 20), st.integers(0, 50)),
    st.builds(lambda m: {"type": "integer", "multipleOf": m}, st.integers(1, 7)),
    st.builds(lambda lo: {"type": "number", "exclusiveMinimum": lo}, st.integers(-5, 5)),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.builds(lambda vs: {"enum": vs}, st.lists(st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "c", *ODD_STRINGS]), st.none()), min_size=1, max_size=4)),
    st.builds(lambda v: {"const": v}, st.sampled_from(ODD_STRINGS)),
    st.builds(lambda lo, p: {"type": "string", "minLength": lo, "maxLength": lo + 1, "pattern": p}, st.integers(0, 2), st.sampled_from(PATTERNS)),
    st.builds(lambda a, b: {"anyOf": [a, b]}, st.just({"type": "string", "maxLength": 2}), st.just({"type": "integer"})),
)


def _schemas():
    def extend(children):
        obj = st.builds(
            lambda props, req, add: {
                "type": "object",
                "properties": props,
                "required": sorted(k for k in props if k in req),
                "additionalProperties": add,
            },
            st.dictionaries(st.sampled_from(["a", "b", "é", "d/"]), children, max_size=3),
            st.sets(st.sampled_from(["a", "b", "é", "d/"])),
            st.one_of(st.booleans(), st.just({"type": "integer"})),
        )
        arr = st.builds(
            lambda items, lo, n: {"type": "array", "items": items, "minItems": lo, "maxItems": lo + n},
            children,
            st.integers(0, 2),
            st.integers(0, 3),
        )
        keyed = st.builds(
            lambda p, v: {"type": "object", "patternProperties": {p: v}, "propertyNames": {"maxLength": 2}},
            st.sampled_from(PATTERNS),
            children,
        )
        return st.one_of(obj, arr, keyed)

    return st.recursive(scalar_schemas, extend, max_leaves=6)


def _mutations(doc, rnd: random.Random):
    """Nearby documents: values swapped for other kinds, keys added or dropped, items added."""
    out = [None, 0, 1.5, "zz", [], {}, True]
    if isinstance(doc, dict):
        for k in list(doc):
            d = dict(doc)
            del d[k]
            out.append(d)
            for repl in (None, "q", 100, -100, [1]):
                d = dict(doc)
                d[k] = repl
                out.append(d)
        out.append({**doc, "x": 1})
    if isinstance(doc, list):
        out.append(doc + [None])
        out.append(doc[:-1])
        out.append(doc + doc)
        if doc:
            out.append([["?"]] + doc[1:])
    if isinstance(doc, (int, float)) and not isinstance(doc, bool):
        # only floats whose shortest repr is their exact value: 24287435004649870 + 0.5 is the float
        # ...872, written 2.428743500464987e+16, a text whose value is ...870 (valid for multipleOf 5)
        out += [x for x in (doc + 1, doc - 1, doc + 0.5, -doc) if not isinstance(x, float) or Decimal(repr(x)) == Decimal(x)]
    if isinstance(doc, str):
        out += [doc + "a", doc[:-1], doc + "0", "ab" + doc]
    rnd.shuffle(out)
    return out[:12]


@SETTINGS
@given(schema=_schemas(), data=st.data())
def test_random_schemas_match_jsonschema(schema, data):
    hypothesis_jsonschema = pytest.importorskip("hypothesis_jsonschema")  # the `test` extra should list it
    from_schema = hypothesis_jsonschema.from_schema
    from jsonschema import Draft202012Validator

    from tests.helpers import respell_strings
    from tests.test_schema_suites import FORMS, serialise_for

    validator = Draft202012Validator(schema)
    grammar, _ = json_schema_grammar(schema)

    class C:  # the bits of CompiledGrammar that serialise_for uses
        machine = PushdownMachine(compile_automaton(grammar))

    rnd = random.Random(0)

    def spellings(doc) -> list[str]:
        """The document in every Form, and once more with its strings in random spellings."""
        texts = [serialise_for(C, doc, schema, form) for form in FORMS]
        return texts + [respell_strings(texts[0], rnd)]

    def accepted(text: str) -> bool:
        s = C.machine.step_bytes(C.machine.start, text.encode())
        return s != DEAD and bool(C.machine.accepting[s])

    try:
        doc = data.draw(from_schema(schema))
    except Exception:  # hypothesis-jsonschema cannot always generate
        assume(False)
        return
    assert validator.is_valid(doc)
    for text in spellings(doc):  # complete: every spelling of a valid document
        assert accepted(text), f"valid {text!r} rejected by {schema}"
    for bad in _mutations(doc, random.Random(0)):
        if not validator.is_valid(bad):  # sound: no spelling of an invalid one
            for text in spellings(bad):
                assert not accepted(text), f"invalid {text!r} accepted by {schema}"
