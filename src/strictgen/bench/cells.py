"""Measuring one (engine, schema) cell: documents forced token by token, fills and applies timed,
and the statistics of the figures."""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

import numpy as np

from strictgen.bench.engines import Engine
from strictgen.bench.timeouts import CellClock, CellTimeout, cell_deadline
from strictgen.bench.workload import BenchCase


EVICT_BYTES = 64 << 20


class Evictor:
    """Stand-in for a model's forward pass: read 64 MiB, so the CPU caches hold none of the engine's data."""

    def __init__(self, nbytes: int = EVICT_BYTES):
        self.buf = np.ones(nbytes // 8, dtype=np.int64)

    def __call__(self) -> None:
        self.buf.sum()


def force_documents(engine: Engine, artefact, ids_per_doc, mask, times: list[float]) -> tuple[int, int, list]:
    """Force every document through a fresh matcher, timing each fill; returns (tokens, refused, where)."""
    clock = time.perf_counter
    fill, accept, eos = engine.fill, engine.accept, engine.eos
    refused, where = 0, []
    for d, ids in enumerate(ids_per_doc):
        m = engine.matcher(artefact)
        for k, tid in enumerate((*ids, eos)):
            t0 = clock()
            fill(m, mask)
            times.append(clock() - t0)
            if not accept(m, tid):
                refused += 1
                where.append([d, k])
                break
    return len(times), refused, where


def order_refusals(engine: Engine, compiler, case: BenchCase, where: list) -> int:
    """How many of the refused documents (`where`: [document, token] pairs) the engine accepts
    when object members may come in any order: refused only because their members are in
    another order than the schema lists them (the documented default is the schema's order).
    0 where the engine has no such option or already runs with it."""
    if not where or engine.any_order or not engine.has_any_order or engine.fmt != "schema":
        return 0
    artefact, _ = engine.compile(compiler, case, any_order=True)
    docs = [case.token_ids[d] for d, _ in where]
    _, refused, _ = force_documents(engine, artefact, docs, engine.alloc_mask(), [])
    return len(docs) - refused


def _loop_pass(engine: Engine, artefact, ids_per_doc, mask, steps: int, evict: Evictor, fills, applies) -> None:
    logits, base = engine.make_logits()
    clock = time.perf_counter
    left = steps
    for ids in ids_per_doc:
        if left <= 0:
            break
        m = engine.matcher(artefact)
        for tid in (*ids, engine.eos):
            if left <= 0:
                break
            evict()
            engine.reset_logits(logits, base)
            t0 = clock()
            engine.fill(m, mask)
            t1 = clock()
            engine.apply(logits, mask)
            t2 = clock()
            fills.append(t1 - t0)
            applies.append(t2 - t1)
            left -= 1
            if not engine.accept(m, tid):
                break


def measure_cell(engine: Engine, case: BenchCase, *, loop_steps: int, evict: Evictor, timeout: float | None) -> dict:
    """One run of one engine on one schema."""
    rec: dict[str, Any] = {"status": "ok"}
    started = time.perf_counter()
    ids = case.token_ids
    clock = CellClock(None)
    timed_out = {"status": "timeout", "error": f"over the {timeout or 0:g} s budget of one schema in one run"}
    try:
        with engine.quiet() as printed, cell_deadline(timeout) as clock:
            compiler = engine.new_compiler()
            # compiles timed in wall time and in the process's CPU time (all its threads): on a
            # loaded machine, waiting for a core inflates the one and not the other
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                artefact, _ = engine.compile(compiler, case)
                failed = None
            except CellTimeout:
                raise
            except Exception as exc:  # unsupported schema, or a missing compile_json_schema
                if clock.expired:
                    raise CellTimeout() from exc
                failed = exc
            t1, c1 = time.perf_counter(), time.process_time()
            if failed is not None:
                rec.update(status="compile error", error=f"{type(failed).__name__}: {failed}"[:500])
            else:
                engine.compile(compiler, case)
                t2, c2 = time.perf_counter(), time.process_time()
                rec["compile_cold"], rec["compile_cold_cpu"] = t1 - t0, c1 - c0
                rec["compile_warm"], rec["compile_warm_cpu"] = t2 - t1, c2 - c1
                mask = engine.alloc_mask()
                first: list[float] = []
                rec["tokens"], rec["refused"], rec["refused_at"] = force_documents(engine, artefact, ids, mask, first)
                again: list[float] = []
                force_documents(engine, artefact, ids, mask, again)
                lf: list[float] = []
                la: list[float] = []
                if loop_steps > 0:
                    _loop_pass(engine, artefact, ids, mask, loop_steps, evict, lf, la)
                rec.update(first=first, repeat=again, loop_fill=lf, loop_apply=la, docs=len(ids))
                rec["refused_order"] = order_refusals(engine, compiler, case, rec["refused_at"])
        warnings = sorted({line.strip() for line in printed if "Warning" in line})
        if warnings and rec["status"] == "ok":
            rec["warnings"] = warnings[:10]
    except CellTimeout:
        rec = dict(timed_out)
    except Exception as exc:  # noqa: BLE001  (a crash while forcing documents: report it, go on)
        rec = dict(timed_out) if clock.expired else {"status": "runtime error", "error": f"{type(exc).__name__}: {exc}"[:500]}
    rec["wall"] = time.perf_counter() - started
    return rec


# ---------------------------------------------------------------------------------------------
# Statistics


def _stats(values: list[float], scale: float) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "p50": None, "p99": None, "n": 0}
    a = np.asarray(values, dtype=np.float64) * scale
    return {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)), "n": int(a.size)}


def median(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return float(statistics.median(vals)) if vals else None


def run_figures(cells: dict[str, dict], names: list[str]) -> dict[str, Any]:
    """The figures of one run over the schemas `names` (only their ok cells)."""
    ok = [cells[n] for n in names if n in cells and cells[n]["status"] == "ok"]
    cat = lambda key: [x for c in ok for x in c[key]]
    loop_total = [f + a for c in ok for f, a in zip(c["loop_fill"], c["loop_apply"])]
    return {
        "compile_cold_ms": _stats([c["compile_cold"] for c in ok], 1e3),
        "compile_warm_ms": _stats([c["compile_warm"] for c in ok], 1e3),
        "compile_cold_cpu_ms": _stats([c["compile_cold_cpu"] for c in ok], 1e3),
        "compile_warm_cpu_ms": _stats([c["compile_warm_cpu"] for c in ok], 1e3),
        "fill_first_us": _stats(cat("first"), 1e6),
        "fill_repeat_us": _stats(cat("repeat"), 1e6),
        "loop_fill_us": _stats(cat("loop_fill"), 1e6),
        "loop_apply_us": _stats(cat("loop_apply"), 1e6),
        "loop_fill_apply_us": _stats(loop_total, 1e6),
    }


def median_figures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fig in runs[0]:
        out[fig] = {k: median([r[fig][k] for r in runs]) for k in ("mean", "p50", "p99")}
        out[fig]["n"] = runs[0][fig]["n"]
    return out
