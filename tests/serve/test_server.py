"""The server over HTTP with the official openai client and plain httpx: every dialect, tools, streaming."""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field

CITY = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}, "temp_c": {"type": "integer", "minimum": -50, "maximum": 60}},
    "required": ["city", "temp_c"],
    "additionalProperties": False,
}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"], "additionalProperties": False},
    },
}
ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"], "additionalProperties": False},
    },
}
TOOLS = [WEATHER_TOOL, ADD_TOOL]
ASK = [{"role": "user", "content": "What is the weather in Paris right now?"}]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


class City(BaseModel):
    city: str = Field(max_length=20)
    temp_c: int


def chat(client, **kw):
    kw.setdefault("model", "default")
    kw.setdefault("messages", [{"role": "user", "content": "Give the weather in Paris as JSON."}])
    kw.setdefault("max_tokens", 40)
    kw.setdefault("temperature", 0)
    return client.chat.completions.create(**kw)


def check_calls(calls):
    assert calls, "no tool calls"
    for call in calls:
        assert call.type == "function" and call.id.startswith("call_")
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


def test_models_and_health(client, base_url):
    ids = [m.id for m in client.models.list()]
    assert len(ids) == 1 and "SmolLM2" in ids[0]
    health = httpx.get(base_url + "/health").json()
    assert health["status"] == "ok" and health["slots"] == 2


def test_text(client):
    r = chat(client, messages=[{"role": "user", "content": "Say hello."}], max_tokens=8)
    assert r.choices[0].message.content and r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.completion_tokens <= 8 and r.usage.prompt_tokens > 0


def test_json_object(client):
    r = chat(client, response_format={"type": "json_object"})
    json.loads(r.choices[0].message.content)


