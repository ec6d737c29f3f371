"""Templates written for this test, in call syntaxes no family uses, through the real server (the
embedded model) and the official openai client: the call syntax is inferred from the template and
constrains and parses the answer, streamed and not; the prompt is the template's own rendering
(Hugging Face's renderer judges); a template whose call syntax cannot be found refuses
tool_choice "required" with a 400 that names it; one that cannot render tools gets the fallback
prompt, and the response says so."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

# `<<call NAME>>{json}<</call>>`, several in a row, the tools as JSON lines in a `<<tools>>` block
NOVEL = """{%- if tools %}<<tools>>
{% for t in tools %}{{ t.function | tojson }}
{% endfor %}<</tools>>
{% endif %}
{%- for m in messages %}
{%- if m.role == 'assistant' %}<<bot>>{% if m.content %}{{ m.content }}{% endif %}{% for c in m.tool_calls or [] %}<<call {{ c.function.name }}>>{{ c.function.arguments | tojson }}<</call>>{% endfor %}<<end>>
{% elif m.role == 'tool' %}<<result>>{{ m.content }}<<end>>
{% else %}<<{{ m.role }}>>{{ m.content }}<<end>>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<<bot>>{% endif %}"""
# per-parameter blocks in a syntax of its own: `[[fn NAME]] {key=value;} [[/fn]]`
NOVEL_KV = """{%- if tools %}TOOLS: {{ tools | map(attribute='function') | map(attribute='name') | join(', ') }}
{% endif %}
{%- for m in messages %}
{%- if m.role == 'assistant' %}### bot
{% if m.content %}{{ m.content }}{% endif %}{% for c in m.tool_calls or [] %}[[fn {{ c.function.name }}]]{% for k, v in c.function.arguments.items() %}{key={{ k }}|{{ v }}}{% endfor %}[[/fn]]{% endfor %}
{% else %}### {{ m.role }}
{{ m.content }}
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}### bot
{% endif %}"""
# renders the tools but never an assistant's tool calls
NO_CALLS = "{%- if tools %}<<tools>>{{ tools | tojson }}<</tools>>{% endif %}{% for m in messages %}<<{{ m.role }}>>{{ m.content }}<<end>>{% endfor %}{% if add_generation_prompt %}<<bot>>{% endif %}"
# renders neither tools nor calls
PLAIN = "{% for m in messages %}<<{{ m.role }}>>{{ m.content }}<<end>>{% endfor %}{% if add_generation_prompt %}<<bot>>{% endif %}"

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}, "days": {"type": "integer", "minimum": 1, "maximum": 5}}, "required": ["city", "days"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather forecast of a city", "parameters": WEATHER}}]
ASK = [{"role": "user", "content": "What is the weather in Paris for 2 days?"}]


@pytest.fixture(scope="module")
def serve(server, tmp_path_factory):
    """serve(template text, file name) -> (Server, openai client) with that template in place of
    the model's, over the one loaded model (tests/serve/conftest.py)."""
    from openai import OpenAI

    from strictgen.serve import Server, create_app

    from .http import start, stop

    model = server.pool.primary
    original, running = model.chat_template, []

    def make(source: str, name: str):
        path = tmp_path_factory.mktemp("templates") / name
        path.write_text(source, encoding="utf-8")
        model.chat_template = original.replaced_by(str(path))
        templated = Server(server.pool, server.model_name, server.limits)
        uv, thread, url = start(create_app(templated))
        running.append((uv, thread))
        return templated, OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)

    yield make
    for uv, thread in running:
        stop(uv, thread)
    model.chat_template = original


def _hf_prompt_tokens(server, source: str, messages, tools) -> int:
    from transformers.utils.chat_template_utils import render_jinja_template

    model = server.pool.primary
    text = render_jinja_template([messages], tools=tools, chat_template=source, add_generation_prompt=True, bos_token=model.chat_template.bos_token, eos_token=model.chat_template.eos_token)[0][0]
    ids = model.tokenize(text, special=True)
    return len(ids) + (1 if model.add_bos and model.bos_token_id is not None and (not ids or ids[0] != model.bos_token_id) else 0)


