"""Where the cyclic collector runs during a sweep of maskbench-dev compiles (compile_sweep.py's loop:
a fresh compiler, compile + first matcher): every collection timed in thread CPU through
gc.callbacks, counted by generation and by whether it ran inside a compile, and the places inside
compiles where they started (the caller's frames). With HEAP_MILLIONS, the process first holds that
many live tracked objects, as a server holding torch and transformers does (a full collection
walks them all). --no-pause runs the compiles without compile.guards.collector_paused (the
collector as it falls, the option the pause replaced).

    PYTHONPATH=<tree>/src python scripts/compile_gc.py [STEP] [HEAP_MILLIONS] [--no-pause]

Measured at 86a0eac (STEP 8, 276 compiles): with the pause, every collection inside a compile is the
deferred one at the pause's end (_build's exit): ~5% of the sweep's CPU, gen0 and gen1 over the
compile's survivors, and one full collection (~58 ms) in a small heap, none with a 5M-object heap
(CPython starts a full one only when the objects promoted since the last reach a quarter of the
long-lived ones); without it, 690 collections inside compiles cost 14-16% of the sweep and a
full one over a 5M heap took 360 ms inside one compile."""

import contextlib
import gc
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import strictgen as sg
import strictgen.compile.compiler as compiler_module
import strictgen.compile.machine as machine_module

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "maskbench-dev"


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    step = int(args[0]) if args else 8
    heap = [[i] for i in range(int(float(args[1]) * 1e6))] if len(args) > 1 else []  # live, tracked, like a server's
    if "--no-pause" in sys.argv:
        compiler_module.collector_paused = machine_module.collector_paused = contextlib.nullcontext
    tok = sg.TokenizerInfo.from_name("qwen")
    sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}}))
    inside, started, where = [False], [0.0], [""]
    by_gen: dict[tuple, list] = defaultdict(lambda: [0, 0.0, 0.0])  # (inside, generation) -> count, seconds, max
    by_place: dict[str, list] = defaultdict(lambda: [0, 0.0])

    def timed(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.thread_time()
            frame, names = sys._getframe(1), []
            while frame is not None and len(names) < 3:
                names.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
                frame = frame.f_back
            where[0] = " < ".join(names)
            return
        spent = time.thread_time() - started[0]
        row = by_gen[(inside[0], info["generation"])]
        row[0], row[1], row[2] = row[0] + 1, row[1] + spent, max(row[2], spent)
        if inside[0]:
            by_place[where[0]][0] += 1
            by_place[where[0]][1] += spent

    gc.callbacks.append(timed)
    times = []
    for path in sorted(DATA.glob("*.json"))[::step]:
        schema = json.loads(path.read_text())["schema"]
        compiler = sg.GrammarCompiler(tok, cache_size=1, compile_timeout=10.0)
        inside[0] = True
        t0 = time.thread_time()
        try:
            sg.GrammarMatcher(compiler.compile_json_schema(schema))
        except sg.StrictgenError:
            pass
        times.append(time.thread_time() - t0)
        inside[0] = False
    gc.callbacks.remove(timed)
    times.sort()
    pick = lambda p: times[min(len(times) - 1, round(p / 100 * (len(times) - 1)))]  # noqa: E731
    print(f"heap {len(heap)} objects, {len(times)} compiles: sum={sum(times) * 1e3:.0f} ms p50={pick(50) * 1e3:.1f} "
          f"p99={pick(99) * 1e3:.1f} max={times[-1] * 1e3:.0f}")
    for (during, gen), (count, spent, most) in sorted(by_gen.items()):
        print(f"  {'inside' if during else 'outside'} compiles, gen{gen}: {count} collections, {spent * 1e3:.1f} ms, max {most * 1e3:.1f} ms")
    for place, (count, spent) in sorted(by_place.items(), key=lambda kv: -kv[1][1])[:6]:
        print(f"  {spent * 1e3:7.1f} ms {count:4d}x at {place}")


if __name__ == "__main__":
    main()
