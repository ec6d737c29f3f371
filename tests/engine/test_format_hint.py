"""The format hint (engine/format_hint.py) and the server's per-request switch (serve/hint.py)."""

from __future__ import annotations

from strictgen.engine.format_hint import PREAMBLE, format_hint, render_schema, with_format_hint

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 30},
        "temp_c": {"type": "integer", "minimum": -60, "maximum": 60},
        "condition": {"enum": ["sunny", "cloudy", "rain", "snow"]},
        "note": {"type": "string", "format": "date"},
    },
    "required": ["city", "temp_c", "condition"],
    "additionalProperties": False,
}


def test_rendering_keeps_order_types_enums_and_optional_marks():
    assert render_schema(WEATHER) == (
        '{"city": string, "temp_c": integer (-60 to 60), "condition": "sunny" | "cloudy" | "rain" | "snow", "note"?: string (date)}'
    )
    assert format_hint(WEATHER) == PREAMBLE + "\n" + render_schema(WEATHER)


def test_arrays_refs_alternatives_and_recursion():
    schema = {
        "$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
        "anyOf": [{"const": 1}, {"type": ["string", "null"]}, {"$ref": "#/$defs/node"}],
    }
    assert render_schema(schema) == '1 | string | null | {"kids"?: [node, ...]}'
    assert render_schema({"type": "array", "items": {"type": "number", "minimum": 0}, "maxItems": 3}) == "[number (>= 0), ...] (<= 3 items)"
    assert render_schema(True) == "any JSON value"


def test_with_format_hint_adds_once_to_the_system_turn():
    user = {"role": "user", "content": "Madrid, 23, sunny"}
    added = with_format_hint([user], WEATHER)
    assert added == [{"role": "system", "content": format_hint(WEATHER)}, user]
    assert with_format_hint(added, WEATHER) == added  # already there: unchanged
    sys_ = with_format_hint([{"role": "system", "content": "Be brief."}, user], WEATHER)
    assert sys_[0]["content"] == "Be brief.\n\n" + format_hint(WEATHER) and sys_[1] == user


def test_server_switch():
    from strictgen.grammar.format_spec import FormatOptions
    from strictgen.serve.hint import hinted, requested_schema
    from strictgen.serve.protocol import ChatCompletionRequest, ResponsesRequest
    from strictgen.serve.specs import openai_format, response_format

    o = FormatOptions()
    msgs = [{"role": "user", "content": "hi"}]
    rf = {"type": "json_schema", "json_schema": {"name": "w", "schema": WEATHER}}
    spec = openai_format(o, ChatCompletionRequest(messages=msgs, response_format=rf))
    assert requested_schema(spec) == WEATHER and hinted(msgs, spec)[0]["content"] == format_hint(WEATHER)
    off = ChatCompletionRequest(messages=msgs, response_format=rf, format_hint=False)
    assert hinted(msgs, openai_format(o, off), off.format_hint) == msgs
    assert hinted(msgs, openai_format(o, ChatCompletionRequest(messages=msgs, response_format={"type": "json_object"}))) == msgs
    assert requested_schema(openai_format(o, ChatCompletionRequest(messages=msgs, guided_json=WEATHER))) == WEATHER
    resp = ResponsesRequest(input="hi", text={"format": {"type": "json_schema", "name": "w", "schema": WEATHER}})
    assert requested_schema(response_format(o, resp.text["format"], "text.format")) == WEATHER