@pytest.mark.parametrize("source", [NOVEL, NOVEL_KV], ids=["json", "blocks"])
def test_novel_call_syntax_end_to_end(serve, source):
    server, client = serve(source, "novel.jinja")
    assert server.chat.detected == "inferred" and server.chat.native
    fmt = server.chat.tools
    expect = {NOVEL: "<<call get_weather>>", NOVEL_KV: "[[fn get_weather]]"}[source]
    assert fmt.render([("get_weather", {"city": "Paris", "days": 2})]).startswith(expect)
    kw = dict(model="default", messages=ASK, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, max_tokens=60, temperature=0)
    raw = client.chat.completions.with_raw_response.create(**kw)
    assert raw.headers["x-strictgen-tool-prompt"] == "template"
    full = raw.parse()
    assert full.usage.prompt_tokens == _hf_prompt_tokens(server, source, ASK, TOOLS), "the prompt is the template's own rendering"
    choice = full.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = [(t.function.name, t.function.arguments) for t in choice.message.tool_calls]
    assert len(calls) == 1 and calls[0][0] == "get_weather"
    jsonschema.validate(json.loads(calls[0][1]), WEATHER)
    streamed: dict[int, list[str]] = {}
    for chunk in client.chat.completions.create(**kw, stream=True):
        for tc in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            got = streamed.setdefault(tc.index, ["", ""])
            got[0] += tc.function.name or ""
            got[1] += tc.function.arguments or ""
    assert [tuple(v) for _, v in sorted(streamed.items())] == calls


def test_unknown_call_syntax_refuses_required(serve):
    server, client = serve(NO_CALLS, "no_calls.jinja")
    assert server.chat.native and server.chat.tools is None
    for choice in ("required", {"type": "function", "function": {"name": "get_weather"}}):
        with pytest.raises(openai.BadRequestError) as err:
            client.chat.completions.create(model="default", messages=ASK, tools=TOOLS, tool_choice=choice, max_tokens=8)
        message = err.value.body["message"]
        assert "no_calls.jinja" in message and "tool_calls" in message, message
    free = client.chat.completions.create(model="default", messages=ASK, tools=TOOLS, tool_choice="auto", max_tokens=4, temperature=0)
    assert free.choices[0].message.tool_calls is None and free.choices[0].message.content is not None


def test_template_without_tools_gets_the_fallback_and_says_so(serve, caplog):
    with caplog.at_level("WARNING", logger="strictgen.serve.tools"):
        server, client = serve(PLAIN, "plain.jinja")
    assert not server.chat.native and server.chat.detected == "fallback"
    assert any("plain.jinja" in r.getMessage() and "fallback" in r.getMessage() for r in caplog.records)
    kw = dict(model="default", messages=ASK, tools=TOOLS, tool_choice="required", max_tokens=40, temperature=0)
    raw = client.chat.completions.with_raw_response.create(**kw)
    assert raw.headers["x-strictgen-tool-prompt"] == "fallback"
    assert raw.parse().choices[0].finish_reason == "tool_calls"
    with client.chat.completions.with_streaming_response.create(**kw, stream=True) as stream:
        assert stream.headers["x-strictgen-tool-prompt"] == "fallback"
    plain = client.chat.completions.with_raw_response.create(model="default", messages=ASK, max_tokens=2)
    assert "x-strictgen-tool-prompt" not in plain.headers
    tool = {"type": "function", "name": "get_weather", "parameters": WEATHER}
    answer = client.responses.with_raw_response.create(model="default", input="Weather in Paris?", tools=[tool], tool_choice="required", max_output_tokens=40, temperature=0)
    assert answer.headers["x-strictgen-tool-prompt"] == "fallback"
