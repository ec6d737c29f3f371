"""A hostile client's requests (issue 34): bodies bounded however they arrive, JSON and prompts
bounded before the parser and the tokenizer, and no internal text in any answer.

Framing is driven with raw httpx (a generator body goes out chunked, with no Content-Length); the
rest with the official openai client, against the real server of conftest.py (max_body_bytes=200,000).
"""

from __future__ import annotations

import json
import logging

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.serve.bounds import check_json_shape
from strictgen.serve.errors import RequestError

from .test_server import chat

LIMIT = 200_000  # conftest.py's max_body_bytes


@pytest.fixture
def tokenized(server, monkeypatch):
    """The prompts the pool tokenized during the test (none may be tokenized for a refused body)."""
    calls = []
    real = server.pool.tokenize

    def counting(fn):
        calls.append(fn)
        return real(fn)

    monkeypatch.setattr(server.pool, "tokenize", counting)
    return calls


def _big_body(n: int) -> bytes:
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * n}]}).encode()


def _assert_openai_error(r: httpx.Response, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["code"] == code and err["message"]
    return err


def test_a_chunked_body_past_the_limit_is_413_and_never_parsed(base_url, tokenized):
    body = _big_body(3 * LIMIT)

    def pieces():  # chunked: no Content-Length for the old header check to read
        for i in range(0, len(body), 16_384):
            yield body[i : i + 16_384]

    try:
        r = httpx.post(base_url + "/v1/chat/completions", content=pieces(), headers={"content-type": "application/json"}, timeout=60)
    except httpx.WriteError:  # the server answered and closed before taking the rest: read its answer
        pytest.fail("the server closed before answering")
    err = _assert_openai_error(r, 413, "body_too_large")
    assert str(LIMIT) in err["message"] and err["type"] == "invalid_request_error"
    assert tokenized == []


def test_a_declared_length_past_the_limit_is_413_on_every_route(base_url, tokenized):
    for path in ("/v1/chat/completions", "/v1/completions", "/v1/responses", "/completion", "/api/chat", "/api/generate"):
        r = httpx.post(base_url + path, content=_big_body(LIMIT + 10), headers={"content-type": "application/json"}, timeout=60)
        _assert_openai_error(r, 413, "body_too_large")
    assert tokenized == []


def test_a_chunked_body_under_the_limit_is_served(base_url):
    body = json.dumps({"model": "m", "prompt": "One, two, ", "max_tokens": 3, "temperature": 0}).encode()
    r = httpx.post(base_url + "/v1/completions", content=iter([body[:10], body[10:]]), headers={"content-type": "application/json"}, timeout=120)
    assert r.status_code == 200 and r.json()["choices"][0]["text"] is not None


def test_json_nesting_and_string_length_are_bounded_before_parsing(base_url, server, monkeypatch):
    deep = '{"model": "m", "messages": [{"role": "user", "content": "x"}], "response_format": ' + "[" * 5000 + "]" * 5000 + "}"
    r = httpx.post(base_url + "/v1/chat/completions", content=deep, headers={"content-type": "application/json"}, timeout=60)
    assert "128" in _assert_openai_error(r, 400, "json_too_deep")["message"]
    monkeypatch.setattr(server.limits, "max_json_string_bytes", 1000)
    r = httpx.post(base_url + "/v1/chat/completions", content=_big_body(1001), headers={"content-type": "application/json"}, timeout=60)
    _assert_openai_error(r, 400, "string_too_long")


@pytest.mark.parametrize("wraps", [0, 5, 40])
def test_the_json_scan_is_exact_on_valid_json(wraps):
    doc = json.dumps({"s": 'a "quoted" [bracket] \\ {brace}', "v": [0]})  # two levels; brackets inside strings do not count
    for _ in range(wraps):
        doc = json.dumps({"k": json.loads(doc), "t": "]]]}}}"})
    depth = 2 + wraps
    check_json_shape(doc.encode(), depth, 100)
    with pytest.raises(RequestError, match="deeper"):
        check_json_shape(doc.encode(), depth - 1, 100)
    with pytest.raises(RequestError, match="longer"):
        check_json_shape(doc.encode(), depth, 10)


def test_a_prompt_too_long_for_the_context_is_refused_before_tokenizing(client, server, monkeypatch, tokenized):
    monkeypatch.setattr(server.limits, "max_prompt_tokens", 10)
    with pytest.raises(openai.BadRequestError) as info:
        chat(client, messages=[{"role": "user", "content": "word " * 20_000}])
    assert info.value.code == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError) as info:
        client.completions.create(model="m", prompt="word " * 20_000, max_tokens=4)
    assert info.value.code == "context_length_exceeded"
    assert tokenized == []
    with pytest.raises(openai.BadRequestError) as info:  # short in bytes, long in tokens: refused after tokenizing
        client.completions.create(model="m", prompt="one two three four five six seven eight nine ten eleven twelve", max_tokens=4)
    assert info.value.code == "context_length_exceeded" and len(tokenized) == 1


def test_an_unknown_structural_tag_kind_is_a_400_listing_the_kinds(client):
    for kind in ("field", "tags", "build", "__init__"):
        with pytest.raises(openai.BadRequestError) as info:
            chat(client, response_format={"type": "structural_tag", "format": {"type": kind}})
        message = info.value.body["message"]
        assert repr(kind) in message and "const_string" in message and "triggered_tags" in message
        assert "internal" not in message


def test_a_failing_component_shows_only_internal_error_and_the_request_id(client, server, monkeypatch, caplog):
    secret = "secret-detail-4711"

    def broken(*args, **kwargs):
        raise RuntimeError(secret)

    monkeypatch.setattr(server, "encode_chat", broken)
    with caplog.at_level(logging.ERROR, logger="strictgen.errors"):
        with pytest.raises(openai.InternalServerError) as info:
            chat(client)
    response = info.value.response
    rid = response.headers["x-request-id"]
    assert secret not in response.text and "RuntimeError" not in response.text and "Traceback" not in response.text
    err = response.json()["error"]
    assert err["message"] == f"internal error (request id {rid})" and err["type"] == "server_error"
    logged = [r for r in caplog.records if r.name == "strictgen.errors"]
    assert logged and rid in logged[-1].getMessage() and secret in caplog.text and "RuntimeError" in caplog.text


def _shape(value) -> tuple[int, int]:
    """(nesting depth, longest string's bytes as json.dumps sends them) of a JSON value."""
    if isinstance(value, dict):
        inner = [_shape(k) for k in value] + [_shape(v) for v in value.values()]
    elif isinstance(value, list):
        inner = [_shape(v) for v in value]
    else:
        return 0, len(json.dumps(value).encode()) - 2 if isinstance(value, str) else -1
    return 1 + max((d for d, _ in inner), default=0), max((s for _, s in inner), default=-1)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab"\\[]{}\n é', max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet='k"\\]}', max_size=4), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES)
def test_the_json_scan_agrees_with_the_parsed_value(value):
    body = json.dumps(value).encode()
    depth, longest = _shape(value)
    check_json_shape(body, depth, max(longest, 0))
    if depth:
        with pytest.raises(RequestError, match="deeper"):
            check_json_shape(body, depth - 1, 1 << 20)
    if longest > 0:
        with pytest.raises(RequestError, match="longer"):
            check_json_shape(body, 1 << 10, longest - 1)