def test_json_schema_strict(client):
    r = chat(client, response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": CITY, "strict": True}})
    jsonschema.validate(json.loads(r.choices[0].message.content), CITY)


def test_parse_pydantic(client):
    r = client.chat.completions.parse(model="default", messages=[{"role": "user", "content": "Weather in Rome as JSON."}], response_format=City, max_tokens=40, temperature=0)
    parsed = r.choices[0].message.parsed
    assert isinstance(parsed, City) and len(parsed.city) <= 20


def test_responses_parse_pydantic(client):
    r = client.responses.parse(model="default", input="Weather in Oslo as JSON.", text_format=City, max_output_tokens=40, temperature=0)
    assert isinstance(r.output_parsed, City)


def test_responses_function_tool(client):
    tool = {"type": "function", "name": "get_weather", "parameters": WEATHER_TOOL["function"]["parameters"], "strict": True}
    r = client.responses.create(model="default", input="Weather in Paris?", tools=[tool], tool_choice="required", max_output_tokens=40, temperature=0)
    calls = [o for o in r.output if o.type == "function_call"]
    assert calls and calls[0].name == "get_weather"
    jsonschema.validate(json.loads(calls[0].arguments), SCHEMAS["get_weather"])


@pytest.mark.parametrize("choice", ["required", "named"])
def test_tool_choice_forced(client, choice):
    tc = {"type": "function", "function": {"name": "add"}} if choice == "named" else "required"
    r = chat(client, messages=ASK, tools=TOOLS, tool_choice=tc)
    c = r.choices[0]
    assert c.finish_reason == "tool_calls"
    check_calls(c.message.tool_calls)
    if choice == "named":
        assert [t.function.name for t in c.message.tool_calls] == ["add"]


@pytest.fixture
def finished(server):
    """Every generation that ends while the test runs: [(job, result)], plus an event per end."""
    done: list = []
    signal = threading.Event()

    def record(job, result):
        done.append((job, result))
        signal.set()

    server.pool.on_finished = record
    yield done, signal
    server.pool.on_finished = None


def wait_for(finished, predicate):
    """The first recorded (job, result) that satisfies `predicate` (waits for it; fails after a minute)."""
    done, signal = finished
    for _ in range(600):
        hit = next((x for x in done if predicate(*x)), None)
        if hit is not None:
            return hit
        signal.wait(0.1)
        signal.clear()
    raise AssertionError("the generation did not end")


def test_tool_choice_auto_valid_either_way(client, server, finished):
    """auto: free text that is returned whole, or calls that are valid; never a malformed or hidden call."""
    from strictgen.runtime.matcher import GrammarMatcher
    from strictgen.serve.grammars import tools_from_request

    r = chat(client, messages=ASK, tools=TOOLS, tool_choice="auto", max_tokens=120)
    c = r.choices[0]
    _, result = wait_for(finished, lambda job, res: job.config.max_tokens == 120)
    raw = result.text
    grammar = server.grammars.tool_calls(tools_from_request(TOOLS), mode="auto", parallel=True, reasoning=False)
    m = GrammarMatcher(grammar)
    assert m.accept_string(raw) and m.can_end(), raw
    if c.message.tool_calls:
        assert c.finish_reason == "tool_calls"
        check_calls(c.message.tool_calls)
        assert raw.count("<tool_call>") == len(c.message.tool_calls)
    else:
        assert c.finish_reason == "stop" and result.finish_reason == "stop"
        assert "<tool_call>" not in raw and c.message.content == raw


AUTO_OPEN = "Let me look that up.\n<tool_call>\n"


@pytest.mark.parametrize(
    "rest,ok",
    [
        ('{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', True),
        ('{"name": "add", "arguments": {"a": 1, "b": -2}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 3, "b": 4}}\n</tool_call>', True),
        ("I changed my mind.", False),
        ('{"name": "lookup", "arguments": {}}', False),
        ('{"name": "add", "arguments": {"a": "1"', False),
        ('{"name": "add", "arguments": {"a": 1}}', False),
        ('{"name": "get_weather", "arguments": {"town": "Paris"}}', False),
        ('{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call> and more text', False),
    ],
)
def test_auto_grammar_constrains_an_opened_call(server, rest, ok):
    """Once `<tool_call>` is opened under tool_choice=auto, only a call of one of the tools with arguments
    valid for its schema can follow (the grammar the endpoint uses, driven byte by byte)."""
    from strictgen.runtime.matcher import GrammarMatcher
    from strictgen.serve.grammars import tools_from_request

    grammar = server.grammars.tool_calls(tools_from_request(TOOLS), mode="auto", parallel=True, reasoning=False)
    m = GrammarMatcher(grammar)
    assert m.accept_string("It is sunny today.") and m.can_end()
    m = GrammarMatcher(grammar)
    assert m.accept_string(AUTO_OPEN) and not m.can_end()
    assert (m.accept_string(rest) and m.can_end()) is ok


def test_tool_round_trip(client):
    """Assistant tool_calls and the tool's result are rendered back into the next prompt."""
    first = chat(client, messages=ASK, tools=[WEATHER_TOOL], tool_choice="required")
    call = first.choices[0].message.tool_calls[0]
    messages = ASK + [
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temp_c": 21, "sky": "sunny"})},
    ]
    second = chat(client, messages=messages, tools=[WEATHER_TOOL], tool_choice="none", max_tokens=24)
    assert second.choices[0].message.content and not second.choices[0].message.tool_calls
    assert second.usage.prompt_tokens > first.usage.prompt_tokens


def _reassemble(stream):
    content, calls, finish, usage = "", {}, None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for ch in chunk.choices:
            d = ch.delta
            content += d.content or ""
            for tc in d.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
                if tc.id:
                    assert slot["id"] is None, "the id comes once, in the first delta"
                    slot["id"], slot["name"] = tc.id, tc.function.name
                slot["arguments"] += tc.function.arguments or ""
            finish = ch.finish_reason or finish
    return content, [calls[i] for i in sorted(calls)], finish, usage


@pytest.mark.parametrize("choice", ["required", "auto"])
def test_streamed_tool_calls_equal_non_streamed(client, choice):
    kw = dict(messages=ASK, tools=TOOLS, tool_choice=choice, parallel_tool_calls=True)
    full = chat(client, **kw).choices[0]
    content, calls, finish, usage = _reassemble(chat(client, stream=True, stream_options={"include_usage": True}, **kw))
    assert finish == full.finish_reason
    assert content == (full.message.content or "")
    want = [(t.function.name, t.function.arguments) for t in full.message.tool_calls or []]
    assert [(c["name"], c["arguments"]) for c in calls] == want
    assert usage is not None and usage.completion_tokens > 0


def test_streamed_text_equals_non_streamed(client):
    kw = dict(messages=[{"role": "user", "content": "Name three colours."}], max_tokens=24, stop=["\n\n"])
    full = chat(client, **kw).choices[0].message.content
    content, _, _, _ = _reassemble(chat(client, stream=True, **kw))
    assert content == full


def test_the_same_greedy_request_gives_the_same_text(client):
    """Reproducible whatever the slots' caches hold (engine/kv_cache.py): the second and third
    requests find the first one's prompt and output cached, and must still get its text exactly."""
    kw = dict(messages=[{"role": "user", "content": "Name three colours."}], max_tokens=24)
    texts = [chat(client, **kw).choices[0].message.content for _ in range(3)]
    assert texts[0] and texts.count(texts[0]) == 3, texts


def test_vllm_guided_json(client):
    r = chat(client, extra_body={"guided_json": CITY})
    jsonschema.validate(json.loads(r.choices[0].message.content), CITY)


def test_vllm_guided_regex(client):
    r = chat(client, messages=[{"role": "user", "content": "A date?"}], extra_body={"guided_regex": r"20[0-9]{2}-[01][0-9]-[0-3][0-9]"})
    assert re.fullmatch(r"20[0-9]{2}-[01][0-9]-[0-3][0-9]", r.choices[0].message.content)


def test_vllm_guided_choice_and_structured_outputs(client):
    r = chat(client, messages=[{"role": "user", "content": "Is the sky blue?"}], extra_body={"guided_choice": ["yes", "no"]})
    assert r.choices[0].message.content in ("yes", "no")
    r = chat(client, messages=[{"role": "user", "content": "Pick a colour."}], extra_body={"structured_outputs": {"choice": ["red", "green"]}})
    assert r.choices[0].message.content in ("red", "green")


def test_completions_with_regex(client):
    r = client.completions.create(model="default", prompt="The year Rome was founded: ", max_tokens=8, temperature=0, extra_body={"guided_regex": "-?[0-9]{1,4}"})
    assert re.fullmatch(r"-?[0-9]{1,4}", r.choices[0].text)


def test_llama_cpp_completion_gbnf(base_url):
    gbnf = 'root ::= answer " because " [a-z ]{3,30} "."\nanswer ::= "yes" | "no"'
    r = httpx.post(base_url + "/completion", json={"prompt": "Is water wet? Answer: ", "grammar": gbnf, "n_predict": 40, "temperature": 0}, timeout=120)
    assert r.status_code == 200
    assert re.fullmatch(r"(yes|no) because [a-z ]{3,30}\.", r.json()["content"])


def test_llama_cpp_completion_json_schema(base_url):
    r = httpx.post(base_url + "/completion", json={"prompt": "JSON for Paris weather: ", "json_schema": CITY, "n_predict": 40, "temperature": 0}, timeout=120)
    jsonschema.validate(json.loads(r.json()["content"]), CITY)


def test_ollama_chat_format(base_url):
    body = {"model": "default", "messages": [{"role": "user", "content": "Weather in Paris as JSON."}], "format": CITY, "stream": False, "options": {"temperature": 0, "num_predict": 40}}
    r = httpx.post(base_url + "/api/chat", json=body, timeout=120).json()
    assert r["done"] is True
    jsonschema.validate(json.loads(r["message"]["content"]), CITY)


def test_ollama_generate_json_streamed(base_url):
    body = {"model": "default", "prompt": "A JSON object about a cat.", "format": "json", "options": {"temperature": 0, "num_predict": 40}}
    with httpx.stream("POST", base_url + "/api/generate", json=body, timeout=120) as r:
        lines = [json.loads(line) for line in r.iter_lines() if line]
    assert lines[-1]["done"] is True and all(not x["done"] for x in lines[:-1])
    streamed = "".join(x["response"] for x in lines)
    json.loads(streamed)
    full = httpx.post(base_url + "/api/generate", json={**body, "stream": False}, timeout=120).json()["response"]
    assert streamed == full


def test_concurrent_streams_all_valid(client):
    def one(i):
        s = chat(client, messages=[{"role": "user", "content": f"Weather in city number {i} as JSON."}], response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": CITY}}, stream=True, temperature=0.7, seed=i)
        return _reassemble(s)[0]

    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(one, range(8)))
    assert len(outs) == 8
    for text in outs:
        jsonschema.validate(json.loads(text), CITY)


BAD = [
    ({"model": "m", "messages": []}, "messages"),
    ({"model": "m"}, "messages"),
    ({"model": "m", "messages": [{"role": "wizard", "content": "x"}]}, "messages"),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"}, "temperature"),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 100000}, "max_tokens"),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 3}, "n"),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}, "tool_choice"),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string", "pattern": "(?=a)"}}}}, "response_format"),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/nowhere"}}}}, "response_format"),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "guided_regex": "(unclosed"}, "guided_regex"),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "guided_grammar": "root ::= missing"}, "guided_grammar"),
]


