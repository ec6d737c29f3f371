"""A restarted process's time to its first mask, for schemas its disk cache has seen and not.

Three fresh processes in turn over the bench schemas (../shared/data/bench), each loading the
vocabulary, then per schema: GrammarCompiler(tok, cache_dir=DIR).compile_json_schema and the
first mask of a new matcher, timed together (time to first mask), plus whether the disk cache
answered.

  1. cold: an empty cache directory (unseen schemas; the process writes the cache);
  2. warm: the same directory, a new process (seen schemas: a restart), and again on a copy of
     it without the mask entries (what the masks add to a load and save along a document);
  3. cold again without a cache directory (the compile alone, for the load-vs-compile ratio).

Prints medians, sums and the worst, the share of grammars the cache keeps, bytes per stored
grammar, and the warm/cold ratio on the schemas it keeps; then the vocabulary's preprocessed
tables (trie, per-token facts): built (no cache) against loaded (warm cache), timed from after
the vocabulary's load to the tables in place (with a cache: its start-up, the vocabulary's
fingerprint apart), and again in interleaved pairs of processes that do nothing else.

    PYTHONPATH=src python scripts/disk_cache_restart.py [--vocab qwen] [--max-schemas N] [--tables-repeats 5]
    PYTHONPATH=src python scripts/disk_cache_restart.py --mask-load-pairs 5 [--max-schemas N]   (that alone)
    python scripts/disk_cache_restart.py --compare-trees BASE_TREE HEAD_TREE [--restarts 5]   (two trees' warm restarts, interleaved)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
    vocab_s = time.perf_counter() - t0
    key_s, tables_s, tables_loaded, compiler = tables_in_place(tok, cache_dir)
    hits = []
    compiler.on_compile = lambda kind, seconds, hit: hits.append(hit)
    from strictgen.tokenizer.info import text_encoder

    encode = text_encoder(vocab)
    rows = []
    for path in sorted(BENCH.glob("*.json"))[:limit]:
        case = json.loads(path.read_text(encoding="utf-8"))
        t = time.perf_counter()
        try:
            g = compiler.compile_json_schema(case["schema"])
        except sg.StrictgenError:
            continue
        m = sg.GrammarMatcher(g)
        m.next_token_mask()
        first_s = time.perf_counter() - t
        # the rest of the first valid document's masks: warm where the cache held them
        doc = next((json.dumps(x["data"]) for x in case.get("tests", []) if x.get("valid")), None)
        t = time.perf_counter()
        for token in encode(doc) if doc is not None and encode is not None else []:
            if not m.accept_token(token):
                break
            m.next_token_mask()
        rows.append({"schema": path.stem, "seconds": first_s, "doc_s": time.perf_counter() - t,
                     "from_disk": bool(hits and hits[-1]), "deferred": g.automaton.lazy is not None,
                     "masks_loaded": g.masks_stored if hits and hits[-1] else 0})
    t = time.perf_counter()
    saved = compiler.save_masks()  # at shutdown: every grammar's masks for the next process
    save_s = time.perf_counter() - t
    if compiler.disk_cache is not None:
        compiler.disk_cache.flush()
    print(json.dumps({"vocab_s": vocab_s, "key_s": key_s, "tables_s": tables_s, "tables_loaded": tables_loaded, "rows": rows,
                      "save_s": save_s, "saved": saved}))


def tables_in_place(tok, cache_dir: str | None):
    """(seconds for the cache's keys: the vocabulary's fingerprint and the code digest, which the
    grammar entries need too; seconds to the vocabulary's tables in place: loaded from the cache,
    or built; whether loaded; the compiler)."""
    import strictgen as sg
    from strictgen.compile.disk_cache import code_digest

    t0 = time.perf_counter()
    tok.fingerprint  # noqa: B018
    code_digest()
    key_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    compiler = sg.GrammarCompiler(tok, cache_dir=cache_dir)
    tok.trie  # noqa: B018 (built here when there is no cache directory)
    tables_s = time.perf_counter() - t0
    return key_s, tables_s, compiler.disk_cache is not None and compiler.disk_cache.tables_loaded, compiler


def child_tables(vocab: str, cache_dir: str | None) -> None:
    import strictgen as sg

    key_s, tables_s, loaded, compiler = tables_in_place(sg.TokenizerInfo.from_name(vocab), cache_dir)
    if compiler.disk_cache is not None:
        compiler.disk_cache.flush()
    print(json.dumps({"key_s": key_s, "tables_s": tables_s, "tables_loaded": loaded}))


def tables_pairs(vocab: str, repeats: int) -> None:
    """`repeats` interleaved pairs of fresh processes: tables built (no cache) and loaded (a warm
    cache directory), medians; the machine's load moves both alike."""
    built, loaded, keys = [], [], []
    with tempfile.TemporaryDirectory() as d:
        run(vocab, d, 0, tables=True)  # writes the tables
        for _ in range(repeats):
            built.append(run(vocab, None, 0, tables=True)["tables_s"])
            got = run(vocab, d, 0, tables=True)
            assert got["tables_loaded"], got
            loaded.append(got["tables_s"])
            keys.append(got["key_s"])
    med = lambda xs: statistics.median(xs) * 1e3  # noqa: E731
    print(f"vocabulary tables, {repeats} interleaved pairs of processes: built median {med(built):.0f} ms, loaded median {med(loaded):.0f} ms "
          f"(load/build {statistics.median(a / b for a, b in zip(loaded, built)):.2f}); the cache's keys (fingerprint, code digest) {med(keys):.0f} ms, "
          f"paid with any cache directory")


