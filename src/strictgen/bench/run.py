"""The single-row benchmark: every engine over the workload, repeated runs, medians, JSON out."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from strictgen.bench.cells import EVICT_BYTES, Evictor, force_documents, measure_cell, median, median_figures, run_figures
from strictgen.bench.engines import ENGINE_CLASSES, ENGINES, Engine, EngineUnavailable
from strictgen.bench.report import headline
from strictgen.bench.workload import WARMUP_DOC, WARMUP_SCHEMA, BenchCase, default_schemas_dir, load_cases, load_vocab, spread_cases


def _torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except Exception:  # noqa: BLE001  (not installed, or a broken install: numpy logits)
        return False
    return True


def run_bench(
    schemas: str | Path | None = None,
    *,
    tokenizer: str = "qwen",
    repeats: int = 3,
    limit: int | None = None,
    fmt: str = "schema",
    engines: list[str] | tuple[str, ...] | None = None,
    quick: bool = False,
    loop_steps: int | None = None,
    timeout: float | None = 30.0,
    cell_budget: float = 1.0,
    any_order: bool = False,
    json_out: str | Path | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark and return its results (also written to `json_out` when given).

    engines: names from ENGINES (default: all three; a peer that is not installed is reported
    as unavailable). quick: 16 schemas spread over the workload, one run, 4 in-loop steps.
    timeout: seconds one engine may spend on one schema in one run (None: no limit).
    cell_budget: an (engine, schema) cell whose first run took longer than this is measured once;
    later runs reuse its figures, so slow compiles are not repeated.
    any_order: compile with any_order=True where the engine has it (strictgen, xgrammar): object
    properties in any order. By default both accept them in the schema's order only.
    """
    say = log or (lambda s: None)
    if fmt not in ("schema", "json"):
        raise ValueError("fmt must be 'schema' or 'json'")
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    schemas_dir = Path(schemas) if schemas is not None else default_schemas_dir()
    cases = load_cases(schemas_dir)
    total_found = len(cases)
    if quick:
        cases = spread_cases(cases, limit if limit is not None else 16)
        loop_steps = 4 if loop_steps is None else loop_steps
    elif limit is not None:
        cases = cases[: max(0, limit)]
    if loop_steps is None:
        loop_steps = 16
    if not cases:
        raise ValueError(f"no schema with a valid document in {schemas_dir}")
    wanted = list(engines) if engines else list(ENGINES)
    for e in wanted:
        if e not in ENGINES:
            raise ValueError(f"unknown engine {e!r}; known: {', '.join(ENGINES)}")
    # strictgen always runs, first: the peers are built from its TokenizerInfo's bytes
    wanted = ["strictgen"] + [e for e in dict.fromkeys(wanted) if e != "strictgen"]
    use_torch = _torch_available()
    with one_torch_thread(use_torch):
        return _run(schemas_dir, cases, total_found, tokenizer=tokenizer, repeats=repeats, fmt=fmt, wanted=wanted,
                    quick=quick, loop_steps=loop_steps, timeout=timeout, cell_budget=cell_budget,
                    any_order=any_order, json_out=json_out, say=say, use_torch=use_torch)


