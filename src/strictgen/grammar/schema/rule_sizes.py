"""How big a schema grammar's automata get: which rules to keep as calls, and string lengths.

The automaton compiler inlines every rule that is not on a reference cycle, so a subschema used
in many places would be copied at every use; `call_big_rules` estimates each rule's inlined size
(affine in the sizes of the rules it refers to) and turns the biggest shares into calls.
`length_range` bounds the lengths of a raw-character language, so that a length bound the other
string constraints already imply is dropped before any product with it is built."""

from __future__ import annotations

from typing import Callable

from strictgen import deadline
from strictgen.lru import BoundedLRU

from ._rule_sizes import copies as flat_copies, graph as flat_graph, small as flat_small
from ..ir import (
    EMPTY,
    Alt,
    ByteSet,
    CharSet,
    Difference,
    Expr,
    Grammar,
    Intersect,
    Lazy,
    Literal,
    Repeat,
    RuleRef,
    Seq,
    Spelled,
    called_body,
    post_order_and_cycles,
    remember_references,
)

__all__ = ["BIG_RULE", "MAX_INLINE_DEPTH", "call_big_rules", "length_range"]

BIG_RULE = 4_000  # rules whose inlined automaton would be bigger are kept as calls
MAX_INLINE_DEPTH = 24  # rules inlined inside one another, at most (the automaton builder recurses per level)


def call_big_rules(grammar: Grammar) -> None:
    """Keep big non-recursive rules as calls instead of letting the compiler inline every use.

    The automaton compiler inlines every rule that is not on a reference cycle, so a subschema used
    in several places, or as an array item under maxItems, is copied each time. Walking the rules
    bottom-up, while a rule's inlined size (estimated NFA states) exceeds BIG_RULE, the referenced
    rule with the largest share (size × copies) is turned into a call, and so is any rule still
    above BIG_RULE. A rule becomes a call through an unproductive self-reference (NOTHING followed
    by the rule), which puts it on a reference cycle without changing its language."""
    # every rule's size terms; a rule's references are the rules its terms weigh
    rule_terms, ref_copies, small = _terms(grammar)
    graph = {n: frozenset(weights) for n, (_, weights) in rule_terms.items()}
    if small:  # no rule passes a bound: the planning below would call none (most schemas)
        for n, e in grammar.rules.items():
            remember_references(e, graph[n])
        return
    # a post-order from every rule, in the grammar's order (rule_terms keeps it), and the rules on cycles
    order, called = post_order_and_cycles(graph)
    sizes: dict[str, int] = {}

    def inlined(fixed: int, weights: dict[str, int]) -> int:  # a rule's size at the rule sizes now
        # a rule's size: 1 if called, else planned (1 until then); written out here and below
        # (a function call per weight was most of the planning's time)
        size_of = sizes.get
        return fixed + sum([w * (1 if r in called else size_of(r, 1)) for r, w in weights.items()])

    def make_called(r: str) -> None:
        called.add(r)
        grammar.rules[r] = called_body(r, grammar.rules[r])
        graph[r] = graph[r] | {r}

    inline_depth: dict[str, int] = {}  # rules inlined below a rule, nested (0 for a called rule)
    for n in order:
        deadline.check()
        # the size is affine in the referenced rules' sizes, and making another rule a call leaves
        # this rule's expression as it is: the loop only does arithmetic
        fixed, weights = rule_terms[n]
        size = inlined(fixed, weights)
        shares = None
        for _ in range(64):
            if size <= BIG_RULE:
                break
            shares = ref_copies(n) if shares is None else shares  # (n's body is still the one planned)
            size_of = sizes.get
            best = max(
                ((share * k, r) for r, k in shares.items() if r not in called and (share := size_of(r, 1)) > 32),
                default=None,
            )
            if best is None:
                break
            make_called(best[1])
            size = inlined(fixed, weights)
        sizes[n] = size
        if sizes[n] > BIG_RULE and n != grammar.root and n not in called:
            make_called(n)
        # a long chain of rules (a $ref chain, deeply nested objects) would be inlined into one
        # deep expression: every MAX_INLINE_DEPTH levels, one rule becomes a call
        depth = 1 + max((inline_depth.get(r, 0) for r in graph[n] if r not in called), default=0)
        if depth > MAX_INLINE_DEPTH and n != grammar.root and n not in called:
            make_called(n)
        inline_depth[n] = 0 if n in called else depth
    for n, e in grammar.rules.items():  # the automaton compiler asks them again
        remember_references(e, graph[n])


