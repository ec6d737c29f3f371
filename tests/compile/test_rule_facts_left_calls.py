"""compile.rule_facts' left calls from the IR (the rules a rule may call before reading a byte, on
a path that can finish) equal those of a plain fold that knows no shortcut, on random grammars
whose alternatives often start with a byte, a character or a literal (the shape a multipleOf's
thousands of rules have, which the walk answers at a glance). Also the productive and nullable
rules: the least fixpoints of the plain folds, whatever the order of asking."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.compile.rule_facts import IrFacts, nullable_rules, productive_rules
from strictgen.grammar.ir import Alt, ByteSet, CharSet, Literal, Repeat, RuleRef, Seq

NAMES = [f"r{i}" for i in range(5)]


def expressions():
    leaves = st.sampled_from(
        [Literal(b""), Literal(b"a"), Literal(b"xy"), ByteSet(((48, 57),)), ByteSet(()), CharSet(((0xD800, 0xDFFF),)), CharSet(((65, 90),))]
        + [RuleRef(n) for n in NAMES]
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4).map(lambda xs: Seq(tuple(xs))),
            st.lists(inner, max_size=4).map(lambda xs: Alt(tuple(xs))),
            st.tuples(inner, st.integers(0, 2), st.sampled_from([None, 0, 1, 3])).map(
                lambda t: Repeat(t[0], t[1] if t[2] is None else min(t[1], t[2]), t[2])
            ),
        ),
        max_leaves=12,
    )


def plain_left_calls(facts: IrFacts, called: dict, e, out: set, nullable: set, productive: set) -> None:
    """The definition, folded without shortcuts or memo: a sequence that can finish calls what its
    items call up to the first that must read a byte; an alternative what its live branches call."""
    if isinstance(e, Seq):
        if not facts.nonempty(e, productive):
            return
        for x in e.items:
            plain_left_calls(facts, called, x, out, nullable, productive)
            if not facts.nullable(x, nullable):
                return
    elif isinstance(e, Alt):
        for x in e.items:
            if facts.nonempty(x, productive):
                plain_left_calls(facts, called, x, out, nullable, productive)
    elif isinstance(e, Repeat):
        if e.max != 0 and facts.nonempty(e.item, productive):
            plain_left_calls(facts, called, e.item, out, nullable, productive)
    elif isinstance(e, RuleRef) and called[e.name] in productive:
        out.add(called[e.name])


@settings(max_examples=300, deadline=None)
@given(st.lists(expressions(), min_size=len(NAMES), max_size=len(NAMES)))
def test_left_calls_are_the_plain_fold_s(bodies):
    rules = dict(zip(NAMES, bodies))
    called = {n: i for i, n in enumerate(NAMES)}  # every rule a call: rules may refer to each other freely
    facts = IrFacts(rules, called, lambda e: True)
    order = list(range(len(NAMES)))
    productive = productive_rules([None] * len(NAMES), bodies, facts, 0, order)
    nullable = nullable_rules([None] * len(NAMES), bodies, facts, productive, order)
    for r, body in enumerate(bodies):
        if r not in productive:
            continue
        got: set[int] = set()
        facts.left_calls(body, got, nullable, productive, set())
        want: set[int] = set()
        plain_left_calls(facts, called, body, want, nullable, productive)
        assert got == want, (NAMES[r], body)


def plain_fold(e, given: set, called: dict, nullable: bool) -> bool:
    """Nonempty (nullable False) or nullable, folded from the definition without memo."""
    if isinstance(e, Seq):
        return all(plain_fold(x, given, called, nullable) for x in e.items)
    if isinstance(e, Alt):
        return any(plain_fold(x, given, called, nullable) for x in e.items)
    if isinstance(e, Repeat):
        return e.min == 0 or plain_fold(e.item, given, called, nullable)
    if isinstance(e, RuleRef):
        return called[e.name] in given
    if isinstance(e, Literal):
        return not e.data if nullable else True
    if isinstance(e, ByteSet):
        return not nullable and bool(e.ranges)
    return not nullable and any(lo < 0xD800 or hi > 0xDFFF for lo, hi in e.ranges)  # CharSet


def least_fixpoint(bodies, called: dict, nullable: bool, within: set | None = None) -> set:
    found: set[int] = set()
    while True:
        more = {r for r, b in enumerate(bodies) if (within is None or r in within) and r not in found and plain_fold(b, found, called, nullable)}
        if not more:
            return found
        found |= more


@settings(max_examples=300, deadline=None)
@given(st.lists(expressions(), min_size=len(NAMES), max_size=len(NAMES)), st.permutations(range(len(NAMES))))
def test_productive_and_nullable_rules_are_the_least_fixpoints_in_any_order(bodies, order):
    """The folds keep their false answers while the set grows by rules no false answer found
    missing: in any order of asking (callees first or not, cycles included) the sets are the least
    fixpoints of the plain folds."""
    rules = dict(zip(NAMES, bodies))
    called = {n: i for i, n in enumerate(NAMES)}
    facts = IrFacts(rules, called, lambda e: True)
    productive = productive_rules([None] * len(NAMES), bodies, facts, 0, list(order))
    assert productive == least_fixpoint(bodies, called, False)
    assert nullable_rules([None] * len(NAMES), bodies, facts, productive, list(order)) == least_fixpoint(bodies, called, True, productive)