def mask_load_pairs(vocab: str, limit: int, repeats: int, verbose: bool = False) -> None:
    """What loading a grammar's masks adds to loading the grammar, in one process: per schema the
    cache stores with its first mask and its first valid document's masks, `repeats` interleaved
    pairs of (grammar load, first mask) and (grammar load + the start state's stored mask, first
    mask); medians per schema, then the median over schemas."""
    import strictgen as sg
    from strictgen.compile.disk_cache import DiskCache
    from strictgen.tokenizer.info import text_encoder

    tok = sg.TokenizerInfo.from_name(vocab)
    encode = text_encoder(vocab)
    plain_ms, masked_ms = [], []
    with tempfile.TemporaryDirectory() as d:
        cache = DiskCache(d, tok)
        for path in sorted(BENCH.glob("*.json"))[:limit]:
            case = json.loads(path.read_text(encoding="utf-8"))
            try:
                g = sg.GrammarCompiler(tok).compile_json_schema(case["schema"])
            except sg.StrictgenError:
                continue
            key = ("bench", path.stem)
            if not cache.store(key, g):
                continue
            m = sg.GrammarMatcher(g)
            m.next_token_mask()
            doc = next((json.dumps(x["data"]) for x in case.get("tests", []) if x.get("valid")), None)
            for token in encode(doc) if doc is not None and encode is not None else []:
                if not m.accept_token(token):
                    break
                m.next_token_mask()
            cache.store_masks(key, g)
            a, b = [], []
            for _ in range(repeats):
                t = time.perf_counter()
                sg.GrammarMatcher(cache.load(key)).next_token_mask()
                a.append(time.perf_counter() - t)
                t = time.perf_counter()
                loaded = cache.load(key)
                cache.load_masks(key, loaded)
                sg.GrammarMatcher(loaded).next_token_mask()
                b.append(time.perf_counter() - t)
            plain_ms.append(statistics.median(a) * 1e3)
            masked_ms.append(statistics.median(b) * 1e3)
            if verbose:
                print(f"  {path.stem}: {plain_ms[-1]:.2f} / {masked_ms[-1]:.2f} ms")
    print(f"load + first mask, {len(plain_ms)} kept schemas, {repeats} interleaved pairs each (medians per schema): without masks median "
          f"{statistics.median(plain_ms):.2f} ms, with the stored start mask {statistics.median(masked_ms):.2f} ms, "
          f"ratio median {statistics.median(b / a for a, b in zip(plain_ms, masked_ms)):.2f}")


