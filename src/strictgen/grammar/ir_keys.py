"""Content keys of IR expressions: what lets automata built for one grammar serve another.

IR nodes are immutable and compare by value, but their dataclass hash and equality walk the
expression as a tree: on a DAG (a shared piece used twice at each of 40 levels) that is 2^40
steps. A `ContentKeys` computes each node's hash once, from its children's, so a key costs one
pass over the DAG; two keys are equal only when their expressions are equal, which is checked
the same way, once per pair of nodes (a 64-bit hash alone could collide)."""

from __future__ import annotations

from . import _ir_walks
from .ir import Alt, Difference, Expr, Intersect, Lazy, Repeat, RuleRef, Seq, Spelled, children

WALKED_KINDS = (Seq, Alt, Intersect, Repeat, Spelled, Difference)  # the composite node types _ir_walks.c walks into, in its order
REFERENCE_KINDS = (*WALKED_KINDS, RuleRef, Lazy)  # and those that refer to rules (_ir_walks.rule_free, call_free)


def _own(x: Expr) -> tuple:
    """What a node is besides its children (leaves are their whole value)."""
    t = type(x)
    if t is Repeat:
        return (t, x.min, x.max)
    if t is Seq or t is Alt or t is Intersect or t is Spelled or t is Difference:
        return (t,)
    return (t, x)


class ContentKey:
    """A dictionary key standing for an expression's value."""

    __slots__ = ("expr", "_hash")

    def __init__(self, expr: Expr, hash_: int):
        self.expr, self._hash = expr, hash_

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        """Equal hashes, then equal values (`same_value`, walked in C: `_ir_walks.same_value`)."""
        return isinstance(other, ContentKey) and self._hash == other._hash and _ir_walks.same_value(self.expr, other.expr, WALKED_KINDS)


class ContentKeys:
    """Keys of the nodes of one grammar's expressions, each node hashed once (by id: the nodes
    must stay alive while this object is used, as a compile's do)."""

    def __init__(self) -> None:
        self._hashes: dict[int, int] = {}

    def key(self, expr: Expr) -> ContentKey:
        return ContentKey(expr, self.hash_of(expr))

    def hash_of(self, expr: Expr) -> int:
        hashes = self._hashes
        got = hashes.get(id(expr))
        if got is not None:
            return got
        stack = [expr]
        while stack:
            x = stack[-1]
            if id(x) in hashes:
                stack.pop()
                continue
            kids = children(x)
            waiting = [c for c in kids if id(c) not in hashes]
            if waiting:
                stack.extend(waiting)
                continue
            stack.pop()
            hashes[id(x)] = hash((_own(x), tuple(hashes[id(c)] for c in kids)))
        return hashes[id(expr)]


def same_value(a: Expr, b: Expr) -> bool:
    """Are two expressions equal as values? (Each pair of nodes compared once, so DAGs are linear.)
    The reference of the walk in C that ContentKey compares with (`_ir_walks.same_value`: ~1 us a
    pair of nodes here was the biggest Python cost of the shared automata caches' lookups)."""
    seen: set[tuple[int, int]] = set()
    work = [(a, b)]
    while work:
        x, y = work.pop()
        if x is y or (id(x), id(y)) in seen:
            continue
        seen.add((id(x), id(y)))
        if _own(x) != _own(y):
            return False
        kx, ky = children(x), children(y)
        if len(kx) != len(ky):
            return False
        work.extend(zip(kx, ky))
    return True
