"""End-to-end figures for docs/generation.md: `strictgen generate --stats` on five prompts.

For each prompt: unconstrained, constrained with and without jump-forward (llama.cpp and
transformers), and the same prompt through llama-cpp-python with llama.cpp's own JSON-Schema grammar
(LlamaGrammar.from_json_schema) in the same process, greedy, same max_tokens. Each strictgen figure
comes from the command a user runs; the medians over the prompts are printed as a table and written
as JSON.

    .venv/bin/python scripts/measure_generate.py [--runtimes llama.cpp,transformers] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROMPTS = [
    ("weather", "Give the current weather in Beijing as JSON: the city, the temperature in Celsius, and the weather.",
     {"type": "object", "properties": {"city": {"type": "string"}, "temp_c": {"type": "integer"},
      "weather": {"type": "string", "enum": ["晴", "多云", "雨"]}}, "required": ["city", "temp_c", "weather"], "additionalProperties": False}),
    ("person", "Describe a software engineer named Ada as JSON.",
     {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 130},
      "languages": {"type": "array", "items": {"type": "string", "maxLength": 15}, "minItems": 1, "maxItems": 3}, "employed": {"type": "boolean"}},
      "required": ["name", "age", "languages", "employed"], "additionalProperties": False}),
    ("book", "Recommend one classic novel as JSON with its title, author, year and genre.",
     {"type": "object", "properties": {"title": {"type": "string", "maxLength": 40}, "author": {"type": "string", "maxLength": 30},
      "year": {"type": "integer"}, "genre": {"enum": ["fiction", "mystery", "science fiction", "romance", "history"]}},
      "required": ["title", "author", "year", "genre"], "additionalProperties": False}),
    ("product", "Create a product listing for a red coffee mug as JSON.",
     {"type": "object", "properties": {"product_name": {"type": "string", "maxLength": 30}, "price_usd": {"type": "number"},
      "in_stock": {"type": "boolean"}, "colors": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3}},
      "required": ["product_name", "price_usd", "in_stock", "colors"], "additionalProperties": False}),
    ("event", "Plan a team meeting next Monday as JSON: title, day, start hour, duration in minutes, attendees.",
     {"type": "object", "properties": {"title": {"type": "string", "maxLength": 30}, "day": {"enum": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]},
      "start_hour": {"type": "integer", "minimum": 0, "maximum": 23}, "duration_minutes": {"type": "integer", "minimum": 1, "maximum": 480},
      "attendees": {"type": "array", "items": {"type": "string", "maxLength": 15}, "maxItems": 4}},
      "required": ["title", "day", "start_hour", "duration_minutes", "attendees"], "additionalProperties": False}),
]
MAX_TOKENS = 64


def cli(args: list[str]) -> tuple[str, dict]:
    exe = Path(sys.executable).with_name("strictgen")
    proc = subprocess.run([str(exe), "generate", "--quiet", "--stats", *args], capture_output=True, text=True, check=True)
    return proc.stdout.rstrip("\n"), json.loads(proc.stderr.strip().splitlines()[-1])


def llama_grammar_run(prompt: str, schema: dict) -> dict:
    """llama-cpp-python alone, with llama.cpp's own JSON-Schema grammar, greedy."""
    from llama_cpp import LlamaGrammar

    from strictgen.engine.llama_cpp_runtime import open_llama

    from strictgen.engine.gguf_meta import gguf_chat_settings
    from strictgen.tokenizer.info import smollm2_gguf_path

    path = smollm2_gguf_path()
    llm = _LLM.get("llm") or _LLM.setdefault(
        "llm", open_llama(path, n_ctx=1024, n_threads=_THREADS[0], n_threads_batch=_THREADS[0], verbose=False)
    )
    template, _, _ = gguf_chat_settings(path)
    text = template.render([{"role": "user", "content": prompt}])
    t0 = time.perf_counter()
    grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    t1 = time.perf_counter()
    # the same prompt with max_tokens=1 times prefill (+ the first token), to split it off
    probe = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    llm.reset()
    t_probe = time.perf_counter()
    llm.create_completion(text, max_tokens=1, temperature=0.0, grammar=probe)
    t_first = time.perf_counter() - t_probe
    llm.reset()
    t2 = time.perf_counter()
    out = llm.create_completion(text, max_tokens=MAX_TOKENS, temperature=0.0, grammar=grammar)
    t3 = time.perf_counter()
    n = out["usage"]["completion_tokens"]
    return {"text": out["choices"][0]["text"], "output_tokens": n, "total_s": t3 - t2, "grammar_s": t1 - t0,
            "tokens_per_s": n / (t3 - t2), "decode_tokens_per_s": (n - 1) / max(1e-9, (t3 - t2) - t_first),
            "finish_reason": out["choices"][0]["finish_reason"]}


_LLM: dict = {}
_THREADS = [None]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtimes", default="llama.cpp,transformers")
    ap.add_argument("--out", default="bench-results/generate.json")
    ap.add_argument("--threads", type=int, default=None, help="threads for every runtime (default: all cores)")
    args = ap.parse_args()
    _THREADS[0] = args.threads
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, prompt, schema in PROMPTS:
            path = Path(tmp) / f"{name}.json"
            path.write_text(json.dumps(schema), encoding="utf-8")
            for runtime in args.runtimes.split(","):
                base = ["--runtime", runtime, "--max-tokens", str(MAX_TOKENS)]
                if args.threads:
                    base += ["--threads", str(args.threads)]
                for mode, extra in (("unconstrained", []), ("jump-forward", ["--schema", str(path)]),
                                    ("no-jump-forward", ["--schema", str(path), "--no-jump-forward"])):
                    text, stats = cli(base + extra + [prompt])
                    rows.append({"prompt": name, "runtime": runtime, "mode": mode, "text": text, **stats})
                    print(f"{name:8s} {runtime:12s} {mode:16s} {stats['tokens_per_s']:7.1f} tok/s  "
                          f"{stats['output_tokens']:3d} tok  saved {stats['passes_saved_pct']:5.1f}%  {text[:70]}", flush=True)
            if "llama.cpp" in args.runtimes:
                r = llama_grammar_run(prompt, schema)
                rows.append({"prompt": name, "runtime": "llama.cpp", "mode": "llama.cpp grammar", **r})
                print(f"{name:8s} {'llama.cpp':12s} {'llama.cpp grammar':16s} {r['tokens_per_s']:7.1f} tok/s  "
                      f"{r['output_tokens']:3d} tok  {r['text'][:70]}", flush=True)
    print("\nmedians over the prompts")
    keys = sorted({(r["runtime"], r["mode"]) for r in rows})
    for runtime, mode in keys:
        sel = [r for r in rows if r["runtime"] == runtime and r["mode"] == mode]
        tps = statistics.median(r["tokens_per_s"] for r in sel)
        line = f"{runtime:12s} {mode:18s} {tps:7.1f} tok/s end to end"
        if "decode_tokens_per_s" in sel[0]:
            line += f" ({statistics.median(r['decode_tokens_per_s'] for r in sel):6.1f} after prefill)"
        if "forward_ms_per_pass" in sel[0]:
            line += (f"  forward {statistics.median(r['forward_ms_per_pass'] for r in sel):6.2f} ms/pass"
                     f"  {statistics.median(r['forward_ms_per_token'] for r in sel):6.2f} ms/token"
                     f"  mask {statistics.median(r['mask_ms_per_token'] for r in sel):5.3f} ms/token"
                     f"  saved {statistics.median(r['passes_saved_pct'] for r in sel):5.1f}%")
        print(line)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