@pytest.mark.parametrize("body,param", BAD, ids=[p for _, p in BAD])
def test_bad_requests_are_400_openai_errors(base_url, body, param):
    r = httpx.post(base_url + "/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["message"]
    assert param in (err["param"] or "") or param in err["message"]


def test_malformed_json_body_and_size_limit(base_url):
    r = httpx.post(base_url + "/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    big = {"model": "m", "messages": [{"role": "user", "content": "x" * 300_000}]}
    r = httpx.post(base_url + "/v1/chat/completions", json=big)
    assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"


def test_openai_client_raises_bad_request_with_pointer(client):
    with pytest.raises(openai.BadRequestError) as info:
        chat(client, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"a": {"type": "string", "pattern": "(?<=x)y"}}}}})
    assert "/properties/a" in str(info.value)


def test_completions_stream_equals_non_streamed(client):
    kw = dict(model="default", prompt="Once upon a time", max_tokens=16, temperature=0)
    full = client.completions.create(**kw).choices[0].text
    streamed = "".join(c.choices[0].text for c in client.completions.create(stream=True, **kw) if c.choices)
    assert streamed == full and full


def test_llama_cpp_stream(base_url):
    body = {"prompt": "Count: 1, 2,", "n_predict": 12, "temperature": 0, "stream": True}
    with httpx.stream("POST", base_url + "/completion", json=body, timeout=120) as r:
        events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
    assert events[-1]["stop"] is True and events[-1]["tokens_predicted"] >= 1
    full = httpx.post(base_url + "/completion", json={**body, "stream": False}, timeout=120).json()["content"]
    assert "".join(e["content"] for e in events) == full


