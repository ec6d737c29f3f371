"""Production operation over HTTP, against a real server on 127.0.0.1 with the official openai client:
API keys (401), the bounded queue (429 + Retry-After), request deadlines, /metrics, the request log,
and compiles off the event loop. Unit checks of the key, deadline and log pieces come first."""

from __future__ import annotations

import json
import logging
import re
import threading
import time

import httpx
import openai
import pytest

from strictgen.serve.auth import ApiKeys, exposure_warning, load_keys
from strictgen.serve.logs import RequestLog
from strictgen.serve.trace import RequestTrace

from .test_server import chat as server_chat

KEYS = ("sk-test-one", "sk-test-two")
LONG = "[a-z ]{40}"  # a forced-length output: a stream that lasts a while, valid or not by re.fullmatch
DIGITS = "[0-9]{400}"  # one token per digit on SmolLM2: 400 decode steps unless stopped


# ---- pieces ----


def test_keys_are_checked_whole_and_never_shown():
    keys = ApiKeys(list(KEYS))
    assert keys.allows("Bearer sk-test-one") and keys.allows("bearer  sk-test-two ")
    for bad in (None, "", "sk-test-one", "Bearer sk-test-on", "Bearer sk-test-one2", "Basic sk-test-one", "Bearer "):
        assert not keys.allows(bad), bad
    assert not ApiKeys().allows("Bearer x") and not ApiKeys().needed("/v1/models")
    assert keys.needed("/v1/chat/completions") and keys.needed("/api/chat") and keys.needed("/completion")
    assert not keys.needed("/health") and not keys.needed("/metrics")
    assert "sk-test" not in repr(keys)


def test_keys_from_flags_file_and_environment(tmp_path):
    f = tmp_path / "keys"
    f.write_text("# ops keys\nsk-file-a\n\n  sk-file-b  \n", encoding="utf-8")
    keys = load_keys(["sk-flag"], str(f), environ={"STRICTGEN_API_KEY": "sk-env"})
    assert len(keys) == 4 and all(keys.allows("Bearer " + k) for k in ("sk-flag", "sk-file-a", "sk-file-b", "sk-env"))
    assert not keys.allows("Bearer # ops keys")
    (tmp_path / "empty").write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(ValueError, match="holds no key"):
        load_keys(None, str(tmp_path / "empty"), environ={})
    with pytest.raises(ValueError, match="cannot read"):
        load_keys(None, str(tmp_path / "absent"), environ={})


def test_exposure_warning_only_off_loopback_without_a_key():
    assert exposure_warning("0.0.0.0", ApiKeys()) and exposure_warning("192.168.1.5", ApiKeys()) and exposure_warning("::", ApiKeys())
    for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        assert exposure_warning(host, ApiKeys()) is None
    assert exposure_warning("0.0.0.0", ApiKeys(["k"])) is None


def test_deadline_is_the_tighter_of_server_and_request():
    def trace(body: dict, server_timeout=None):
        t = RequestTrace("r", "/v1/chat/completions", "openai", server_timeout, start=100.0)
        t.body = [json.dumps(body).encode()[:7], json.dumps(body).encode()[7:]]  # as chunks
        return t

    assert trace({}).deadline() is None
    assert trace({}, 30).deadline() == 130.0
    assert trace({"timeout": 2.5}, 30).deadline() == 102.5
    assert trace({"timeout": 60}, 30).deadline() == 130.0
    assert trace({"t_max_predict_ms": 1500}).deadline() == 101.5
    # a "timeout" that is not the request's own field (inside a schema) is not a deadline
    assert trace({"response_format": {"properties": {"timeout": {"type": "integer"}}}}).deadline() is None
    assert trace({"timeout": "soon"}).deadline() is None and trace({"timeout": -1}).deadline() is None


def test_log_line_holds_no_content_unless_asked():
    t = RequestTrace("req-1", "/v1/completions", "openai", body=[b'{"prompt": "secret prompt"}'])
    plain = RequestLog("json").record(t, 200, 0.25)
    assert plain["id"] == "req-1" and plain["total_ms"] == 250.0 and "request" not in plain and "output" not in plain
    assert RequestLog("json", content=True).record(t, 200, 0.25)["request"] == {"prompt": "secret prompt"}
    with pytest.raises(ValueError):
        RequestLog("xml")


# ---- a real server with keys, a queue of 2 and 2 slots ----


@pytest.fixture(scope="module")
def ops_server():
    from strictgen.serve import ServeOptions, ServerLimits, build_server

    options = ServeOptions(api_keys=ApiKeys(list(KEYS)), max_queue=2, max_concurrent_compiles=1, log_format="json")
    server = build_server("default", slots=2, n_ctx=1024, limits=ServerLimits(max_tokens=512), options=options)
    yield server
    server.pool.close()


