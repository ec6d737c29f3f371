"""Time fill_next_token_bitmask per token for compile_json(), forcing the valid documents of
../shared/data/bench through the matcher on a real vocabulary (canonical tokenization).

    .venv/bin/python scripts/json_mask_timing.py [--tokenizer qwen] [--data ../shared/data/bench]

A quick figure for the engine-core issue; `strictgen bench` is the full side-by-side benchmark.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import strictgen as sg
from strictgen.tokenizer.info import text_encoder


def encoder(name: str):
    encode = text_encoder(name)
    if encode is None:
        raise SystemExit(f"no encoder shipped for {name!r}")
    return encode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizer", default="qwen", choices=["qwen", "deepseek"])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "bench"))
    args = parser.parse_args()
    t0 = time.perf_counter()
    tok = sg.TokenizerInfo.from_name(args.tokenizer)
    _ = tok.trie
    load_s = time.perf_counter() - t0
    encode = encoder(args.tokenizer)
    t0 = time.perf_counter()
    grammar = sg.GrammarCompiler(tok).compile_json()
    compile_ms = (time.perf_counter() - t0) * 1000
    mask = sg.allocate_token_bitmask(1, tok.vocab_size)
    times: list[float] = []
    docs = 0
    for path in sorted(Path(args.data).glob("*.json")):
        case = json.loads(path.read_text())
        for test in case["tests"]:
            if not test["valid"]:
                continue
            ids = encode(json.dumps(test["data"], ensure_ascii=False)) + [tok.eos_token_ids[0]]
            matcher = sg.GrammarMatcher(grammar)
            for t in ids:
                start = time.perf_counter()
                matcher.fill_next_token_bitmask(mask)
                times.append(time.perf_counter() - start)
                if not matcher.accept_token(t):
                    raise SystemExit(f"{path.name}: token {t} refused")
            docs += 1
    us = np.array(times) * 1e6
    print(f"vocabulary {args.tokenizer}: {tok.vocab_size} tokens, load + trie {load_s:.2f} s; compile_json {compile_ms:.1f} ms")
    print(f"{docs} documents, {len(us)} masks: mean {us.mean():.1f} µs, p50 {np.median(us):.1f} µs, p99 {np.percentile(us, 99):.1f} µs, max {us.max():.0f} µs")
    print(f"machine states built: {grammar.machine.num_states}")


if __name__ == "__main__":
    main()
