"""The bench's cold compile and first pass of fills, without the peers: every bench schema compiled
with a fresh compiler, then each valid document forced through a new matcher token by token
(fill, accept; then EOS), as `strictgen bench` does. Prints the compile sum and the fill mean;
with --warm N, also the best of N more passes over the same grammars, every mask cached by then
(the per-fill cost of the caches and the matcher).

    PYTHONPATH=<tree>/src python scripts/first_pass_fills.py [--vocab qwen|deepseek|smollm2] [--warm 5]

One process per run: run two trees alternately a few times to compare them on a VM whose speed
drifts (the bench's single-run fill figures move with it)."""

import argparse
import time

import strictgen as sg
from strictgen import bench


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="qwen")
    ap.add_argument("--warm", type=int, default=0)
    args = ap.parse_args()
    vocab = bench.load_vocab(args.vocab)
    tok = vocab.build_info()
    cases = bench.load_cases(bench.default_schemas_dir())
    sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(bench.WARMUP_SCHEMA))
    mask = sg.allocate_token_bitmask(1, tok.vocab_size)
    eos = tok.eos_token_ids[0]

    def fill(grammar, ids: list[int]) -> tuple[int, float]:
        """A new matcher forced through ids: (fills, seconds in fills)."""
        fills, spent = 0, 0.0
        matcher = sg.GrammarMatcher(grammar)
        for token in ids:
            t1 = time.perf_counter()
            matcher.fill_next_token_bitmask(mask)
            spent += time.perf_counter() - t1
            fills += 1
            if not matcher.accept_token(token):
                break
        return fills, spent

    compile_s = fill_s = 0.0
    fills = 0
    work = []  # (grammar, token ids + EOS) per document, for the warm passes
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
            n, spent = fill(grammar, ids + [eos])
            fills, fill_s = fills + n, fill_s + spent
            work.append((grammar, ids + [eos]))
    print(f"compile sum {compile_s * 1e3:.1f} ms; fills {fills}, mean {fill_s / fills * 1e6:.1f} us, sum {fill_s * 1e3:.1f} ms")
    if args.warm:
        warm = min(sum(fill(g, ids)[1] for g, ids in work) for _ in range(args.warm))
        print(f"warm fills: mean {warm / fills * 1e6:.2f} us (best of {args.warm} passes)")


if __name__ == "__main__":
    main()
