"""`strictgen bench` on a tiny workload, strictgen only (peers are optional and never required here)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from strictgen import bench
from strictgen.cli import main as cli_main

BENCH_DIR = Path("../shared/data/bench")
SCHEMAS = ["seed---person.json", "seed---weather.json"]

FIGURES = ["compile_cold_ms", "compile_warm_ms", "compile_cold_cpu_ms", "compile_warm_cpu_ms", "fill_first_us", "fill_repeat_us",
           "loop_fill_us", "loop_apply_us", "loop_fill_apply_us"]


@pytest.fixture(scope="module")
def two_schemas(tmp_path_factory) -> Path:
    if not all((BENCH_DIR / name).is_file() for name in SCHEMAS):
        pytest.skip(f"benchmark data {BENCH_DIR} is absent (run from the repository root next to ../shared)")
    folder = tmp_path_factory.mktemp("bench-schemas")
    for name in SCHEMAS:
        shutil.copy(BENCH_DIR / name, folder / name)
    return folder


def check_result(result: dict, schemas: int) -> dict:
    meta = result["meta"]
    assert meta["schemas"] == meta["schemas_common"] == schemas
    assert meta["repeats"] == 1 and meta["tokens_per_pass"] > 0
    sg = result["engines"]["strictgen"]
    assert sg["available"] is True
    assert set(result["engines"]) == {"strictgen"}  # peers not asked for: not touched
    assert result["headline"] == {}
    assert sg["vocab_preprocess_s"]["median"] > 0
    counts = sg["counts"]
    assert counts["compiled"] == schemas and counts["compile_error"] == counts["timeout"] == counts["runtime_error"] == 0
    assert counts["documents"] >= schemas
    assert counts["documents_refused"] == 0, sg["schemas"]
    for fig in FIGURES:
        stats = sg["common"][fig]
        assert stats["n"] > 0, fig
        for key in ("mean", "p50", "p99"):
            assert stats[key] is not None and stats[key] > 0, (fig, key, stats)
        assert stats["p50"] <= stats["p99"]
    for name, entry in sg["schemas"].items():
        assert entry["status"] == "ok", (name, entry)
        assert entry["refused_documents"] == 0 and entry["tokens"] > 0 and entry["compile_cold_ms"] > 0
    # the in-loop pass is capped per schema
    assert sg["common"]["loop_fill_apply_us"]["n"] <= schemas * meta["loop_steps_per_schema"]
    return sg


def test_bench_json_schemas_strictgen_only(two_schemas, tmp_path):
    out = tmp_path / "out" / "bench.json"
    result = bench.run_bench(two_schemas, tokenizer="smollm2", repeats=1, engines=["strictgen"],
                             loop_steps=4, timeout=None, json_out=out)
    check_result(result, 2)
    on_disk = json.loads(out.read_text(encoding="utf-8"))
    assert on_disk["engines"]["strictgen"]["counts"] == result["engines"]["strictgen"]["counts"]
    table = bench.format_table(result)
    assert "fill, repeat pass p50" in table and "strictgen" in table and "best" not in table


def test_bench_any_json_format(two_schemas):
    result = bench.run_bench(two_schemas, tokenizer="smollm2", repeats=1, fmt="json", engines=["strictgen"],
                             loop_steps=2, timeout=None)
    assert result["meta"]["format"] == "json"
    check_result(result, 2)


def test_bench_command_line(two_schemas, tmp_path, capsys):
    out = tmp_path / "cli.json"
    code = cli_main(["bench", "--schemas", str(two_schemas), "--tokenizer", "smollm2", "--repeats", "1",
                     "--limit", "1", "--no-peers", "--loop-steps", "2", "--timeout", "0", "-q", "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "compile cold p50" in printed and "valid documents refused" in printed
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["meta"]["schemas"] == 1 and data["engines"]["strictgen"]["counts"]["documents_refused"] == 0


def test_bench_rejects_bad_arguments(two_schemas, tmp_path):
    with pytest.raises(ValueError):
        bench.run_bench(two_schemas, engines=["nope"])
    with pytest.raises(ValueError):
        bench.run_bench(two_schemas, fmt="yaml")
    with pytest.raises(ValueError):
        bench.run_bench(tmp_path, tokenizer="smollm2")  # no schema files


def test_cell_deadline_interrupts_python_code():
    start = time.monotonic()
    with pytest.raises(bench.CellTimeout), bench.cell_deadline(0.05):
        while time.monotonic() - start < 5:
            pass
    assert time.monotonic() - start < 2
    with bench.cell_deadline(None):  # no budget: nothing happens
        pass


def test_load_cases_keeps_valid_documents_only(two_schemas):
    cases = bench.load_cases(two_schemas)
    assert [c.name for c in cases] == [Path(s).stem for s in SCHEMAS]
    assert all(len(c.documents) == 1 for c in cases)  # each seed file has one valid and two invalid documents
    assert json.loads(cases[0].documents[0])["name"] == "张三"


def test_missing_peer_is_reported_not_fatal(two_schemas, monkeypatch):
    class Missing(bench.StrictgenEngine):
        def __init__(self, *args, **kwargs):
            raise bench.EngineUnavailable("xgrammar is not importable (simulated)")

    monkeypatch.setitem(bench.ENGINE_CLASSES, "xgrammar", Missing)
    result = bench.run_bench(two_schemas, tokenizer="smollm2", repeats=1, limit=1, engines=["xgrammar", "strictgen"],
                             loop_steps=1, timeout=None)
    assert list(result["engines"]) == ["strictgen", "xgrammar"]  # strictgen always first
    assert result["engines"]["xgrammar"] == {"available": False, "reason": "xgrammar is not importable (simulated)"}
    assert result["engines"]["strictgen"]["counts"]["documents_refused"] == 0
    assert result["headline"] == {}
    assert "xgrammar: not run (xgrammar is not importable (simulated))" in bench.format_table(result)


def test_batch_bench_strictgen_only(two_schemas, tmp_path, capsys):
    """`strictgen bench --batch`: every row teacher-forced to EOS and replaced (a refused token
    raises), fill/apply/accept timed per step, cold and warm, for each batch size."""
    from strictgen.bench.batch import format_batch_table, run_batch_bench

    result = run_batch_bench([1, 3], schemas=two_schemas, tokenizer="smollm2", engines=["strictgen"], steps=40, threads=2)
    assert result["meta"]["schemas"] == 2 and result["meta"]["documents"] >= 2
    for batch in ("1", "3"):
        for phase in ("cold", "warm"):
            figures = result["engines"]["strictgen"][batch][phase]
            for part in ("fill", "apply", "accept", "total"):
                assert 0 < figures[part]["p50"] <= figures[part]["p99"], (batch, phase, part)
    table = format_batch_table(result)
    assert "| 3 | warm | strictgen |" in table and "| fill CPU |" in table
    out = tmp_path / "batch.json"
    assert cli_main(["bench", "--batch", "2", "--batch-steps", "3", "--no-peers", "--schemas", str(two_schemas),
                     "--tokenizer", "smollm2", "--json", str(out), "-q", "--batch-forward-ms", "1"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(out.read_text())["meta"]["batches"] == [2] and "| 2 | cold | strictgen |" in printed
    assert json.loads(out.read_text())["meta"]["forward_ms"] == 1 and "1 ms untimed pause per step" in printed


def test_batch_bench_fresh_rows_time_every_token(two_schemas):
    """Fresh rows (the default) feed no token outside the timed steps, so a request's first masks
    and deferred rule builds are timed; steps=0 runs until every document has reached its EOS.
    Spread rows start part-way in, their prefixes fed untimed."""
    from strictgen.bench.batch import run_batch_bench

    fresh = run_batch_bench([3], schemas=two_schemas, tokenizer="smollm2", engines=["strictgen"], steps=0, threads=2)
    spread = run_batch_bench([3], schemas=two_schemas, tokenizer="smollm2", engines=["strictgen"], steps=4, rows="spread", threads=2)
    assert fresh["meta"]["rows"] == "fresh" and spread["meta"]["rows"] == "spread"
    documents = fresh["meta"]["documents"]
    for phase in ("cold", "warm"):
        run = fresh["engines"]["strictgen"]["3"][phase]
        assert run["untimed_tokens"] == 0 and run["finished"] >= documents, run
        assert run["timed_tokens"] == 3 * run["steps"] and run["fill_cpu"]["mean"] > 0
        assert spread["engines"]["strictgen"]["3"][phase]["untimed_tokens"] > 0
    with pytest.raises(ValueError, match="rows must be"):
        run_batch_bench([2], schemas=two_schemas, tokenizer="smollm2", engines=["strictgen"], steps=1, rows="middle")


@pytest.fixture(scope="module")
def reordered_members(tmp_path_factory) -> Path:
    """One schema, two valid documents: members in the schema's order, and in another order."""
    folder = tmp_path_factory.mktemp("bench-order")
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}
    tests = [{"data": {"a": 1, "b": 2}, "valid": True}, {"data": {"b": 3, "a": 4}, "valid": True}]
    (folder / "order.json").write_text(json.dumps({"schema": schema, "tests": tests}))
    return folder


