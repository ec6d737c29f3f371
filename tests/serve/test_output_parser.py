"""The output parser: every prefix reports only what the whole output confirms (streaming = non-streaming)."""

from __future__ import annotations

import pytest

from strictgen.serve.tools.families import HERMES
from strictgen.serve.tools.parse import parse_output
from strictgen.serve.tools.reasoning import THINK


def _parse(text, final, tools, reasoning):
    return parse_output(text, HERMES if tools else None, None, THINK if reasoning else None, final=final)

OUTPUTS = [
    "Hello there, no tools here.",
    'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 22}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": 3, "b": {"x": "}"}}}\n</tool_call>',
    '<think>The user wants weather. </tool_call> is not a tag here</think>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
    "<think>unfinished thoughts",
]


@pytest.mark.parametrize("text", OUTPUTS)
def test_prefix_views_grow_into_the_final_view(text):
    final = _parse(text, True, True, True)
    for cut in range(len(text) + 1):
        p = _parse(text[:cut], False, True, True)
        assert final.reasoning.startswith(p.reasoning)
        assert final.content.startswith(p.content) or (final.calls and not final.content.strip() and not p.content.strip())
        assert len(p.calls) <= len(final.calls)
        for a, b in zip(p.calls, final.calls):
            if a.name is not None:
                assert a.name == b.name and b.arguments.startswith(a.arguments)


def test_final_views():
    p = _parse(OUTPUTS[3], True, True, True)
    assert p.reasoning.startswith("The user wants weather.") and p.content == ""
    assert [(c.name, c.arguments) for c in p.calls] == [("get_weather", '{"city": "Oslo"}')]
    p = _parse(OUTPUTS[2], True, True, False)
    assert [c.arguments for c in p.calls] == ['{"a": 1, "b": 22}', '{"a": 3, "b": {"x": "}"}}']
    p = _parse(OUTPUTS[1], True, False, False)
    assert p.content == OUTPUTS[1] and not p.calls


@pytest.mark.parametrize("text", OUTPUTS)
@pytest.mark.parametrize("finish", ["stop", "length"])
def test_responses_events_validate_and_add_up(text, finish):
    """Responses stream events for every prefix of an output (reasoning, content, calls) validate as the
    openai client's event types, and the items they finish are the final response's output."""
    from types import SimpleNamespace

    pydantic = pytest.importorskip("pydantic")
    pytest.importorskip("fastapi")
    from openai.types.responses import ResponseStreamEvent

    from strictgen.engine.generate import GenerationConfig, GenerationResult
    from strictgen.serve.openai_responses import Reply
    from strictgen.serve.protocol import ResponsesRequest
    from strictgen.serve.worker import Job

    server = SimpleNamespace(model_name="m", reasoning=THINK, chat=SimpleNamespace(tools=HERMES))
    reply = Reply(server, ResponsesRequest(input="x"), Job([1, 2], None, GenerationConfig()), "resp_" + "0" * 24, parse_tools=True)
    sse = reply.start()
    for cut in range(len(text) + 1):
        for d in reply.deltas.deltas(text[:cut], final=cut == len(text)):
            sse += reply.step(d)
    sse += reply.finish(GenerationResult(text, [0] * 5, finish, None))
    adapter = pydantic.TypeAdapter(ResponseStreamEvent)
    events = []
    for block in sse:
        head, data = block.strip().split("\n")
        event = adapter.validate_json(data[len("data: ") :])
        assert head == f"event: {event.type}"
        events.append(event)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1].response
    assert events[-1].type == ("response.incomplete" if finish == "length" else "response.completed")
    done = [e.item for e in events if e.type == "response.output_item.done"]
    assert [i.model_dump() for i in done] == [o.model_dump() for o in final.output]
    assert [e.output_index for e in events if e.type == "response.output_item.added"] == list(range(len(final.output)))


def test_harmony_call_right_after_the_analysis_channel():
    """Harmony's call opens with a space (` to=functions.N`) that follows the analysis channel's
    close directly; the layout strip after a reasoning block must not eat it, in any prefix."""
    from strictgen.serve.tools.families import FAMILIES
    from strictgen.serve.tools.reasoning import Reasoning

    harmony = next(f for f in FAMILIES if f.name == "harmony")
    r = Reasoning("<|channel|>analysis<|message|>", "<|end|><|start|>assistant")
    text = r.open + "hm" + r.close + harmony.render([("get_weather", {"city": "Paris"})])
    final = parse_output(text, harmony, None, r, final=True)
    assert (final.reasoning, final.content) == ("hm", "")
    assert [(c.name, c.arguments) for c in final.calls] == [("get_weather", '{"city": "Paris"}')]
    for cut in range(len(text) + 1):
        p = parse_output(text[:cut], harmony, None, r, final=False)
        assert p.content == "" and final.reasoning.startswith(p.reasoning), text[:cut]
