"""Array emission: prefix items, items, length bounds, `contains` counts and uniqueItems.

Plain arrays are a sequence with bounded repeats. `contains` counts, and uniqueItems over a small
finite item domain (the state remembers the values used), go through a counting construction
whose state is (index, counts, values used)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

from ..ir import NOTHING, Alt, Expr, Seq, alt, repeat, seq
from ..json_value import json_container
from .counting import counting_language
from .ir import FALSE, TRUE, ArrayConstraints, Formula, keyword_pointer
from .unique import unique_array_rule, unique_item_spec, unique_position_ok
from .values import json_equal, value_key

if TYPE_CHECKING:
    from .emitter import SchemaEmitter

__all__ = ["MAX_FINITE_DOMAIN", "emit_array", "finite_values"]

MAX_FINITE_DOMAIN = 12  # item values for uniqueItems
_NO_ITEMS = {"k": "", "s": None, "l": []}  # the spec of a position past maxItems


def emit_array(em: SchemaEmitter, a: ArrayConstraints) -> Expr:
    """An array subschema (`em`'s `ref`, `value` and separators build the items)."""
    normalized = em.normalized
    if a.trivial:
        return json_container("[", em.any_value(), "]", em.style)
    lo = a.min
    contains = []
    for c in a.contains:
        if c.lo == 0 and c.hi is None:
            continue  # vacuous
        if c.schema is TRUE and c.hi is None:
            lo = max(lo, c.start + c.lo)  # at least lo items from index start: a length bound
            continue
        if c.schema is FALSE:
            if c.lo > 0:
                return NOTHING
            continue
        contains.append(c)
    if len(contains) > 3:
        em.reporter.refuse("more than 3 'contains' constraints on one array", "contains", keyword_pointer(a, "contains"))
        contains = contains[:3]
    unique = a.unique and (a.max is None or a.max > 1)
    domains = None
    open_, close_more, close_first = em.open_close("[", "]")
    if unique:
        domains = _finite_domains(em, a)
        if domains is None:
            tracked = _tracked_unique(em, a, lo, contains, close_more, close_first)
            if tracked is not None:
                return tracked
            kw, ptr = next(iter(a.where), ("uniqueItems", ""))
            em.reporter.refuse(
                "uniqueItems is only enforced when the items take at most "
                f"{MAX_FINITE_DOMAIN} possible values (or maxItems <= 1), or are values the matcher can follow "
                "exactly (any value; strings; numbers without bounds or multipleOf; booleans; null; enums of "
                "strings; objects open to additional members; arrays without maxItems)",
                "uniqueItems",
                ptr,
            )
            unique = False
    P = len(a.prefix)
    hi = a.max
    if not contains and not unique:
        return seq(open_, em.ws, _simple_array(em, a, lo, hi, close_more, close_first))
    k = len(contains)
    starts = [c.start for c in contains]
    cap = hi if hi is not None else max([P, lo, 1] + [s + 1 for s in starts])

    def nxt(i: int) -> int:
        return i + 1 if hi is not None else min(i + 1, cap)

    def item_classes(i: int):
        """(formula, new counts) choices for the item at index i."""
        S = a.item(i)
        out = []
        for mask in range(1 << k):
            parts = [S]
            ok = True
            bits = []
            for j, c in enumerate(contains):
                active = i >= c.start
                if mask >> j & 1:
                    if not active:
                        ok = False
                        break
                    parts.append(c.schema)
                    bits.append(True)
                else:
                    if active and c.hi is not None:
                        parts.append(normalized.not_(c.schema))
                    bits.append(False)
            if ok:
                out.append((normalized.and_(*parts), bits))
        return out

    def bump(cnt: tuple, bits: list) -> tuple | None:
        new = []
        for j, c in enumerate(contains):
            v = cnt[j] + (1 if bits[j] else 0)
            if c.hi is not None:
                if v > c.hi:
                    return None
            else:
                v = min(v, c.lo)
            new.append(v)
        return tuple(new)

    def trans(state):
        i, cnt, used = state
        if hi is not None and i >= hi:
            return []
        out = []
        if unique:
            for v in domains[min(i, P)]:
                vk = value_key(v)
                if vk in used:
                    continue
                bits = [i >= c.start and normalized.satisfies(c.schema, v) for c in contains]
                cnt2 = bump(cnt, bits)
                if cnt2 is None:
                    continue
                item = em.value(v)
                out.append((item if i == 0 else Seq((em.comma, item)), (nxt(i), cnt2, used | {vk})))
            return out
        for formula, bits in item_classes(i):
            if em.is_empty(formula):
                continue
            cnt2 = bump(cnt, bits)
            if cnt2 is None:
                continue
            item = em.ref(formula)
            out.append((item if i == 0 else Seq((em.comma, item)), (nxt(i), cnt2, used)))
        return out

    def closing(state):
        i, cnt, used = state
        if i < lo or any(cnt[j] < c.lo for j, c in enumerate(contains)):
            return None
        return close_first if i == 0 else close_more

    def progress(state):
        i, cnt, used = state
        return (i, sum(cnt), len(used))

    body = counting_language((0, (0,) * k, frozenset()), trans, closing, progress)
    return seq(open_, em.ws, body)


def _tracked_unique(em: SchemaEmitter, a: ArrayConstraints, lo: int, contains: list, close_more: Expr, close_first: Expr) -> Expr | None:
    """The array as a rule the matcher follows to refuse repeated items (schema/unique.py), or
    None when some item position cannot be followed exactly."""
    if contains:
        return None
    P = len(a.prefix)
    rest_used = a.max is None or a.max > P
    specs = [unique_item_spec(em, f) for f in a.prefix[: a.max]] + [unique_item_spec(em, a.items) if rest_used else _NO_ITEMS]
    if any(s is None for s in specs):
        return None
    if not all(unique_position_ok(specs[min(i, len(specs) - 1)], i) for i in range(lo)):
        return None
    open_ = em.open_close("[", "]")[0]
    body = _simple_array(em, a, lo, a.max, close_more, close_first)
    return body if body is NOTHING else unique_array_rule(em.rules, seq(open_, em.ws, body), specs)


def _simple_array(em: SchemaEmitter, a: ArrayConstraints, lo: int, hi: int | None, close_more: Expr, close_first: Expr) -> Expr:
    P = len(a.prefix)
    items = em.ref(a.items)
    # the tail after the prefix: items*, with the counts left
    if hi is not None and hi <= P:
        tail_first: Expr = close_first
        tail_more: Expr = close_more
        P = hi
    else:
        more_lo = max(0, lo - P)
        more_hi = None if hi is None else hi - P
        if items is NOTHING or em.is_empty(a.items):
            more_hi = 0
        if more_lo > (more_hi if more_hi is not None else more_lo):
            return NOTHING
        rep_more = repeat(seq(em.comma, items), more_lo, more_hi)
        tail_more = seq(rep_more, close_more)
        if more_hi == 0:
            tail_first = close_first if more_lo == 0 else NOTHING
        elif more_lo == 0:
            tail_first = alt(seq(items, repeat(seq(em.comma, items), 0, None if more_hi is None else more_hi - 1), close_more), close_first)
        else:
            tail_first = seq(items, repeat(seq(em.comma, items), more_lo - 1, None if more_hi is None else more_hi - 1), close_more)
    # the prefix, from the last position back
    cur_more = tail_more  # suffix after i items (i >= 1)
    for i in range(P - 1, -1, -1):
        item = em.ref(a.prefix[i])
        if i == 0:
            take = Seq((item, cur_more))
            return alt(take, close_first) if lo == 0 else take
        take = Seq((em.comma, item, cur_more))
        cur_more = Alt((take, close_more)) if i >= lo else take
    return tail_first


def _finite_domains(em: SchemaEmitter, a: ArrayConstraints) -> list[list] | None:
    """Possible values of the items at each prefix index and after (None: too many or infinite)."""
    out = []
    for f in list(a.prefix) + [a.items]:
        d = finite_values(em, f)
        if d is None:
            return None
        out.append(d)
    return out


def finite_values(em: SchemaEmitter, f: Formula) -> list | None:
    if f is FALSE:
        return []
    if f is TRUE:
        return None
    vals: list = []
    for c in em.normalized.dnf(f):
        if c.values is not None:
            vals.extend(c.values)
            continue
        if c.str is not None or c.arr is not None or c.obj is not None:
            return None
        if c.null:
            vals.append(None)
        vals.extend(sorted(c.bools))
        if c.num is not None:
            n = c.num
            if not n.int_only or n.lo is None or n.hi is None:
                return None
            a = math.ceil(n.lo) if not n.lo_strict else math.floor(n.lo) + 1
            b = math.floor(n.hi) if not n.hi_strict else math.ceil(n.hi) - 1
            if b - a + 1 > MAX_FINITE_DOMAIN:
                return None
            vals.extend(x for x in range(a, b + 1) if n.contains(Fraction(x)))
        if len(vals) > MAX_FINITE_DOMAIN:
            return None
    out: list = []
    for v in vals:
        if not any(json_equal(v, w) for w in out):
            out.append(v)
    return out if len(out) <= MAX_FINITE_DOMAIN else None
