"""Time the run-time trackers' part of a mask for minProperties objects (compile/distinct_names.py,
alone and beside uniqueItems through tracked_rules.Trackers): the median of 7 `next_token_mask`
calls at a prefix whose machine row is cached, so what is timed is the trackers' pass over the row.

    PYTHONPATH=src .venv/bin/python scripts/distinct_mask_time.py LABEL

Prints LABEL and the median per case, at a key and elsewhere; compare two trees by interleaved
runs (PYTHONPATH pointing at each). Qwen's vocabulary.
"""

from __future__ import annotations

import statistics
import sys
import timeit

import strictgen as sg

COUNTED = {"type": "object", "minProperties": 3, "additionalProperties": {"type": "integer"}}
UNIQUE = {"type": "array", "uniqueItems": True, "items": {"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer"}}}
CASES = [  # (label, schema, prefix)
    ("object/in-key", COUNTED, '{"xa": 1, "xb": 2, "x'),
    ("object/key-next", COUNTED, '{"xa": 1, "xb": 2, '),
    ("object/value", COUNTED, '{"xa": 1, "xb": '),
    ("unique/in-key", UNIQUE, '[{"a": 1, "b": 2}, {"a": 1, "'),
    ("unique/key-next", UNIQUE, '[{"a": 1, "b": 2}, {"a": 1, '),
    ("unique/value", UNIQUE, '[{"a": 1, "b": 2}, {"a": '),
]


def main() -> None:
    compiler = sg.GrammarCompiler(sg.TokenizerInfo.from_name("qwen"))
    medians = {}
    for label, schema, prefix in CASES:
        matcher = sg.GrammarMatcher(compiler.compile_json_schema(schema))
        assert matcher.accept_string(prefix), label
        matcher.next_token_mask()  # the machine's row cached: what follows times the trackers
        medians[label] = statistics.median(timeit.repeat(matcher.next_token_mask, number=1, repeat=7))
    print(sys.argv[1] if len(sys.argv) > 1 else "", " ".join(f"{k}={v * 1e3:.3f}ms" for k, v in medians.items()))

if __name__ == "__main__":
    main()
