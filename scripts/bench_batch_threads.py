"""Whether warm batch fills scale over threads (issue 28: the batch's hits are copied in C with the
GIL released): wall seconds of N warm fills of a 128-row batch on one thread, against N/2 on each
of two threads, three repeats.

    PYTHONPATH=<tree>/src .venv/bin/python scripts/bench_batch_threads.py [--fills 600] [--batch 128]

Rows as in scripts/bench_batch_fill.py (bench schemas, Qwen vocabulary, every mask computed before
timing); each thread fills its own bitmask. Only the public API is used, so the script measures any
tree; compare trees by interleaved runs (timings on a shared machine are noisy).
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import strictgen as sg
from bench_batch_fill import batch_matchers


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fills", type=int, default=600)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--limit", type=int, default=30, help="bench schemas used (the first K)")
    args = ap.parse_args()
    matchers, vocab_size = batch_matchers(args.batch, args.limit)
    masks = [sg.allocate_token_bitmask(args.batch, vocab_size) for _ in range(2)]
    for mask in masks:
        sg.fill_next_token_bitmask_batch(matchers, mask)  # every mask computed: the fills below are warm

    def fill(k: int, count: int) -> None:
        for _ in range(count):
            sg.fill_next_token_bitmask_batch(matchers, masks[k])

    out: dict[str, list[float]] = {"one_thread_s": [], "two_threads_s": []}
    for _ in range(3):
        start = time.perf_counter()
        fill(0, args.fills)
        out["one_thread_s"].append(round(time.perf_counter() - start, 3))
        threads = [threading.Thread(target=fill, args=(k, args.fills // 2)) for k in range(2)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out["two_threads_s"].append(round(time.perf_counter() - start, 3))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
