"""A slip inside a compile (issue 31): the client gets the server's 500 "internal error (request id
req-…)" and nothing of the slip; the traceback is logged under the same id. Before, the compile's
guard turned the slip into a StrictgenError, which the server answered as a 400 without an id.

The real server of conftest.py, driven with the official openai client; the slip is made by
replacing one compile component (the automaton builder) with one that raises.
"""

from __future__ import annotations

import logging

import openai
import pytest

import strictgen as sg
from strictgen.compile import automaton

from .test_server import chat

SECRET = "secret-compile-detail-0815"


@pytest.fixture
def broken_compile(monkeypatch):
    def broken(*args, **kwargs):
        raise AttributeError(f"'list' object has no attribute {SECRET!r}")

    monkeypatch.setattr(automaton, "compile_automaton", broken)


def _schema(name: str) -> dict:
    """A schema no other test compiles (a cached grammar would not reach the broken builder)."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": {
        "type": "object", "properties": {name: {"type": "integer"}}, "required": [name]}}}


def test_a_compile_slip_is_a_500_with_the_request_id_and_no_slip_text(client, broken_compile, caplog):
    with caplog.at_level(logging.ERROR, logger="strictgen.errors"):
        with pytest.raises(openai.InternalServerError) as info:
            chat(client, response_format=_schema("slip_one"))
    response = info.value.response
    rid = response.headers["x-request-id"]
    assert rid.startswith("req-")
    assert response.json()["error"] == {
        "message": f"internal error (request id {rid})", "type": "server_error", "param": None, "code": "internal_error"
    }
    for leaked in (SECRET, "AttributeError", "Traceback", "please report"):
        assert leaked not in response.text
    logged = [r for r in caplog.records if r.name == "strictgen.errors"]
    assert logged and rid in logged[-1].getMessage()
    assert SECRET in caplog.text and "AttributeError" in caplog.text  # the slip itself, for the operator


def test_a_compile_slip_in_a_stream_is_a_500_too(client, broken_compile):
    with pytest.raises(openai.InternalServerError) as info:
        for _ in chat(client, response_format=_schema("slip_two"), stream=True):
            pass
    assert SECRET not in info.value.response.text
    assert info.value.response.json()["error"]["message"].startswith("internal error (request id req-")


def test_the_library_raises_an_internal_error_that_is_not_bad_input(qwen, monkeypatch):
    """Outside the server the slip is an sg.InternalError: not a StrictgenError (the input is not
    at fault), its text free of the slip's, the slip kept as its cause."""
    def broken(*args, **kwargs):
        raise KeyError(SECRET)

    monkeypatch.setattr(automaton, "compile_automaton", broken)
    with pytest.raises(sg.InternalError) as info:
        sg.GrammarCompiler(qwen).compile_regex("slip[0-9]+")
    assert not isinstance(info.value, sg.StrictgenError)
    assert SECRET not in str(info.value) and isinstance(info.value.__cause__, KeyError)
