"""Which of the vocabulary's loop splits (VocabTrie's cached `inside`, `by_first`, `entries`,
`empty`, `suffixes`, `cuts`, `rest`, `chars`) the bench's first pass builds inside its mask fills,
how often each is asked again, what the builds cost, and how many bench schemas meet each loop
(its byte set and multibyte flag): the measurement behind trie.COMMON_LOOPS. It wraps
`VocabTrie._cached` to time each build (thread CPU; a build that builds another counts both), then
runs scripts/first_pass_fills.py with the same arguments. Builds inside a compile are counted apart
from those inside fills.

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
compiling = [False]  # inside a compile (its builds are the compile's, not the fills')
builds: dict = collections.defaultdict(lambda: [0, 0.0])  # kind → [builds, seconds] (inside fills)
compile_builds: dict = collections.defaultdict(lambda: [0, 0.0])  # the same, inside compiles
asks: collections.Counter = collections.Counter()
loops: dict = collections.defaultdict(lambda: [set(), 0.0, set()])  # (loop bytes, multibyte) → [schemas, seconds, kinds]


def main() -> None:
    compile_json_schema, cached = sg.GrammarCompiler.compile_json_schema, VocabTrie._cached

    def counted_compile(self, *args, **kwargs):
        schema[0] += 1
        compiling[0] = True
        try:
            return compile_json_schema(self, *args, **kwargs)
        finally:
            compiling[0] = False

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
            phase = compile_builds if compiling[0] else builds
            phase[key[0]][0] += 1
            phase[key[0]][1] += spent
            if loop:
                loops[loop][1] += spent
            return got

        return cached(self, key, timed)

    sg.GrammarCompiler.compile_json_schema = counted_compile
    VocabTrie._cached = timed_cached
    sys.argv = [sys.argv[0]] + sys.argv[1:]
    runpy.run_path(str(Path(__file__).with_name("first_pass_fills.py")), run_name="__main__")
    print("\nkind      builds    asks  build ms (thread CPU, nested included)  | in compiles: builds, ms")
    for kind in sorted(builds.keys() | compile_builds.keys(), key=lambda k: -builds[k][1] - compile_builds[k][1]):
        (n, spent), (cn, cspent) = builds[kind], compile_builds[kind]
        print(f"{kind:9} {n:6} {asks[kind]:7} {spent * 1e3:9.1f}  | {cn:6} {cspent * 1e3:9.1f}")
    for name, phase in (("fills", builds), ("compiles", compile_builds)):
        print(f"sum of builds inside {name}: {sum(n for n, _ in phase.values())} builds, {sum(s for _, s in phase.values()) * 1e3:.1f} ms")
    print("\nschemas  build ms  loop (bytes, multibyte): kinds asked")
    for (loop_bytes, multibyte), (users, spent, kinds) in sorted(loops.items(), key=lambda kv: (-len(kv[1][0]), -kv[1][1])):
        shown = loop_bytes if len(loop_bytes) <= 60 else loop_bytes[:57] + b"..."
        print(f"{len(users):6} {spent * 1e3:9.1f}  {shown!r} {multibyte}: {', '.join(sorted(kinds))}")


if __name__ == "__main__":
    main()
