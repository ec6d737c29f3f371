"""The bench's cold compile and first pass of fills, without the peers: every bench schema compiled
with a fresh compiler, then each valid document forced through a new matcher token by token
(fill, accept; then EOS), as `strictgen bench` does. Prints the compile sum and the fill mean.

    PYTHONPATH=<tree>/src python scripts/first_pass_fills.py [--vocab qwen|deepseek|smollm2]

One process per run: run two trees alternately a few times to compare them on a VM whose speed
drifts (the bench's single-run fill figures move with it)."""

import argparse
import time

import strictgen as sg
from strictgen import bench


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="qwen")
    args = ap.parse_args()
    vocab = bench.load_vocab(args.vocab)
    tok = vocab.build_info()
    cases = bench.load_cases(bench.default_schemas_dir())
    sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(bench.WARMUP_SCHEMA))
    mask = sg.allocate_token_bitmask(1, tok.vocab_size)
    eos = tok.eos_token_ids[0]
    compile_s = fill_s = 0.0
    fills = 0
    for case in cases:
        ids_per_doc = [list(vocab.encode(d)) for d in case.documents]
        t0 = time.perf_counter()
        try:
            grammar = sg.GrammarCompiler(tok).compile_json_schema(case.schema_text)
            sg.GrammarMatcher(grammar)
        except sg.StrictgenError:
            continue
        compile_s += time.perf_counter() - t0
        for ids in ids_per_doc:
            matcher = sg.GrammarMatcher(grammar)
            for token in ids + [eos]:
                t1 = time.perf_counter()
                matcher.fill_next_token_bitmask(mask)
                fill_s += time.perf_counter() - t1
                fills += 1
                if not matcher.accept_token(token):
                    break
    print(f"compile sum {compile_s * 1e3:.1f} ms; fills {fills}, mean {fill_s / fills * 1e6:.1f} us, sum {fill_s * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
