"""Run the schema-suite harness over a folder sample with a per-schema time limit; one JSON line per group.

    python scripts/schema_sweep.py [--vocab qwen] [--step 4] [--offset 0] [--limit-s 60] [--suite]
        [--any-order] [--formats annotate] > out.jsonl

A long sweep for measuring (tests/test_schema_suites.py is what `make test` runs); schemas that run past
the limit are reported as "timeout". The outcome counts per kind go to stderr at the end."""

import argparse
import json
from collections import Counter
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

import strictgen as sg  # noqa: E402
from tests.test_schema_suites import make_encoder, maskbench_groups, run_group, suite_documents, suite_groups  # noqa: E402


class _Timeout(BaseException):  # not an Exception: library code that catches those must not swallow it
    pass


def _alarm(*_):
    raise _Timeout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="qwen")
    ap.add_argument("--step", type=int, default=1)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--limit-s", type=int, default=60)
    ap.add_argument("--suite", action="store_true", help="the official suite instead of maskbench-dev")
    ap.add_argument("--skip", type=int, default=0, help="skip the first N groups of the sample")
    ap.add_argument("--only", default="", help="comma-separated group names")
    ap.add_argument("--any-order", action="store_true", help="compile with any_order=True")
    ap.add_argument("--formats", default="assert", help="assert (default) or annotate")
    args = ap.parse_args()
    tok = sg.TokenizerInfo.from_name(args.vocab)
    encode = make_encoder(args.vocab, tok)
    groups = suite_groups() if args.suite else maskbench_groups()
    groups = groups[args.offset :: args.step][args.skip :]
    if args.only:
        names = set(args.only.split(","))
        groups = [g for g in groups if g[1] in names]
    signal.signal(signal.SIGALRM, _alarm)
    counts: dict[str, Counter] = {}
    options = {"any_order": True} if args.any_order else {}
    if args.formats != "assert":
        options["formats"] = args.formats
    if args.suite:
        options["documents"] = suite_documents()  # the suite's remotes/, never fetched
    for kind, name, schema, tests in groups:
        compiler = sg.GrammarCompiler(tok, cache_size=1)
        t0 = time.perf_counter()
        signal.alarm(args.limit_s)
        try:
            outcome, detail, secs = run_group(compiler, encode, schema, tests, **options)
        except _Timeout:
            outcome, detail, secs = "timeout", "", time.perf_counter() - t0
        except Exception as e:  # a crash is a finding, not a reason to stop the sweep
            outcome, detail, secs = "crash", f"{type(e).__name__}: {e}"[:300], time.perf_counter() - t0
        finally:
            signal.alarm(0)
        row = {"kind": kind, "name": name, "outcome": outcome, "detail": detail, "compile_s": round(secs, 4), "total_s": round(time.perf_counter() - t0, 3)}
        print(json.dumps(row, ensure_ascii=False), flush=True)
        counts.setdefault(kind, Counter())[outcome] += 1
    for kind, c in sorted(counts.items()):
        print(f"{kind}: {sum(c.values())} groups, " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())), file=sys.stderr)


if __name__ == "__main__":
    main()
