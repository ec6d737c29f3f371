"""Round-trip figures of the GBNF and Lark export: each schema's grammar is exported, read back by
our own GBNF / Lark front end, and both grammars judge every test document of the group (as
json.dumps writes it, spaced and compact). Prints the counts and every disagreement.

    PYTHONPATH=src python scripts/export_round_trip.py suite 1        # every group of the official suite
    PYTHONPATH=src python scripts/export_round_trip.py maskbench 15   # every 15th maskbench-dev schema

Data: ../shared/data (json-schema-test-suite, maskbench-dev). Membership only, so a byte vocabulary."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

import strictgen as sg  # noqa: E402
from tests.test_schema_suites import maskbench_groups, suite_groups  # noqa: E402


def accepts(compiled, text: str) -> bool:
    m = sg.GrammarMatcher(compiled)
    return m.accept_string(text) and m.can_end()


def main() -> None:
    which, stride = sys.argv[1], int(sys.argv[2])
    tok = sg.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b""], eos_token_ids=[256])
    compiler = sg.GrammarCompiler(tok)
    groups = (suite_groups(False) if which == "suite" else maskbench_groups())[::stride]
    stats = dict.fromkeys(["groups", "schema_refused", "inexact_exports", "read_back_refused", "checks", "agree", "disagree"], 0)
    t0 = time.time()
    for _, name, schema, tests in groups:
        try:
            original = compiler.compile_json_schema(schema)
        except sg.StrictgenError:
            stats["schema_refused"] += 1
            continue
        stats["groups"] += 1
        for target in ("gbnf", "lark"):
            exported = original.export(target)
            stats["inexact_exports"] += bool(exported.inexact)
            try:
                back = compiler.compile_grammar(exported.text) if target == "gbnf" else compiler.compile_lark(exported.text)
            except sg.StrictgenError as exc:
                stats["read_back_refused"] += 1
                print("read back refused:", target, name, exc)
                continue
            for t in tests:
                for text in (json.dumps(t["data"]), json.dumps(t["data"], separators=(",", ":"))):
                    try:
                        a, b = accepts(original, text), accepts(back, text)
                    except sg.GrammarTooLargeError as exc:  # a rule built as the document reaches it
                        stats["rule_too_large"] = stats.get("rule_too_large", 0) + 1
                        print("rule too large while matching:", target, name, exc)
                        continue
                    stats["checks"] += 1
                    stats["agree" if a == b else "disagree"] += 1
                    if a != b:
                        print("disagree:", target, name, "inexact" if exported.inexact else "EXACT", text[:100], a, b)
    print(stats, f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
