"""Where a cold batch fill's time goes (issue 28): the protocol of `scripts/bench_batch_cold.py`
(fresh rows, grammars compiled beforehand on a fresh compiler), with ad hoc timers around the
parts of a fill, per step:

- `build`: rules the compile deferred (and members of families) built inside the fill
  (`PushdownMachine._add_lazy_rule`, whoever calls it: the C trie walk or a machine method);
- `walk`: first-time masks (`TokenMasker._compute`), less the rule builds inside them;
- `key`: horizon keys of the missed states (`TokenMasker.horizon_key`);
- `classes`: the horizon classes of rules built since the last mask (`HorizonKeys.sync`);
- `gc`: Python's cyclic collector, run in the fill's threads;
- `rest`: the fill's wall time less those (the C copies of hits, Python per missed row, waits).

Builds and classes in the prefetch's thread (runtime/prefetch.py) are summed apart (`ahead_ms`).

    PYTHONPATH=<tree>/src .venv/bin/python scripts/cold_fill_profile.py [--batches 16,128] [--steps 32] [--threads 1] [--worst 5]

With `--threads 1` every part runs on the caller, so the parts add up to the fill's wall time;
with more, `build`/`walk`/`key` are summed over threads (CPU work, not wall). Also times the
rule builds inside `accept` (`accept_build`), which a fill never sees. Prints JSON: per batch
size the totals and the `--worst` steps by fill time, each with its parts in ms, and
`overruns`: how far each build ahead ran past the start of the next fill (wall), how well the
rule's size estimated before the build (`rule_size`) orders the builds' CPU times (Spearman), the
CPU µs per unit of size (p10/p50/p90), and per third of the builds by size their time and overrun.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time

import torch
from bench_batch_cold import batch_protocol  # this checkout's bench/batch.py, whichever strictgen is imported

from strictgen.bench import default_schemas_dir, load_cases, load_vocab, one_torch_thread
from strictgen.compile.machine import HorizonKeys, PushdownMachine
from strictgen.compile.token_mask import TokenMasker
from strictgen.grammar.ir import Lazy, Repeat, RuleRef, children, lazy_body
from strictgen.runtime.prefetch import PREFETCHER


PARTS = ("build", "walk", "key", "classes", "gc")
SIZE_CAP = 1 << 20  # a size estimate stops counting here


def rule_size(machine, index: int) -> int:
    """How much automaton deferred rule `index` makes, estimated from its grammar expression
    before it is built: its nodes, each repeat's item counted once per copy and each rule it
    inlines (a reference that is not a call) counted where it is used, as the lowering copies
    them (grammar/lowering.py). Capped at SIZE_CAP. What a prefetch could predict a build's time
    from: `overruns` reports how well it orders the build times."""
    lazy = machine.automaton.lazy
    if index < len(lazy.names):
        root = lazy.rules[lazy.names[index]]
    else:
        root = lazy_body(lazy.calls.lazy[index - lazy.calls.first_lazy])
    rules, calls = lazy.rules, lazy.calls
    sizes: dict[int, int] = {}  # by id of expression: each shared node is measured once
    inlining: set[str] = set()

    def size(expr) -> int:
        got = sizes.get(id(expr))
        if got is not None:
            return got
        t = type(expr)
        if t is RuleRef:
            name = expr.name
            if name in calls or name not in rules or name in inlining:
                got = 1
            else:
                inlining.add(name)
                got = 1 + size(rules[name])
                inlining.discard(name)
        elif t is Lazy:
            got = 1
        else:
            got = 1 + sum(size(c) for c in children(expr))
            if t is Repeat:
                copies = max(1, expr.min + (1 if expr.max is None else expr.max - expr.min))
                got = 1 + (got - 1) * copies
        got = min(got, SIZE_CAP)
        sizes[id(expr)] = got
        return got

    try:
        return size(root)
    except RecursionError:  # a nesting deeper than Python's stack: as big as it gets
        return SIZE_CAP


def record_builds_ahead(timers: "Timers") -> None:
    """Record each build ahead's start, end, CPU time and estimated size (`TokenMasker.build_rule`,
    which only the prefetch's thread calls; the size is taken before the clocks start)."""
    original = TokenMasker.build_rule

    def recorded(masker, index):
        size = rule_size(masker.machine, index)
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return original(masker, index)
        finally:
            timers.builds.append((t0, time.perf_counter(), time.thread_time() - c0, size))

    TokenMasker.build_rule = recorded


