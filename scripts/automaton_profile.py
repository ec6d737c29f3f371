"""Where compile_automaton's time goes, from a py-spy profile of fresh compiles (no timing wrappers
around the code: compile_phases.py's wrappers hide the native frames under them from py-spy).

`run` compiles every bench schema (or, with --median, the seven median ones, many times) with a
fresh GrammarCompiler each, as `strictgen bench` does; record it with py-spy, then `report` the
raw profile: compile_automaton's share of the compile samples, and its samples split into the
rule DFAs' trim + Moore minimisation (`minimal_with_splits`), their builds (the subset construction
of the rule NFAs, the pieces those NFAs embed, the C lowering, the Python program walk, the rest)
and the rest of compile_automaton. A profile taken on a loaded machine drops samples: compare
shares of one run, not counts of two.

    PYTHONPATH=<tree>/src py-spy record --native -r 1000 -f raw -o OUT.txt -- \\
        python scripts/automaton_profile.py run [--median] [--rounds N]
    python scripts/automaton_profile.py report OUT.txt [OUT2.txt ...]"""

import argparse
import collections
import re

MEDIAN = ("Glaiveai2K---calculate_area_80d6663a", "Github_easy---o22050", "WashingtonPost---wp_122_Normalized", "JME_62",
          "BFCL_multiple_5", "Kubernetes---kb_834_Normalized", "Glaiveai2K---calculate_area_c332227d")
PIECES = ("NFABuilder.embedded_dfa", "NFABuilder.regular_dfa")
TRIM = ("dfa_trim", "dfa_is_trim")  # trimming, apart or inside trim_minimize_rounds (C frames)
ROUNDS = ("DFA_minimize_rounds", "dfa_refine", "refine_partition", "rounds_quotient")


def run(median: bool, rounds: int) -> None:
    import strictgen as sg
    from strictgen import bench

    tok = bench.load_vocab("qwen").build_info()
    cases = [c for c in bench.load_cases(bench.default_schemas_dir()) if not median or c.name in MEDIAN]
    for _ in range(rounds):
        for case in cases:
            try:
                sg.GrammarCompiler(tok).compile_json_schema(case.schema)
            except sg.StrictgenError:
                pass


def samples(paths: list[str]):
    """(frame names from compile_automaton inward, count) per stack under it, and the compile's total."""
    under, compiles = [], 0
    for path in paths:
        with open(path) as f:
            for line in f:
                stack, _, n = line.rstrip().rpartition(" ")
                names = [re.sub(r" \(.*", "", frame) for frame in stack.split(";")]
                if "GrammarCompiler.compile_json_schema" in names:
                    compiles += int(n)
                if "compile_automaton" in names:
                    under.append((names[names.index("compile_automaton"):], int(n)))
    return under, compiles


def report(paths: list[str]) -> None:
    under, compiles = samples(paths)
    total = sum(n for _, n in under)
    if not total:
        raise SystemExit("no compile_automaton samples")

    def share(test) -> str:
        return f"{100 * sum(n for s, n in under if test(s)) / total:5.1f}%"

    def building(s):
        return "compile_automaton.<locals>.build" in s

    def piece(s):
        return any(p in s for p in PIECES)

    print(f"compile_automaton: {total} of {compiles} compile samples ({100 * total / max(compiles, 1):.0f}%)")
    rows = [
        ("rule DFAs' trim + minimal_with_splits", lambda s: "minimal_with_splits" in s),
        ("  trim (or the test that it keeps the DFA)", lambda s: "minimal_with_splits" in s and any(f in s for f in TRIM)),
        ("  Moore's rounds", lambda s: "minimal_with_splits" in s and any(f in s for f in ROUNDS)),
        ("    partition set-up", lambda s: "minimal_with_splits" in s and "partition_init" in s),
        ("    splits", lambda s: "minimal_with_splits" in s and "partition_split" in s),
        ("    quotient", lambda s: "minimal_with_splits" in s and "quotient" in s),
        ("rule builds", building),
        ("  subset construction of rule NFAs", lambda s: building(s) and "Lazy_determinize" in s and not piece(s)),
        ("  pieces (their lowering, subsets, minimising, spelling)", lambda s: building(s) and piece(s)),
        ("    of which spelled strings", lambda s: building(s) and "spelled_dfa" in s),
        ("  C lowering of rule programs", lambda s: building(s) and "mod_lower" in s and not piece(s)),
        ("  Python program walk", lambda s: building(s) and "NFABuilder._lowered" in s and "mod_lower" not in s and not piece(s)),
        ("  rest (keys, caches)", lambda s: building(s) and "NFABuilder._lowered" not in s and "Lazy_determinize" not in s),
    ]
    for label, test in rows:
        print(f"{share(test)}  {label}")
    rest = collections.Counter()
    for s, n in under:
        if "minimal_with_splits" not in s and not building(s):
            rest[s[1] if len(s) > 1 else "compile_automaton itself"] += n
    print(f"{share(lambda s: 'minimal_with_splits' not in s and not building(s))}  rest: " +
          ", ".join(f"{name} {100 * n / total:.1f}%" for name, n in rest.most_common(6)))


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--median", action="store_true")
    r.add_argument("--rounds", type=int, default=None, help="passes over the schemas (1; 150 with --median)")
    p = sub.add_parser("report")
    p.add_argument("profiles", nargs="+")
    args = ap.parse_args()
    if args.command == "run":
        run(args.median, args.rounds or (150 if args.median else 1))
    else:
        report(args.profiles)


if __name__ == "__main__":
    main()
