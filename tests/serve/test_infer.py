"""Call formats inferred from templates written for these tests, in syntaxes of kinds the known
families do not cover (per-parameter blocks of other shapes, calls numbered, reasoning markers of
their own): the template's own rendering (Hugging Face's renderer) of calls parses back to the
calls on every prefix, and the call grammar accepts it; what cannot be inferred is named."""

from __future__ import annotations

import json

import pytest

import strictgen as sg
from strictgen.engine.model import ChatTemplate
from strictgen.serve.grammars import GrammarFactory, Tool
from strictgen.serve.tools.detect import chat_format
from strictgen.serve.tools.parse import parse_output
from strictgen.serve.tools.reasoning import Reasoning

TURNS = """{%- if tools %}<|system|>{% for t in tools %}{{ t.function | tojson }}{% endfor %}{% endif %}
{%- for m in messages %}{%- if m.role == 'assistant' %}<|assistant|>THINK{{ m.content or '' }}CALLS<|end|>{% elif m.role == 'tool' %}<|tool|>{{ m.content }}<|end|>{% else %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endif %}{%- endfor %}
{%- if add_generation_prompt %}<|assistant|>{% endif %}"""


def _template(calls: str, think: str = "") -> str:
    return TURNS.replace("THINK", think).replace("CALLS", calls)


TEMPLATES = {
    # GLM-4.5-like: the name on its own line, then <arg_key>/<arg_value> pairs
    "arg_pairs": _template(
        "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function.name }}\n{% for k, v in c.function.arguments.items() %}"
        "<arg_key>{{ k }}</arg_key>\n<arg_value>{{ v if v is string else v | tojson }}</arg_value>\n{% endfor %}</tool_call>{% endfor %}"
    ),
    # MiniMax-M2-like: one section, an <invoke> per call, <parameter name="k"> blocks
    "invoke": _template(
        "{% if m.tool_calls %}<calls>\n{% for c in m.tool_calls %}<invoke name=\"{{ c.function.name }}\">\n{% for k, v in c.function.arguments.items() %}"
        "<parameter name=\"{{ k }}\">{{ v if v is string else v | tojson }}</parameter>\n{% endfor %}</invoke>\n{% endfor %}</calls>{% endif %}"
    ),
    # numbered calls with JSON arguments, separated by " | ", in brackets
    "numbered": _template(
        "{% if m.tool_calls %}[[CALLS]]{% for c in m.tool_calls %}{% if not loop.first %} | {% endif %}#{{ loop.index0 }} {{ c.function.name }} {{ c.function.arguments | tojson }}{% endfor %}[[/CALLS]]{% endif %}"
    ),
    # compact JSON (no spaces), one section per call
    "compact": _template("{% for c in m.tool_calls or [] %}<fn name=\"{{ c.function.name }}\">{{ c.function.arguments | tojson(separators=(',', ':')) }}</fn>{% endfor %}"),
    # per-parameter values as JSON (strings quoted), with a reasoning block of its own
    "json_values": _template(
        "{% for c in m.tool_calls or [] %}<call:{{ c.function.name }}>{% for k, v in c.function.arguments.items() %}{{ k }}={{ v | tojson }};{% endfor %}</call>{% endfor %}",
        "{% if m.reasoning_content %}<<think>>{{ m.reasoning_content }}<</think>>{% endif %}",
    ),
}
SYNTAX = {  # what inference must find
    "arg_pairs": ("<tool_call>@NAME@\n@KV@</tool_call>", ("<arg_key>", "</arg_key>\n<arg_value>", "</arg_value>\n"), True),
    "invoke": ('<invoke name="@NAME@">\n@KV@</invoke>\n', ('<parameter name="', '">', "</parameter>\n"), True),
    "numbered": ("#@INDEX@ @NAME@ @ARGS@", None, True),
    "compact": ('<fn name="@NAME@">@ARGS@</fn>', None, True),
    "json_values": ("<call:@NAME@>@KV@</call>", ("", "=", ";"), False),
}
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}
ADD = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}
TOOLS = [Tool("get_weather", WEATHER, "Weather"), Tool("add", ADD, "Add two numbers")]
CALLS = [("get_weather", {"city": "Paris, France", "days": 2}), ("add", {"a": 1, "b": 22})]
QUESTION = "Weather in Paris, and 1+22?"


def _chat(name: str):
    return chat_format(ChatTemplate(TEMPLATES[name], "", "", f"{name}.jinja"))


