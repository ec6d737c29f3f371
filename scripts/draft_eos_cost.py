"""Cost of warm drafts that end with EOS (issue 33: EOS inside a linear draft used to send the
whole draft through accept_token and rollback; the C walk now decides it).

For the first N schemas of ../shared/data/bench (Qwen vocabulary): each valid document is forced
through a matcher up to its last three tokens, and the draft is those three tokens and EOS. Each
draft is filled once (its masks stored), then timed: fill_draft_bitmasks per row written (5) and
validate_tokens per draft token (4), medians over 50 rounds. Only the public API is used, so the
script measures any tree; compare trees by interleaved runs (timings on a shared machine are noisy).

    PYTHONPATH=<tree>/src .venv/bin/python scripts/draft_eos_cost.py [--max-schemas 20] [--rounds 50]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import strictgen as sg
from strictgen.bench import default_schemas_dir, load_cases, load_vocab


def eos_drafts(limit: int) -> tuple[list, int]:
    """(matcher, draft) pairs: each matcher three tokens and EOS before its document's end."""
    vocab = load_vocab("qwen")
    info = vocab.build_info()
    eos = info.eos_token_ids[0]
    compiler = sg.GrammarCompiler(info)
    jobs = []
    for case in load_cases(default_schemas_dir(), limit):
        grammar = _compiled(compiler, case.schema_text)
        for ids in ([*vocab.encode(doc), eos] for doc in (case.documents if grammar else [])):
            m = sg.GrammarMatcher(grammar)
            if len(ids) > 4 and all(m.accept_token(t) for t in ids[:-4]):
                jobs.append((m, ids[-4:]))
    return jobs, info.vocab_size


def _compiled(compiler, schema_text: str):
    """The schema's grammar, or None for one strictgen refuses (no draft of it to time)."""
    try:
        return compiler.compile_json_schema(schema_text)
    except sg.StrictgenError:
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-schemas", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=50)
    args = ap.parse_args()
    jobs, vocab_size = eos_drafts(args.max_schemas)
    rows = sg.allocate_token_bitmask(5, vocab_size)
    for m, draft in jobs:  # warm, and a check that each draft is accepted whole
        assert m.fill_draft_bitmasks(draft, rows) == 5 and m.validate_tokens(draft) == 4
    fill, validate = [], []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        for m, draft in jobs:
            m.fill_draft_bitmasks(draft, rows)
        t1 = time.perf_counter()
        for m, draft in jobs:
            m.validate_tokens(draft)
        t2 = time.perf_counter()
        fill.append((t1 - t0) / len(jobs) / 5 * 1e6)
        validate.append((t2 - t1) / len(jobs) / 4 * 1e6)
    out = {"drafts": len(jobs), "fill_draft_bitmasks_per_row_us": round(statistics.median(fill), 2),
           "validate_tokens_per_token_us": round(statistics.median(validate), 2)}
    print(f"{len(jobs)} drafts ending with EOS: fill_draft_bitmasks {out['fill_draft_bitmasks_per_row_us']} us per row, "
          f"validate_tokens {out['validate_tokens_per_token_us']} us per token")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
