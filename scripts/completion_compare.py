"""The first shortest completion from a grammar's start state (what a truncation-safe generation
asks before its first token), per bench schema (default compile, SmolLM2 vocabulary): by the
breadth-first search alone (before issue 34's finding A was fixed) and by the default (a quick
search, then shortest derivations per frame), each on a freshly compiled grammar, in alternating
order. Where both answer, the answers must be equal.

    PYTHONPATH=src .venv/bin/python scripts/completion_compare.py [FOLDER (default ../shared/data/bench)]
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
folder = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/bench"
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
