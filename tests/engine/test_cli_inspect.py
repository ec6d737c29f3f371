"""`strictgen inspect`: the table and its --json (the API's answer) for a document or a prompt,
checked against a matcher on the same grammar; a format that does not compile exits 2 saying where."""

from __future__ import annotations

import json

import jsonschema
import numpy as np

import strictgen as sg
from strictgen.cli import main
from tests.models import embedded, weather_schema

DATE = r"\d{4}-(0[1-9]|1[0-2])-\d\d"


def test_a_document_as_json_and_as_a_table(capsys):
    assert main(["inspect", "--regex", DATE, "--json", "2024-13-01"]) == 1  # not a whole document
    answer = json.loads(capsys.readouterr().out)
    assert answer["departure"]["offset"] == 6 and answer["departure"]["expected"] == ["0-2"]
    model = embedded("llama.cpp")
    assert [s["token"]["id"] for s in answer["steps"]] == model.tokenize("2024-13-01")[: len(answer["steps"])]
    m = sg.GrammarMatcher(sg.GrammarCompiler(model.tokenizer_info).compile_regex(DATE))
    for s in answer["steps"]:
        row = m.next_token_mask()
        assert s["allowed"] == int(np.unpackbits(row.view(np.uint8)).sum()) and s["forced"] == m.find_jump_forward_string()
        m.accept_token(s["token"]["id"])

    assert main(["inspect", "--regex", DATE, "2024-12-01"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[-1] == f"{len(model.tokenize('2024-12-01')) + 1} steps; a whole document of the format"
    rows = table[2:-1]  # after the head and its rule, before the closing line
    assert len(rows) == len(model.tokenize("2024-12-01")) + 1 and "(end)" in rows[-1] and "yes" in rows[-1]


def test_a_prompt_and_a_bad_schema(capsys, tmp_path):
    schema = tmp_path / "weather.json"
    schema.write_text(json.dumps(weather_schema()), encoding="utf-8")
    assert main(["inspect", "--schema", str(schema), "--json", "--max-tokens", "48", "--top", "2", "--prompt", "Weather in Paris as JSON?"]) == 0
    answer = json.loads(capsys.readouterr().out)
    jsonschema.validate(json.loads(answer["text"]), weather_schema())
    assert {s["origin"] for s in answer["steps"][:-1]} == {"sampled", "forced"}
    assert all(len(s["top_before"]) == 2 for s in answer["steps"] if s["origin"] == "sampled")

    schema.write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": -2}}}), encoding="utf-8")
    assert main(["inspect", "--schema", str(schema), "--json", "{}"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["type"] == "SchemaError" and error["keyword"] == "multipleOf" and error["pointer"] == "/properties/n/multipleOf"
