"""Objects whose properties may come in any order (``any_order=True``), for any number of them.

The order-free construction tracks which listed properties are present: 2**n states, too many
to build ahead past nine properties (or past the counting construction's budget). Here each state (the emitter's key set, member count,
first flag...) becomes a member of a `LazyFamily`, a rule built at run time the first time a
document reaches it (compile/lazy_rules.py), so a document of n members builds at most n + 1
rules. A member is handed out only when its state can still close the object (`alive`), which
keeps every allowed token extendable to a whole document.
"""

from __future__ import annotations

from strictgen.errors import GrammarTooLargeError

from ..ir import NOTHING, Alt, Expr, Lazy, LazyFamily, Repeat, RuleRef, Seq, alt, rule_references, seq

__all__ = ["KeySetFamily", "keep_called", "key_set_object", "submasks"]


def keep_called(rules: dict[str, Expr], name: str) -> None:
    """Keep rule `name` a call (its own automaton) by putting it on a reference cycle through an
    unproductive self-reference: a family's bodies, built at run time, can only call rules."""
    loop = Seq((NOTHING, RuleRef(name)))
    body = rules[name]
    if not (isinstance(body, Alt) and body.items and body.items[-1] == loop):
        rules[name] = Alt((body, loop))


class KeySetFamily(LazyFamily):
    """The suffixes of an object's member list from each construction state: `trans(state)` lists
    (text, next state), `closing(state)` the text that may end the object there (or None), and
    `alive(state)` whether some way on from `state` closes it. Same semantics as the eager
    construction (json_schema._dp): moves back to the same state repeat."""

    def __init__(self, trans, closing, alive, uses: tuple[RuleRef, ...]):
        self.trans, self.closing, self.alive = trans, closing, alive
        self.uses = uses

    def body(self, state) -> Expr:
        exits: list[Expr] = []
        loops: list[Expr] = []
        for item, nxt in self.trans(state):
            if nxt == state:
                loops.append(item)
            elif self.alive(nxt):
                exits.append(seq(item, Lazy(self, nxt, self.uses)))
        end = self.closing(state)
        if end is not None:
            exits.append(end)
        body = alt(*exits) if exits else NOTHING
        if loops and exits:
            body = seq(Repeat(alt(*loops), 0, None), body)
        return body


MAX_CLAUSE_MEMBERS = 14  # listed members that presence clauses mention: alive() tries their subsets


def key_set_object(rules: dict[str, Expr], start, trans, closing, *, required: list[bool], lo: int, hi: int | None,
                   extras: bool, pieces: list[Expr], exact: bool, clauses_hold=None, clause_members: int = 0) -> Expr:
    """The member list (after the opening brace) of an order-free object with many properties, as
    a call of its first lazy rule. The states are the emitter's (used bit set, member count, first,
    exists satisfied, -): `alive` is decided from the required members still missing, the count
    bounds and whether additional members exist, and with presence clauses (`clauses_hold(used)`,
    over the members of the bit set `clause_members`) by trying which of those members still to
    add. Existential member constraints (`exact` False) would need a search per state, so those
    stay refused here, as does a minProperties above the listed properties when additional members
    make up the count. `pieces`: every text `trans` and `closing` use (their rules become calls)."""
    n = len(required)
    if not exact or (extras and lo > n) or clause_members.bit_count() > MAX_CLAUSE_MEMBERS:
        raise GrammarTooLargeError(
            f"any_order=True with {n} properties and 'not' member constraints, presence clauses over more than "
            f"{MAX_CLAUSE_MEMBERS} of them or a minProperties above them: too many orders to build ahead (at most 9 properties)"
        )
    need = sum(1 << j for j in range(n) if required[j])
    optional = sum(1 << j for j in range(n) if not required[j])
    known: dict[tuple, bool] = {}

    def fits(used: int, count: int, added: int, free: int) -> bool:
        """Can the object close with the members `added` to `used` (and any of `free`)?"""
        total = count + added.bit_count()
        if hi is not None and (total > hi or lo > hi):
            return False
        return extras or total + free.bit_count() >= lo

    def alive(state) -> bool:
        used, count = state[0], state[1]
        missing = need & ~used
        if clauses_hold is None:
            return fits(used, count, missing, optional & ~used)
        got = known.get((used, count))
        if got is None:
            choices = clause_members & optional & ~used  # which of these to add decides the clauses
            got = False
            for extra in submasks(choices):
                if clauses_hold(used | missing | extra) and fits(used, count, missing | extra, optional & ~used & ~clause_members):
                    got = True
                    break
            known[(used, count)] = got
        return got

    names = sorted(set().union(*(rule_references(p) for p in pieces)))
    for name in names:
        keep_called(rules, name)
    if not alive(start):
        return NOTHING
    family = KeySetFamily(trans, closing, alive, tuple(RuleRef(name) for name in names))
    return Lazy(family, start, family.uses)


def submasks(mask: int, nonempty: bool = False):
    """Every subset of the bit set `mask` in increasing order (the empty one first unless `nonempty`)."""
    sub = 0
    if not nonempty:
        yield 0
    while True:
        sub = (sub - mask) & mask
        if not sub:
            return
        yield sub
