"""strictgen eval: the report, the chart and the regression gate.

Fast tests drive the eval against a real scripted HTTP server (an endpoint that answers the expected
values when constrained and fenced prose when not), so every figure is known in advance. The slow
test runs a 5-task slice on the embedded model against the committed baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strictgen.cli import main as cli_main
from strictgen.reliability import eval as ev
from strictgen.reliability.bfcl import call_schema, exact_match, load_tool_tasks, to_json_schema
from strictgen.reliability.validate import validate
from tests.reliability.scripted_server import ScriptedServer

BASELINE = Path(__file__).parent / "data" / "baseline_slice.json"
SLICE = ["--limit", "5", "--modes", "prompt-only,schema", "--max-tokens", "48", "--bfcl-limit", "0", "--quiet"]


def test_shipped_dataset():
    tasks = ev.load_dataset()
    assert len(tasks) >= 40
    assert {t.domain for t in tasks} == {"person", "invoice", "flight", "bug", "weather", "order"}
    assert {t.lang for t in tasks} == {"en", "zh"}
    assert len({t.id for t in tasks}) == len(tasks)
    for t in tasks:
        assert validate(t.expected, t.schema) == [], t.id  # every expected answer is valid under its schema
    first5 = ev.load_dataset(limit=5)
    assert [t.id for t in first5] == [t.id for t in tasks[:5]] and {t.lang for t in first5} == {"en", "zh"}


def _oracle(tasks):
    """Answers the expected value under a schema constraint, fenced prose otherwise."""
    by_prompt = {t.prompt: t for t in tasks}

    def responder(body, n):
        task = by_prompt[body["messages"][-1]["content"]] if body["messages"][-1]["content"] in by_prompt else None
        if task is None:  # a retry turn: find the task in the first user message
            task = next(by_prompt[m["content"]] for m in body["messages"] if m["content"] in by_prompt)
        doc = json.dumps(task.expected, ensure_ascii=False)
        if body.get("response_format", {}).get("type") == "json_schema":
            return doc, "stop"
        return f"Here is the JSON:\n```json\n{doc}\n```", "stop"

    return responder


def test_eval_against_an_endpoint_writes_report_chart_and_gates(tmp_path):
    tasks = ev.load_dataset(limit=5)
    with ScriptedServer(_oracle(tasks)) as srv:
        out = tmp_path / "run1"
        rc = cli_main(["eval", "--base-url", srv.url, *SLICE, "--out", str(out), "--write-baseline", str(tmp_path / "base.json")])
        assert rc == 0
        results = json.loads((out / "results.json").read_text())
        ext = results["extraction"]
        assert ext["schema"]["syntax"] == 1.0 and ext["schema"]["schema_valid"] == 1.0 and ext["schema"]["field_accuracy"] == 1.0
        assert ext["prompt-only"]["syntax"] == 0.0 and ext["prompt-only"]["parsed_after_repair"] == 1.0
        assert ext["prompt-only"]["field_accuracy"] == 0.0
        assert ext["schema"]["fields"]["person /name"] == 1.0
        report = (out / "report.md").read_text()
        assert "| schema | 100.0 | 100.0 | 100.0 | 100.0 |" in report and "| prompt-only | 0.0 | 100.0 | 0.0 | 0.0 |" in report
        assert (out / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert len((out / "records.jsonl").read_text().splitlines()) == 10
        base = json.loads((tmp_path / "base.json").read_text())["metrics"]
        assert base["extraction/schema/field_accuracy"] == 1.0

        # the same run gated against its own baseline passes; an injected regression trips the gate
        assert cli_main(["eval", "--base-url", srv.url, *SLICE, "--out", str(tmp_path / "run2"), "--baseline", str(tmp_path / "base.json")]) == 0
        raised = dict(base, **{"extraction/prompt-only/syntax": 0.03})
        (tmp_path / "raised.json").write_text(json.dumps({"metrics": raised}))
        rc = cli_main(["eval", "--base-url", srv.url, *SLICE, "--out", str(tmp_path / "run3"), "--baseline", str(tmp_path / "raised.json"), "--threshold", "0.02"])
        assert rc == 1
        assert "**regression**" in (tmp_path / "run3" / "report.md").read_text()
        # within the threshold: no trip
        (tmp_path / "near.json").write_text(json.dumps({"metrics": dict(base, **{"extraction/prompt-only/syntax": 0.015})}))
        assert cli_main(["eval", "--base-url", srv.url, *SLICE, "--out", str(tmp_path / "run4"), "--baseline", str(tmp_path / "near.json")]) == 0


def test_compare_gate_directly():
    now = {"a/schema/syntax": 0.9, "a/schema/field_accuracy": 0.5}
    assert ev.compare(now, {"a/schema/syntax": 0.91}, 0.02) == []
    assert len(ev.compare(now, {"a/schema/syntax": 0.95}, 0.02)) == 1
    assert "not measured" in ev.compare(now, {"tools/schema/valid_call": 0.1}, 0.02)[0]


def test_field_scores():
    want = {"name": "Alice Chen", "age": 34, "tags": ["a"]}
    got = ev.field_scores(want, {"name": " alice  chen", "age": 34.0, "tags": ["b"]})
    assert got == {"/name": True, "/age": True, "/tags/0": False}
    assert ev.field_scores(want, ev._MISSING) == {"/name": False, "/age": False, "/tags/0": False}


def test_bfcl_conversion_and_scoring():
    fn = {"name": "f", "parameters": {"type": "dict", "properties": {"x": {"type": "float", "default": "1"}, "p": {"type": "tuple", "items": {"type": "integer"}}, "q": {"type": "any"}}, "required": ["x"]}}
    js = to_json_schema(fn["parameters"])
    assert js == {"type": "object", "properties": {"x": {"type": "number"}, "p": {"type": "array", "items": {"type": "integer"}}, "q": {}}, "required": ["x"], "additionalProperties": False}
    schema = call_schema([fn])
    assert validate({"name": "f", "arguments": {"x": 1.5}}, schema) == []
    assert validate({"name": "g", "arguments": {"x": 1.5}}, schema)[0].pointer == "/name"
    gt = [{"f": {"x": [1.5], "p": [[1, 2], ""]}}]
    assert exact_match({"name": "f", "arguments": {"x": 1.5}}, gt)
    assert exact_match({"name": "f", "arguments": {"x": 1.5, "p": [1, 2]}}, gt)
    assert not exact_match({"name": "f", "arguments": {"x": 2}}, gt)
    assert not exact_match({"name": "f", "arguments": {"x": 1.5, "zz": 1}}, gt)
    assert not exact_match({"name": "f", "arguments": {}}, gt)


def _first_values(params: dict) -> dict:
    out = {}
    for k, accepted in params.items():
        if accepted and accepted[0] != "":
            v = accepted[0]
            out[k] = _first_values(v) if isinstance(v, dict) and all(isinstance(x, list) for x in v.values()) else v
    return out


def test_bfcl_tasks_from_shared_data():
    folder = Path("../shared/data/bfcl")
    if not folder.is_dir():
        pytest.skip("../shared/data/bfcl is absent (the BFCL tool-calling set reads it from there)")
    tasks = load_tool_tasks(folder, limit=30)
    assert len(tasks) == 60 and tasks[0].id == "simple_python_0" and tasks[1].id == "multiple_0"
    for t in tasks:
        gt_fn, gt_args = next(iter(t.expected[0].items()))
        # the ground-truth call (first acceptable value of each argument given) is a valid call
        args = _first_values(gt_args)
        assert validate({"name": gt_fn, "arguments": args}, t.schema) == [], t.id
        assert exact_match({"name": gt_fn, "arguments": args}, t.expected)


def test_missing_bfcl_folder_is_a_clear_message(tmp_path):
    from strictgen.errors import StrictgenError

    with pytest.raises(StrictgenError, match="BFCL data not found"):
        load_tool_tasks(tmp_path / "nope")


@pytest.mark.slow
def test_embedded_model_slice_against_committed_baseline(tmp_path):
    """5 tasks x (prompt-only, schema), 48 tokens, on SmolLM2 (llama.cpp), gated on the committed baseline."""
    from strictgen.reliability.call import LocalBackend
    from tests.models import embedded

    import argparse

    p = argparse.ArgumentParser()
    ev.add_arguments(p)
    backend = LocalBackend(embedded("llama.cpp"))
    args = p.parse_args([*SLICE, "--out", str(tmp_path), "--baseline", str(BASELINE)])
    results, regressions = ev.run(args, backend)
    assert regressions == [], regressions
    ext = results["extraction"]
    assert ext["schema"]["syntax"] == 1.0 and ext["schema"]["schema_valid"] == 1.0  # constrained: always valid
    assert (tmp_path / "report.md").is_file() and (tmp_path / "chart.png").stat().st_size > 1000
    # an injected regression trips the gate on the same results
    worse = dict(results["metrics"])
    worse["extraction/schema/field_accuracy"] -= 0.05
    assert ev.compare(worse, ev.load_baseline(BASELINE), 0.02)


def test_an_internal_error_on_one_tool_task_is_counted_not_the_end_of_the_run(monkeypatch):
    """A slip of ours (sg.InternalError) while one task is run makes that task a failure with the
    error recorded; the other tasks still run. The component is made to raise on purpose here,
    because no known input triggers an internal error."""
    from strictgen.errors import InternalError
    from strictgen.reliability.bfcl import ToolTask

    calls = []

    def run_structured(messages, schema, backend, **kwargs):
        calls.append(schema)
        raise InternalError("an internal slip")

    monkeypatch.setattr(ev, "run_structured", run_structured)
    schema = {"type": "object", "properties": {"name": {"const": "f"}}, "required": ["name"]}
    tasks = [ToolTask(id=f"t{i}", prompt="call f", functions=[], schema=schema, expected=[{"f": {}}]) for i in range(2)]
    summary, rows = ev.run_tools(object(), tasks, modes=["schema"])
    assert len(calls) == 2 and len(rows) == 2
    assert all(r["finish_reason"] == "error" and r["error"].startswith("internal error") and not r["valid_call"] for r in rows)
