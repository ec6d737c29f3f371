"""`strictgen eval`: output quality per mode, measured honestly, with a regression gate.

Extraction set (`data/extraction.jsonl`, written for this project: persons, invoices, flights, bug
reports, weather, orders, in English and Chinese): each task has a prompt, a schema and the expected
values. Every mode but schema-no-hint sees the same messages (the format hint, engine.format_hint,
describes the schema in the system turn); modes differ only in how the backend is held to it:

- prompt-only: unconstrained;      - json-object: any JSON (grammar / response_format json_object);
- schema: the schema's grammar (or response_format json_schema);
- schema-no-hint: schema, with nothing about the format in the prompt (what the hint is worth);
- schema+retry: schema, then validation with the errors fed back (up to --retries more attempts).

Metrics per mode: syntax (the final text is JSON as it stands), parse after repair (json-repair),
schema-valid (jsonschema Draft 2020-12), field accuracy (each expected leaf value, strings compared
case- and space-insensitively), latency. Tool set (BFCL, see bfcl.py): valid-call rate (the call
matches the call schema) and exact-argument match, unconstrained against constrained.

Writes report.md, results.json and chart.png to --out; --baseline FILE --threshold T exits 1 when a
metric in the baseline drops by more than T.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from strictgen.errors import InternalError, StrictgenError

from .bfcl import ToolTask, default_bfcl_dir, exact_match, load_tool_tasks, same_value
from .call import LocalBackend, OpenAIBackend, run_structured, schema_instruction
from .repair import RepairError, repair_json
from .validate import to_pointer, validate

MODES = ("prompt-only", "json-object", "schema", "schema-no-hint", "schema+retry")
TOOL_MODES = ("prompt-only", "schema", "schema-no-hint")
NO_HINT = "schema-no-hint"
SYSTEM = "You extract facts from text and answer with JSON only."


@dataclass
class ExtractionTask:
    id: str
    domain: str
    lang: str
    prompt: str
    schema: dict
    expected: dict


def load_dataset(path: str | Path | None = None, limit: int | None = None) -> list[ExtractionTask]:
    """The shipped extraction set (or a JSON Lines file of the same shape), first `limit` tasks."""
    if path is None:
        text = resources.files("strictgen.reliability").joinpath("data/extraction.jsonl").read_text(encoding="utf-8")
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise StrictgenError(f"cannot read dataset {path}: {exc}") from exc
    tasks = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            tasks.append(ExtractionTask(d["id"], d.get("domain", ""), d.get("lang", ""), d["prompt"], d["schema"], d["expected"]))
        except (json.JSONDecodeError, KeyError) as exc:
            raise StrictgenError(f"dataset line {n}: {exc}") from exc
    return tasks[:limit] if limit is not None else tasks


# ---- scoring ----


def leaves(value, path=()):
    """(JSON pointer, value) of every scalar in a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, path + (i,))
    else:
        yield to_pointer(path), path, value


def _lookup(value, path):
    for p in path:
        if isinstance(value, dict) and p in value:
            value = value[p]
        elif isinstance(value, list) and isinstance(p, int) and p < len(value):
            value = value[p]
        else:
            return _MISSING
    return value


_MISSING = object()


def field_scores(expected, value) -> dict[str, bool]:
    """Per expected leaf pointer: does `value` hold the expected value there?"""
    return {ptr: value is not _MISSING and same_value(_lookup(value, path), want) for ptr, path, want in leaves(expected)}


def _mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0


# ---- running ----


def make_backend(args_model="default", base_url=None, api_key=None, endpoint_model="default", runtime="auto", token_healing=True):
    if base_url:
        return OpenAIBackend(base_url, api_key=api_key, model=endpoint_model)
    return LocalBackend(args_model, runtime=runtime, token_healing=token_healing)


ENGINE_COUNTS = ("forward_passes", "passes_saved", "healed", "healed_longer")


def _engine_counts(backend, start: int) -> dict[str, int]:
    """Forward passes, passes saved and token-healing counts of a local backend's completions since `start`."""
    done = getattr(backend, "stats", None)
    if done is None:
        return {}
    return {k: sum(getattr(st, k) for st in done[start:]) for k in ENGINE_COUNTS}


def _count_summary(rows: list[dict]) -> dict[str, int]:
    return {k: sum(r["engine"].get(k, 0) for r in rows) for k in ENGINE_COUNTS} if rows and rows[0]["engine"] else {}


def _attempt_kwargs(mode: str, retries: int) -> tuple[str, int]:
    if mode == "schema+retry":
        return "schema", retries
    return ("schema" if mode == NO_HINT else mode), 0


