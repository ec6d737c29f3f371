"""structured_call against a real HTTP server on 127.0.0.1 speaking the OpenAI chat.completions shape.

The server answers from a script (an invalid answer first, then a valid one); the official `openai`
client talks to it over TCP. No mocks: the retry loop, the feedback it sends, finish_reason handling
and the pydantic return all go through the real client and server."""

from __future__ import annotations

import json

import pytest

import strictgen as sg
from strictgen.reliability import StructuredOutputError, structured_call
from tests.reliability.scripted_server import ScriptedServer, script

pydantic = pytest.importorskip("pydantic")
pytest.importorskip("openai")

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


class Person(pydantic.BaseModel):
    name: str
    age: int = pydantic.Field(ge=0)


def test_retry_recovers_from_an_invalid_first_answer():
    with ScriptedServer(script('{"name": "Ann", "age": -3}', '{"name": "Ann", "age": 31}')) as srv:
        got = structured_call("Ann is 31.", Person, base_url=srv.url, model="scripted", max_retries=2)
    assert got == Person(name="Ann", age=31)
    assert len(srv.requests) == 2
    first, second = srv.requests
    assert first["model"] == "scripted"
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["schema"]["properties"]["age"]["minimum"] == 0
    # the second request carries the bad answer and the located validation error
    assert second["messages"][-2] == {"role": "assistant", "content": '{"name": "Ann", "age": -3}'}
    feedback = second["messages"][-1]
    assert feedback["role"] == "user" and "/age (minimum)" in feedback["content"]


def test_retries_exhausted_lists_every_attempt():
    answers = ('not json at all', '{"name": "Ann"}', '{"name": "Ann", "age": "old"}')
    with ScriptedServer(script(*answers)) as srv:
        with pytest.raises(StructuredOutputError) as info:
            structured_call("Ann", PERSON, base_url=srv.url, max_retries=2)
    err = info.value
    assert isinstance(err, sg.StrictgenError)
    assert len(err.attempts) == 3 and len(srv.requests) == 3
    assert "not JSON" in err.attempts[0].errors[0]
    assert err.attempts[1].errors == ["/ (required): 'age' is a required property"]
    assert err.attempts[2].issues[0].pointer == "/age"
    text = str(err)
    assert "attempt 1" in text and "attempt 2" in text and "attempt 3" in text and "'age' is a required property" in text


def test_finish_reason_length_is_checked_before_parsing():
    # a cut-off answer that json-repair could "fix" must not be taken: it is reported and retried
    answers = (('{"name": "Ann", "age": 3', "length"), '{"name": "Ann", "age": 3}')
    with ScriptedServer(script(*answers)) as srv:
        got = structured_call("Ann", PERSON, base_url=srv.url, repair=True, max_retries=1)
    assert got == {"name": "Ann", "age": 3}
    assert "cut off" in srv.requests[1]["messages"][-1]["content"]


def test_repair_is_opt_in_and_recorded():
    from strictgen.reliability import OpenAIBackend, run_structured

    fenced = '```json\n{"name": "Ann", "age": 3,}\n```'
    with ScriptedServer(script(fenced)) as srv:
        backend = OpenAIBackend(srv.url)
        msgs = [{"role": "user", "content": "Ann"}]
        strict = run_structured(msgs, PERSON, backend, mode="prompt-only", max_retries=0)
        lenient = run_structured(msgs, PERSON, backend, mode="prompt-only", max_retries=0, repair=True)
    assert not strict.ok and "not JSON" in strict.final.errors[0]
    assert lenient.ok and lenient.value == {"name": "Ann", "age": 3}
    assert lenient.final.parsed is False and lenient.final.repair.repaired
    assert "response_format" not in srv.requests[0]  # prompt-only sends no constraint


def test_json_object_mode_and_bad_mode():
    with ScriptedServer(script(json.dumps({"name": "Bo", "age": 7}))) as srv:
        got = structured_call([{"role": "user", "content": "Bo, 7"}], PERSON, base_url=srv.url, mode="json-object", schema_in_prompt=False)
        assert got == {"name": "Bo", "age": 7}
        assert srv.requests[0]["response_format"] == {"type": "json_object"}
        assert srv.requests[0]["messages"] == [{"role": "user", "content": "Bo, 7"}]
        with pytest.raises(sg.StrictgenError, match="unknown mode"):
            structured_call("x", PERSON, base_url=srv.url, mode="grammar")


def test_unreachable_endpoint_is_a_clear_error():
    with ScriptedServer(script("{}")) as srv:
        url = srv.url
    with pytest.raises(sg.StrictgenError, match="endpoint failed"):
        structured_call("x", PERSON, base_url=url, max_retries=0)
