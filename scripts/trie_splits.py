"""Which of the vocabulary's loop splits (VocabTrie's cached `inside`, `by_first`, `entries`,
`empty`, `suffixes`, `cuts`, `rest`, `chars`) the bench's first pass builds inside its mask fills,
how often each is asked again, what the builds cost, and how many bench schemas meet each loop
(its byte set and multibyte flag): the measurement behind trie.COMMON_LOOPS. It wraps
`VocabTrie._cached` to time each build (thread CPU; a build that builds another counts both), then
runs scripts/first_pass_fills.py with the same arguments.

    PYTHONPATH=<tree>/src python scripts/trie_splits.py --vocab qwen|deepseek

Splits prepared with the vocabulary (COMMON_LOOPS) are not built in the pass, and show as asks only."""

import collections
import runpy
import sys
import time
from pathlib import Path

import strictgen as sg
from strictgen.tokenizer.trie import VocabTrie

schema = [0]  # the number of the schema being compiled and filled
builds: dict = collections.defaultdict(lambda: [0, 0.0])  # kind → [builds, seconds]
asks: collections.Counter = collections.Counter()
loops: dict = collections.defaultdict(lambda: [set(), 0.0, set()])  # (loop bytes, multibyte) → [schemas, seconds, kinds]


def main() -> None:
    compile_json_schema, cached = sg.GrammarCompiler.compile_json_schema, VocabTrie._cached

    def counted_compile(self, *args, **kwargs):
        schema[0] += 1
        return compile_json_schema(self, *args, **kwargs)

    def timed_cached(self, key, build):
        loop = key[1:3] if isinstance(key[1], bytes) else None
        asks[key[0]] += 1
        if loop:
            loops[loop][0].add(schema[0])
            loops[loop][2].add(key[0])

        def timed():
            t = time.thread_time()
            got = build()
            spent = time.thread_time() - t
            builds[key[0]][0] += 1
            builds[key[0]][1] += spent
            if loop:
                loops[loop][1] += spent
            return got

        return cached(self, key, timed)

    sg.GrammarCompiler.compile_json_schema = counted_compile
    VocabTrie._cached = timed_cached
    sys.argv = [sys.argv[0]] + sys.argv[1:]
    runpy.run_path(str(Path(__file__).with_name("first_pass_fills.py")), run_name="__main__")
    print("\nkind      builds    asks  build ms (thread CPU, nested included)")
    for kind, (n, spent) in sorted(builds.items(), key=lambda kv: -kv[1][1]):
        print(f"{kind:9} {n:6} {asks[kind]:7} {spent * 1e3:9.1f}")
    print("\nschemas  build ms  loop (bytes, multibyte): kinds asked")
    for (loop_bytes, multibyte), (users, spent, kinds) in sorted(loops.items(), key=lambda kv: (-len(kv[1][0]), -kv[1][1])):
        shown = loop_bytes if len(loop_bytes) <= 60 else loop_bytes[:57] + b"..."
        print(f"{len(users):6} {spent * 1e3:9.1f}  {shown!r} {multibyte}: {', '.join(sorted(kinds))}")


if __name__ == "__main__":
    main()