def extraction_messages(task: ExtractionTask, mode: str) -> list[dict]:
    system = SYSTEM if mode == NO_HINT else SYSTEM + "\n" + schema_instruction(task.schema)
    return [{"role": "system", "content": system}, {"role": "user", "content": task.prompt}]


def tool_messages(task: ToolTask, mode: str) -> list[dict]:
    messages = [{"role": "user", "content": task.prompt}]
    return messages if mode == NO_HINT else [{"role": "system", "content": schema_instruction(task.schema)}] + messages


def run_extraction(backend, tasks, modes=MODES, *, max_tokens=128, retries=2, log=None) -> tuple[dict, list[dict]]:
    summary, records = {}, []
    for mode in modes:
        call_mode, n_retries = _attempt_kwargs(mode, retries)
        rows = []
        for task in tasks:
            messages = extraction_messages(task, mode)
            start = len(getattr(backend, "stats", ()))
            out = run_structured(messages, task.schema, backend, mode=call_mode, max_retries=n_retries, max_tokens=max_tokens)
            final = out.final
            try:
                value = json.loads(final.text)
                syntax = True
            except json.JSONDecodeError:
                value, syntax = _MISSING, False
            try:
                repaired_ok = syntax or repair_json(final.text) is not None
            except RepairError:
                repaired_ok = False
            valid = syntax and not validate(value, task.schema)
            fields = field_scores(task.expected, value)
            row = {"suite": "extraction", "mode": mode, "id": task.id, "domain": task.domain, "lang": task.lang,
                   "text": final.text, "finish_reason": final.finish_reason, "attempts": len(out.attempts),
                   "syntax": syntax, "parsed_after_repair": repaired_ok, "schema_valid": valid,
                   "fields": fields, "latency_s": round(out.latency_s, 3),
                   "errors": [a.errors for a in out.attempts], "engine": _engine_counts(backend, start)}
            rows.append(row)
            if log:
                log(f"[{mode}] {task.id}: syntax={syntax} valid={valid} fields={sum(fields.values())}/{len(fields)} {out.latency_s:.1f}s")
        per_field: dict[str, list[bool]] = {}
        for r in rows:
            for ptr, ok in r["fields"].items():
                per_field.setdefault(f"{r['domain']} {ptr}", []).append(ok)
        lat = [r["latency_s"] for r in rows]
        summary[mode] = {
            "n": len(rows),
            "syntax": _mean(r["syntax"] for r in rows),
            "parsed_after_repair": _mean(r["parsed_after_repair"] for r in rows),
            "schema_valid": _mean(r["schema_valid"] for r in rows),
            "field_accuracy": _mean(ok for r in rows for ok in r["fields"].values()),
            "attempts_mean": _mean(r["attempts"] for r in rows),
            "latency_mean_s": _mean(lat),
            "latency_p50_s": statistics.median(lat) if lat else 0.0,
            "fields": {k: _mean(v) for k, v in sorted(per_field.items())},
            "engine": _count_summary(rows),
        }
        records += rows
    return summary, records


def run_tools(backend, tasks: list[ToolTask], modes=TOOL_MODES, *, max_tokens=128, log=None) -> tuple[dict, list[dict]]:
    summary, records = {}, []
    for mode in modes:
        rows = []
        for task in tasks:
            messages = tool_messages(task, mode)
            start = len(getattr(backend, "stats", ()))
            try:
                out = run_structured(messages, task.schema, backend, mode=_attempt_kwargs(mode, 0)[0], max_retries=0, max_tokens=max_tokens)
                text, finish, latency, err = out.final.text, out.final.finish_reason, out.latency_s, None
            except StrictgenError as exc:  # a signature the compiler refuses: counted as a failure
                text, finish, latency, err = "", "error", 0.0, str(exc)
            except InternalError as exc:  # a slip of ours on one task is a failure to count, not the end of a long run
                text, finish, latency, err = "", "error", 0.0, f"internal error: {exc}"
            try:
                call = json.loads(text)
                syntax = True
            except json.JSONDecodeError:
                call, syntax = None, False
            valid = syntax and not validate(call, task.schema)
            match = valid and exact_match(call, task.expected)
            rows.append({"suite": "tools", "mode": mode, "id": task.id, "text": text, "finish_reason": finish,
                         "syntax": syntax, "valid_call": valid, "exact_match": match, "latency_s": round(latency, 3), "error": err,
                         "engine": _engine_counts(backend, start)})
            if log:
                log(f"[tools {mode}] {task.id}: valid={valid} exact={match} {latency:.1f}s")
        summary[mode] = {
            "n": len(rows),
            "syntax": _mean(r["syntax"] for r in rows),
            "valid_call": _mean(r["valid_call"] for r in rows),
            "exact_match": _mean(r["exact_match"] for r in rows),
            "latency_mean_s": _mean(r["latency_s"] for r in rows),
            "errors": sum(1 for r in rows if r["error"]),
            "engine": _count_summary(rows),
        }
        records += rows
    return summary, records