def compare_trees(vocab: str, limit: int, trees: list[str], restarts: int) -> None:
    """Warm restarts of two source trees (each its own scripts/ and src/, its own cache
    directory filled by one cold process first), `restarts` each, interleaved (ABBA order): per
    schema the disk cache answered, the median and the least time to first mask (load + first
    mask) and for the masks along the first valid document; then over schemas the median, the
    sum, the per-schema ratio and how many schemas differ by more than 2 ms."""
    names = ["base", "head"]
    first: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    doc: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        dirs = dict(zip(names, (a, b)))
        for name, tree in zip(names, trees):
            run(vocab, dirs[name], limit, tree=tree)
        for r in range(restarts):
            for name, tree in (list(zip(names, trees)) if r % 2 == 0 else list(zip(names, trees))[::-1]):
                for row in run(vocab, dirs[name], limit, tree=tree)["rows"]:
                    if row["from_disk"]:
                        first[name].setdefault(row["schema"], []).append(row["seconds"] * 1e3)
                        doc[name].setdefault(row["schema"], []).append(row["doc_s"] * 1e3)
    common = sorted(set(first["base"]) & set(first["head"]))
    print(f"{vocab}: {len(common)} schemas answered from disk in both trees, {restarts} interleaved warm restarts per tree (base {trees[0]}, head {trees[1]})")
    for what, data in (("time to first mask", first), ("masks along the document after the first", doc)):
        for agg_name, agg in (("median", statistics.median), ("least", min)):
            per = {n: {s: agg(data[n][s]) for s in common} for n in names}
            base, head = per["base"], per["head"]
            print(f"  {what}, per-schema {agg_name}: median base {statistics.median(base.values()):.2f} ms, head {statistics.median(head.values()):.2f} ms; "
                  f"sum base {sum(base.values()):.1f} ms, head {sum(head.values()):.1f} ms; head/base per schema median "
                  f"{statistics.median(head[s] / base[s] for s in common):.2f}; > 2 ms slower in head: {sum(head[s] - base[s] > 2 for s in common)}, "
                  f"> 2 ms faster: {sum(base[s] - head[s] > 2 for s in common)}")


