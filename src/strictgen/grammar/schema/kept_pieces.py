"""Pieces of schema grammars the emitters keep for the process (bounded, strictgen.lru), handed
out as the expression a fresh build would have written.

A piece that is a pure function of its key (a number range, an enum's alternatives) is built once
a process; but where its nodes are the same objects at each use, the grammar changes: `ir.alt`
drops an alternative whose children are the very objects of an earlier one (a fresh build's
are new objects, so the copy stayed), and the automaton compiler builds ahead a rule body met in
an earlier compile (compile.automaton's kept rules). So a kept piece is handed out as a copy of
the nodes a build makes anew (found once, by building the piece twice: the nodes the two builds
do not share), around the nodes every build shares (the process's constants and the caches
beneath, which a fresh build would share too). Leaves below the top are handed out as they are:
every key takes them by value."""

from __future__ import annotations

from copy import copy as shallow_copy
from typing import Callable

from ..ir import Alt, Difference, Expr, Intersect, Repeat, Seq, Spelled, children
from ..ir_keys import WALKED_KINDS

__all__ = ["KeptPiece", "build_kept", "fresh_copy"]

KeptPiece = tuple[Expr, frozenset]  # (the first build, the ids of its nodes each build makes anew)


def _composites(expr: Expr) -> set[int]:
    """The ids of the composite nodes of `expr` (a DAG: each once)."""
    seen: set[int] = set()
    stack = [expr]
    while stack:
        x = stack.pop()
        if type(x) in WALKED_KINDS and id(x) not in seen:
            seen.add(id(x))
            stack.extend(children(x))
    return seen


def build_kept(build: Callable[[], Expr]) -> tuple[Expr, KeptPiece]:
    """(the piece `build` writes, what to keep of it). `build` must be a pure function: it is
    called twice, and the nodes of the first build that the second does not reuse are the ones
    every use gets anew (`fresh_copy`)."""
    first, second = build(), build()
    again = _composites(second)
    fresh = {i for i in _composites(first) if i not in again}
    if first is not second:  # the top, a leaf too (a rule's whole body: see above)
        fresh.add(id(first))
    return first, (first, frozenset(fresh))


def fresh_copy(piece: KeptPiece) -> Expr:
    """The piece with each node a build makes anew copied (the DAG's own sharing kept), the
    others as they are: the expression a fresh build writes, up to leaves."""
    template, fresh = piece
    copies: dict[int, Expr] = {}

    def copy(x: Expr) -> Expr:
        if id(x) not in fresh:
            return x
        got = copies.get(id(x))
        if got is None:
            kind = type(x)
            if kind is Seq or kind is Alt or kind is Intersect:
                got = kind(tuple(copy(c) for c in x.items))
            elif kind is Repeat:
                got = Repeat(copy(x.item), x.min, x.max)
            elif kind is Spelled:
                got = Spelled(copy(x.item))
            elif kind is Difference:
                got = Difference(copy(x.base), copy(x.minus))
            else:  # a leaf at the top
                got = shallow_copy(x)
            copies[id(x)] = got
        return got

    return copy(template)
