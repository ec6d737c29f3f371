"""Pieces of schema grammars the emitters keep for the process (bounded, strictgen.lru), handed
out as the expression a fresh build would have written.

A piece that is a pure function of its key (a number range, an enum's alternatives) is built once
a process; but where its nodes are the same objects at each use, the grammar changes: `ir.alt`
drops an alternative whose children are the very objects of an earlier one (a fresh build's
are new objects, so the copy stayed), and the automaton compiler builds ahead a rule body met in
an earlier compile (compile.automaton's kept rules). So a kept piece is handed out as a copy of
the nodes a build makes anew, around the nodes every build shares (the process's constants and
the caches beneath, which a fresh build would share too). Those are found by the second use,
which builds the piece again (the nodes the two builds do not share): the first two uses cost
what they cost without a cache, the later ones a copy. Leaves below the top are handed out as
they are: every key takes them by value."""

from __future__ import annotations

from copy import copy as shallow_copy
from typing import Callable, Hashable

from strictgen.lru import BoundedLRU

from ..ir import Alt, Difference, Expr, Intersect, Repeat, Seq, Spelled, children
from ..ir_keys import WALKED_KINDS

__all__ = ["kept", "kept_entry_size"]


def kept(cache: BoundedLRU[tuple], key: Hashable, build: Callable[[], Expr], size: int = 0) -> Expr:
    """The piece `build` writes for `key`, kept in `cache` (entries (first build, the ids of its
    nodes each build makes anew or None until known, `size`): give the cache
    `kept_entry_size` where it bounds sizes). `build` must be a pure function of `key`."""
    got = cache.get(key)
    if got is None:
        expr = build()
        cache.put(key, (expr, None, size))
        return expr
    template, fresh, _ = got
    if fresh is None:  # the second use: a build of its own, which tells the nodes every build makes anew
        expr = build()
        again = _composites(expr)
        fresh = {i for i in _composites(template) if i not in again}
        if template is not expr:  # the top, a leaf too (a rule's whole body: see above)
            fresh.add(id(template))
        cache.put(key, (template, frozenset(fresh), size))
        return expr
    return _fresh_copy(template, fresh)


def kept_entry_size(entry: tuple) -> int:
    """The size a `kept` entry was given."""
    return entry[2]


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


def _fresh_copy(template: Expr, fresh: frozenset) -> Expr:
    """`template` with each node of `fresh` copied (the DAG's own sharing kept), the others as
    they are: the expression a fresh build writes, up to leaves."""
    return _copy_fresh(template, fresh, {})


def _copy_fresh(x: Expr, fresh: frozenset, copies: dict[int, Expr]) -> Expr:
    """_fresh_copy's walk. A module function, not a closure calling itself: such a closure is a
    reference cycle, which only the cyclic collector frees (tests/compile/test_compiler_hooks.py)."""
    if id(x) not in fresh:
        return x
    got = copies.get(id(x))
    if got is None:
        kind = type(x)
        if kind is Seq or kind is Alt or kind is Intersect:
            got = kind(tuple(_copy_fresh(c, fresh, copies) for c in x.items))
        elif kind is Repeat:
            got = Repeat(_copy_fresh(x.item, fresh, copies), x.min, x.max)
        elif kind is Spelled:
            got = Spelled(_copy_fresh(x.item, fresh, copies))
        elif kind is Difference:
            got = Difference(_copy_fresh(x.base, fresh, copies), _copy_fresh(x.minus, fresh, copies))
        else:  # a leaf at the top
            got = shallow_copy(x)
        copies[id(x)] = got
    return got
