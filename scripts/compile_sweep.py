"""Compile only, over every maskbench-dev schema: cold compile + first matcher, a fresh compiler
each, compile_timeout 10 s, thread CPU time; writes {schema: [outcome, seconds]} and prints the
outcome counts and the distribution of the compiled ones.

    PYTHONPATH=<tree>/src python scripts/compile_sweep.py OUT.json [STEP]"""

import json
import sys
import time
from collections import Counter
from pathlib import Path

import strictgen as sg

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "maskbench-dev"


def main() -> None:
    step = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    tok = sg.TokenizerInfo.from_name("qwen")
    sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}}))
    out: dict[str, list] = {}
    for path in sorted(DATA.glob("*.json"))[::step]:
        schema = json.loads(path.read_text())["schema"]
        compiler = sg.GrammarCompiler(tok, cache_size=1, compile_timeout=10.0)
        t0 = time.thread_time()
        try:
            sg.GrammarMatcher(compiler.compile_json_schema(schema))
            kind = "ok"
        except sg.StrictgenError as exc:
            kind = type(exc).__name__
        except Exception as exc:  # noqa: BLE001 - a crash is an outcome to count
            kind = "CRASH " + type(exc).__name__
        out[path.stem] = [kind, time.thread_time() - t0]
    json.dump(out, open(sys.argv[1], "w"))
    ok = sorted(t for k, t in out.values() if k == "ok")
    pick = lambda p: ok[min(len(ok) - 1, round(p / 100 * (len(ok) - 1)))]  # noqa: E731
    print(dict(Counter(k for k, _ in out.values())))
    print(f"compiled {len(ok)}: p50={pick(50) * 1e3:.1f} ms p90={pick(90) * 1e3:.1f} p99={pick(99) * 1e3:.1f} "
          f"max={max(t for _, t in out.values()) * 1e3:.0f} >1s={sum(t > 1 for _, t in out.values())} >5s={sum(t > 5 for _, t in out.values())}")


if __name__ == "__main__":
    main()
