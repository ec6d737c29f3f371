"""`strictgen generate`: what `make run` runs prints one line of valid JSON; stats go to stderr."""

from __future__ import annotations

import json

import jsonschema
import pytest

from strictgen.cli import main
from tests.models import WEATHER_FILE, WEATHER_PROMPT, weather_schema


@pytest.fixture
def weather_file():
    return str(WEATHER_FILE)  # what `make run` asks for


def test_generate_schema_prints_one_line_of_valid_json(capsys, weather_file):
    assert main(["generate", "--quiet", "--stats", "--schema", weather_file, "--max-tokens", "64", WEATHER_PROMPT]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 1
    jsonschema.validate(json.loads(lines[0]), weather_schema())
    stats = json.loads(err.strip().splitlines()[-1])
    assert stats["finish_reason"] == "stop" and stats["forced_tokens"] > 0
    assert stats["output_tokens"] > stats["forced_tokens"] > 0 and stats["passes_saved"] > 0


def test_generate_choice_and_regex(capsys):
    assert main(["generate", "--quiet", "--choice", "red", "--choice", "green", "--choice", "blue", "What colour is grass?"]) == 0
    assert capsys.readouterr().out.strip() in ("red", "green", "blue")
    assert main(["generate", "--quiet", "--regex", r"[0-9]{1,3}", "--no-jump-forward", "How many legs does a spider have?"]) == 0
    assert capsys.readouterr().out.strip().isdigit()


def test_generate_refuses_a_budget_below_the_minimum(capsys, weather_file):
    assert main(["generate", "--quiet", "--schema", weather_file, "--max-tokens", "5", WEATHER_PROMPT]) == 2
    err = capsys.readouterr().err
    assert "max_tokens=5 is too small" in err and "needs" in err


def test_generate_reports_a_missing_model(capsys):
    assert main(["generate", "--model", "/nonexistent/model.gguf", "--regex", "a", "hi"]) == 2
    assert "no model at /nonexistent/model.gguf" in capsys.readouterr().err