def _rendered_calls(name: str) -> str:
    """The template's own text of an assistant turn with CALLS (Hugging Face's renderer), from
    where the generation prompt ends to the end of the turn."""
    from transformers.utils.chat_template_utils import render_jinja_template

    tools = [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}} for t in TOOLS]
    calls = [{"id": f"call{i}", "type": "function", "function": {"name": n, "arguments": a}} for i, (n, a) in enumerate(CALLS)]
    messages = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": None, "tool_calls": calls}]
    prompt = render_jinja_template([messages[:1]], tools=tools, chat_template=TEMPLATES[name], add_generation_prompt=True)[0][0]
    turn = render_jinja_template([messages], tools=tools, chat_template=TEMPLATES[name])[0][0]
    assert turn.startswith(prompt)
    return turn[len(prompt) : turn.rindex("<|end|>")]


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_inferred_syntax(name):
    cf = _chat(name)
    call, kv, raw = SYNTAX[name]
    assert cf.detected == "inferred" and cf.native, cf.missing
    fmt = cf.tools
    assert fmt.call == call and fmt.parallel
    if kv is not None:
        assert (fmt.kv, fmt.kv_raw) == (kv, raw)
    assert fmt.json_layout == ("compact" if name == "compact" else "spaced")
    assert fmt.render(CALLS) == _rendered_calls(name)
    assert cf.reasoning == (Reasoning("<<think>>", "<</think>>") if name == "json_values" else None)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_rendering_parses_back_on_every_prefix(name):
    cf = _chat(name)
    tools = {t.name: t.parameters for t in TOOLS}
    thought = f"{cf.reasoning.open}Two tools.{cf.reasoning.close}" if cf.reasoning else ""
    text = thought + _rendered_calls(name)
    final = parse_output(text, cf.tools, tools, cf.reasoning, final=True)
    assert [(c.name, json.loads(c.arguments)) for c in final.calls] == CALLS and final.content == ""
    for cut in range(len(text)):
        p = parse_output(text[:cut], cf.tools, tools, cf.reasoning, final=False)
        assert final.reasoning.startswith(p.reasoning) and len(p.calls) <= len(final.calls)
        for a, b in zip(p.calls, final.calls):
            if a.name is not None:
                assert a.name == b.name and b.arguments.startswith(a.arguments), text[:cut]


@pytest.fixture(scope="module")
def factory():
    return GrammarFactory(sg.GrammarCompiler(sg.TokenizerInfo.from_name("smollm2")))


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_grammar_accepts_the_rendering_and_keeps_the_schemas(name, factory):
    cf = _chat(name)
    text = _rendered_calls(name)
    eos = factory.compiler.tokenizer_info.eos_token_ids[0]

    def accepts(g, t):
        m = sg.GrammarMatcher(g)
        return m.accept_string(t) and m.accept_token(eos)

    required = factory.tool_calls(TOOLS, mode="required", parallel=True, reasoning=cf.reasoning, fmt=cf.tools)
    assert accepts(required, text)
    assert not accepts(required, cf.tools.render([("add", {"a": 1, "b": "x"})]))  # b is an integer
    assert not accepts(required, cf.tools.render([("add", {"a": 1})]))  # b is required
    auto = factory.tool_calls(TOOLS, mode="auto", parallel=True, reasoning=cf.reasoning, fmt=cf.tools)
    assert accepts(auto, "No tools needed.") and accepts(auto, text)


def test_what_is_not_found_is_named():
    from strictgen.serve.tools.infer import infer

    renders_no_calls = "{% if tools %}{{ tools | tojson }}{% endif %}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
    got = infer(ChatTemplate(renders_no_calls), None)
    assert got.renders_tools and got.fmt is None and "does not render them" in got.missing
    # Python-call arguments (Llama 3.2's and Llama 4's pythonic calls): a value language of its
    # own (quoted strings, no delimiter after the last argument) that inference does not guess
    pythonic = _template("[{% for c in m.tool_calls or [] %}{{ c.function.name }}({% for k, v in c.function.arguments.items() %}{{ k }}={{ v | tojson if v is not string else \"'\" + v + \"'\" }}{{ ', ' if not loop.last }}{% endfor %}){% endfor %}]")
    got = infer(ChatTemplate(pythonic), None)
    assert got.renders_tools and got.fmt is None and "arguments" in got.missing, got
