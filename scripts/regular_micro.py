"""The regular-language core's C operations timed alone (no compile around them): NFA building,
lazy subsets, trim, minimise, refine, products, find_member, tables; the minimum of repeats per
operation, in thread CPU time, on fixed synthetic automata (4,000 random words; a 400-step counter).

    PYTHONPATH=<tree>/src python scripts/regular_micro.py

For C changes (a file split, a rewrite): run two trees alternately a few times and compare per
operation; compile_times.py measures the same work inside whole compiles."""

import random
import time

from strictgen import regular
from strictgen.regular import NFA


def words_nfa(words: list[bytes]) -> tuple[NFA, int, int]:
    a = NFA()
    s, t = a.add_state(), a.add_state()
    for w in words:
        a.add_literal(s, w, t)
    return a, s, t


def counter_nfa(n: int) -> tuple[NFA, int, int]:
    """[a-z0-9]{0,n}"""
    a = NFA()
    s, final = a.add_state(), a.add_state()
    cur = s
    for _ in range(n):
        nxt = a.add_state()
        a.add_range(cur, 97, 122, nxt)
        a.add_range(cur, 48, 57, nxt)
        a.add_eps(cur, final)
        cur = nxt
    a.add_eps(cur, final)
    return a, s, final


def best(f, repeats: int = 15) -> float:
    out = float("inf")
    for _ in range(repeats):
        t0 = time.thread_time()
        f()
        out = min(out, time.thread_time() - t0)
    return out


def main() -> None:
    rng = random.Random(1)
    words = [bytes(rng.choice(b"abcdefghij") for _ in range(rng.randint(3, 12))) for _ in range(4000)]
    others = [bytes(rng.choice(b"abcdefghij") for _ in range(rng.randint(3, 12))) for _ in range(4000)]
    a, s, t = words_nfa(words)
    b, bs, bt = words_nfa(others)
    c, cs, ct = counter_nfa(400)
    d = regular.lazy(a, s, t).determinize()
    trimmed = d.trim()
    m = trimmed.minimize()
    m2 = regular.lazy(b, bs, bt).determinize().trim().minimize()
    counter = regular.lazy(c, cs, ct).determinize().trim()
    res = {
        "nfa_build": best(lambda: words_nfa(words)),
        "determinize": best(lambda: regular.lazy(a, s, t).determinize()),
        "trim": best(lambda: d.trim()),
        "minimize": best(lambda: trimmed.minimize()),
        "refine": best(lambda: trimmed.refine(64)),
        "product": best(lambda: m.product(m2)),
        "difference": best(lambda: m.product(m2, True)),
        "counter": best(lambda: regular.lazy(c, cs, ct).determinize().trim().minimize()),
        "refine_counter": best(lambda: counter.refine(500)),
        "find_member": best(lambda: regular.find_member([(regular.lazy(a, s, t), True), (regular.lazy(b, bs, bt), False), (regular.lazy(c, cs, ct), True)])),
        "tables": best(lambda: regular.dense(m.table256(), m.accepting())),
    }
    print(" ".join(f"{k}={v * 1e3:.2f}" for k, v in res.items()), "(ms)")


if __name__ == "__main__":
    main()
