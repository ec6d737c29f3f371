"""The first shortest completion from a grammar's start state (what a truncation-safe generation
asks before its first token), per bench schema (default compile, SmolLM2 vocabulary): by the
breadth-first search alone (before issue 34's finding A was fixed) and by the default (a quick
search, then shortest derivations per frame), each on a freshly compiled grammar, in alternating
order. Where both answer, the answers must be equal. With --frames: per schema compiled whole
(defer_rules=False), the frames alone (`by_frames=True`): what one grammar's per-frame lengths and
the start state's texts cost, and how many frames the grammar has.

    PYTHONPATH=src .venv/bin/python scripts/completion_compare.py [--frames] [FOLDER (default ../shared/data/bench)]
"""
import glob
import json
import os
import statistics
import sys
import time

import strictgen as sg
from strictgen.runtime.budget import CompletionSearchTooLarge, ShortestCompletions

tok = sg.TokenizerInfo.from_name("smollm2")
args = [a for a in sys.argv[1:] if a != "--frames"]
folder = args[0] if args else "../shared/data/bench"


def frames_only() -> None:
    times = []
    for f in sorted(glob.glob(os.path.join(folder, "*.json"))):
        dd = json.load(open(f))
        try:
            g = sg.GrammarCompiler(tok, defer_rules=False).compile_json_schema(dd.get("schema", dd))
        except sg.StrictgenError:
            continue
        sc = ShortestCompletions(g.machine, by_frames=True)
        t0 = time.perf_counter()
        sc.completion(g.machine.start)
        times.append(time.perf_counter() - t0)
        print(f"{os.path.basename(f)[:45]:45s} frames {sc.derivations.num_frames:7d}  {times[-1]*1000:8.1f} ms", flush=True)
    times.sort()
    print("schemas", len(times), "median ms", round(statistics.median(times) * 1000, 1), "p90 ms", round(times[int(0.9 * len(times))] * 1000, 1),
          "max ms", round(times[-1] * 1000, 1))


if "--frames" in sys.argv:
    frames_only()
    sys.exit()
rows = []
for i, f in enumerate(sorted(glob.glob(os.path.join(folder, "*.json")))):
    dd = json.load(open(f))
    res = {}
    order = ("old", "new") if i % 2 == 0 else ("new", "old")
    for way in order:
        try:
            g = sg.GrammarCompiler(tok).compile_json_schema(dd.get("schema", dd))
        except sg.StrictgenError:
            break
        sc = ShortestCompletions(g.machine, by_frames=False if way == "old" else None)
        t0 = time.perf_counter()
        try:
            c = sc.completion(g.machine.start)
        except CompletionSearchTooLarge:
            c = None
        res[way] = (time.perf_counter() - t0, c)
    if len(res) < 2:
        continue
    (to, co), (tn, cn) = res["old"], res["new"]
    assert co is None or co == cn, (f, co, cn)
    rows.append((os.path.basename(f), to, co is not None, tn))
    print(f"{os.path.basename(f)[:45]:45s} old {to*1000:8.1f} ms {'ok' if co is not None else 'FAIL'}  new {tn*1000:8.1f} ms", flush=True)
old_ok = [r for r in rows if r[2]]
print("schemas", len(rows), "old failures", len(rows) - len(old_ok))
print("median ms old (where it answers)", round(statistics.median(r[1] for r in old_ok) * 1000, 1), "new (same schemas)", round(statistics.median(r[3] for r in old_ok) * 1000, 1))
print("max ms new", round(max(r[3] for r in rows) * 1000, 1), "p90 new", round(sorted(r[3] for r in rows)[int(0.9 * len(rows))] * 1000, 1), "p90 old (answered)", round(sorted(r[1] for r in old_ok)[int(0.9 * len(old_ok))] * 1000, 1))
