"""The pushdown machine's set-up at compile time, apart from the rest of the compile: every bench
schema compiled once (a fresh compiler each), then, REPEATS times over all of them, a new
`PushdownMachine` built from each grammar's automata (each rule's arrays made for the C machine,
the C machine built from them: tables copied and checked, and its start state). With --keep the
frames are kept apart (merge_frames=False), so the frames' futures (_futures.c) are left out and
the copy alone is timed. Thread CPU time, the sum per pass, the least of the repeats.

    PYTHONPATH=<tree>/src python scripts/machine_setup_times.py [--vocab deepseek] [--repeats 3] [--keep]

Compare trees only by interleaved runs (a shared machine's speed drifts)."""

import argparse
import time

import strictgen as sg
from strictgen import bench
from strictgen.compile.machine import PushdownMachine


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="deepseek")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    tok = sg.TokenizerInfo.from_name(args.vocab)
    automata = []
    for case in bench.load_cases(bench.default_schemas_dir()):
        try:
            automata.append(sg.GrammarCompiler(tok).compile_json_schema(case.schema_text).automaton)
        except sg.StrictgenError:
            continue
    best = float("inf")
    for _ in range(args.repeats):
        t0 = time.thread_time_ns()
        for automaton in automata:
            PushdownMachine(automaton, merge_frames=not args.keep)
        best = min(best, time.thread_time_ns() - t0)
    rules = sum(len(a.rules) for a in automata)
    print(f"{args.vocab}: {len(automata)} grammars, {rules} rules{' (frames kept apart)' if args.keep else ''}: "
          f"PushdownMachine() {best / 1e6:.2f} ms a pass, {best / 1e3 / len(automata):.1f} us a grammar")


if __name__ == "__main__":
    main()
