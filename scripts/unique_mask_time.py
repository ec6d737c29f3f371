"""Time the uniqueItems part of a mask (compile/unique_items.py): the median of 30 `next_token_mask`
calls at a prefix whose machine row is cached, so what is timed is the tracker's pass over the row.

    PYTHONPATH=src .venv/bin/python scripts/unique_mask_time.py LABEL

Prints LABEL and the median per case (a string array, an integer array, an anyOf of a unique
array and a free one); compare two trees by interleaved runs (PYTHONPATH pointing at each).
"""

from __future__ import annotations

import statistics
import sys
import time

import strictgen as sg

CASES = [
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, '["abc", "xy", "abc'),
    ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "[7, 12, 7"),
    ({"anyOf": [{"uniqueItems": True}, {}]}, '["abc", "xy", "abc'),
]


def main() -> None:
    compiler = sg.GrammarCompiler(sg.TokenizerInfo.from_name("qwen"))
    out = []
    for schema, prefix in CASES:
        m = sg.GrammarMatcher(compiler.compile_json_schema(schema))
        assert m.accept_string(prefix)
        m.next_token_mask()
        times = []
        for _ in range(30):
            t0 = time.perf_counter()
            m.next_token_mask()
            times.append(time.perf_counter() - t0)
        out.append(f"{statistics.median(times) * 1e3:.2f} ms")
    print(sys.argv[1] if len(sys.argv) > 1 else "", " ".join(out))


if __name__ == "__main__":
    main()
