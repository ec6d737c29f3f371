"""What a cold batch fill costs a fresh request (issue 28): strictgen's cold steps of
`strictgen bench --batch` with fresh rows, fill timed per step in wall and process CPU time.

    PYTHONPATH=<tree>/src .venv/bin/python scripts/bench_batch_cold.py [--batches 16,64] [--steps 32] [--limit 30] [--forward-ms 0]

The protocol is this checkout's `src/strictgen/bench/batch.py` (loaded from its file, so an older
strictgen on the path runs the same protocol: it uses only strictgen's public API): every row
starts at its document's beginning, grammars compiled beforehand on a fresh compiler, so the
timed fills meet the first masks and the rules the compile deferred of every token they reach
(`--steps 0`: every document whole). strictgen's batch fill sizes its own pool (the CPUs). Per batch size it prints
the fill's mean / p50 / p99 ms per step and the process CPU seconds all fills took (on a loaded
machine the wall figures wait for a core; the CPU seconds less so). Compare trees by interleaved
runs; to see where a cold fill goes, run it under `py-spy record --format raw`, or run
scripts/cold_fill_profile.py. `--forward-ms`: an untimed pause per step standing for the model's
forward pass (the rules the compile deferred are built there: runtime/prefetch.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

import torch

from strictgen.bench import default_schemas_dir, load_cases, load_vocab, one_torch_thread


def batch_protocol():
    """This checkout's bench/batch.py, whichever strictgen is imported."""
    path = Path(__file__).resolve().parents[1] / "src" / "strictgen" / "bench" / "batch.py"
    spec = importlib.util.spec_from_file_location("batch_protocol", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", default="16,64")
    ap.add_argument("--steps", type=int, default=32, help="timed steps per batch size (0: one whole pass over the workload)")
    ap.add_argument("--limit", type=int, default=30, help="the first K bench schemas")
    ap.add_argument("--forward-ms", type=float, default=0.0, help="an untimed pause per step standing for the model's forward pass")
    args = ap.parse_args()
    batch = batch_protocol()
    vocab = load_vocab("qwen")
    info = vocab.build_info()
    cases = load_cases(default_schemas_dir(), args.limit)
    texts = [case.schema_text for case in cases]
    engine = batch.StrictgenBatch(vocab, info, os.cpu_count() or 1, "cpu")
    workload, _ = batch.common_workload([engine], texts, [[vocab.encode(d) for d in case.documents] for case in cases])
    sizes = [int(b) for b in args.batches.split(",")]
    base = torch.randn(max(sizes), info.vocab_size, generator=torch.Generator().manual_seed(0))
    logits = base.clone()
    out = {"pid": os.getpid(), "documents": len(workload)}
    with one_torch_thread(True):
        for size in sizes:
            compiler = engine.new_compiler()
            grammars = {i: engine.compile(compiler, texts[i]) for i in sorted({i for i, _ in workload})}
            run = batch.run_steps(engine, grammars, workload, size, args.steps, logits, base, "fresh", args.forward_ms / 1e3)
            ms = sorted(t * 1e3 for t in run.times["fill"])
            out[str(size)] = {"fill_mean_ms": round(sum(ms) / len(ms), 2), "fill_p50_ms": round(ms[len(ms) // 2], 2),
                              "fill_p99_ms": round(ms[min(len(ms) - 1, int(0.99 * len(ms)))], 2),
                              "fill_cpu_s": round(sum(run.times["fill_cpu"]), 3), "steps": len(ms)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
