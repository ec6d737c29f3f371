"""A restarted process's time to its first mask, for schemas its disk cache has seen and not.

Three fresh processes in turn over the bench schemas (../shared/data/bench), each loading the
vocabulary, then per schema: GrammarCompiler(tok, cache_dir=DIR).compile_json_schema and the
first mask of a new matcher, timed together (time to first mask), plus whether the disk cache
answered.

  1. cold: an empty cache directory (unseen schemas; the process writes the cache);
  2. warm: the same directory, a new process (seen schemas: a restart);
  3. cold again without a cache directory (the compile alone, for the load-vs-compile ratio).

Prints medians, sums and the worst, the share of grammars the cache keeps, bytes per stored
grammar, and the warm/cold ratio on the schemas it keeps; then whether keeping the vocabulary's
preprocessed tables (trie, per-token facts) would pay: their build time against the least a
load of the same arrays costs.

    PYTHONPATH=src python scripts/disk_cache_restart.py [--vocab qwen] [--max-schemas N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path("../shared/data/bench")


def child(vocab: str, cache_dir: str | None, limit: int) -> None:
    import strictgen as sg

    t0 = time.perf_counter()
    tok = sg.TokenizerInfo.from_name(vocab)
    tok.trie  # noqa: B018 (the vocabulary's tables, built once per process)
    vocab_s = time.perf_counter() - t0
    compiler = sg.GrammarCompiler(tok, cache_dir=cache_dir)
    hits = []
    compiler.on_compile = lambda kind, seconds, hit: hits.append(hit)
    rows = []
    for path in sorted(BENCH.glob("*.json"))[:limit]:
        schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        t = time.perf_counter()
        try:
            g = compiler.compile_json_schema(schema)
        except sg.StrictgenError:
            continue
        sg.GrammarMatcher(g).next_token_mask()
        rows.append({"schema": path.stem, "seconds": time.perf_counter() - t, "from_disk": bool(hits and hits[-1]), "deferred": g.automaton.lazy is not None})
    if compiler.disk_cache is not None:
        compiler.disk_cache.flush()
    print(json.dumps({"vocab_s": vocab_s, "rows": rows}))


def vocab_tables(vocab: str) -> None:
    """Whether keeping the vocabulary's preprocessed tables on disk would pay: the time to build
    them (per-token facts and the trie, in C) against the least a load of the same arrays costs
    (read, sha256, views), best of 3 each. Prints both and the bytes."""
    import hashlib

    import numpy as np

    import strictgen as sg
    from strictgen.tokenizer.token_facts import TokenFacts
    from strictgen.tokenizer.trie import VocabTrie

    tok = sg.TokenizerInfo.from_name(vocab)
    builds = []
    for _ in range(3):
        t = time.perf_counter()
        trie = VocabTrie(tok.all_token_bytes, tok.is_special, TokenFacts(tok.all_token_bytes))
        builds.append(time.perf_counter() - t)
    f = trie.facts
    arrays = [trie.walk_nodes, trie.node_byte, np.concatenate(trie.parent), trie.token_node, trie.node_tokens, trie.offsets, f.flat, f.starts,
              f.lengths, f.char_width, f.in_whole_char, f.complete_utf8, f.char_counts, f.byte_sets, f.first_bytes, f.starts_whole_char]
    t = time.perf_counter()
    fingerprint = tok.fingerprint  # a load needs the vocabulary's key first
    key_s = time.perf_counter() - t
    with tempfile.NamedTemporaryFile(suffix=".tables") as out:
        out.write(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays))
        out.flush()
        loads = []
        for _ in range(3):
            t = time.perf_counter()
            data = Path(out.name).read_bytes()
            hashlib.sha256(data).digest()
            pos = 0
            for a in arrays:
                np.frombuffer(data, dtype=a.dtype, count=a.size, offset=pos)
                pos += a.nbytes
            loads.append(time.perf_counter() - t)
    print(f"{vocab} tables: build {min(builds) * 1e3:.0f} ms, load at least {min(loads) * 1e3:.0f} ms + vocabulary fingerprint {key_s * 1e3:.0f} ms, "
          f"{len(data):,} bytes ({fingerprint[:8]})")


def run(vocab: str, cache_dir: str | None, limit: int) -> dict:
    cmd = [sys.executable, __file__, "--child", "--vocab", vocab, "--max-schemas", str(limit)] + (["--cache-dir", cache_dir] if cache_dir else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=os.environ)
    return json.loads(out.stdout.strip().splitlines()[-1])


def summary(name: str, rows: list[dict]) -> None:
    xs = [r["seconds"] * 1e3 for r in rows]
    print(f"  {name:34s} n={len(xs):3d}  median {statistics.median(xs):7.2f} ms  sum {sum(xs):8.1f} ms  worst {max(xs):7.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", default="qwen")
    ap.add_argument("--max-schemas", type=int, default=1000)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--cache-dir")
    args = ap.parse_args()
    if args.child:
        child(args.vocab, args.cache_dir, args.max_schemas)
        return
    with tempfile.TemporaryDirectory() as d:
        cold = run(args.vocab, d, args.max_schemas)
        files = [f.read_bytes() for f in Path(d).glob("*.sgc")]
        sizes = [len(b) for b in files if b'"not_kept": true' not in b]  # grammars, not the small "not kept" entries
        warm = run(args.vocab, d, args.max_schemas)
    plain = run(args.vocab, None, args.max_schemas)
    kept = {r["schema"] for r in warm["rows"] if r["from_disk"]}
    print(f"{args.vocab}: {len(cold['rows'])} schemas; the cache keeps {len(sizes)} of them ({len(files) - len(sizes)} 'not kept' entries) "
          f"({len(kept)} answered from disk after the restart); vocabulary load {cold['vocab_s']:.2f} / {warm['vocab_s']:.2f} s")
    if sizes:
        print(f"  bytes per stored grammar: median {statistics.median(sizes):,.0f}, max {max(sizes):,}, total {sum(sizes):,}")
    print("time to first mask (compile or load + first mask):")
    summary("unseen (cold, cache empty)", cold["rows"])
    summary("seen (restart, warm cache)", warm["rows"])
    summary("no cache (restart, compile)", plain["rows"])
    by = lambda rows: {r["schema"]: r["seconds"] for r in rows if r["schema"] in kept}  # noqa: E731
    w, p = by(warm["rows"]), by(plain["rows"])
    if kept:
        summary("  kept schemas, warm", [{"seconds": w[k]} for k in kept])
        summary("  kept schemas, compiled", [{"seconds": p[k]} for k in kept])
        ratios = sorted((w[k] / p[k], k) for k in kept)
        print(f"  load / compile on kept schemas: median {statistics.median(r for r, _ in ratios):.2f}, worst {ratios[-1][0]:.2f} ({ratios[-1][1]}),"
              f" {sum(r > 1 for r, _ in ratios)} slower than their compile")
    deferred = {r["schema"] for r in plain["rows"] if r["deferred"]}
    if deferred:
        summary("compiles deferring rules, compiled", [r for r in plain["rows"] if r["schema"] in deferred])
        summary("  the same, warm", [r for r in warm["rows"] if r["schema"] in deferred])
    missed = [r for r in plain["rows"] if r["schema"] not in kept]
    if missed:
        summary("not kept (compile)", missed)
    vocab_tables(args.vocab)


if __name__ == "__main__":
    main()
