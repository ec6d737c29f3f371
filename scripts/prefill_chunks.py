"""What reproducible prefill costs: cold prompt evaluation in aligned pieces of CHUNK tokens
(engine/kv_cache.py) against one pass for the whole prompt (the design before), on the embedded
model with llama.cpp. The settings are timed in turns, so a busy machine slows them alike; each
figure is the median of the rounds. Also checks, for each setting, whether a warm request (its
prompt's prefix cached) gets the cold logits bit for bit.

    .venv/bin/python scripts/prefill_chunks.py [--lengths 100 300 900] [--chunks 512 32 64 128] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from strictgen.engine import load_model
from strictgen.engine.kv_cache import KVSequence

TEXT = "Name three colours, then describe each of them in a long paragraph about art, history and science. "


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[100, 300, 900])
    ap.add_argument("--chunks", type=int, nargs="+", default=[512, 32, 64, 128], help="512 = one pass (n_batch) for these prompts")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    model = load_model("default", n_ctx=2048)
    ids = model.encode_prompt(TEXT * 200, chat=False)
    times: dict[tuple[int, int], list[float]] = {}
    for _ in range(args.rounds):
        for n in args.lengths:
            for c in args.chunks:
                model.kv = KVSequence(chunk=c)  # a fresh, empty cache with this piece size
                model.llm.n_tokens = 0
                model.llm._ctx.kv_cache_seq_rm(-1, 0, -1)
                t0 = time.perf_counter()
                model.forward(ids[:n])
                times.setdefault((n, c), []).append(time.perf_counter() - t0)
    print("| prompt tokens | " + " | ".join(f"chunk {c} tok/s" for c in args.chunks) + " |")
    print("|---:|" + "---:|" * len(args.chunks))
    for n in args.lengths:
        row = [n / statistics.median(times[(n, c)]) for c in args.chunks]
        print(f"| {n} | " + " | ".join(f"{r:,.0f} ({r / row[0]:.2f}x)" for r in row) + " |")
    # warm == cold, bit for bit: the last chunk of the prompt cached, then the request again
    n = args.lengths[0]
    for c in args.chunks:
        model.kv = KVSequence(chunk=c)
        model.llm.n_tokens = 0
        model.llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        cold = model.forward(ids[:n])
        keep = model.kv.reusable(ids[:n])
        model.truncate(keep)
        warm_aligned = model.forward(ids[keep:n])
        model.truncate(n - 1)  # the old design's reuse: everything but the last token
        warm_tail = model.forward(ids[n - 1 : n])
        print(f"chunk {c}: warm (aligned reuse, kept {keep}) == cold: {np.array_equal(cold, warm_aligned)}; "
              f"warm (all but the last token kept) == cold: {np.array_equal(cold, warm_tail)}")


if __name__ == "__main__":
    main()