# ---- Responses API streaming ----

# one letter per event type; a stream must spell: created, in_progress, then items, then completed/incomplete
EVENT_CODES = {
    "response.created": "C",
    "response.in_progress": "P",
    "response.output_item.added": "A",
    "response.content_part.added": "a",
    "response.output_text.delta": "t",
    "response.output_text.done": "T",
    "response.content_part.done": "d",
    "response.function_call_arguments.delta": "f",
    "response.function_call_arguments.done": "F",
    "response.output_item.done": "D",
    "response.completed": "Z",
    "response.incomplete": "I",
}
STREAM_SHAPE = re.compile(r"CP(Aat*TdD|Af*FD)*[ZI]")


def _check_response_stream(events):
    """The event order and sequence numbers; the deltas add up to every item's final text; the items
    finished in the stream are the final response's output. Returns the final response."""
    assert [e.sequence_number for e in events] == list(range(len(events)))
    codes = "".join(EVENT_CODES[e.type] for e in events)
    assert STREAM_SHAPE.fullmatch(codes), codes
    final = events[-1].response
    assert events[0].response.id == final.id and events[0].response.status == "in_progress"
    assert final.status == ("completed" if codes[-1] == "Z" else "incomplete")
    texts: dict[int, str] = {}
    for e in events:
        if e.type in ("response.output_text.delta", "response.function_call_arguments.delta"):
            texts[e.output_index] = texts.get(e.output_index, "") + e.delta
    done = {e.output_index: e.item for e in events if e.type == "response.output_item.done"}
    assert [done[i].model_dump() for i in sorted(done)] == [o.model_dump() for o in final.output]
    for i, item in enumerate(final.output):
        assert texts.get(i, "") == (item.content[0].text if item.type == "message" else item.arguments)
    return final


