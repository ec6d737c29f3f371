"""The string path's share of bench compiles, from a py-spy profile: strings, formats and their
JSON spellings (emit_string, spelled_choice, json_escaped, format_value_expr, spelled_dfa, ...).

`run` compiles every bench schema with a fresh GrammarCompiler each (as `strictgen bench` does),
once in a `cold_round` (what a process meets first: the formats, enum spellings and automata
it keeps are built there) and then ROUNDS times in a `warm_round`; `report` gives, for the
compile samples of one kind of round, the share of those under each function named (inclusive,
C frames counted to their Python caller's name where py-spy --native names them). A loaded
machine drops samples: compare shares of one run, not counts of two.

    PYTHONPATH=<tree>/src py-spy record --native -r 1000 -f raw -o OUT.txt -- \\
        python scripts/string_path_profile.py run [--rounds 3] [--vocab qwen]
    python scripts/string_path_profile.py report OUT.txt [--round warm_round|cold_round] [--names a,b,...]"""

import argparse
import collections
import re

NAMES = ("emit_string", "_length_product_small", "escaped_string", "string_language", "format_value_expr", "_time",
         "SchemaEmitter.enum", "spelled_choice", "spelled_string", "json_escaped", "_escaped", "_spelled_chars",
         "_spell_set", "_u_escapes", "_digit_trie", "literal_trie", "pattern_language", "spelled_dfa", "json_spellings")


def run(rounds: int, vocab: str) -> None:
    import strictgen as sg
    from strictgen import bench

    tok = bench.load_vocab(vocab).build_info()
    cases = bench.load_cases(bench.default_schemas_dir())

    def one(case) -> None:
        try:
            sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(case.schema))
        except sg.StrictgenError:
            pass

    def cold_round() -> None:
        for case in cases:
            one(case)

    def warm_round() -> None:
        for case in cases:
            one(case)

    cold_round()
    for _ in range(rounds):
        warm_round()


def report(paths: list[str], round_name: str, names: list[str]) -> None:
    total, under = 0, collections.Counter()
    for path in paths:
        with open(path) as f:
            for line in f:
                stack, _, n = line.rstrip().rpartition(" ")
                frames = [re.sub(r" \(.*", "", frame) for frame in stack.split(";")]
                if not any(frame.endswith(round_name) for frame in frames) or "GrammarCompiler.compile_json_schema" not in frames:
                    continue
                total += int(n)
                for name in names:
                    if any(frame == name or frame.endswith("." + name) for frame in frames):
                        under[name] += int(n)
    print(f"{round_name}: {total} compile samples")
    for name in names:
        if under[name]:
            print(f"  {name:28s} {under[name]:7d} {100 * under[name] / max(total, 1):5.1f}%")


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--vocab", default="qwen")
    p = sub.add_parser("report")
    p.add_argument("paths", nargs="+")
    p.add_argument("--round", default="warm_round", choices=("warm_round", "cold_round"))
    p.add_argument("--names", default=",".join(NAMES))
    args = ap.parse_args()
    if args.cmd == "run":
        run(args.rounds, args.vocab)
    else:
        report(args.paths, args.round, args.names.split(","))


if __name__ == "__main__":
    main()
