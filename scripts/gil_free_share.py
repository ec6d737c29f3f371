"""How much of a compile's CPU time the regular core's C calls take, and how much of that on
automata big enough to let the GIL go (regular/_gil.h's GIL_FREE_CELLS): what threads building
rules at once (issue 28) can run in parallel today, and what a lower threshold could add.

Every bench schema compiled with a fresh GrammarCompiler and every rule built at compile time
(defer_rules=False: the rules a fill or the prefetch would build later), timed in thread CPU time;
the C calls are timed through the Python faces in strictgen.regular (determinize, minimize,
minimal_with_splits, lower, json_spellings, product, refine; trim inside `minimal` and the
emptiness searches are not counted, so the C share is a lower bound). Sizes as the bindings
measure them: table cells of the input, 8 a NFA edge for determinize, 2 an op for lower. Calls
are sorted by size only: on trees before a8b9e3d json_spellings held the GIL whatever its size.

    PYTHONPATH=<tree>/src python scripts/gil_free_share.py [--vocab qwen] [--threshold 4096]"""

import argparse
import time
from collections import defaultdict

import strictgen as sg
from strictgen import bench, regular
from strictgen.compile import automaton


def cells_of(name: str, args) -> int:
    if name == "determinize":
        edges = args[0].arrays()[0]  # None when there are none
        return 8 * (len(edges or b"") // 16)
    if name == "lower":
        return 2 * (len(args[1]) // 4 if isinstance(args[1], (bytes, bytearray)) else memoryview(args[1]).nbytes // 4)
    if name == "json_spellings":
        return len(args[0]) // 4
    if name == "product":
        return sum(d.num_states * d.num_classes for d in args[:2])
    return args[0].num_states * args[0].num_classes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="qwen")
    ap.add_argument("--threshold", type=int, default=4096)
    args = ap.parse_args()
    cases = bench.load_cases(bench.default_schemas_dir())
    tok = sg.TokenizerInfo.from_name(args.vocab)
    sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(bench.WARMUP_SCHEMA))
    calls: list[tuple[str, int, float]] = []
    inside = [0, 0.0]  # depth of rule builds (automaton._rule_dfa) now running, their CPU seconds
    in_rules = [0.0, 0.0]  # the C calls' seconds inside rule builds: held, let go

    def timed(name, fn):
        def wrapper(*a, **kw):
            size = cells_of(name, a)
            t0 = time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                secs = time.thread_time() - t0
                calls.append((name, size, secs))
                if inside[0]:
                    in_rules[size >= args.threshold] += secs

        return wrapper

    def rule_build(fn):
        def wrapper(*a, **kw):
            inside[0] += 1
            t0 = time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                inside[0] -= 1
                if not inside[0]:
                    inside[1] += time.thread_time() - t0

        return wrapper

    automaton._rule_dfa = rule_build(automaton._rule_dfa)

    for name in ("determinize", "minimize", "minimal_with_splits", "lower", "json_spellings", "product", "refine"):
        setattr(regular, name, timed(name, getattr(regular, name)))
    total = 0.0
    for case in cases:
        t0 = time.thread_time()
        try:
            sg.GrammarMatcher(sg.GrammarCompiler(tok, defer_rules=False).compile_json_schema(case.schema_text))
        except sg.StrictgenError:
            pass
        total += time.thread_time() - t0
    by = defaultdict(lambda: [0, 0.0, 0, 0.0])  # calls and seconds below, then at or above the threshold
    for name, size, secs in calls:
        row = by[name]
        at = 2 if size >= args.threshold else 0
        row[at] += 1
        row[at + 1] += secs
    c_small = sum(r[1] for r in by.values())
    c_big = sum(r[3] for r in by.values())
    print(f"schemas={len(cases)} compile cpu={total * 1e3:.0f} ms; C calls timed {1e3 * (c_small + c_big):.0f} ms "
          f"({100 * (c_small + c_big) / total:.0f}%): GIL let go {1e3 * c_big:.0f} ms ({100 * c_big / total:.0f}%), "
          f"held (below {args.threshold} cells) {1e3 * c_small:.0f} ms ({100 * c_small / total:.0f}%)")
    print(f"rule builds (compile/automaton's _rule_dfa): {1e3 * inside[1]:.0f} ms cpu; C calls in them let go {1e3 * in_rules[1]:.0f} ms "
          f"({100 * in_rules[1] / inside[1]:.0f}%), held {1e3 * in_rules[0]:.0f} ms ({100 * in_rules[0] / inside[1]:.0f}%); the rest holds the GIL")
    for name, (n0, s0, n1, s1) in sorted(by.items(), key=lambda kv: -(kv[1][1] + kv[1][3])):
        print(f"  {name:20s} below: {n0:6d} calls {1e3 * s0:7.1f} ms   at/above: {n1:5d} calls {1e3 * s1:7.1f} ms")


if __name__ == "__main__":
    main()