def _items(response):
    """Output items without their ids (which differ between two requests)."""
    return [o.model_dump(exclude={"id", "call_id"}) for o in response.output]


RESPONSES_CASES = {
    "text": {"input": "Name three colours.", "max_output_tokens": 24},
    "json_schema": {"input": "Weather in Oslo as JSON.", "max_output_tokens": 40, "text": {"format": {"type": "json_schema", "name": "city", "schema": CITY, "strict": True}}},
    "tool_required": {
        "input": "Weather in Paris?",
        "tools": [{"type": "function", "name": "get_weather", "parameters": WEATHER_TOOL["function"]["parameters"], "strict": True}],
        "tool_choice": "required",
        "max_output_tokens": 40,
    },
}


@pytest.mark.parametrize("case", RESPONSES_CASES)
def test_responses_stream_equals_non_streamed(client, case):
    kw = {"model": "default", "temperature": 0, **RESPONSES_CASES[case]}
    full = client.responses.create(**kw)
    final = _check_response_stream(list(client.responses.create(stream=True, **kw)))
    assert _items(final) == _items(full) and final.status == full.status
    assert final.usage.output_tokens == full.usage.output_tokens
    if case == "json_schema":
        jsonschema.validate(json.loads(final.output_text), CITY)
    if case == "tool_required":
        call = final.output[0]
        assert call.type == "function_call" and call.name == "get_weather" and call.call_id.startswith("call_")
        jsonschema.validate(json.loads(call.arguments), SCHEMAS["get_weather"])


def test_responses_stream_helper_parses(client):
    """The client's `responses.stream` accumulates our events into a parsed final response."""
    with client.responses.stream(model="default", input="Weather in Rome as JSON.", text_format=City, max_output_tokens=40, temperature=0) as stream:
        deltas = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert isinstance(final.output_parsed, City) and deltas == final.output_text


# ---- cancellation ----


def test_client_disconnect_cancels_streamed_generation(base_url, finished):
    """A client that closes a chat stream after its first content chunk stops the generation, long
    before max_tokens (the grammar cannot end before 400 digits, so only cancelling stops it sooner)."""
    body = {
        "model": "default",
        "messages": [{"role": "user", "content": "Write digits."}],
        "max_tokens": 500,
        "temperature": 0,
        "stream": True,
        "guided_regex": "[0-9]{400,}",
    }
    with httpx.stream("POST", base_url + "/v1/chat/completions", json=body, timeout=120) as r:
        for line in r.iter_lines():
            assert "error" not in line, line
            if line.startswith("data: ") and json.loads(line[6:])["choices"][0]["delta"].get("content"):
                break
    _, result = wait_for(finished, lambda job, res: job.config.max_tokens == 500)
    assert result.finish_reason == "cancelled"
    assert len(result.token_ids) < 400
