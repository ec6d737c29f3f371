"""uniqueItems for arrays of scalars whose items can take more values than a construction of
item sets could hold (json_schema.MAX_FINITE_DOMAIN).

The grammar keeps the array as it is without uniqueItems, as a called rule whose name carries
UNIQUE_MARK and the kinds of scalar its items may be: s string, i integer (no other number),
n number, b boolean, z null. The matcher (compile/unique_items.py) follows such an array's items
as text, remembers each item's value, and refuses the tokens that would complete (or fix the value
of) a copy of an earlier one: 1, 1.0 and 1e0 are one value, and so are every JSON spelling of a
string. That is only exact when an unfinished item can still become infinitely many values (the
refusal of a token then never leaves a dead end), so the items allowed here are: strings with at
most a minLength, numbers and integers without bounds or multipleOf (numbers only in the "any"
spelling: the canonical one caps fraction digits), booleans and null. Other items: None (the
caller refuses uniqueItems with a SchemaError naming it).
"""

from __future__ import annotations

from .ir import Expr, RuleRef
from .schema_ir import Length
from .schema_key_sets import keep_called

__all__ = ["UNIQUE_MARK", "unique_array_rule", "unique_scalar_kinds"]

UNIQUE_MARK = "~unique:"


def unique_scalar_kinds(dnf, canonical_numbers: bool) -> str | None:
    """The kinds of scalar the items of `dnf` (a normalised item schema) may be, or None when an
    item may be something this cannot follow exactly (a container, an enum, a bounded number, a
    constrained string)."""
    kinds: set[str] = set()
    for c in dnf:
        if c.values is not None or c.arr is not None or c.obj is not None:
            return None
        if c.str is not None:
            if any(type(a) is not Length or a.hi is not None for a in c.str):
                return None
            kinds.add("s")
        n = c.num
        if n is not None:
            if n.nonint or n.lo is not None or n.hi is not None or n.mults or n.not_mults or n.excluded:
                return None
            if not n.int_only and canonical_numbers:
                return None
            kinds.add("i" if n.int_only else "n")
        if c.bools:
            kinds.add("b")
        if c.null:
            kinds.add("z")
    if "n" in kinds:
        kinds.discard("i")
    if not kinds & {"s", "i", "n"}:
        return None  # booleans and null alone are a finite domain (handled by the item-set construction)
    return "".join(sorted(kinds))


def unique_array_rule(rules: dict[str, Expr], body: Expr, kinds: str) -> RuleRef:
    """`body` (the whole array, brackets included) as a called rule the matcher recognises."""
    name = f"unique{len(rules)}{UNIQUE_MARK}{kinds}"
    rules[name] = body
    keep_called(rules, name)
    return RuleRef(name)