def overruns(builds: list[tuple], fills: list[float]) -> dict:
    """How far builds ahead ran into the next fill (ms), and how well the size estimate orders
    build times (Spearman's rank correlation), with the fitted rate (µs per unit of size)."""
    import bisect

    over = []
    for t0, t1, *_ in builds:
        i = bisect.bisect_right(fills, t0)
        over.append(max(0.0, t1 - fills[i]) * 1e3 if i < len(fills) else 0.0)
    if not builds:
        return {"builds": 0}
    times = [cpu * 1e3 for _, _, cpu, _ in builds]
    sizes = [s for *_, s in builds]

    def ranks(xs):
        order = sorted(range(len(xs)), key=xs.__getitem__)
        out = [0.0] * len(xs)
        for r, i in enumerate(order):
            out[i] = float(r)
        return out

    rt, rs = ranks(times), ranks(sizes)
    n = len(builds)
    mean = (n - 1) / 2
    cov = sum((a - mean) * (b - mean) for a, b in zip(rt, rs))
    var = sum((a - mean) ** 2 for a in rt)
    per = sorted(t * 1e3 / max(1, s) for t, s in zip(times, sizes))
    by_size = sorted(zip(sizes, times, over))
    thirds = [by_size[i * n // 3:(i + 1) * n // 3] for i in range(3)]
    return {"builds": n, "overran": sum(o > 0 for o in over), "overrun_ms": round(sum(over), 1), "max_overrun_ms": round(max(over), 1),
            "build_cpu_ms": round(sum(times), 1), "spearman_size_time": round(cov / var, 2) if var else None,
            "us_per_size_p10_p50_p90": [round(per[int(q * (n - 1))], 2) for q in (0.1, 0.5, 0.9)],
            "by_size_third": [{"sizes": [part[0][0], part[-1][0]], "build_cpu_ms": round(sum(t for _, t, _ in part), 1),
                               "max_cpu_ms": round(max(t for _, t, _ in part), 1), "overrun_ms": round(sum(o for *_, o in part), 1)}
                              for part in thirds if part]}


class Timers:
    """Exclusive seconds per part, summed over threads, plus counts (a thread's nested parts are
    taken out of the part that encloses them)."""

    def __init__(self):
        self.local = threading.local()
        self.lock = threading.Lock()
        self.ahead: dict[str, float] = {}  # seconds in the prefetch's thread, never reset
        self.builds: list[tuple] = []  # (start, end, CPU s, estimated size) of each build ahead (perf_counter s)
        self.fills: list[float] = []  # each fill's start
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.seconds: dict[str, float] = {}
            self.counts: dict[str, int] = {}

    def collections(self, phase: str, info: dict) -> None:
        """gc.callbacks: the cyclic collector's runs, timed as part `gc` of whichever thread ran
        them (taken out of the part that encloses them)."""
        if phase == "start":
            self.local.gc_start = time.perf_counter()
            return
        spent = time.perf_counter() - getattr(self.local, "gc_start", time.perf_counter())
        stack = getattr(self.local, "stack", None)
        if stack:
            stack[-1] += spent
        key = "gc" if not threading.current_thread().name.startswith("strictgen-prefetch") else None
        with self.lock:
            if key is None:
                self.ahead["gc"] = self.ahead.get("gc", 0.0) + spent
            else:
                self.seconds[key] = self.seconds.get(key, 0.0) + spent

    def wrap(self, cls, name: str, part: str) -> None:
        original = getattr(cls, name)
        timers = self

        def timed(*args, **kwargs):
            if threading.current_thread().name.startswith("strictgen-prefetch"):  # built ahead: not a fill's part
                t0 = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    with timers.lock:
                        timers.ahead[part] = timers.ahead.get(part, 0.0) + time.perf_counter() - t0
            stack = getattr(timers.local, "stack", None)
            if stack is None:
                stack = timers.local.stack = []
            stack.append(0.0)  # time spent in parts nested inside this one
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent = time.perf_counter() - t0
                nested = stack.pop()
                if stack:
                    stack[-1] += spent
                with timers.lock:
                    timers.seconds[part] = timers.seconds.get(part, 0.0) + spent - nested
                    timers.counts[part] = timers.counts.get(part, 0) + 1

        setattr(cls, name, timed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", default="16,128")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--limit", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--worst", type=int, default=5)
    ap.add_argument("--forward-ms", type=float, default=0.0, help="an untimed pause per step standing for the model's forward pass")
    args = ap.parse_args()
    timers = Timers()
    timers.wrap(PushdownMachine, "_add_lazy_rule", "build")
    timers.wrap(TokenMasker, "_compute", "walk")
    timers.wrap(TokenMasker, "horizon_key", "key")
    timers.wrap(HorizonKeys, "sync", "classes")
    gc.callbacks.append(timers.collections)
    record_builds_ahead(timers)
    batch = batch_protocol()
    import strictgen as sg

    vocab = load_vocab("qwen")
    info = vocab.build_info()
    cases = load_cases(default_schemas_dir(), args.limit)
    texts = [case.schema_text for case in cases]

    class Profiled(batch.StrictgenBatch):
        """The bench's strictgen engine, the parts of each fill and accept recorded."""

        steps: list[dict] = []

        def fill(self, matchers, mask):
            timers.reset()
            t0 = time.perf_counter()
            timers.fills.append(t0)
            sg.fill_next_token_bitmask_batch(matchers, mask, threads=args.threads)
            wall = time.perf_counter() - t0
            parts = {p: round(s * 1e3, 2) for p, s in timers.seconds.items()}
            parts["counts"] = dict(timers.counts)
            parts["fill"] = round(wall * 1e3, 2)
            parts["rest"] = round(wall * 1e3 - sum(v for k, v in parts.items() if k in PARTS), 2)
            self.steps.append(parts)
            timers.reset()

        def accept(self, matchers, tokens):
            timers.reset()
            got = super().accept(matchers, tokens)
            if self.steps:  # not the workload check before the steps
                self.steps[-1]["accept_build"] = round(timers.seconds.get("build", 0.0) * 1e3, 2)
            timers.reset()
            return got

    engine = Profiled(vocab, info, os.cpu_count() or 1, "cpu")
    workload, _ = batch.common_workload([engine], texts, [[vocab.encode(d) for d in case.documents] for case in cases])
    sizes = [int(b) for b in args.batches.split(",")]
    base = torch.randn(max(sizes), info.vocab_size, generator=torch.Generator().manual_seed(0))
    logits = base.clone()
    out = {}
    with one_torch_thread(True):
        for size in sizes:
            compiler = engine.new_compiler()
            grammars = {i: engine.compile(compiler, texts[i]) for i in sorted({i for i, _ in workload})}
            Profiled.steps = []
            timers.builds.clear()
            timers.fills.clear()
            batch.run_steps(engine, grammars, workload, size, args.steps, logits, base, "fresh", args.forward_ms / 1e3)
            steps = Profiled.steps
            total = {p: round(sum(s.get(p, 0.0) for s in steps), 1) for p in ("fill", *PARTS, "rest", "accept_build")}
            worst = sorted(range(len(steps)), key=lambda i: -steps[i]["fill"])[: args.worst]
            ahead = {p: round(t * 1e3, 1) for p, t in timers.ahead.items()}
            timers.ahead.clear()
            PREFETCHER.idle()  # its last builds recorded before they are read
            out[str(size)] = {"total_ms": total, "ahead_ms": ahead, "overruns": overruns(list(timers.builds), timers.fills), "worst": [{"step": i, **steps[i]} for i in worst]}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
