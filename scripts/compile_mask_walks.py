"""Counts, not times, over the bench's first pass (every bench schema compiled with a fresh
compiler, each valid document forced token by token as first_pass_fills.py does): the masks
computed (one trie walk each per grammar and horizon key; masks of equal content share one array
since compile/mask_memory.py, so arrays are not counted), the machine states
made and the rule DFAs' states. They do not drift with a shared machine's speed, so they tell
what a compile-side change (minimising or not, refining lazily) moves into the fills. Also one
sha256 over every mask (refusals and rejections included): two trees that print the same digest
gave bit-identical masks, which a change in how rules are built must keep.

    PYTHONPATH=<tree>/src python scripts/compile_mask_walks.py [--vocab qwen|deepseek|smollm2]"""

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
    eos = tok.eos_token_ids[0]
    mask = sg.allocate_token_bitmask(1, tok.vocab_size)
    masks: dict[tuple, object] = {}  # (grammar's masker id, horizon key) -> the masker, kept so that no id is reused
    fills = machine_states = dfa_states = refused = 0
    digest = hashlib.sha256()
    for case in bench.load_cases(bench.default_schemas_dir()):
        try:
            grammar = sg.GrammarCompiler(tok).compile_json_schema(case.schema_text)
        except sg.StrictgenError:
            digest.update(b"refused " + case.name.encode())
            continue
        masker = grammar.masker
        for doc in case.documents:
            matcher = sg.GrammarMatcher(grammar)
            for token in list(vocab.encode(doc)) + [eos]:
                matcher.fill_next_token_bitmask(mask)
                digest.update(mask.tobytes())
                masks[(id(masker), masker.horizon_key(matcher.state))] = masker  # one walk per key
                fills += 1
                if not matcher.accept_token(token):
                    digest.update(b"rejected")
                    refused += 1
                    break
        machine_states += grammar.machine.num_states
        dfa_states += sum(r.num_states for r in grammar.automaton.rules)
    print(f"fills {fills}; masks computed {len(masks)}; machine states {machine_states}; rule DFA states {dfa_states}; documents refused {refused}")
    print(f"masks sha256 {digest.hexdigest()}")


if __name__ == "__main__":
    main()
