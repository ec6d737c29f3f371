"""What the rules built at run time cost inside the bench's first pass of fills (lazy_rules.py:
the rules a compile deferred, and members of families): scripts/first_pass_fills.py run as it is,
with every build at a rule's first entry timed in this thread's CPU time and split into lowering
(the IR -> NFA builder, pieces' DFAs and spellings inside it), the rule's determinising and
trimming + minimising, and the rest (the C machine's
copy of the rule, the builds' contexts). Prints the builds by kind of rule (s*: objects and other
rules the schema front end numbers, str_*/enum_*: named by content), their sizes (NFA, DFA and
minimal states: percentiles), the builds equal in content (the minimal DFA with its call edges,
hashed) and the biggest builds.

    PYTHONPATH=<tree>/src python scripts/deferred_builds.py [--vocab qwen|deepseek|smollm2] [--top 15]"""

import argparse
import collections
import hashlib
import runpy
import sys
import time
from pathlib import Path

import numpy as np

from strictgen import regular
from strictgen.compile.machine import PushdownMachine
from strictgen.grammar.automata import NFABuilder

clock = time.thread_time
builds: list[dict] = []  # one per rule built at run time
current: list[dict] = []  # the build under way (a stack: a build never starts another, but be safe)
lowering = [0]  # how deep inside the IR -> NFA builder: what runs there is the lowering's


def timed(owner, name: str, phase: str, after=None, lowers: bool = False) -> None:
    """Wrap owner.name so that its time inside a build, outside the lowering (or, with `lowers`,
    the lowering itself), adds to the build's `phase`."""
    real = getattr(owner, name)

    def wrapper(*args, **kwargs):
        if not current or (lowering[0] and not lowers):
            return real(*args, **kwargs)
        start = clock()
        lowering[0] += lowers
        try:
            got = real(*args, **kwargs)
        finally:
            lowering[0] -= lowers
        build = current[-1]
        build[phase] = build.get(phase, 0.0) + clock() - start
        if after is not None:
            after(build, args, got)
        return got

    setattr(owner, name, wrapper)


def sizes(build: dict, args: tuple, dfa) -> None:
    build["nfa"] = build.get("nfa", 0) + args[0].num_states
    build["dfa"] = build.get("dfa", 0) + dfa.num_states


def content(build: dict, args: tuple, got) -> None:
    start = clock()  # the hashing is this script's, not the build's: taken off below
    dfa = got[0]
    table, classmap = dfa.compact()
    build["minimal"] = dfa.num_states
    build["digest"] = hashlib.sha256(table + classmap + dfa.accepting() + b"".join(dfa.call_arrays())).hexdigest()[:12]
    build["probe"] = build.get("probe", 0.0) + clock() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="qwen")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    timed(NFABuilder, "build", "lower", lowers=True)
    timed(regular, "determinize", "determinise", sizes)
    timed(regular, "minimal_with_splits", "minimise", content)
    real_add = PushdownMachine._add_lazy_rule

    def add(self, index: int) -> None:
        if index in self.added:
            return real_add(self, index)
        build = {"index": index, "deferred": index < len(self.automaton.lazy.names)}
        current.append(build)
        start = clock()
        try:
            return real_add(self, index)
        finally:
            build["total"] = clock() - start - build.get("probe", 0.0)
            current.pop()
            if index in self.added:
                build["name"] = self.added[index].name
                builds.append(build)

    PushdownMachine._add_lazy_rule = add
    sys.argv = ["first_pass_fills.py", "--vocab", args.vocab]
    runpy.run_path(str(Path(__file__).with_name("first_pass_fills.py")), run_name="__main__")
    report(args.top)


def report(top: int) -> None:
    ms = lambda rows, key: sum(r.get(key, 0.0) for r in rows) * 1e3  # noqa: E731
    total = ms(builds, "total")
    print(f"\nbuilds at first entry: {len(builds)} ({sum(b['deferred'] for b in builds)} deferred rules), {total:.1f} ms thread CPU")
    kinds = collections.defaultdict(list)
    for b in builds:
        kinds[b["name"].split("_")[0] + "_*" if "_" in b["name"] else "s*"].append(b)
    for kind, rows in sorted(kinds.items(), key=lambda kv: -ms(kv[1], "total")):
        rest = ms(rows, "total") - ms(rows, "lower") - ms(rows, "determinise") - ms(rows, "minimise")
        print(f"  {kind:8} {len(rows):4} builds {ms(rows, 'total'):7.1f} ms: lowering {ms(rows, 'lower'):6.1f} (pieces' DFAs and spellings inside), "
              f"determinising {ms(rows, 'determinise'):6.1f}, trim + minimising {ms(rows, 'minimise'):6.1f}, the rest {rest:6.1f}")
    for key in ("nfa", "dfa", "minimal", "total"):
        values = np.asarray([b.get(key, 0) for b in builds], dtype=float) * (1e3 if key == "total" else 1)
        print(f"  {key + (' ms' if key == 'total' else ' states'):14} p50 {np.percentile(values, 50):9.2f}  p90 {np.percentile(values, 90):9.2f}  "
              f"p99 {np.percentile(values, 99):9.2f}  max {values.max():9.2f}")
    by_digest = collections.defaultdict(list)
    for b in builds:
        by_digest[b.get("digest")].append(b)
    repeats = [b for rows in by_digest.values() for b in rows[1:]]
    print(f"  equal in content to an earlier build: {len(repeats)} builds, {ms(repeats, 'total'):.1f} ms")
    print(f"  the {top} biggest (ms: total, lowering, determinising, minimising):")
    for b in sorted(builds, key=lambda b: -b["total"])[:top]:
        print(f"    {b['name'][:24]:24} nfa {b.get('nfa', 0):6} dfa {b.get('dfa', 0):6} minimal {b.get('minimal', 0):6}  "
              f"{b['total'] * 1e3:6.2f} {b.get('lower', 0) * 1e3:6.2f} {b.get('determinise', 0) * 1e3:6.2f} {b.get('minimise', 0) * 1e3:6.2f}")


if __name__ == "__main__":
    main()