_IR_TYPES = (Seq, Alt, Intersect, RuleRef, Repeat, Difference, Spelled, Lazy, Literal, CharSet)  # _rule_sizes.c's order


# The terms of big rule bodies met again: the pieces the front end builds once a process (a format's
# or a pattern's escaped string, a spelled enum choice) are the same body object in every grammar
# that uses them, and walking one was the most of _rule_sizes.c's time in the compiles that have
# one (12,191 nodes for a long-length string, ~2.3 ms of a 6 ms front end). Keyed by the body's
# identity; the entry holds the body, so the id stays its own.
SHARED_TERMS_MIN = 10_000  # estimated states from which a body's terms are kept across compiles
_SHARED_TERMS: BoundedLRU[tuple] = BoundedLRU(256)  # id(body) -> (body, fixed, weights, copies)
# the big bodies met once (by id, without holding them): terms are kept from the second meeting
# on, since most big bodies are made per compile (an object's members) and would only churn the
# map (keeping them, reference copies included, cost more than their walk saved); an id reused
# by a new body only keeps that body's terms one meeting early
_SEEN_BIG: BoundedLRU[bool] = BoundedLRU(1024)


def _terms(grammar: Grammar) -> tuple[dict[str, tuple[int, dict[str, int]]], Callable[[str], dict[str, int]], bool]:
    """Each rule's size terms (fixed, weights: see `_size_terms`), its `_ref_copies` by name, and
    whether every rule is small (_rule_sizes.c's `small`: the planning would make no call; False
    where it is not known).

    From the C walk (_rule_sizes.c: the IR's nodes numbered once, the terms on flat arrays; the
    Python walk cost ~2.5 us a node, 80-200 ms in the slowest compiles); from the Python one where
    a repeat bound passes int64 or a size 128 bits, or a rule refers to no rule (post_order_and_cycles then
    says so). The bodies planned are these (the planning replaces a body only after planning it).
    A big body whose terms are kept (`_SHARED_TERMS`) is walked as EMPTY and given its kept terms:
    a rule's terms are a function of its own body, which refers to the rules by name."""
    names = list(grammar.rules)
    index = {n: i for i, n in enumerate(names)}
    bodies = dict(grammar.rules)
    walked = list(bodies.values())
    kept: dict[int, tuple] = {}
    for i, e in enumerate(walked):
        got = _SHARED_TERMS.peek(id(e))
        if got is not None and got[0] is e and all(r in index for r in got[2]):
            kept[i] = got
            walked[i] = EMPTY
    got = flat_graph(walked, index, _IR_TYPES, names)
    if got is None:
        memo: dict[int, tuple[int, dict[str, int]]] = {}
        return {n: _size_terms(e, memo) for n, e in bodies.items()}, lambda n: _ref_copies(bodies[n]), False
    fixed, weights, flat = got
    for i, (_, f, w, _) in kept.items():
        fixed[i], weights[i] = f, w
    if kept:
        _SHARED_TERMS.touch([id(k[0]) for k in kept.values()])
    for i, f in enumerate(fixed):
        if f >= SHARED_TERMS_MIN and i not in kept:
            body = bodies[names[i]]
            if _SEEN_BIG.peek(id(body)) is None:  # first met: most big bodies are made per compile
                _SEEN_BIG.put(id(body), True)
            else:
                _SHARED_TERMS.put(id(body), (body, f, weights[i], flat_copies(flat, i, names)))
    small = flat_small(fixed, weights, index, index[grammar.root], BIG_RULE, MAX_INLINE_DEPTH)

    def ref_copies(n: str) -> dict[str, int]:
        i = index[n]
        copies = kept[i][3] if i in kept else flat_copies(flat, i, names)
        return _ref_copies(bodies[n]) if copies is None else copies

    return {n: (fixed[i], weights[i]) for i, n in enumerate(names)}, ref_copies, small


def _ref_copies(e: Expr) -> dict[str, int]:
    """How many inlined copies of each referenced rule `e` makes (repeats multiply; a shared
    sub-expression counts once, as the automaton builder shares it)."""
    out: dict[str, int] = {}
    seen: set[int] = set()

    def rec(x: Expr, k: int) -> None:
        if id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, RuleRef):
            out[x.name] = out.get(x.name, 0) + k
        elif isinstance(x, (Seq, Alt, Intersect)):
            for i in x.items:
                rec(i, k)
        elif isinstance(x, Repeat):
            rec(x.item, k * max(1, x.max if x.max is not None else x.min + 1))
        elif isinstance(x, Difference):
            rec(x.base, k)
            rec(x.minus, k)

    rec(e, 1)
    del rec  # a recursive closure is a reference cycle
    return out