@pytest.fixture(scope="module")
def url(ops_server):
    from strictgen.serve.local import local_server

    with local_server(ops_server) as base:
        yield base


@pytest.fixture(scope="module")
def client(url):
    return openai.OpenAI(base_url=url + "/v1", api_key=KEYS[0], max_retries=0, timeout=120)


@pytest.fixture
def log_lines():
    """The request log's lines while the test runs."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    logger = logging.getLogger("strictgen.requests")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield lines
    logger.removeHandler(handler)
    logger.setLevel(level)


def chat(client, **kw):
    """test_server's chat call, short by default."""
    return server_chat(client, **{"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 6, **kw})


def test_keys_guard_every_dialect_and_health_stays_open(url, client, log_lines):
    for key in (None, "sk-wrong"):
        bad = openai.OpenAI(base_url=url + "/v1", api_key=key or "x", max_retries=0, default_headers={} if key else {"Authorization": ""})
        with pytest.raises(openai.AuthenticationError) as err:
            chat(bad)
        assert err.value.status_code == 401 and err.value.body["type"] == "invalid_request_error" and err.value.body["code"] == "invalid_api_key"
    assert chat(client).choices[0].finish_reason in ("stop", "length")
    second = openai.OpenAI(base_url=url + "/v1", api_key=KEYS[1], max_retries=0)
    assert [m.id for m in second.models.list()]
    for path, body in (("/completion", {"prompt": "Hi", "n_predict": 3}), ("/api/generate", {"prompt": "Hi", "stream": False, "options": {"num_predict": 3}})):
        assert httpx.post(url + path, json=body).status_code == 401
        r = httpx.post(url + path, json=body, headers={"Authorization": "Bearer " + KEYS[1]}, timeout=60)
        assert r.status_code == 200, r.text
    assert httpx.get(url + "/health").status_code == 200
    assert not any("sk-test" in line or "sk-wrong" in line for line in log_lines)
    assert sum('"status": 401' in line for line in log_lines) == 4


def test_a_burst_past_the_queue_gets_429_and_the_admitted_finish_valid(client, ops_server):
    """2 slots + a queue of 2: four streams are admitted (each has sent its first chunk) and held
    in flight at their end by a gate; the next requests are refused at once with Retry-After; once
    the gate opens the four complete, valid, and there is room again."""
    gate = threading.Event()
    ops_server.pool.on_finished = lambda job, result: gate.wait(60)  # runs in the worker, before the answer ends
    try:
        streams = [chat(client, max_tokens=48, stream=True, extra_body={"guided_regex": LONG}) for _ in range(4)]
        firsts = [next(iter(s)) for s in streams]  # the role chunk: admitted
        assert all(f.choices[0].delta.role == "assistant" for f in firsts)
        for _ in range(3):
            with pytest.raises(openai.RateLimitError) as err:
                chat(client)
            assert err.value.status_code == 429 and int(err.value.response.headers["retry-after"]) >= 1
            assert err.value.body["type"] == "requests" and err.value.body["code"] == "rate_limit_exceeded"
    finally:
        gate.set()
        ops_server.pool.on_finished = None
    for s in streams:
        text = "".join(c.choices[0].delta.content or "" for c in s if c.choices)
        assert re.fullmatch(LONG, text), text
    assert chat(client).choices[0].message.content is not None  # room again


def test_a_request_past_its_deadline_ends_cleanly_and_the_next_is_served(client, url, log_lines):
    t0 = time.perf_counter()
    r = chat(client, max_tokens=450, extra_body={"guided_regex": DIGITS, "timeout": 0.5})
    assert r.choices[0].finish_reason == "length" and 0 < r.usage.completion_tokens < 400
    assert time.perf_counter() - t0 < 30
    stream = chat(client, max_tokens=450, stream=True, extra_body={"guided_regex": DIGITS, "timeout": 0.5})
    chunks = [c for c in stream if c.choices]
    assert chunks[-1].choices[0].finish_reason == "length"
    body = httpx.post(url + "/completion", json={"prompt": "1", "n_predict": 450, "grammar": 'root ::= [0-9]{400}', "t_max_predict_ms": 500}, headers={"Authorization": "Bearer " + KEYS[0]}, timeout=60).json()
    assert body["stop_type"] == "limit" and body["tokens_predicted"] < 400
    nxt = chat(client, max_tokens=10, extra_body={"guided_regex": "[0-9]{3}"})
    assert re.fullmatch("[0-9]{3}", nxt.choices[0].message.content) and nxt.choices[0].finish_reason == "stop"
    timed = [json.loads(line) for line in log_lines if '"timed_out": true' in line]
    assert len(timed) == 3 and all(t["finish_reason"] == "length" for t in timed)


def _scrape(url) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    r = httpx.get(url + "/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for fam in text_string_to_metric_families(r.text) for s in fam.samples}


def _get(m: dict, name: str, **labels) -> float:
    return m.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_parse_and_count_exactly_the_requests_sent(client, url):
    before = _scrape(url)
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["n"], "additionalProperties": False, "title": f"m{time.time_ns()}"}
    fmt = {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}
    a = chat(client, response_format=fmt, max_tokens=12)
    b = chat(client, response_format=fmt, max_tokens=12)
    streamed = list(chat(client, stream=True, stream_options={"include_usage": True}))
    usage = [a.usage, b.usage, streamed[-1].usage]
    assert httpx.post(url + "/v1/chat/completions", json={}).status_code == 401
    after = _scrape(url)
    chat_ok = dict(route="/v1/chat/completions", dialect="openai", status="200")
    assert _get(after, "strictgen_requests_total", **chat_ok) - _get(before, "strictgen_requests_total", **chat_ok) == 3
    denied = dict(route="/v1/chat/completions", dialect="openai", status="401")
    assert _get(after, "strictgen_requests_total", **denied) - _get(before, "strictgen_requests_total", **denied) == 1
    route = dict(route="/v1/chat/completions")
    assert _get(after, "strictgen_prompt_tokens_total", **route) - _get(before, "strictgen_prompt_tokens_total", **route) == sum(u.prompt_tokens for u in usage)
    assert _get(after, "strictgen_generation_tokens_total", **route) - _get(before, "strictgen_generation_tokens_total", **route) == sum(u.completion_tokens for u in usage)
    count = "strictgen_request_duration_seconds_count"
    assert _get(after, count, route="/v1/chat/completions", dialect="openai") - _get(before, count, route="/v1/chat/completions", dialect="openai") == 4
    assert _get(after, "strictgen_time_to_first_token_seconds_count", **route) - _get(before, "strictgen_time_to_first_token_seconds_count", **route) == 3
    # the schema compiled once and was found in the cache once
    for cache in ("miss", "hit"):
        assert _get(after, "strictgen_grammar_compiles_total", format="json_schema", cache=cache) - _get(before, "strictgen_grammar_compiles_total", format="json_schema", cache=cache) == 1
    assert _get(after, "strictgen_masks_total") > _get(before, "strictgen_masks_total")
    assert _get(after, "strictgen_queue_depth") == 0 and _get(after, "strictgen_active_slots") == 0 and _get(after, "strictgen_slots") == 2
    assert _get(after, "strictgen_grammar_compile_seconds_count", format="json_schema") >= 1


def test_a_slow_compile_does_not_stall_another_stream(client, ops_server, url):
    """While one request's grammar compiles (in a preparation thread), the event loop keeps serving:
    a running stream goes on and completes valid, and /health answers arrive while the compile runs.
    Compiles are fast now, so the slow one is made slow on purpose: its compile does not return until
    three /health polls have been answered after it began. With the compile on the event loop no poll
    could be answered, and the wait would run out. Progress, not timings."""
    from strictgen.grammar.format_spec import FormatSpec

    compiler = ops_server.grammars.compiler
    compiler.compile_format(FormatSpec("regex", LONG, ops_server.format_options))  # the stream's own grammar is cached: the one slow compile is the other's
    slow_pattern = "(ab|cd|[0-9]){1,%d}" % (100 + time.time_ns() % 200)
    polls: list[float] = []
    answered_during_compile: list[bool] = []
    done = threading.Event()
    real_compile = compiler.compile_format  # the one path every request's format takes

    def slow_compile(spec, kinds=None):
        compiled = real_compile(spec, kinds)
        if spec.kind == "regex" and spec.value == slow_pattern:
            seen = len(polls)
            deadline = time.monotonic() + 60
            while len(polls) < seen + 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            answered_during_compile.append(len(polls) >= seen + 3)
        return compiled

    def poll():
        with httpx.Client(base_url=url) as h:
            while not done.is_set():
                assert h.get("/health").status_code == 200
                polls.append(time.perf_counter())
                time.sleep(0.02)

    compiler.compile_format = slow_compile
    try:
        stream = chat(client, max_tokens=48, stream=True, extra_body={"guided_regex": LONG})
        it = iter(stream)
        next(it)  # admitted and running
        result: list = []
        slow = threading.Thread(target=lambda: result.append(chat(client, max_tokens=4, extra_body={"guided_regex": slow_pattern})))
        poller = threading.Thread(target=poll)
        poller.start()
        slow.start()
        text = "".join(c.choices[0].delta.content or "" for c in it if c.choices)
        slow.join(timeout=300)
    finally:
        done.set()
        del compiler.compile_format  # the instance attribute goes; the class's method is back
    poller.join(timeout=60)
    assert re.fullmatch(LONG, text), text
    assert answered_during_compile == [True], (answered_during_compile, len(polls))
    # four tokens may stop inside a unit: what came back is a prefix of a match
    assert result and re.fullmatch(r"(ab|cd|[0-9])*[ac]?", result[0].choices[0].message.content or ""), result
