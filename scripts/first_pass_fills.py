"""The bench's cold compile and first pass of fills, without the peers: every bench schema compiled
with a fresh compiler, then each valid document forced through a new matcher token by token
(fill, accept; then EOS), as `strictgen bench` does. Prints the compile sum and the fills' mean,
p50 and p99, timed twice (the compile sum too): on the wall clock, as the bench does, and in this thread's CPU time,
which a loaded machine's preemptions (tens of ms, landing on any fill) do not reach. With
--warm N, also the best of N more passes over the same grammars, every mask cached by then (the
per-fill cost of the caches and the matcher); with --json FILE, the figures as JSON. Also counts the
page faults this thread took inside the first pass's fills (new masks' memory touched first).

    PYTHONPATH=<tree>/src python scripts/first_pass_fills.py [--vocab qwen|deepseek|smollm2] [--warm 5] [--json out.json]

One process per run: run two trees alternately a few times to compare them on a VM whose speed
drifts (the bench's single-run fill figures move with it)."""

import argparse
import json
import resource
import time

import numpy as np

import strictgen as sg
from strictgen import bench


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="qwen")
    ap.add_argument("--warm", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    vocab = bench.load_vocab(args.vocab)
    tok = vocab.build_info()
    cases = bench.load_cases(bench.default_schemas_dir())
    sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(bench.WARMUP_SCHEMA))
    mask = sg.allocate_token_bitmask(1, tok.vocab_size)
    eos = tok.eos_token_ids[0]

    wall_times: list[float] = []  # per fill of the first pass, seconds
    cpu_times: list[float] = []
    faults = [0]  # page faults taken inside the first pass's fills (this thread)

    def fill(grammar, ids: list[int], record: bool = False) -> tuple[int, float]:
        """A new matcher forced through ids: (fills, seconds in fills)."""
        fills, spent = 0, 0.0
        matcher = sg.GrammarMatcher(grammar)
        for token in ids:
            f1 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt if record else 0
            c1 = time.thread_time()
            t1 = time.perf_counter()
            matcher.fill_next_token_bitmask(mask)
            t2 = time.perf_counter()
            c2 = time.thread_time()
            spent += t2 - t1
            if record:
                faults[0] += resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - f1
                wall_times.append(t2 - t1)
                cpu_times.append(c2 - c1)
            fills += 1
            if not matcher.accept_token(token):
                break
        return fills, spent

    compile_s = compile_cpu_s = fill_s = 0.0
    fills = 0
    work = []  # (grammar, token ids + EOS) per document, for the warm passes
    for case in cases:
        ids_per_doc = [list(vocab.encode(d)) for d in case.documents]
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            grammar = sg.GrammarCompiler(tok).compile_json_schema(case.schema_text)
            sg.GrammarMatcher(grammar)
        except sg.StrictgenError:
            continue
        compile_s += time.perf_counter() - t0
        compile_cpu_s += time.thread_time() - c0
        for ids in ids_per_doc:
            n, spent = fill(grammar, ids + [eos], record=True)
            fills, fill_s = fills + n, fill_s + spent
            work.append((grammar, ids + [eos]))
    print(f"compile sum {compile_s * 1e3:.1f} ms (thread CPU {compile_cpu_s * 1e3:.1f} ms); fills {fills}, mean {fill_s / fills * 1e6:.1f} us, sum {fill_s * 1e3:.1f} ms")
    print(f"page faults inside first-pass fills: {faults[0]}")
    out = {"vocab": args.vocab, "fills": fills, "compile_sum_ms": compile_s * 1e3, "compile_cpu_sum_ms": compile_cpu_s * 1e3, "fill_page_faults": faults[0]}
    for clock, times in (("wall", wall_times), ("cpu", cpu_times)):
        us = np.asarray(times) * 1e6
        out[clock] = {"mean": float(us.mean()), "p50": float(np.percentile(us, 50)), "p99": float(np.percentile(us, 99)), "sum_ms": float(us.sum() / 1e3)}
        print(f"first pass, {clock} clock: mean {us.mean():.1f} us, p50 {np.percentile(us, 50):.1f} us, p99 {np.percentile(us, 99):.1f} us")
    if args.warm:
        warm = min(sum(fill(g, ids)[1] for g, ids in work) for _ in range(args.warm))
        out["warm_mean_us"] = warm / fills * 1e6
        print(f"warm fills: mean {warm / fills * 1e6:.2f} us (best of {args.warm} passes)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