def run(vocab: str, cache_dir: str | None, limit: int, tables: bool = False, tree: str | None = None) -> dict:
    """One child process; `tree`: another source tree's copy of this script, on its src/."""
    script, env = __file__, os.environ
    if tree is not None:
        script, env = str(Path(tree) / "scripts" / Path(__file__).name), {**os.environ, "PYTHONPATH": str(Path(tree) / "src")}
    cmd = [sys.executable, script, "--child-tables" if tables else "--child", "--vocab", vocab, "--max-schemas", str(limit)] + (["--cache-dir", cache_dir] if cache_dir else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def summary(name: str, rows: list[dict]) -> None:
    xs = [r["seconds"] * 1e3 for r in rows]
    print(f"  {name:34s} n={len(xs):3d}  median {statistics.median(xs):7.2f} ms  sum {sum(xs):8.1f} ms  worst {max(xs):7.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", default="qwen")
    ap.add_argument("--max-schemas", type=int, default=1000)
    ap.add_argument("--tables-repeats", type=int, default=5, help="interleaved pairs of processes timing the vocabulary's tables")
    ap.add_argument("--mask-load-pairs", type=int, default=0, metavar="R", help="only time what loading masks adds to a grammar load (R pairs per schema)")
    ap.add_argument("--compare-trees", nargs=2, metavar=("BASE", "HEAD"), help="only compare two source trees' warm restarts, interleaved")
    ap.add_argument("--restarts", type=int, default=5, help="warm restarts per tree with --compare-trees")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--child-tables", action="store_true")
    ap.add_argument("--cache-dir")
    args = ap.parse_args()
    if args.child:
        child(args.vocab, args.cache_dir, args.max_schemas)
        return
    if args.child_tables:
        child_tables(args.vocab, args.cache_dir)
        return
    if args.compare_trees:
        compare_trees(args.vocab, args.max_schemas, args.compare_trees, args.restarts)
        return
    if args.mask_load_pairs:
        mask_load_pairs(args.vocab, args.max_schemas, args.mask_load_pairs, verbose=True)
        return
    with tempfile.TemporaryDirectory() as d:
        cold = run(args.vocab, d, args.max_schemas)
        files = [f.read_bytes() for f in Path(d).glob("*.sgc")]
        tables_bytes = sum(len(b) for b in files if b'{"arrays"' in b[:400])  # the masks' metadata starts with "words"
        masks_bytes = sum(len(b) for b in files if b'{"words"' in b[:400])
        files = [b for b in files if b'{"arrays"' not in b[:400] and b'{"words"' not in b[:400]]
        sizes = [len(b) for b in files if b'"not_kept": true' not in b]  # grammars, not the small "not kept" entries
        bare = Path(d) / "without-masks"  # the same grammars without their masks: what the masks add to a load
        bare.mkdir()
        for f in Path(d).glob("*.sgc"):
            if b'{"words"' not in f.read_bytes()[:400]:
                shutil.copy2(f, bare / f.name)
        warm = run(args.vocab, d, args.max_schemas)
        warm_bare = run(args.vocab, str(bare), args.max_schemas)
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
    summary("seen, warm cache without masks", warm_bare["rows"])
    by = lambda rows: {r["schema"]: r["seconds"] for r in rows if r["schema"] in kept}  # noqa: E731
    w, p = by(warm["rows"]), by(plain["rows"])
    if kept:
        summary("  kept schemas, warm", [{"seconds": w[k]} for k in kept])
        summary("  kept schemas, compiled", [{"seconds": p[k]} for k in kept])
        ratios = sorted((w[k] / p[k], k) for k in kept)
        print(f"  load / compile on kept schemas: median {statistics.median(r for r, _ in ratios):.2f}, worst {ratios[-1][0]:.2f} ({ratios[-1][1]}),"
              f" {sum(r > 1 for r, _ in ratios)} slower than their compile")
    print("after the first mask, the masks along the first valid document (a warm restart looks the stored ones up):")
    summary("  unseen (cold)", [{"seconds": r["doc_s"]} for r in cold["rows"]])
    summary("  seen (warm: grammar and masks)", [{"seconds": r["doc_s"]} for r in warm["rows"]])
    summary("  no cache", [{"seconds": r["doc_s"]} for r in plain["rows"]])
    summary("  seen, warm cache without masks", [{"seconds": r["doc_s"]} for r in warm_bare["rows"]])
    loaded_masks = [r["masks_loaded"] for r in warm["rows"] if r["from_disk"]]
    if loaded_masks:
        print(f"  masks per grammar stored: median {statistics.median(loaded_masks)}, max {max(loaded_masks)}; the cold process saved its grammars' "
              f"masks at exit in {cold['save_s'] * 1e3:.0f} ms ({cold['saved']} grammars, {masks_bytes:,} bytes on disk)")
    deferred = {r["schema"] for r in plain["rows"] if r["deferred"]}
    if deferred:
        summary("compiles deferring rules, compiled", [r for r in plain["rows"] if r["schema"] in deferred])
        summary("  the same, warm", [r for r in warm["rows"] if r["schema"] in deferred])
    missed = [r for r in plain["rows"] if r["schema"] not in kept]
    if missed:
        summary("not kept (compile)", missed)
    print(f"vocabulary tables (trie, token facts): built {plain['tables_s'] * 1e3:.0f} ms (no cache), cold cache {cold['tables_s'] * 1e3:.0f} ms "
          f"({'loaded' if cold['tables_loaded'] else 'built'}), warm cache {warm['tables_s'] * 1e3:.0f} ms ({'loaded' if warm['tables_loaded'] else 'built'}); "
          f"{tables_bytes:,} bytes on disk")
    if args.tables_repeats:
        tables_pairs(args.vocab, args.tables_repeats)


if __name__ == "__main__":
    main()
