"""One sha256 over every mask of the bench's first pass (every bench schema compiled with a fresh
compiler, each valid document forced through a new matcher token by token, then EOS, as
first_pass_fills.py does), the refusals and rejections included: two trees that print the same
digest gave bit-identical masks, which a compile-side change (how rules are built) must keep.

    PYTHONPATH=<tree>/src python scripts/compile_mask_digest.py [--vocab qwen|deepseek|smollm2]"""

import argparse
import hashlib

import strictgen as sg
from strictgen import bench


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="qwen")
    args = ap.parse_args()
    vocab = bench.load_vocab(args.vocab)
    tok = vocab.build_info()
    mask = sg.allocate_token_bitmask(1, tok.vocab_size)
    digest, fills = hashlib.sha256(), 0
    for case in bench.load_cases(bench.default_schemas_dir()):
        try:
            grammar = sg.GrammarCompiler(tok).compile_json_schema(case.schema_text)
        except sg.StrictgenError:
            digest.update(b"refused " + case.name.encode())
            continue
        for document in case.documents:
            matcher = sg.GrammarMatcher(grammar)
            for token in list(vocab.encode(document)) + [tok.eos_token_ids[0]]:
                matcher.fill_next_token_bitmask(mask)
                digest.update(mask.tobytes())
                fills += 1
                if not matcher.accept_token(token):
                    digest.update(b"rejected")
                    break
    print(f"{fills} masks, sha256 {digest.hexdigest()}")


if __name__ == "__main__":
    main()
