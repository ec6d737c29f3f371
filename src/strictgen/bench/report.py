"""The bench's table: figures per engine, and the headline ratios strictgen / best peer."""

from __future__ import annotations

from typing import Any


_ROWS = [
    ("vocab preprocessing", "vocab", None, "s"),
    ("compile cold p50", "compile_cold_ms", "p50", "ms"),
    ("compile cold p99", "compile_cold_ms", "p99", "ms"),
    ("compile warm p50", "compile_warm_ms", "p50", "ms"),
    ("compile warm p99", "compile_warm_ms", "p99", "ms"),
    ("compile cold p50, CPU time", "compile_cold_cpu_ms", "p50", "ms"),
    ("compile cold p99, CPU time", "compile_cold_cpu_ms", "p99", "ms"),
    ("compile warm p50, CPU time", "compile_warm_cpu_ms", "p50", "ms"),
    ("fill, first pass mean", "fill_first_us", "mean", "µs"),
    ("fill, first pass p50", "fill_first_us", "p50", "µs"),
    ("fill, first pass p99", "fill_first_us", "p99", "µs"),
    ("fill, repeat pass mean", "fill_repeat_us", "mean", "µs"),
    ("fill, repeat pass p50", "fill_repeat_us", "p50", "µs"),
    ("fill, repeat pass p99", "fill_repeat_us", "p99", "µs"),
    ("in loop: fill+apply mean", "loop_fill_apply_us", "mean", "µs"),
    ("in loop: fill+apply p50", "loop_fill_apply_us", "p50", "µs"),
    ("in loop: fill+apply p99", "loop_fill_apply_us", "p99", "µs"),
    ("in loop: fill p50", "loop_fill_us", "p50", "µs"),
    ("in loop: apply p50", "loop_apply_us", "p50", "µs"),
]


def _figure(engine_result: dict, section: str, stat: str | None) -> float | None:
    if section == "vocab":
        return engine_result["vocab_preprocess_s"]["median"]
    return engine_result["common"][section][stat]


def headline(engines: dict[str, dict]) -> dict[str, float | None]:
    sg = engines.get("strictgen")
    peers = [e for n, e in engines.items() if n != "strictgen" and e.get("available") and "common" in e]
    out: dict[str, float | None] = {}
    if not sg or not peers or "common" not in sg:
        return out
    for label, section, stat, _unit in _ROWS:
        mine = _figure(sg, section, stat)
        theirs = [v for v in (_figure(p, section, stat) for p in peers) if v is not None]
        out[label] = (mine / min(theirs)) if mine is not None and theirs and min(theirs) > 0 else None
    return out


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "s":
        return f"{v:.2f}"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def _refusals(entry: dict) -> str:
    order = entry.get("refused_for_member_order", 0)
    if order == entry["refused_documents"]:
        return f"{order}, member order only"
    return f"{entry['refused_documents']}" + (f", {order} member order only" if order else "")


def format_table(result: dict[str, Any]) -> str:
    """A plain-text table of a run_bench result."""
    meta, engines = result["meta"], result["engines"]
    avail = [n for n, e in engines.items() if e.get("available") and "common" in e]
    has_peers = any(n != "strictgen" for n in avail)
    lines = [
        f"strictgen bench: tokenizer {meta['tokenizer']} ({meta['vocab_size']:,} tokens), format {meta['format']}"
        + (" (any property order)" if meta.get("any_order") else "") + ", "
        f"{meta['schemas']} schemas / {meta['documents']} documents / {meta['tokens_per_pass']:,} tokens per pass, "
        f"median of {meta['repeats']} run(s), logits {meta['logits']}, {meta['machine']}",
        f"timed figures over the {meta['schemas_common']} schemas every engine compiled"
        + (" (headline: strictgen / best peer, < 1 means strictgen is faster)" if has_peers else ""),
    ]
    header = ["figure", "unit", *avail] + (["strictgen/best"] if has_peers else [])
    rows = [header]
    for label, section, stat, unit in _ROWS:
        row = [label, unit, *(_fmt(_figure(engines[n], section, stat), unit) for n in avail)]
        if has_peers:
            ratio = result["headline"].get(label)
            row.append("-" if ratio is None else f"{ratio:.2f}x")
        rows.append(row)
    for label, key in (("schemas compiled", "compiled"), ("compile errors", "compile_error"), ("timeouts", "timeout"),
                       ("runtime errors", "runtime_error"), ("valid documents refused", "documents_refused"),
                       ("  of which only for member order", "documents_refused_member_order")):
        row = [label, "count", *(str(engines[n]["counts"].get(key, "-")) for n in avail)]
        if has_peers:
            row.append("")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for k, r in enumerate(rows):
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])] + [r[i].rjust(widths[i]) for i in range(2, len(r))]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    for n, e in engines.items():
        if not e.get("available"):
            lines.append(f"{n}: not run ({e.get('reason', '')})")
        elif n in avail:
            lines.append(f"{n} {e['version']}: apply = {e['apply']}")
            refused = {s: v for s, v in e["schemas"].items() if v.get("refused_documents")}
            if refused:
                lines.append("  refused valid documents in: " + ", ".join(f"{s} ({_refusals(v)})" for s, v in refused.items()))
    if any(e.get("counts", {}).get("documents_refused_member_order") for e in engines.values()):
        lines.append("member order: the documented default accepts object members in the schema's order only; "
                     "any_order=True (--any-order) accepts those documents")
    lines.append(f"wall time {meta['wall_s']:.0f} s" + (f"; JSON: {meta['json']}" if meta.get("json") else ""))
    return "\n".join(lines)