@contextlib.contextmanager
def one_torch_thread(use_torch: bool):
    """One thread for torch ops (apply): on a busy machine a second intra-op thread wakes late."""
    if not use_torch:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _run(schemas_dir, cases, total_found, *, tokenizer, repeats, fmt, wanted, quick, loop_steps, timeout,
         cell_budget, any_order, json_out, say, use_torch) -> dict[str, Any]:
    bench_start = time.perf_counter()

    say(f"loading vocabulary {tokenizer} and tokenizing {sum(len(c.documents) for c in cases)} documents ...")
    vocab = load_vocab(tokenizer)
    for c in cases:
        c.token_ids = [list(vocab.encode(d)) for d in c.documents]
    n_tokens = sum(len(ids) + 1 for c in cases for ids in c.token_ids)

    # Vocabulary preprocessing, `repeats` times per engine; the first state is kept.
    results_engines: dict[str, dict[str, Any]] = {}
    live: dict[str, Engine] = {}
    info = None
    for name in wanted:
        try:
            engine = ENGINE_CLASSES[name](vocab, info, fmt, use_torch, any_order)  # strictgen comes first and sets info
        except EngineUnavailable as exc:
            results_engines[name] = {"available": False, "reason": str(exc)}
            say(f"{name}: not available ({exc})")
            continue
        runs, state = [], None
        try:
            for _ in range(repeats):
                t0 = time.perf_counter()
                s = engine.preprocess()
                runs.append(time.perf_counter() - t0)
                if state is None:
                    state = s
                del s
        except Exception as exc:
            if name == "strictgen":
                raise
            reason = f"vocabulary preprocessing failed: {type(exc).__name__}: {exc}"[:500]
            results_engines[name] = {"available": False, "reason": reason}
            say(f"{name}: not available ({reason})")
            continue
        engine.adopt(state)
        if name == "strictgen":
            info = state
        live[name] = engine
        results_engines[name] = {
            "available": True, "version": engine.version(), "apply": engine.apply_note,
            "vocab_preprocess_s": {"median": median(runs), "runs": runs},
        }
        say(f"{name} {engine.version()}: vocabulary preprocessing {median(runs):.2f} s")

    # Warm-up (untimed): one small compile and a few masks per engine.
    warm_ids = vocab.encode(json.dumps(WARMUP_DOC))
    for name, engine in list(live.items()):
        try:
            with engine.quiet():
                art, _ = engine.compile(engine.new_compiler(), BenchCase("warm-up", WARMUP_SCHEMA, []))
                force_documents(engine, art, [warm_ids], engine.alloc_mask(), [])
        except Exception as exc:  # noqa: BLE001  (not fatal: the real schemas will tell)
            say(f"{name}: warm-up failed: {type(exc).__name__}: {exc}")

    evict = Evictor()
    cells: dict[str, dict[str, list[dict]]] = {name: {} for name in live}  # engine -> schema -> runs
    for r in range(repeats):
        for i, case in enumerate(cases):
            parts = []
            for name, engine in live.items():
                history = cells[name].setdefault(case.name, [])
                if history and (history[0]["status"] != "ok" or history[0]["wall"] > cell_budget):
                    history.append({**history[0], "reused": True})  # measured once (failed, or slow)
                    parts.append(f"{name} (run 1)")
                    continue
                rec = measure_cell(engine, case, loop_steps=loop_steps, evict=evict, timeout=timeout)
                history.append(rec)
                if rec["status"] == "ok":
                    order = f" ({rec['refused_order']} only for member order)" if rec["refused_order"] else ""
                    refused = f" REFUSED {rec['refused']}{order}" if rec["refused"] else ""
                    parts.append(f"{name} {rec['compile_cold'] * 1e3:.0f} ms/{np.mean(rec['first']) * 1e6:.0f} µs{refused}")
                else:
                    parts.append(f"{name} {rec['status']}")
            say(f"[run {r + 1}/{repeats} {i + 1:>3}/{len(cases)}] {case.name[:44]:<44} " + "; ".join(parts))

    names = [c.name for c in cases]
    common = [n for n in names if all(cells[e][n][0]["status"] == "ok" for e in live)]
    for name in live:
        runs_all = [run_figures({n: cells[name][n][r] for n in names}, names) for r in range(repeats)]
        runs_common = [run_figures({n: cells[name][n][r] for n in names}, common) for r in range(repeats)]
        first = {n: cells[name][n][0] for n in names}
        statuses = [first[n]["status"] for n in names]
        per_schema = {}
        for n in names:
            hist = cells[name][n]
            h0 = hist[0]
            entry: dict[str, Any] = {"status": h0["status"]}
            if h0["status"] == "ok":
                entry.update(
                    compile_cold_ms=median([h["compile_cold"] * 1e3 for h in hist]),
                    compile_warm_ms=median([h["compile_warm"] * 1e3 for h in hist]),
                    compile_cold_cpu_ms=median([h["compile_cold_cpu"] * 1e3 for h in hist]),
                    fill_first_mean_us=median([float(np.mean(h["first"])) * 1e6 for h in hist]),
                    fill_repeat_mean_us=median([float(np.mean(h["repeat"])) * 1e6 for h in hist]),
                    tokens=h0["tokens"], documents=h0["docs"], refused_documents=h0["refused"],
                    refused_for_member_order=h0["refused_order"],
                    measured_runs=sum(1 for h in hist if not h.get("reused")),
                )
                if h0["refused"]:
                    entry["refused_at"] = h0["refused_at"]
                if h0.get("warnings"):
                    entry["warnings"] = h0["warnings"]
            else:
                entry["error"] = h0.get("error", "")
            per_schema[n] = entry
        results_engines[name].update(
            common=median_figures(runs_common),
            all_compiled=median_figures(runs_all),
            counts={
                "schemas": len(names),
                "compiled": statuses.count("ok"),
                "compile_error": statuses.count("compile error"),
                "timeout": statuses.count("timeout"),
                "runtime_error": statuses.count("runtime error"),
                "documents": sum(first[n].get("docs", 0) for n in names if first[n]["status"] == "ok"),
                "documents_refused": sum(first[n].get("refused", 0) for n in names if first[n]["status"] == "ok"),
                "documents_refused_member_order": sum(first[n].get("refused_order", 0) for n in names if first[n]["status"] == "ok"),
                "schemas_with_refusals": sum(1 for n in names if first[n].get("refused")),
            },
            schemas=per_schema,
        )

    ratios = headline(results_engines)
    result = {
        "meta": {
            "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "tokenizer": tokenizer,
            "vocab_size": info.vocab_size if info is not None else None,
            "document_encoder": vocab.encoder_note,
            "format": fmt,
            "any_order": any_order,
            "schemas_dir": str(schemas_dir),
            "schemas_found": total_found,
            "schemas": len(cases),
            "schemas_common": len(common),
            "documents": sum(len(c.documents) for c in cases),
            "tokens_per_pass": n_tokens,
            "repeats": repeats,
            "quick": quick,
            "loop_steps_per_schema": loop_steps,
            "timeout_s": timeout,
            "cell_budget_s": cell_budget,
            "evict_bytes": EVICT_BYTES,
            "logits": "torch" if use_torch else "numpy",
            "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}",
            "wall_s": time.perf_counter() - bench_start,
        },
        "engines": results_engines,
        "headline": ratios,
    }
    if json_out is not None:
        path = Path(json_out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        result["meta"]["json"] = str(path)
    return result
