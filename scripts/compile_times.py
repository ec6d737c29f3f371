"""Cold compile + first matcher of every bench schema, a fresh GrammarCompiler each (as `strictgen
bench` times it), in thread CPU time, the minimum of REPEATS runs per schema; writes {schema: s}.

    PYTHONPATH=<tree>/src python scripts/compile_times.py OUT.json [REPEATS] [--vocab qwen]

For before/after comparisons on a VM whose speed drifts: run two trees alternately (each with
its own PYTHONPATH) several times and compare per-schema minima (scripts/compile_compare.py)."""

import argparse
import json
import time

import strictgen as sg
from strictgen import bench


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("repeats", nargs="?", type=int, default=2)
    ap.add_argument("--vocab", default="qwen")
    args = ap.parse_args()
    cases = bench.load_cases(bench.default_schemas_dir())
    tok = sg.TokenizerInfo.from_name(args.vocab)
    sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}}))
    best: dict[str, float] = {}
    for _ in range(args.repeats):
        for case in cases:
            compiler = sg.GrammarCompiler(tok)
            t0 = time.thread_time()
            try:
                sg.GrammarMatcher(compiler.compile_json_schema(case.schema_text))
            except sg.StrictgenError:
                continue
            best[case.name] = min(best.get(case.name, float("inf")), time.thread_time() - t0)
    json.dump(best, open(args.out, "w"), indent=1)
    vals = sorted(best.values())
    pick = lambda p: vals[min(len(vals) - 1, round(p / 100 * (len(vals) - 1)))]  # noqa: E731
    print(f"n={len(vals)} p50={pick(50) * 1e3:.2f} ms p90={pick(90) * 1e3:.2f} p99={pick(99) * 1e3:.1f} sum={sum(vals) * 1e3:.0f}")


if __name__ == "__main__":
    main()
