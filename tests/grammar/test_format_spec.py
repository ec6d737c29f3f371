"""The format-request table (grammar/format_spec.py, compiled by GrammarCompiler.compile_format):
kinds only from the table, values checked with the field named, one compile per content, and the
reasoning block in front of JSON formats only. The dialects' use of it: tests/serve/test_format_specs.py."""

from __future__ import annotations

import json

import pytest

import strictgen as sg
from strictgen.grammar.format_spec import FORMAT_KINDS, FormatError, FormatOptions, FormatSpec
from strictgen.grammar.reasoning import THINK

CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"], "additionalProperties": False}
DOC = '{"city": "Paris"}'
THOUGHT = "<think>\nParis is a city.\n</think>\n\n"


def accepts(grammar, text: str) -> bool:
    """`text` is a whole document of `grammar` (accepted, then EOS)."""
    m = sg.GrammarMatcher(grammar)
    return m.accept_string(text) and m.accept_token(grammar.tokenizer_info.eos_token_ids[0])


def test_an_unknown_kind_is_refused_with_the_list_of_kinds(qwen):
    compiler = sg.GrammarCompiler(qwen)
    for kind in ("field", "__init__", "build", None):
        with pytest.raises(FormatError) as info:
            compiler.compile_format(FormatSpec(kind, "x", origin="response_format"))
        assert repr(kind) in str(info.value) and all(k in str(info.value) for k in FORMAT_KINDS)
        assert info.value.param == "response_format"


@pytest.mark.parametrize(
    "kind,value,message",
    [("regex", 3, "must be a string"), ("grammar", ["a"], "must be a string"), ("choice", [], "non-empty list"), ("choice", "[1", "not valid JSON"), ("json_schema", 5, "object or a boolean"), ("structural_tag", [1], "must be an object")],
)
def test_values_of_the_wrong_shape_are_clear_errors(qwen, kind, value, message):
    with pytest.raises(FormatError, match=message) as info:
        sg.GrammarCompiler(qwen).compile_format(FormatSpec(kind, value, origin="field.x"))
    assert "field.x" in (info.value.param or "")


def test_equal_specs_share_one_compile_and_values_may_come_as_json_text(qwen):
    compiler = sg.GrammarCompiler(qwen)
    a = compiler.compile_format(FormatSpec("json_schema", CITY, origin="response_format"))
    assert compiler.compile_format(FormatSpec("json_schema", json.dumps(CITY), origin="format")) is a  # origin is not content
    choice = compiler.compile_format(FormatSpec("choice", '["yes", "no"]'))
    assert compiler.compile_format(FormatSpec("choice", ["yes", "no"])) is choice and accepts(choice, "no")


def test_the_reasoning_block_goes_before_json_formats_only(qwen):
    compiler = sg.GrammarCompiler(qwen)
    thinking = FormatOptions(reasoning=THINK)
    schema = compiler.compile_format(FormatSpec("json_schema", CITY, thinking))
    assert accepts(schema, THOUGHT + DOC) and accepts(schema, DOC) and not accepts(schema, "<think>x" + DOC)
    assert not accepts(compiler.compile_format(FormatSpec("json_schema", CITY)), THOUGHT + DOC)
    regex = compiler.compile_format(FormatSpec("regex", "[a-z]+", thinking))  # a regex describes the whole output
    assert accepts(regex, "abc") and not accepts(regex, "<think>a</think>abc")




def test_a_grammar_field_takes_gbnf_or_lark_and_the_lark_kind_lark(qwen):
    """Engines pass GBNF and Lark in one `grammar` field: a text with a `::=` rule is GBNF (root),
    any other Lark (start); the "lark" kind always reads Lark. A Lark syntax error keeps its place."""
    compiler = sg.GrammarCompiler(qwen)
    lark = 'start: "n=" NUM\nNUM: /[0-9]+/\n'
    for kind in ("grammar", "lark"):
        g = compiler.compile_format(FormatSpec(kind, lark, FormatOptions()))
        assert accepts(g, "n=42") and not accepts(g, "n=") and not accepts(g, "n=4a")
    gbnf = compiler.compile_format(FormatSpec("grammar", 'root ::= "n=" [0-9]+', FormatOptions()))
    assert accepts(gbnf, "n=7") and not accepts(gbnf, "m=7")
    with pytest.raises(sg.GrammarSyntaxError) as info:
        compiler.compile_format(FormatSpec("grammar", 'start: "a"\n  | /(?<=x)b/\n', FormatOptions()))
    assert info.value.line == 2


def test_an_embedded_json_schema_is_read_once_and_builds_the_grammar_of_its_text(monkeypatch):
    """format_spec and structural_tag hand json_schema_grammar the schema read once (a
    loaded_schema: the root's content is cut from its text, a text schema is not parsed again),
    and the grammar is the one of the schema's text."""
    import strictgen.grammar.json_schema as json_schema
    from strictgen.grammar.format_spec import prepare
    from strictgen.grammar.schema.values import LoadedSchema
    from strictgen.grammar.structural_tag import embed_schema

    schema = {"title": "t", "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    want = json_schema.json_schema_grammar(json.dumps(schema))[0]
    given = []
    real = json_schema.json_schema_grammar
    monkeypatch.setattr(json_schema, "json_schema_grammar", lambda s, **kw: given.append(type(s)) or real(s, **kw))
    for value in (schema, json.dumps(schema)):
        assert prepare(FormatSpec("json_schema", value))[1]().rules == want.rules
    rules: dict = {}
    embed_schema(schema, "p_", rules, FormatOptions().style)
    assert given == [LoadedSchema] * 3 and len(rules) == len(want.rules)
