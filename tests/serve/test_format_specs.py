"""One FormatSpec table for every reader of a format (issue 31), over HTTP: the same grammar
whatever dialect asked, and the two divergences the scattered readers had: the reasoning
block before a JSON format in the llama.cpp and Ollama dialects, and /api/chat's end-of-turn stop.

The dialect checks run over HTTP against the real server (conftest.py); the job each request ran is
read from the pool's `on_finished` observer."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

import strictgen as sg

CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"], "additionalProperties": False}
DOC = '{"city": "Paris"}'
THOUGHT = "<think>\nParis is a city.\n</think>\n\n"
QWEN3 = Path("../shared/data/chat-templates/Qwen-Qwen3-0.6B.jinja")


def accepts(grammar, text: str) -> bool:
    """`text` is a whole document of `grammar` (accepted, then EOS)."""
    m = sg.GrammarMatcher(grammar)
    return m.accept_string(text) and m.accept_token(grammar.tokenizer_info.eos_token_ids[0])


# ---- the dialects ----


@pytest.fixture
def jobs(server, monkeypatch):
    """The jobs the pool ran during the test."""
    ran = []
    monkeypatch.setattr(server.pool, "on_finished", lambda job, result: ran.append(job))
    return ran


def _post(url: str, body: dict) -> dict:
    r = httpx.post(url, json=body, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
def test_every_dialect_compiles_a_schema_to_the_same_grammar(base_url, jobs):
    ask = [{"role": "user", "content": "Paris as JSON."}]
    _post(base_url + "/v1/chat/completions", {"model": "m", "messages": ask, "max_tokens": 8, "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": CITY}}})
    _post(base_url + "/v1/chat/completions", {"model": "m", "messages": ask, "max_tokens": 8, "guided_json": CITY})
    _post(base_url + "/v1/completions", {"model": "m", "prompt": "JSON: ", "max_tokens": 8, "structured_outputs": {"json": json.dumps(CITY)}})
    _post(base_url + "/v1/responses", {"model": "m", "input": "Paris as JSON.", "max_output_tokens": 8, "text": {"format": {"type": "json_schema", "name": "c", "schema": CITY}}})
    _post(base_url + "/completion", {"prompt": "JSON: ", "n_predict": 8, "json_schema": CITY})
    _post(base_url + "/api/chat", {"model": "m", "messages": ask, "format": CITY, "stream": False, "options": {"num_predict": 8}})
    _post(base_url + "/api/generate", {"model": "m", "prompt": "Paris as JSON.", "format": CITY, "stream": False, "options": {"num_predict": 8}})
    assert len(jobs) == 7 and all(job.grammar is jobs[0].grammar for job in jobs)


def test_ollama_chat_stops_at_the_templates_end_of_turn(base_url, server, jobs):
    assert server.chat.stops, "the embedded model's template has an end-of-turn marker"
    ask = [{"role": "user", "content": "Hi"}]
    _post(base_url + "/api/chat", {"model": "m", "messages": ask, "stream": False, "options": {"num_predict": 2}})
    _post(base_url + "/api/generate", {"model": "m", "prompt": "Hi", "stream": False, "options": {"num_predict": 2}})
    _post(base_url + "/api/generate", {"model": "m", "prompt": "Hi", "raw": True, "stream": False, "options": {"num_predict": 2}})
    chat, generate, raw = (job.config.stop for job in jobs)
    assert set(server.chat.stops) <= set(chat) and set(server.chat.stops) <= set(generate)
    assert not set(server.chat.stops) & set(raw)  # a raw prompt is not a chat turn


@pytest.fixture
def thinking_url(server):
    """A server over the same model with Qwen3's template: its `<think>` block comes before formats."""
    from strictgen.serve import Server, create_app

    from .http import start, stop

    if not QWEN3.is_file():
        pytest.skip(f"{QWEN3} is absent (the shared data folder)")
    model = server.pool.primary
    original = model.chat_template
    model.chat_template = original.replaced_by(str(QWEN3))
    thinking = Server(server.pool, server.model_name, server.limits)
    uv, thread, url = start(create_app(thinking))
    try:
        assert thinking.reasoning is not None and thinking.reasoning.open == "<think>"
        yield url
    finally:
        stop(uv, thread)
        model.chat_template = original


def test_llama_cpp_and_ollama_json_formats_follow_the_reasoning_block(thinking_url, jobs):
    ask = [{"role": "user", "content": "Paris as JSON."}]
    _post(thinking_url + "/completion", {"prompt": "JSON: ", "n_predict": 8, "json_schema": CITY})
    _post(thinking_url + "/api/chat", {"model": "m", "messages": ask, "format": CITY, "stream": False, "options": {"num_predict": 8}})
    _post(thinking_url + "/api/generate", {"model": "m", "prompt": "Paris as JSON.", "format": CITY, "stream": False, "options": {"num_predict": 8}})
    assert len(jobs) == 3
    for job in jobs:
        assert accepts(job.grammar, THOUGHT + DOC) and accepts(job.grammar, DOC)
    assert all(job.grammar is jobs[0].grammar for job in jobs)