# ---- gate ----

GATED = {"extraction": ("syntax", "schema_valid", "field_accuracy"), "tools": ("valid_call", "exact_match")}


def flat_metrics(results: dict) -> dict[str, float]:
    """The gated metrics as {"extraction/schema/syntax": 1.0, ...} (higher is better)."""
    out = {}
    for suite, names in GATED.items():
        for mode, m in (results.get(suite) or {}).items():
            for name in names:
                out[f"{suite}/{mode}/{name}"] = round(float(m[name]), 4)
    return out


def compare(metrics: dict[str, float], baseline: dict[str, float], threshold: float = 0.02) -> list[str]:
    """Regressions: baseline metrics that dropped by more than `threshold` (or are missing now)."""
    problems = []
    for key, base in sorted(baseline.items()):
        if key not in metrics:
            problems.append(f"{key}: in the baseline ({base:.3f}) but not measured now")
        elif metrics[key] < base - threshold - 1e-12:
            problems.append(f"{key}: {metrics[key]:.3f} < baseline {base:.3f} - {threshold}")
    return problems


def load_baseline(path) -> dict[str, float]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise StrictgenError(f"cannot read baseline {path}: {exc}") from exc
    return data.get("metrics", data)


# ---- report ----


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def render_markdown(results: dict) -> str:
    lines = [f"# strictgen eval", "", f"Backend: {results['backend']}; max_tokens {results['max_tokens']}; "
             f"{results['extraction_tasks']} extraction tasks, {results['tool_tasks']} tool tasks.", ""]
    ext = results.get("extraction") or {}
    if ext:
        lines += ["## Extraction", "", "| mode | syntax % | parse after repair % | schema-valid % | field accuracy % | attempts | latency mean s | latency p50 s |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for mode, m in ext.items():
            lines.append(f"| {mode} | {_pct(m['syntax'])} | {_pct(m['parsed_after_repair'])} | {_pct(m['schema_valid'])} | "
                         f"{_pct(m['field_accuracy'])} | {m['attempts_mean']:.2f} | {m['latency_mean_s']:.2f} | {m['latency_p50_s']:.2f} |")
        modes = list(ext)
        fields = sorted({f for m in ext.values() for f in m["fields"]})
        lines += ["", "### Field accuracy per field (%)", "", "| field | " + " | ".join(modes) + " |", "|---|" + "---:|" * len(modes)]
        for f in fields:
            lines.append(f"| `{f}` | " + " | ".join(_pct(ext[m]["fields"].get(f, 0.0)) for m in modes) + " |")
    tools = results.get("tools") or {}
    if tools:
        lines += ["", "## Tool calls (BFCL v4 simple_python + multiple)", "",
                  "| mode | syntax % | valid call % | exact-argument match % | latency mean s |", "|---|---:|---:|---:|---:|"]
        for mode, m in tools.items():
            lines.append(f"| {mode} | {_pct(m['syntax'])} | {_pct(m['valid_call'])} | {_pct(m['exact_match'])} | {m['latency_mean_s']:.2f} |")
    elif results.get("tools_note"):
        lines += ["", f"Tool calls: {results['tools_note']}"]
    counts = [(suite, mode, m["engine"]) for suite, part in (("extraction", ext), ("tools", tools)) for mode, m in part.items() if m.get("engine")]
    if counts:
        lines += ["", "## Engine (local model): forward passes and token healing", "",
                  "| suite | mode | forward passes | passes saved | healed | healed, longer token |", "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {s_} | {mode} | {c['forward_passes']} | {c['passes_saved']} | {c['healed']} | {c['healed_longer']} |" for s_, mode, c in counts]
    if results.get("gate"):
        g = results["gate"]
        lines += ["", "## Gate", "", f"Baseline {g['baseline']} (threshold {g['threshold']}): " + ("**regression**" if g["regressions"] else "passed")]
        lines += [f"- {p}" for p in g["regressions"]]
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ext = results.get("extraction") or {}
    tools = results.get("tools") or {}
    panels = [p for p in (("Extraction", ext, ("syntax", "schema_valid", "field_accuracy")),
                          ("Tool calls (BFCL)", tools, ("syntax", "valid_call", "exact_match"))) if p[1]]
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(6 * max(1, len(panels)), 4), squeeze=False)
    for ax, (title, data, metrics) in zip(axes[0], panels):
        modes = list(data)
        width = 0.8 / len(metrics)
        for j, metric in enumerate(metrics):
            xs = [i + (j - (len(metrics) - 1) / 2) * width for i in range(len(modes))]
            vals = [100 * data[m][metric] for m in modes]
            bars = ax.bar(xs, vals, width, label=metric.replace("_", " "))
            ax.bar_label(bars, fmt="%.0f", fontsize=7)
        ax.set_xticks(range(len(modes)), modes)
        ax.set_ylim(0, 110)
        ax.set_ylabel("%")
        ax.set_title(title)
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(f"strictgen eval: {results['backend']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ---- command ----


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default=None, help="a JSON Lines extraction set (default: the shipped one)")
    p.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    p.add_argument("--limit", type=int, default=None, help="only the first N extraction tasks")
    p.add_argument("--model", default="default", help="local model: 'default' (embedded SmolLM2), a GGUF or a HF folder")
    p.add_argument("--runtime", default="auto", choices=["auto", "llama.cpp", "transformers"])
    p.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint instead of the local model")
    p.add_argument("--api-key", default=None)
    p.add_argument("--endpoint-model", default="default", help="the model name sent to the endpoint")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--no-token-healing", action="store_true", help="local model: keep forced boundary tokens (measures healing)")
    p.add_argument("--retries", type=int, default=2, help="extra attempts in schema+retry mode")
    p.add_argument("--bfcl-dir", default=None, help="BFCL folder (default ../shared/data/bfcl from the project root)")
    p.add_argument("--bfcl-limit", type=int, default=20, help="entries per BFCL file (simple_python, multiple); 0: no tool set")
    p.add_argument("--out", default="eval-report", help="folder for report.md, results.json, chart.png")
    p.add_argument("--baseline", default=None, help="results or metrics JSON to gate against")
    p.add_argument("--threshold", type=float, default=0.02, help="allowed drop per metric (fraction, 0.02 = 2 points)")
    p.add_argument("--write-baseline", default=None, metavar="FILE", help="write this run's gated metrics as a baseline")
    p.add_argument("--quiet", action="store_true")


