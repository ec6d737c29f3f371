"""The IR → NFA lowering alone, C (`regular.lower` from the flat program) against the Python
builder, on the rules every bench schema's compile builds: each rule build of a cold compile is
repeated on two twin builders (fresh memos; which one goes first alternates), in thread CPU time,
and the NFAs are checked to be the same state by state. Prints the sums and the per-rule ratio.

    PYTHONPATH=<tree>/src python scripts/compile_lowering.py [--vocab qwen] [--rounds 3]"""

import argparse
import statistics
import time

import strictgen as sg
from strictgen import bench
from strictgen.grammar import automata

SPENT = {True: 0.0, False: 0.0}
RATIOS: list[float] = []


def twin_build(build, builder, expr, in_c: bool):
    twin = automata.NFABuilder(builder.rules, builder.called, automata.shared_nodes(builder.rules.values()), automata.BuildMemo(), in_c)
    s, f = twin.new(), twin.new()
    t0 = time.thread_time()
    build(twin, expr, s, f)
    return time.thread_time() - t0, (twin.nfa.num_states, twin.nfa.arrays())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="qwen")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    real_build = automata.NFABuilder.build
    flip = [False]

    def measured(self, expr, start, end):
        flip[0] = not flip[0]
        best = {True: float("inf"), False: float("inf")}
        nfas = {}
        for _ in range(args.rounds):
            for in_c in (flip[0], not flip[0]):
                spent, nfas[in_c] = twin_build(real_build, self, expr, in_c)
                best[in_c] = min(best[in_c], spent)
        assert nfas[True] == nfas[False], "the two builders differ"
        for in_c in best:
            SPENT[in_c] += best[in_c]
        RATIOS.append(best[True] / max(best[False], 1e-9))
        return real_build(self, expr, start, end)

    automata.NFABuilder.build = measured
    tok = sg.TokenizerInfo.from_name(args.vocab)
    for case in bench.load_cases(bench.default_schemas_dir()):
        try:
            sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(case.schema_text))
        except sg.StrictgenError:
            pass
    print(f"rule builds: {len(RATIOS)}; Python builder {SPENT[False] * 1e3:.1f} ms, C lowering {SPENT[True] * 1e3:.1f} ms "
          f"(sum ratio {SPENT[True] / SPENT[False]:.3f}); per-rule ratio median {statistics.median(RATIOS):.3f}")


if __name__ == "__main__":
    main()
