"""The walk that writes rule programs (`lowering.write_c`, in C; with --python the reference
`lowering.Program`), timed alone: every program the
bench's compiles write (each bench schema compiled with a fresh GrammarCompiler, as `strictgen
bench` does) is recorded with its builder, then written again ROUNDS times from a fresh
`LoweringMemo` per compile (the programs of a compile share one, in the order they were written).
The pieces the walk asks for are built by then (the builder's memo holds them), so this times the
walk's own steps: per node decisions, lookups and ops written, not the C lowering nor the pieces.
Compare trees by interleaved runs (a shared machine is noisy: take the minimum of a few).

    PYTHONPATH=<tree>/src python scripts/lowering_walk_micro.py [--rounds 20] [--vocab qwen] [--python] [--cpu]

--cpu: this thread's CPU time rather than wall time (a loaded machine's preemptions do not reach it)."""

import argparse
import time

import strictgen as sg
from strictgen import bench
from strictgen.grammar import automata, lowering


def record(vocab: str) -> list:
    """(builder, expr, shared) of every program written in a pass over the bench's schemas."""
    seen = []
    original = automata.NFABuilder._lowered

    def lowered(self, expr, start, end, shared, *cap):
        if self.in_c:
            seen.append((self, expr, shared))
        return original(self, expr, start, end, shared, *cap)

    automata.NFABuilder._lowered = lowered
    try:
        tok = bench.load_vocab(vocab).build_info()
        for case in bench.load_cases(bench.default_schemas_dir()):
            try:
                sg.GrammarCompiler(tok).compile_json_schema(case.schema)
            except sg.StrictgenError:
                pass
    finally:
        automata.NFABuilder._lowered = original
    return seen


def in_python(builder, expr, shared) -> int:
    """The reference walk's program: its length in ops."""
    program = lowering.Program(builder)
    (program.build if shared else program.build_here)(expr)
    return len(program.ops)


def in_c(builder, expr, shared) -> int:
    return len(lowering.write_c(builder, builder.lowering_memo, expr, shared, lowering.MAX_COPIES)) // 4


def replay(seen: list, writer, clock=time.perf_counter) -> tuple[float, int]:
    """Seconds to write every recorded program again, and the ops written."""
    for builder, _, _ in seen:
        builder._memo.lowering = lowering.LoweringMemo()
    ops = 0
    t0 = clock()
    for builder, expr, shared in seen:
        try:
            ops += writer(builder, expr, shared)
        except lowering.Unlowerable:
            pass
    return clock() - t0, ops


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--vocab", default="qwen")
    ap.add_argument("--python", action="store_true", help="time the reference walk (lowering.Program)")
    ap.add_argument("--cpu", action="store_true", help="thread CPU time, not wall time")
    args = ap.parse_args()
    seen = record(args.vocab)
    times = []
    for _ in range(args.rounds):
        spent, ops = replay(seen, in_python if args.python else in_c, time.thread_time if args.cpu else time.perf_counter)
        times.append(spent)
    times.sort()
    print(f"{len(seen)} programs, {ops} ops: walk min {1e3 * times[0]:.2f} ms, median {1e3 * times[len(times) // 2]:.2f} ms a pass")


if __name__ == "__main__":
    main()
