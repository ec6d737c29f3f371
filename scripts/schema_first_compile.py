"""A fresh process's first JSON Schema compile (front end only, `json_schema_grammar`): what a
user's first request pays, imports and set-up included. Each run is a new interpreter that imports
strictgen, then times (wall clock) its first `json_schema_grammar` of the named bench schema;
prints the median over RUNS processes per schema. Run on two trees alternately
(PYTHONPATH=<tree>/src) for interleaved pairs; `--python` picks the interpreter.

    PYTHONPATH=<tree>/src python scripts/schema_first_compile.py NAME[,NAME...] [RUNS] [--dir DIR]"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "bench"

_CHILD = """
import json, sys, time
import strictgen
from strictgen.grammar.json_schema import json_schema_grammar
schema = json.loads(open(sys.argv[1]).read())["schema"]
t0 = time.perf_counter()
json_schema_grammar(schema)
print((time.perf_counter() - t0) * 1000)
"""


def main() -> None:
    argv = sys.argv[1:]
    folder = Path(argv.pop(argv.index("--dir") + 1)) if "--dir" in argv else DATA
    names = argv[0].split(",")
    runs = int(argv[1]) if len(argv) > 1 else 5
    for name in names:
        path = folder / f"{name}.json"
        times = [float(subprocess.check_output([sys.executable, "-c", _CHILD, str(path)], env=os.environ)) for _ in range(runs)]
        print(f"{name}: first compile median {statistics.median(times):.1f} ms (min {min(times):.1f}, {runs} processes)")


if __name__ == "__main__":
    main()
