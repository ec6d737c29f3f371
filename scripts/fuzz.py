"""The differential fuzz campaign of issue 34: random JSON Schemas, regexes and GBNF grammars with
valid and mutated documents, the matcher judged by `jsonschema`, `re` and an Earley recogniser.

    PYTHONPATH=src:. .venv/bin/python scripts/fuzz.py [--budget 600] [--seed 0] [--targets schema,regex,...]
        [--compile-timeout 10] [--tokenizer smollm2] [--findings fuzz-findings.jsonl] [--no-minimise]

Each target runs for --budget seconds (seeds --seed, --seed+1, ... in turn), one case at a time in
one worker process (a crash or a hang is a finding, not the end of the run). Every finding is
minimised and appended to --findings as JSON (the case, the finding); a minimised case goes into
tests/fuzz/regressions.json once fixed. The last line is a JSON summary: cases, outcomes and
findings per target, and the seconds spent. See tests/fuzz/campaign.py for what each check means.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests package holds the judges

import strictgen as sg  # noqa: E402

from tests.fuzz.campaign import TARGETS, Supervisor, make_case, minimise  # noqa: E402


MINIMISED_PER_KIND = 5


def run_target(sup: Supervisor, target: str, seed: int, budget: float, findings_file, do_minimise: bool) -> dict:
    t0 = time.monotonic()
    outcomes: collections.Counter = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    counts = collections.Counter()
    while time.monotonic() - t0 < budget:
        case = make_case(target, seed)
        result = sup.run(case)
        outcomes[result["outcome"] + (":" + result["error"] if result.get("error") else "")] += 1
        for key in ("docs", "valid", "probes", "inconclusive", "unjudged", "exponent_limit", "order_limit", "tracked_completions", "repeats"):
            counts[key] += result.get(key, 0)
        for finding in result["findings"][:1]:  # one finding per case is enough to minimise
            kinds[finding["kind"]] += 1
            # the first few of each kind are minimised (minutes each at worst); the rest kept as drawn
            small = minimise(sup.run, case, finding) if do_minimise and kinds[finding["kind"]] <= MINIMISED_PER_KIND else case
            record = {"target": target, "seed": seed, "finding": finding, "case": small}
            print(json.dumps(record, ensure_ascii=False)[:2000], flush=True)
            findings_file.write(json.dumps(record, ensure_ascii=False) + "\n")
            findings_file.flush()
        kinds.update(f["kind"] for f in result["findings"][1:])
        seed += 1
    return {"cases": sum(outcomes.values()), "seconds": round(time.monotonic() - t0, 1), "next_seed": seed, "outcomes": dict(outcomes), "findings": dict(kinds), **counts}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=600.0, help="seconds per target")
    ap.add_argument("--seed", type=int, default=0, help="first seed of every target")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--compile-timeout", type=float, default=10.0)
    ap.add_argument("--tokenizer", default="smollm2", help="a TokenizerInfo.from_name vocabulary")
    ap.add_argument("--findings", default="fuzz-findings.jsonl")
    ap.add_argument("--no-minimise", action="store_true")
    args = ap.parse_args()
    tok = sg.TokenizerInfo.from_name(args.tokenizer)
    summary = {"tokenizer": args.tokenizer, "seed": args.seed, "budget_s": args.budget, "targets": {}}
    with open(args.findings, "a", encoding="utf-8") as findings_file, Supervisor(tok, args.compile_timeout) as sup:
        for target in args.targets.split(","):
            summary["targets"][target] = got = run_target(sup, target, args.seed, args.budget, findings_file, not args.no_minimise)
            print(target, json.dumps(got), flush=True)
    print(json.dumps(summary))
    return 1 if any(t["findings"] for t in summary["targets"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
