"""Test-only: random members of a grammar IR with rules (a random derivation that heads for the
shortest way out once it is deep), to check a front end against another parser's verdict."""

from __future__ import annotations

import random

from strictgen.grammar.ir import Alt, ByteSet, CharSet, Expr, Grammar, Literal, Repeat, RuleRef, Seq

INF = float("inf")


def _height(e: Expr, rules: dict[str, float]) -> float:
    """The fewest nested rule calls a derivation of `e` needs (inf: none finishes yet)."""
    if isinstance(e, RuleRef):
        return rules[e.name] + 1
    if isinstance(e, Seq):
        return max((_height(x, rules) for x in e.items), default=0)
    if isinstance(e, Alt):
        return min((_height(x, rules) for x in e.items), default=INF)
    if isinstance(e, Repeat):
        return _height(e.item, rules) if e.min else 0
    return 0


def heights(grammar: Grammar) -> dict[str, float]:
    h = {name: INF for name in grammar.rules}
    changed = True
    while changed:
        changed = False
        for name, body in grammar.rules.items():
            got = _height(body, h)
            if got < h[name]:
                h[name], changed = got, True
    return h


def derive(grammar: Grammar, rng: random.Random, budget: int = 40) -> str:
    """A random string of the grammar's language (text only: no special tokens)."""
    h = heights(grammar)
    out: list[str] = []
    steps = [0]

    def go(e: Expr) -> None:
        steps[0] += 1
        deep = steps[0] > budget
        if isinstance(e, Literal):
            out.append(e.data.decode("utf-8"))
        elif isinstance(e, (ByteSet, CharSet)):
            lo, hi = rng.choice(e.ranges)
            out.append(chr(rng.randint(lo, min(hi, lo + 300))))
        elif isinstance(e, Seq):
            for x in e.items:
                go(x)
        elif isinstance(e, Alt):
            options = [x for x in e.items if _height(x, h) < INF]
            if deep:
                best = min(_height(x, h) for x in options)
                options = [x for x in options if _height(x, h) == best]
            go(rng.choice(options))
        elif isinstance(e, Repeat):
            top = e.min if deep else min(e.max if e.max is not None else e.min + 3, e.min + 3)
            for _ in range(rng.randint(e.min, max(e.min, top))):
                go(e.item)
        elif isinstance(e, RuleRef):
            go(grammar.rules[e.name])
        else:
            raise TypeError(f"cannot sample {type(e).__name__}")

    go(grammar.rules[grammar.root])
    return "".join(out)