_NO_WEIGHTS: dict[str, int] = {}  # shared by every piece that refers to no rule (never written)


def _size_terms(e: Expr, memo: dict[int, tuple[int, dict[str, int]]]) -> tuple[int, dict[str, int]]:
    """Estimated NFA states of `e` with rules inlined, as (fixed, weights): the estimate is
    fixed + sum(weights[r] * size of rule r). A shared sub-expression counts at each use (the
    estimate is of the inlined automaton); repeats multiply their item, spelled strings count six
    times (an escape trie of a few states beside each state). Bottom-up over the DAG; `memo` keeps
    every node's terms, so the rules of one grammar, which share most of their pieces, are walked
    once together. A node's weights are its only child's own dict when that is all they are
    (never written after: copied before a second child is added). Recursive, like the automaton
    builder that follows it (which bounds the depth an expression may have). The reference of
    _rule_sizes.c, and what runs where a repeat bound passes int64 or a size 128 bits."""
    got = memo.get(id(e))
    if got is not None:
        return got
    t = type(e)
    # (children, copies of each per copy of e, states of e itself beside its children's)
    if t is Seq or t is Alt or t is Intersect:
        kids, factor, fixed = e.items, 1, 1
    elif t is RuleRef:
        got = memo[id(e)] = (0, {e.name: 1})
        return got
    elif t is Repeat:
        kids, factor, fixed = (e.item,), max(1, e.max if e.max is not None else e.min + 1), 1
    elif t is Difference:
        kids, factor, fixed = (e.base, e.minus), 1, 0
    elif t is Spelled:
        kids, factor, fixed = (e.item,), 6, 0
    elif t is Lazy:  # a call of a rule built at run time: the rules its body refers to count as references
        kids, factor, fixed = e.uses, 1, 1
    else:  # a leaf: a literal is a state per byte, a class a few, a ByteSet or anything else one
        got = memo[id(e)] = (max(1, len(e.data)) if t is Literal else 2 + len(e.ranges) if t is CharSet else 1, _NO_WEIGHTS)
        return got
    weights, owned = _NO_WEIGHTS, False
    for c in kids:
        c_fixed, c_weights = memo.get(id(c)) or _size_terms(c, memo)
        fixed += factor * c_fixed
        if not c_weights:
            continue
        if weights is _NO_WEIGHTS and factor == 1:
            weights = c_weights  # shared until another child adds to it
            continue
        if not owned:
            weights, owned = ({} if weights is _NO_WEIGHTS else dict(weights)), True
        for r, w in c_weights.items():
            weights[r] = weights.get(r, 0) + factor * w
    got = memo[id(e)] = (fixed, weights)
    return got


def length_range(e: Expr) -> tuple[int, int | None]:
    """(fewest, most) characters of the strings of a raw-character language (most None: unbounded)."""
    memo: dict[int, tuple[int, int | None]] = {}

    def rec(x: Expr) -> tuple[int, int | None]:
        got = memo.get(id(x))
        if got is not None:
            return got
        if isinstance(x, Literal):
            n = len(x.data.decode("utf-8"))
            out: tuple[int, int | None] = (n, n)
        elif isinstance(x, (ByteSet, CharSet)):
            out = (1, 1)
        elif isinstance(x, Seq):
            lo, hi = 0, 0
            for i in x.items:
                a, b = rec(i)
                lo += a
                hi = None if hi is None or b is None else hi + b
            out = (lo, hi)
        elif isinstance(x, Alt):
            if not x.items:
                out = (0, 0)
            else:
                rs = [rec(i) for i in x.items]
                out = (min(r[0] for r in rs), None if any(r[1] is None for r in rs) else max(r[1] for r in rs))
        elif isinstance(x, Repeat):
            a, b = rec(x.item)
            out = (a * x.min, None if x.max is None or b is None else b * x.max)
            if b == 0:
                out = (0, 0)
        elif isinstance(x, Intersect):
            rs = [rec(i) for i in x.items]
            his = [r[1] for r in rs if r[1] is not None]
            out = (max(r[0] for r in rs), min(his) if his else None)
        elif isinstance(x, Difference):
            out = rec(x.base)
        else:
            out = (0, None)
        memo[id(x)] = out
        return out

    try:
        return rec(e)
    finally:
        del rec  # a recursive closure is a reference cycle
