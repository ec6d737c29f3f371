"""The JSON Schema front end alone (`json_schema_grammar`), timed per schema: the median of
REPEATS runs of each named maskbench-dev schema after one untimed run (which fills the caches that
outlive a compile), in this thread's CPU time, with the cyclic collector paused as a compile
pauses it (compile.guards.collector_paused); prints the sum of the per-schema medians. Finer than
compile_phases.py's best-of for the small median front ends: run it on two trees alternately
(PYTHONPATH=<tree>/src) for interleaved pairs.

    PYTHONPATH=<tree>/src python scripts/front_end_times.py NAME[,NAME...]|@FILE [REPEATS] [--dir DIR] [--each]"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from pathlib import Path

from strictgen.errors import StrictgenError
from strictgen.grammar.json_schema import json_schema_grammar

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "maskbench-dev"


def main() -> None:
    argv = sys.argv[1:]
    folder = Path(argv.pop(argv.index("--dir") + 1)) if "--dir" in argv else DATA
    each = "--each" in argv
    args = [a for a in argv if a != "--each"]
    names = (Path(args[0][1:]).read_text() if args[0].startswith("@") else args[0]).replace(",", "\n").split()
    repeats = int(args[1]) if len(args) > 1 else 20
    total = 0.0
    gc.disable()
    for name in names:
        schema = json.loads((folder / f"{name}.json").read_text())["schema"]
        times = []
        for i in range(repeats + 1):
            t0 = time.thread_time()
            try:
                json_schema_grammar(schema)
            except StrictgenError:
                pass
            if i:
                times.append(time.thread_time() - t0)
        median = statistics.median(times)
        total += median
        if each:
            print(f"{name} {median * 1e3:.2f} ms")
    print(f"front end, sum of per-schema medians over {len(names)} schemas: {total * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
