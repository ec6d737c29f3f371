"""Counting constructions of arrays and objects, written as grammar IR.

An array with `contains` counts, uniqueItems or length bounds, and an object with presence
clauses, member counts or any-order members, are finite state machines over their items/members:
`counting_language` explores the states once and writes the language as a DAG of shared suffixes,
so two states with the same future share one expression."""

from __future__ import annotations

from strictgen.errors import GrammarTooLargeError

from ..ir import Alt, Expr, Repeat, Seq, alt

__all__ = ["MAX_DP_STATES", "counting_language", "suffix_body"]

MAX_DP_STATES = 20_000  # states of one array/object counting construction


def counting_language(start, trans, closing, progress) -> Expr:
    """The suffix language from `start` of a counting construction, as a DAG of shared suffixes.

    `trans(state)` lists (item, next state) — item None for a silent move — and `closing(state)`
    the text that may end the construction there (None: it may not). Every move other than a
    self-loop must increase `progress(state)`; self-loops become a Repeat."""
    edges: dict = {}
    order = [start]
    seen = {start}
    i = 0
    while i < len(order):
        s = order[i]
        i += 1
        ts = trans(s)
        edges[s] = ts
        for _, t in ts:
            if t not in seen:
                seen.add(t)
                order.append(t)
                if len(order) > MAX_DP_STATES:
                    raise GrammarTooLargeError(f"array/object constraints need more than {MAX_DP_STATES} states")
    exprs: dict = {}
    for s in sorted(order, key=progress, reverse=True):
        exprs[s] = suffix_body(s, edges[s], closing(s), exprs)
    return exprs[start]


def suffix_body(state, moves, close, exprs: dict) -> Expr:
    """The suffix language of `state` of a counting construction: its `moves` ((item, next state),
    item None for a silent move; a self-loop becomes a Repeat), the text `close` that may end it
    there (None: it may not), and `exprs`, the suffix languages of the other states it moves to.
    counting_language's step, and that of a construction whose states are known without exploring
    them (schema.emit_objects' members in the fixed order), so both write the same expression."""
    loops = []
    exits: list[Expr] = []
    for item, t in moves:
        if t == state:
            loops.append(item)
            continue
        nxt = exprs[t]
        if type(nxt) is Alt and not nxt.items:  # NOTHING, or an equal Alt(()) (a type test: == was a dataclass call per move)
            continue
        exits.append(nxt if item is None else Seq((item, nxt)))
    if close is not None:
        exits.append(close)
    body: Expr = exits[0] if len(exits) == 1 else Alt(tuple(exits))
    if loops and exits:
        body = Seq((Repeat(alt(*loops), 0, None), body))
    return body
