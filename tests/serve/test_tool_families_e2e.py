"""End to end on the embedded model with `--chat-template` set to other families: tool_choice="required"
gives valid calls in that family's syntax through the official openai client, streamed and not, and a
structural_tag response format gives output its format accepts."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

from .test_tool_formats import FOLDER  # noqa: E402  (skips this module too where the folder is absent)

FAMILIES = {  # short prompts (the embedded model prefills them quickly), four different syntaxes
    "qwen3_coder": "Qwen3-Coder.jinja",
    "deepseek_v3_1": "deepseek-ai-DeepSeek-V3.1.jinja",
    "mistral_nemo": "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "gemma4": "google-gemma-4-31B-it.jinja",
}
WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city", "parameters": WEATHER}}]
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def model_server():
    """One loaded model; each family gets its own Server (template) over it."""
    from strictgen.serve import ServerLimits, build_server

    server = build_server("default", slots=1, n_ctx=2048, limits=ServerLimits(max_tokens=128))
    yield server
    server.pool.close()


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family_client(request, model_server):
    from openai import OpenAI

    from strictgen.serve import Server, create_app

    from .http import start, stop

    model = model_server.pool.primary
    original = model.chat_template
    model.chat_template = original.replaced_by(str(FOLDER / FAMILIES[request.param]))
    server = Server(model_server.pool, model_server.model_name, model_server.limits)
    uv, thread, url = start(create_app(server))
    yield request.param, server, OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)
    stop(uv, thread)
    model.chat_template = original


@pytest.mark.slow
def test_required_call_in_the_family_syntax(family_client):
    from strictgen.serve.tools.parse import parse_output

    from strictgen.serve.tools.families import BY_NAME

    family, server, client = family_client
    assert server.chat.detected == "inferred"
    assert server.chat.tools.render([("get_weather", {"city": "Paris"})], ["abcDEF123"]) == BY_NAME[family].render([("get_weather", {"city": "Paris"})], ["abcDEF123"])
    kw = dict(model="default", messages=ASK, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, max_tokens=100, temperature=0)  # markers are text on SmolLM2: ~60 tokens
    full = client.chat.completions.create(**kw).choices[0]
    assert full.finish_reason == "tool_calls"
    calls = [(t.function.name, t.function.arguments) for t in full.message.tool_calls]
    for name, args in calls:
        assert name == "get_weather"
        jsonschema.validate(json.loads(args), WEATHER)
    # the same calls, written in the family's own syntax, read back through its parser
    text = server.chat.tools.render([(n, json.loads(a)) for n, a in calls], ["abcDEF123"] * len(calls))
    again = parse_output(text, server.chat.tools, {"get_weather": WEATHER}, None, final=True)
    assert [(c.name, c.arguments) for c in again.calls] == calls
    streamed: dict[int, list[str]] = {}
    for chunk in client.chat.completions.create(**kw, stream=True):
        for tc in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            got = streamed.setdefault(tc.index, ["", ""])
            got[0] += tc.function.name or ""
            got[1] += tc.function.arguments or ""
    assert [tuple(v) for _, v in sorted(streamed.items())] == calls


def test_structural_tag_output_is_accepted(family_client):
    import strictgen as sg

    family, server, client = family_client  # every family's template around the same tag
    tag = {
        "type": "structural_tag",
        "format": {
            "type": "sequence",
            "elements": [
                {"type": "const_string", "value": "City: "},
                {"type": "tag", "begin": "<city>", "content": {"type": "json_schema", "json_schema": {"type": "string", "enum": ["Paris", "Rome"]}}, "end": "</city>"},
                {"type": "regex", "pattern": "\\n[0-9]{1,2} C"},
            ],
        },
    }
    r = client.chat.completions.create(model="default", messages=ASK, response_format=tag, max_tokens=30, temperature=0)
    text = r.choices[0].message.content
    m = sg.GrammarMatcher(sg.GrammarCompiler(server.pool.primary.tokenizer_info).compile_structural_tag(tag, whitespace="spaced"))
    assert m.accept_string(text), text
