"""Time adversarial formats against GrammarCompiler(compile_timeout=...): each case runs in a
child process, killed at a hard cap, and prints its outcome (compiled, or the error type and
message), wall and CPU time (a deadline is wall time; CPU time is the work, steadier on a
shared machine). Used to check that no compile runs much past its limit (issue 14).

    python scripts/adversarial_compile.py [--timeout 30] [--cap 120] [--tokenizer bytes|qwen|...] [CASE ...]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import string
import sys
import time


def _words(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 12))))
    return sorted(out)


def _nested(depth: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


CASES = {
    "choice_100k": ("choice", lambda: [f"option-{i}" for i in range(100_000)]),
    "choice_100k_words": ("choice", lambda: _words(100_000)),  # ~650,000 trie nodes: over the automaton size limit
    "enum_50k": ("schema", lambda: {"type": "string", "enum": [f"value_{i}" for i in range(50_000)]}),
    "enum_50k_words": ("schema", lambda: {"enum": _words(50_000, 1)}),  # ~330,000 trie nodes: over the DFA limit
    "anyof_const_2000": ("schema", lambda: {"anyOf": [{"const": {"id": i, "name": f"n{i}"}} for i in range(2000)]}),
    "allof_patterns_200": ("schema", lambda: {"type": "string", "allOf": [{"pattern": f"^[a-z0-9]*{i}[a-z0-9]*$"} for i in range(200)]}),
    "pattern_maxlength_3000": ("schema", lambda: {"type": "string", "pattern": "^[a-z]+(-[a-z0-9]+)*$", "maxLength": 3000}),
    "nested_2000": ("schema", lambda: _nested(2000)),
    "draft4_items_array": (
        "schema",
        lambda: {"$schema": "http://json-schema.org/draft-04/schema#", "type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
    ),
}


def _vocab(name: str):
    import strictgen as sg

    if name == "bytes":
        return sg.TokenizerInfo.from_vocab([bytes([b]) for b in range(256)] + [b"<eos>"], eos_token_ids=[256])
    return sg.TokenizerInfo.from_name(name)


def _child(case: str, timeout: float, tokenizer: str, queue) -> None:
    import strictgen as sg

    kind, make = CASES[case]
    arg = make()
    compiler = sg.GrammarCompiler(_vocab(tokenizer), compile_timeout=timeout)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        g = compiler.compile_choice(arg) if kind == "choice" else compiler.compile_json_schema(arg)
        outcome = f"compiled: {g!r}"
    except BaseException as exc:  # noqa: BLE001  (reporting what a user would see)
        outcome = f"{type(exc).__name__}: {str(exc)[:300]}"
    queue.put((time.perf_counter() - t0, time.process_time() - c0, outcome))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", default=list(CASES))
    ap.add_argument("--timeout", type=float, default=30.0, help="compile_timeout in seconds")
    ap.add_argument("--cap", type=float, default=120.0, help="kill a case still running after this many seconds")
    ap.add_argument("--tokenizer", default="bytes", help="bytes (a 256-byte vocabulary) or a TokenizerInfo.from_name name")
    args = ap.parse_args()
    ctx = mp.get_context("fork")
    for case in args.cases:
        queue = ctx.Queue()
        proc = ctx.Process(target=_child, args=(case, args.timeout, args.tokenizer, queue))
        t0 = time.perf_counter()
        proc.start()
        proc.join(args.cap)
        if proc.is_alive():
            proc.kill()
            proc.join()
            print(f"{case:24s} still running at {time.perf_counter() - t0:.1f} s wall (killed)", flush=True)
            continue
        try:
            elapsed, cpu, outcome = queue.get(timeout=5)
        except Exception:  # noqa: BLE001
            elapsed, cpu, outcome = time.perf_counter() - t0, float("nan"), f"child died (exit code {proc.exitcode})"
        print(f"{case:24s} {elapsed:7.2f} s wall {cpu:7.2f} s cpu  {outcome[:160]}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
