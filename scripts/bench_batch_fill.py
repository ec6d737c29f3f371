"""Per-call cost of a warm batch fill at small and large batches (issue 28: a batch of one cost
5x a matcher's own fill in array overhead).

    PYTHONPATH=<tree>/src .venv/bin/python scripts/bench_batch_fill.py [--batches 1,4,16,64,128] [--reps 300]

Rows are real states: B requests of the bench schemas (`../shared/data/bench`, Qwen vocabulary),
row r teacher-forced through a share r/B of a valid document, as `strictgen bench --batch` starts
its rows. Every mask is computed once before timing, so this times the batch call's own work
(cache lookups, the copy into the bitmask, the "needs apply" flags), not mask computation.
Per batch size: the median µs per call of `fill_next_token_bitmask_batch`, and of one
`fill_next_token_bitmask` per row for comparison. Only the public API is used, so the script
measures any tree; compare trees by interleaved runs (timings on a shared machine are noisy).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import strictgen as sg
from strictgen.bench import default_schemas_dir, load_cases, load_vocab


def batch_matchers(size: int, limit: int) -> tuple[list, int]:
    vocab = load_vocab("qwen")
    info = vocab.build_info()
    compiler = sg.GrammarCompiler(info)
    requests = []
    for case in load_cases(default_schemas_dir(), limit):
        try:
            grammar = compiler.compile_json_schema(case.schema_text)
        except sg.StrictgenError:
            continue
        requests += [(grammar, vocab.encode(doc)) for doc in case.documents]
    matchers = []
    for r in range(size):
        grammar, ids = requests[r % len(requests)]
        m = sg.GrammarMatcher(grammar)
        for t in ids[: len(ids) * r // size]:
            if not m.accept_token(t):
                break
        matchers.append(m)
    return matchers, info.vocab_size


def median_us(fn, reps: int) -> float:
    fn()  # computes every mask once: the timed calls are warm
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", default="1,4,16,64,128")
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--limit", type=int, default=30, help="bench schemas used (the first K)")
    args = ap.parse_args()
    sizes = [int(b) for b in args.batches.split(",")]
    matchers, vocab_size = batch_matchers(max(sizes), args.limit)
    result = {}
    for size in sizes:
        rows = matchers[:size]
        mask = sg.allocate_token_bitmask(size, vocab_size)
        batch = median_us(lambda: sg.fill_next_token_bitmask_batch(rows, mask), args.reps)
        alone = median_us(lambda: [m.fill_next_token_bitmask(mask, i) for i, m in enumerate(rows)], args.reps)
        result[size] = {"batch_us": round(batch, 2), "row_by_row_us": round(alone, 2)}
        print(f"batch {size}: fill_next_token_bitmask_batch {batch:.1f} us, row by row {alone:.1f} us", flush=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