def test_bench_says_when_a_refusal_is_member_order(reordered_members):
    """A valid document refused only because its members are in another order than the schema's
    (the documented default) is reported as such, by both benches; --any-order accepts it."""
    from strictgen.bench.batch import format_batch_table, run_batch_bench

    result = bench.run_bench(reordered_members, tokenizer="smollm2", repeats=1, engines=["strictgen"], loop_steps=1, timeout=None)
    counts = result["engines"]["strictgen"]["counts"]
    assert counts["documents_refused"] == counts["documents_refused_member_order"] == 1
    assert result["engines"]["strictgen"]["schemas"]["order"]["refused_for_member_order"] == 1
    table = bench.format_table(result)
    assert "order (1, member order only)" in table and "any_order=True (--any-order) accepts" in table
    unordered = bench.run_bench(reordered_members, tokenizer="smollm2", repeats=1, engines=["strictgen"], loop_steps=1,
                                timeout=None, any_order=True)
    assert unordered["engines"]["strictgen"]["counts"]["documents_refused"] == 0
    batch = run_batch_bench([2], schemas=reordered_members, tokenizer="smollm2", engines=["strictgen"], steps=2, threads=2)
    assert batch["meta"]["documents"] == 1
    assert batch["left_out"]["strictgen"] == {"not_compiled": 0, "refused": 1, "member_order": 1}
    assert "1 valid documents refused (1 only because their members are in another order" in format_batch_table(batch)
