"""The JSON spellings a bench pass asks the regular core for (`regular.json_spellings`: every
spelled string language of every bench schema, compiled with a fresh compiler each and its
documents forced through, as first_pass_fills.py does), timed again on their own afterwards: the
sum over inputs of the best of REPEATS, in thread CPU time, spelling and its DFA together.

    PYTHONPATH=<tree>/src python scripts/compile_spellings.py [--vocab qwen] [--repeats 3]"""

import argparse
import time

import strictgen as sg
from strictgen import bench, regular


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="qwen")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    asked: list[tuple] = []
    spell = regular.json_spellings

    def recording(*call):
        asked.append(call)
        return spell(*call)

    regular.json_spellings = recording
    vocab = bench.load_vocab(args.vocab)
    tok = vocab.build_info()
    mask = sg.allocate_token_bitmask(1, tok.vocab_size)
    for case in bench.load_cases(bench.default_schemas_dir()):
        try:
            grammar = sg.GrammarCompiler(tok).compile_json_schema(case.schema_text)
        except sg.StrictgenError:
            continue
        for document in case.documents:
            matcher = sg.GrammarMatcher(grammar)
            for token in vocab.encode(document):
                matcher.fill_next_token_bitmask(mask)
                if not matcher.accept_token(token):
                    break
    regular.json_spellings = spell
    best = [float("inf")] * len(asked)
    for _ in range(args.repeats):
        for i, call in enumerate(asked):
            t0 = time.thread_time()
            got = spell(*call)
            if isinstance(got, tuple):  # a tree before 8f0bd69 gave the 256-wide table: its DFA too
                regular.dense(*got)
            best[i] = min(best[i], time.thread_time() - t0)
    print(f"{len(asked)} spellings: {sum(best) * 1e3:.1f} ms (the biggest {max(best) * 1e3:.1f} ms), best of {args.repeats} each")


if __name__ == "__main__":
    main()
