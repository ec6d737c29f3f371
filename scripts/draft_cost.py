"""Cost of the draft APIs (runtime/drafts.py) per draft token and per tree node, over the bench schemas.

For every schema of ../shared/data/bench with valid documents: compile, tokenize each document
with the vocabulary's own encoder, force it through a matcher once (so the masks along it are
cached, as in a decoding loop that has met those states), then from every position time

  - the plain loop an engine runs without these APIs: accept + fill one row, per token;
  - validate_tokens(draft), per draft token;
  - fill_draft_bitmasks(draft, rows), per row written;
  - fill_draft_bitmasks on a new compile of the schema, drafts along the document, every mask
    computed for the first time inside the call (a decoding loop's first pass), per row;
  - fill_draft_tree_bitmasks on a tree of TREE nodes (the document's next tokens on one branch,
    wrong tokens on side branches), per node;

with drafts of DRAFT tokens of the document. Medians over positions; one process, one vocabulary.

    PYTHONPATH=src python scripts/draft_cost.py [--vocab qwen] [--draft 4] [--tree 16] [--max-schemas N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import numpy as np

import strictgen as sg
from strictgen.tokenizer.info import text_encoder

BENCH = Path("../shared/data/bench")


def documents(limit: int):
    for path in sorted(BENCH.glob("*.json"))[:limit]:
        case = json.loads(path.read_text(encoding="utf-8"))
        docs = [t["data"] for t in case.get("tests", []) if t.get("valid")]
        if docs:
            yield path.stem, case["schema"], docs


def tree_for(ids: list[int], start: int, size: int, vocab_size: int, rnd: random.Random):
    """(tokens, first_child, next_sibling): node 0 = ids[start - 1]; a chain of the document's next
    tokens, with a wrong sibling under every second node, until `size` nodes."""
    tokens, parent = [ids[start - 1] if start else ids[0]], [-1]
    chain = 0
    pos = start
    while len(tokens) < size:
        if pos < len(ids):
            tokens.append(ids[pos])
            parent.append(chain)
            chain = len(tokens) - 1
            pos += 1
        if len(tokens) < size and (len(tokens) % 2 == 0 or pos >= len(ids)):
            tokens.append(rnd.randrange(vocab_size))
            parent.append(parent[chain] if parent[chain] >= 0 else 0)
    first, sibling = [-1] * size, [-1] * size
    for i in range(size - 1, 0, -1):
        sibling[i] = first[parent[i]]
        first[parent[i]] = i
    return tokens, first, sibling


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", default="qwen", choices=["qwen", "deepseek"])
    ap.add_argument("--draft", type=int, default=4)
    ap.add_argument("--tree", type=int, default=16)
    ap.add_argument("--max-schemas", type=int, default=1000)
    args = ap.parse_args()
    tok = sg.TokenizerInfo.from_name(args.vocab)
    encode = text_encoder(args.vocab)
    eos = tok.eos_token_ids[0]
    rnd = random.Random(0)
    plain, validate, linear, tree, cold = [], [], [], [], []
    rows = sg.allocate_token_bitmask(max(args.draft + 1, args.tree), tok.vocab_size)
    schemas = 0
    for name, schema, docs in documents(args.max_schemas):
        try:
            g = sg.GrammarCompiler(tok).compile_json_schema(schema)
        except sg.StrictgenError:
            continue
        schemas += 1
        for doc in docs:
            ids = list(encode(json.dumps(doc))) + [eos]
            m = sg.GrammarMatcher(g)
            if m.validate_tokens(ids) != len(ids):
                continue  # a document this tokenization cannot spell under the grammar's whitespace rules
            fresh = sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(schema))  # masks not computed yet
            t = time.perf_counter()
            rows_written = 0
            for pos in range(0, len(ids), args.draft):  # drafts along the document, each mask met first here
                rows_written += fresh.fill_draft_bitmasks(ids[pos : pos + args.draft], rows)
                for tok_id in ids[pos : pos + args.draft]:
                    fresh.accept_token(tok_id)
            cold.append((time.perf_counter() - t) / rows_written)
            for t in ids:  # the first pass: fills every state's mask once (then cached)
                m.fill_next_token_bitmask(rows, 0)
                m.accept_token(t)
            m.reset()
            t1 = time.perf_counter()
            for t in ids:
                m.fill_next_token_bitmask(rows, 0)
                m.accept_token(t)
            plain.append((time.perf_counter() - t1) / len(ids))
            m.reset()
            for pos in range(len(ids) - 1):
                draft = ids[pos : pos + args.draft]
                t = time.perf_counter()
                m.validate_tokens(draft)
                validate.append((time.perf_counter() - t) / len(draft))
                t = time.perf_counter()
                n = m.fill_draft_bitmasks(draft, rows)
                linear.append((time.perf_counter() - t) / n)
                tokens, first, sibling = tree_for(ids, pos, args.tree, tok.vocab_size, rnd)
                t = time.perf_counter()
                m.fill_draft_tree_bitmasks(tokens, first, sibling, rows)
                tree.append((time.perf_counter() - t) / len(tokens))
                m.accept_token(ids[pos])
    us = lambda xs: f"{statistics.median(xs) * 1e6:7.1f} µs (p90 {np.percentile(xs, 90) * 1e6:7.1f})"  # noqa: E731
    print(f"{args.vocab}: {schemas} schemas, {len(validate)} draft positions, draft {args.draft} tokens, tree {args.tree} nodes (masks cached)")
    print(f"  accept + fill, per token (no draft API) {us(plain)}")
    print(f"  validate_tokens, per draft token        {us(validate)}")
    print(f"  fill_draft_bitmasks, per row            {us(linear)}")
    print(f"  fill_draft_bitmasks, per row, first pass (masks computed) {us(cold)} (per document)")
    print(f"  fill_draft_tree_bitmasks, per node      {us(tree)}")


if __name__ == "__main__":
    main()
