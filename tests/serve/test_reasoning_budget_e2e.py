"""`thinking_token_budget` end to end: the embedded model under gpt-oss's template (harmony, whose
analysis channel is the reasoning block) through the official openai client. The 135M model left
alone stays in the analysis channel until max_tokens (docs/serve.md); with a budget the channel is
closed at the bound and the call grammar takes over, so tool_choice="required" returns a valid call,
streamed and not alike."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

from .test_tool_formats import FOLDER  # noqa: E402  (skips this module too where the folder is absent)

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city", "parameters": WEATHER}}]
ASK = [{"role": "user", "content": "Weather in Paris?"}]
BUDGET = 4


@pytest.fixture(scope="module")
def served():
    from strictgen.serve import ServerLimits, build_server, create_app

    from .http import start, stop

    server = build_server("default", slots=1, n_ctx=2048, limits=ServerLimits(max_tokens=128),
                          chat_template=str(FOLDER / "openai-gpt-oss-120b.jinja"))
    uv, thread, url = start(create_app(server))
    yield server, openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)
    stop(uv, thread)
    server.pool.close()


@pytest.mark.slow  # loads the embedded model; two short requests
def test_budget_closes_the_analysis_channel_then_the_call(served):
    server, client = served
    assert server.chat.detected == "inferred" and server.reasoning is not None
    kw = dict(model="default", messages=ASK, tools=TOOLS, tool_choice="required", max_tokens=90, temperature=0,
              extra_body={"thinking_token_budget": BUDGET})
    full = client.chat.completions.create(**kw).choices[0]
    assert full.finish_reason == "tool_calls", full
    (call,) = full.message.tool_calls
    assert call.function.name == "get_weather"
    jsonschema.validate(json.loads(call.function.arguments), WEATHER)
    reasoning = getattr(full.message, "reasoning_content", None) or ""
    # the budget's tokens, give or take the token that completed the open marker and the re-encoded last ones
    assert len(server.pool.primary.tokenize(reasoning)) <= BUDGET + 2, reasoning
    args, said = "", ""
    for chunk in client.chat.completions.create(**kw, stream=True):
        delta = chunk.choices[0].delta if chunk.choices else None
        for tc in (delta.tool_calls or []) if delta else []:
            args += tc.function.arguments or ""
        said += (getattr(delta, "reasoning_content", None) or "") if delta else ""
    assert args == call.function.arguments and said == reasoning


def test_bad_budget_is_a_400(served):
    _, client = served
    with pytest.raises(openai.BadRequestError, match="thinking_token_budget"):
        client.chat.completions.create(model="default", messages=ASK, max_tokens=4, extra_body={"thinking_token_budget": -2})