def run(args: argparse.Namespace, backend=None) -> tuple[dict, list[str]]:
    """Run the eval the arguments describe; returns (results, regressions)."""
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise StrictgenError(f"unknown mode {bad[0]!r}; choose from {', '.join(MODES)}")
    log = None if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    tasks = load_dataset(args.dataset, args.limit)
    tool_tasks, note = [], None
    if args.bfcl_limit > 0:
        try:
            tool_tasks = load_tool_tasks(args.bfcl_dir or default_bfcl_dir(), args.bfcl_limit)
        except StrictgenError as exc:
            if args.bfcl_dir:
                raise
            note = f"skipped: {exc}"
            print(f"strictgen eval: {note}", file=sys.stderr)
    baseline = load_baseline(args.baseline) if args.baseline else None
    if backend is None:
        backend = make_backend(args.model, args.base_url, args.api_key, args.endpoint_model, args.runtime, not args.no_token_healing)
    t0 = time.perf_counter()
    ext, ext_rows = run_extraction(backend, tasks, modes, max_tokens=args.max_tokens, retries=args.retries, log=log)
    tool_modes = [m for m in TOOL_MODES if m in modes or (m == "schema" and "schema+retry" in modes)] or ["prompt-only", "schema"]
    tools, tool_rows = run_tools(backend, tool_tasks, tool_modes, max_tokens=args.max_tokens, log=log) if tool_tasks else ({}, [])
    results = {"backend": backend.name, "max_tokens": args.max_tokens, "extraction_tasks": len(tasks), "tool_tasks": len(tool_tasks),
               "extraction": ext, "tools": tools, "tools_note": note, "wall_s": round(time.perf_counter() - t0, 1)}
    results["metrics"] = flat_metrics(results)
    regressions = []
    if baseline is not None:
        regressions = compare(results["metrics"], baseline, args.threshold)
        results["gate"] = {"baseline": str(args.baseline), "threshold": args.threshold, "regressions": regressions}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    (out / "records.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ext_rows + tool_rows), encoding="utf-8")
    (out / "report.md").write_text(render_markdown(results), encoding="utf-8")
    plot(results, out / "chart.png")
    if args.write_baseline:
        Path(args.write_baseline).write_text(json.dumps({"metrics": results["metrics"]}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return results, regressions


def main(args: argparse.Namespace, backend=None) -> int:
    results, regressions = run(args, backend)
    print(render_markdown(results), end="")
    print(f"report: {Path(args.out) / 'report.md'}; chart: {Path(args.out) / 'chart.png'}")
    if regressions:
        print("strictgen eval: regression against the baseline:\n  " + "\n  ".join(regressions), file=sys.stderr)
        return 1
    return 0
