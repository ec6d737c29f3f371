"""Per-step cost of applying a batch of token masks, as the engine integrations do, on CPU torch.

    .venv/bin/python scripts/bench_engine_apply.py [--rows 64] [--threads 1]

Masks are real: the states a valid weather report passes through under its JSON Schema on the
Qwen vocabulary (151,936 logits per row), cycled over the rows. Timed: strictgen's
`apply_token_bitmask_inplace` (the call StrictgenLogitsProcessor.apply and the SGLang grammar
object make) with masks seen before and with masks new every step (one vectorised pass either way
since issue 28; before it, masks seen before reused cached per-row plans); and, when the
bench extra is installed, xgrammar's CPU `apply_token_bitmask_inplace` and vLLM's own
`apply_grammar_bitmask` (vllm/v1/structured_output/utils.py), which reorders the masks and calls
it. Each figure is the median of --reps steps; the logits copy before each step is not timed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

import strictgen as sg
from strictgen.tokenizer.info import load_qwen_encoding, text_encoder

WEATHER = Path("../shared/data/bench/seed---weather.json")
DOC = {"city": "Beijing", "temp_c": 25.0, "weather": "sunny"}


def walk_masks(vocab: int) -> np.ndarray:
    tok = sg.TokenizerInfo.from_tiktoken(load_qwen_encoding(), vocab_size=vocab)
    schema = json.loads(WEATHER.read_text()) if WEATHER.exists() else {"type": "object"}
    matcher = sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(schema))
    rows = []
    for t in text_encoder("qwen")(json.dumps(DOC)):
        mask = sg.allocate_token_bitmask(1, vocab)
        matcher.fill_next_token_bitmask(mask)
        rows.append(mask[0])
        assert matcher.accept_token(t), "the document does not follow the schema"
    return np.stack(rows)


def timed(step, prepare, reps: int) -> float:
    times = []
    for _ in range(reps):
        prepare()
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=151_936)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    states = walk_masks(args.vocab)
    masks = np.stack([states[i % len(states)] for i in range(args.rows)])
    base = torch.randn(args.rows, args.vocab)
    logits = base.clone()
    reset = lambda: logits.copy_(base)  # noqa: E731
    results = {}

    sg.apply_token_bitmask_inplace(logits, masks)
    results["strictgen apply, masks seen before"] = timed(lambda: sg.apply_token_bitmask_inplace(logits, masks), reset, args.reps)
    rng = np.random.default_rng(0)

    def fresh():
        reset()
        fresh.masks = masks.copy()
        fresh.masks[np.arange(args.rows), rng.integers(0, masks.shape[1] - 1, args.rows)] ^= 1 << 30  # new content
    results["strictgen apply, masks new each step"] = timed(lambda: sg.apply_token_bitmask_inplace(logits, fresh.masks), fresh, args.reps)
    try:
        import vllm.v1.structured_output.utils as vllm_so
        import xgrammar as xgr
    except ImportError as e:
        print(f"(xgrammar / vLLM's structured-output path not importable: {e}; install the bench extra)")
    else:
        tmasks = torch.from_numpy(masks)
        results["xgrammar apply_token_bitmask_inplace (cpu)"] = timed(lambda: xgr.apply_token_bitmask_inplace(logits, tmasks), reset, args.reps)
        vllm_so.PIN_MEMORY = False  # vLLM's CPU platform does not pin; the unknown platform here claims it can
        apply_grammar_bitmask = vllm_so.apply_grammar_bitmask
        ids = [f"r{i}" for i in range(args.rows)]
        sched = SimpleNamespace(scheduled_spec_decode_tokens={})
        out = SimpleNamespace(grammar_bitmask=masks, structured_output_request_ids=ids)
        batch = SimpleNamespace(req_ids=ids)
        results["vLLM apply_grammar_bitmask (xgrammar)"] = timed(lambda: apply_grammar_bitmask(sched, out, batch, logits), reset, args.reps)
    allowed = np.unpackbits(masks.view(np.uint8), axis=1, bitorder="little")[:, : args.vocab].sum(1)
    print(f"{args.rows} rows x {args.vocab} float32 logits, torch {torch.__version__} CPU, {args.threads} thread(s); "
          f"allowed tokens per row: min {allowed.min()}, median {int(np.median(allowed))}, max {allowed.max()}")
    print("| apply | ms per step (median) |\n|---|---|")
    for name, ms in results.items():
        print(f"| {name} | {ms:.2f} |")


if __name__ == "__main__":
    main()
