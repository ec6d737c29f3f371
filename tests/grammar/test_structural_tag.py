"""Structural tags (vLLM / xgrammar's format) through GrammarCompiler.compile_structural_tag."""

from __future__ import annotations

import pytest

import strictgen as sg
from strictgen.grammar.structural_tag import StructuralTagError

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": False}
CALL = {"begin": "<f>", "content": {"type": "json_schema", "json_schema": SCHEMA}, "end": "</f>"}

CASES = [
    ({"type": "const_string", "value": "hi"}, ["hi"], ["h", "hii"]),
    ({"type": "regex", "pattern": "[a-c]{2}"}, ["ab", "cc"], ["a", "ad"]),
    ({"type": "grammar", "grammar": 'root ::= "x" [0-9]+'}, ["x1", "x42"], ["x", "y1"]),
    ({"type": "json_schema", "json_schema": SCHEMA}, ['{"q": "a"}'], ['{"q": 1}', "{}"]),
    ({"type": "any_text"}, ["", "anything at all"], []),
    ({"type": "sequence", "elements": [{"type": "const_string", "value": "A:"}, {"type": "any_text"}]}, ["A:", "A: b"], ["B:"]),
    ({"type": "or", "elements": [{"type": "const_string", "value": "yes"}, {"type": "const_string", "value": "no"}]}, ["yes", "no"], ["maybe"]),
    ({"type": "tag", "begin": "<p>", "content": {"type": "any_text"}, "end": "</p>"}, ["<p>x</p>", "<p></p>"], ["<p>x</p>y", "<p>a</p>b</p>"]),
    ({"type": "tag", "begin": "<n>", "content": {"type": "regex", "pattern": "[0-9]+"}, "end": ["</n>", "."]}, ["<n>1</n>", "<n>22."], ["<n>1"]),
    ({"type": "triggered_tags", "triggers": ["<f>"], "tags": [CALL]}, ["plain", 'a <f>{"q": "x"}</f> b <f>{"q": "y"}</f>'], ["a <f>oops</f>"]),
    ({"type": "triggered_tags", "triggers": ["<f>"], "tags": [CALL], "at_least_one": True, "stop_after_first": True}, ['x <f>{"q": "x"}</f>'], ["x", 'x <f>{"q": "x"}</f> y']),
    ({"type": "tags_with_separator", "tags": [CALL], "separator": ",", "at_least_one": True}, ['<f>{"q": "x"}</f>,<f>{"q": "y"}</f>'], ["", '<f>{"q": "x"}</f>,']),
    ({"type": "tags_with_separator", "tags": [CALL], "separator": ","}, ["", '<f>{"q": "x"}</f>'], ["x"]),
    # xgrammar's `excludes`, and its default fields as SGLang writes them (through xgrammar's model)
    ({"type": "any_text", "excludes": ["bad"], "max_chars": None}, ["good", "ba d"], ["so bad", "bad"]),
    ({"type": "triggered_tags", "triggers": ["<f>"], "tags": [CALL], "excludes": ["!"], "at_least_one": False}, ['a <f>{"q": "!"}</f>'], ["a!"]),
    ({"type": "json_schema", "json_schema": SCHEMA, "style": "json", "any_order": False, "max_whitespace_cnt": None, "excludes": []}, ['{"q": "a"}'], ["{}"]),
]


@pytest.fixture(scope="module")
def compiler():
    return sg.GrammarCompiler(sg.TokenizerInfo.from_name("smollm2"))


def _accepts(compiled, text: str) -> bool:
    m = sg.GrammarMatcher(compiled)
    return m.accept_string(text) and m.accept_token(compiled.tokenizer_info.eos_token_ids[0])


@pytest.mark.parametrize("fmt,good,bad", CASES, ids=[c[0]["type"] + str(i) for i, c in enumerate(CASES)])
def test_each_format_type(compiler, fmt, good, bad):
    g = compiler.compile_structural_tag({"type": "structural_tag", "format": fmt}, whitespace="spaced")
    for text in good:
        assert _accepts(g, text), text
    for text in bad:
        assert not _accepts(g, text), text


def test_older_vllm_form_and_cache(compiler):
    tag = {"type": "structural_tag", "structures": [{"begin": "<f>", "schema": SCHEMA, "end": "</f>"}], "triggers": ["<f>"]}
    g = compiler.compile_structural_tag(tag, whitespace="spaced")
    assert _accepts(g, 'x <f>{"q": "z"}</f>') and not _accepts(g, "x <f>{}</f>")
    assert compiler.compile_structural_tag(tag, whitespace="spaced") is g
    g = compiler.compile_structural_tag({**tag, "at_least_one": True}, whitespace="spaced")  # SGLang's legacy field
    assert _accepts(g, 'x <f>{"q": "z"}</f>') and not _accepts(g, "x")


@pytest.mark.parametrize(
    "tag,where",
    [
        ({"type": "structural_tag", "format": {"type": "nope"}}, "/format/type"),
        ({"type": "structural_tag", "format": {"type": "sequence", "elements": [{"type": "const_string"}]}}, "/format/elements/0"),
        ({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<g>"], "tags": [CALL]}}, "/format/tags/0/begin"),
        ({"type": "structural_tag"}, "/"),
        # xgrammar fields strictgen does not enforce are refused unless they hold their default
        ({"type": "structural_tag", "format": {"type": "json_schema", "json_schema": SCHEMA, "style": "qwen_xml"}}, "/format/style"),
        ({"type": "structural_tag", "format": {"type": "json_schema", "json_schema": SCHEMA, "max_whitespace_cnt": 2}}, "/format/max_whitespace_cnt"),
        ({"type": "structural_tag", "format": {"type": "any_text", "max_tokens": 5}}, "/format/max_tokens"),
        ({"type": "structural_tag", "format": {"type": "grammar", "grammar": "start: x", "syntax": "lark"}}, "/format/syntax"),
        ("not json", "/"),
    ],
)
def test_malformed_tags_say_where(compiler, tag, where):
    with pytest.raises(StructuralTagError) as err:
        compiler.compile_structural_tag(tag)
    assert where in str(err.value) and isinstance(err.value, sg.StrictgenError)


@pytest.mark.parametrize("kind", ["field", "tags", "_field", "build", "fresh", "__init__", "excludes"])
def test_a_kind_is_looked_up_in_the_table_never_as_a_method(kind):
    """Request data never names a method of the builder: every unknown kind, a method's name
    included, is a StructuralTagError that names it and lists the kinds there are."""
    from strictgen.grammar.structural_tag import FORMAT_KINDS, StructuralTagError, structural_tag_grammar

    with pytest.raises(StructuralTagError) as info:
        structural_tag_grammar({"type": "structural_tag", "format": {"type": kind}})
    assert repr(kind) in str(info.value) and all(k in str(info.value) for k in FORMAT_KINDS)
