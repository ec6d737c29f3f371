"""POST /v1/strictgen/inspect and GET /inspect over a real uvicorn server around the embedded model.

The API's steps are checked against the matcher itself: a fresh GrammarMatcher on the same compiled
grammar, fed the same tokens, has masks of the reported popcounts and the reported forced text."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx
import jsonschema
import numpy as np
import pytest

import strictgen as sg
from strictgen.grammar.format_spec import FormatSpec
from tests.models import weather_schema
from tests.serve.conftest import API_KEY as KEY

WEATHER = weather_schema()
PATH = "/v1/strictgen/inspect"


@pytest.fixture(scope="module")
def http(base_url):
    with httpx.Client(base_url=base_url, timeout=300) as c:
        yield c


def popcount(row: np.ndarray) -> int:
    return int(np.unpackbits(row.view(np.uint8)).sum())


def check_steps(grammar: sg.CompiledGrammar, answer: dict) -> None:
    m = sg.GrammarMatcher(grammar)
    for row in answer["steps"]:
        assert row["allowed"] == popcount(m.next_token_mask()), row["index"]
        assert row["forced"] == m.find_jump_forward_string(), row["index"]
        if row["token"] is None:
            assert row["accepted"] == m.can_end()
            return
        assert m.accept_token(row["token"]["id"]) == row["accepted"]
        if not row["accepted"]:
            return


def test_a_document_against_the_matcher(http, server):
    doc = '{"city": "Beijing", "temp_c": 27, "weather": "多云"}'
    r = http.post(PATH, json={"format": {"type": "json_schema", "schema": WEATHER}, "document": doc, "sample": 5})
    assert r.status_code == 200, r.text
    answer = r.json()
    ids = server.pool.tokenize(lambda m: m.tokenize(doc))  # the model's own tokenization
    assert [s["token"]["id"] for s in answer["steps"][:-1]] == ids and answer["steps"][-1]["token"] is None
    assert answer["complete"] and answer["departure"] is None and answer["mode"] == "document"
    check_steps(server.grammars.compile(FormatSpec("json_schema", WEATHER, replace(server.format_options, reasoning=None))), answer)  # the same compiled grammar (the factory caches)
    assert all(len(s["sample"]) == min(5, s["allowed"]) for s in answer["steps"])


def test_an_off_format_document_says_where(http, server):
    doc = '{"city": "Beijing", "temp_c": 27.5, "weather": "多云"}'
    answer = http.post(PATH, json={"format": {"type": "json_schema", "schema": json.dumps(WEATHER)}, "document": doc}).json()
    d = answer["departure"]
    assert not answer["complete"] and d["offset"] == doc.index(".") and d["expected"] == [",", "0-9"]
    assert d["message"].startswith(f"byte {d['offset']}: found '.5")
    assert not answer["steps"][-1]["accepted"] and answer["steps"][-1]["index"] == d["step"]
    check_steps(server.grammars.compile(FormatSpec("json_schema", WEATHER, replace(server.format_options, reasoning=None))), answer)

    regex = r"\d{4}-(0[1-9]|1[0-2])-\d\d"
    answer = http.post(PATH, json={"format": {"type": "regex", "pattern": regex}, "document": "2024-13-01"}).json()
    assert answer["departure"]["offset"] == 6 and answer["departure"]["expected"] == ["0-2"]
    check_steps(server.grammars.compile(FormatSpec("regex", regex, server.format_options)), answer)


@pytest.mark.slow  # a generation through the server's batched pool: 20-60 s on 2 busy cores
def test_a_generation_against_the_matcher(http, server):
    body = {"format": {"type": "json_schema", "schema": WEATHER}, "prompt": "Give the current weather in Beijing as JSON.", "max_tokens": 48, "top": 3, "sample": 3}
    answer = http.post(PATH, json=body).json()
    assert answer["mode"] == "prompt" and answer["complete"], answer
    jsonschema.validate(json.loads(answer["text"]), WEATHER)
    check_steps(server.grammars.compile(FormatSpec("json_schema", WEATHER, replace(server.format_options, reasoning=None))), answer)
    rows = answer["steps"][:-1]
    assert {r["origin"] for r in rows} == {"sampled", "forced"}
    for r in rows:
        if r["origin"] == "sampled":
            assert len(r["top_before"]) == 3 and len(r["top_after"]) >= 1
        else:
            assert r["forced_by"] and r["top_before"] is None
    assert answer["stats"]["sampled_tokens"] >= sum(r["origin"] == "sampled" for r in rows)


@pytest.mark.parametrize(
    "fmt, where",
    [
        ({"type": "json_schema", "schema": {"type": "object", "properties": {"p": {"type": "number", "multipleOf": 0}}}}, {"code": "SchemaError", "keyword": "multipleOf", "pointer": "/properties/p/multipleOf"}),
        ({"type": "json_schema", "schema": '{"type": "object",\n  "x": [1,}'}, {"code": "JSONDecodeError", "line": 2, "column": 11}),
        ({"type": "grammar", "grammar": 'root ::= "a" |\nfoo ::= ['}, {"code": "GrammarSyntaxError", "line": 2}),
        ({"type": "regex", "pattern": "a(b"}, {"code": "RegexError", "position": 1}),
        ({"type": "xml"}, {"param": "format.type"}),
    ],
)
def test_compile_errors_point_at_their_place(http, fmt, where):
    r = http.post(PATH, json={"format": fmt, "document": "{}"})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["message"]
    assert {k: err.get(k) for k in where} == where
    assert "Traceback" not in err["message"]


def test_bad_requests_are_refused(http):
    weather = {"type": "json_schema", "schema": WEATHER}
    for body in ({"format": weather}, {"format": weather, "document": "{}", "prompt": "x"}, {"format": weather, "document": "{}", "sample": 10**6}, {"document": "{}"}):
        r = http.post(PATH, json=body)
        assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error", body


def test_the_page_is_served(http):
    r = http.get("/inspect")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert PATH in r.text and "<script>" in r.text
    assert "http://" not in r.text and "https://" not in r.text  # nothing loaded from elsewhere (no CDN)




def test_inspect_obeys_the_api_keys(keyed_base_url):
    body = {"format": {"type": "regex", "pattern": "a+"}, "document": "aa"}
    with httpx.Client(base_url=keyed_base_url, timeout=60) as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            page = c.get("/inspect", headers=headers)
            api = c.post(PATH, json=body, headers=headers)
            assert page.status_code == api.status_code == 401 and api.json()["error"]["code"] == "invalid_api_key"
            assert KEY not in page.text + api.text
        ok = {"Authorization": f"Bearer {KEY}"}
        assert c.get("/inspect", headers=ok).status_code == 200
        r = c.post(PATH, json=body, headers=ok)
        assert r.status_code == 200 and r.json()["complete"] and len(r.json()["steps"]) >= 2
