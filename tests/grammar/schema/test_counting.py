"""schema.counting.counting_language: the language of a counting construction (states, moves,
closings) written as IR. Checked on constructions whose language is known in closed form, over
every string up to a length; silent moves, self-loops (a Repeat), dead states, the sharing of
suffixes (the expression is a DAG as small as the state space, not a tree of every path) and
the MAX_DP_STATES refusal."""

from __future__ import annotations

import itertools

import pytest

from strictgen.errors import GrammarTooLargeError
from strictgen.grammar.ir import EMPTY, NOTHING, Alt, Expr, Repeat, Seq, lit
from strictgen.grammar.schema.counting import MAX_DP_STATES, counting_language
from tests.grammar.ir_match import matches


def strings(alphabet: str, n: int):
    for k in range(n + 1):
        for t in itertools.product(alphabet, repeat=k):
            yield "".join(t)


def exactly_two_a_at_most_three_b(loop: str | None = None) -> Expr:
    """(count of a, count of b): a moves to (a+1, b) below 2, b to (a, b+1) below 3; ends at a == 2."""

    def trans(s):
        a, b = s
        out = []
        if a < 2:
            out.append((lit("a"), (a + 1, b)))
        if b < 3:
            out.append((lit("b"), (a, b + 1)))
        if loop is not None:
            out.append((lit(loop), s))
        return out

    return counting_language((0, 0), trans, lambda s: EMPTY if s[0] == 2 else None, lambda s: s[0] + s[1])


def test_the_language_is_the_counting_condition():
    expr = exactly_two_a_at_most_three_b()
    for s in strings("ab", 7):
        assert matches(expr, s) == (s.count("a") == 2 and s.count("b") <= 3), s


def test_self_loops_become_repeats_anywhere():
    expr = exactly_two_a_at_most_three_b(loop="c")
    for s in strings("abc", 6):
        assert matches(expr, s) == (s.count("a") == 2 and s.count("b") <= 3), s


def test_silent_moves_and_closing_text():
    # 0 -(x)-> 1 -(silent)-> 2; "]" closes at 1, "!" at 2, nothing at 0
    trans = {0: [(lit("x"), 1)], 1: [(None, 2)], 2: []}
    closing = {0: None, 1: lit("]"), 2: lit("!")}
    expr = counting_language(0, trans.__getitem__, closing.__getitem__, lambda s: s)
    assert {s for s in ["x]", "x!", "]", "!", "x", "x]!"] if matches(expr, s)} == {"x]", "x!"}


def test_dead_states_drop_out_and_an_empty_construction_is_nothing():
    # state 1 never closes and has no moves: the branch into it disappears
    trans = {0: [(lit("a"), 1), (lit("b"), 2)], 1: [], 2: []}
    closing = {0: None, 1: None, 2: EMPTY}
    expr = counting_language(0, trans.__getitem__, closing.__getitem__, lambda s: s)
    assert matches(expr, "b") and not matches(expr, "a") and not matches(expr, "")
    never = counting_language(0, lambda s: [(lit("a"), s + 1)] if s < 3 else [], lambda s: None, lambda s: s)
    assert never == NOTHING


def _nodes(expr: Expr) -> int:
    seen: set[int] = set()
    work = [expr]
    while work:
        e = work.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, (Seq, Alt)):
            work.extend(e.items)
        elif isinstance(e, Repeat):
            work.append(e.item)
    return len(seen)


def test_suffixes_are_shared():
    # a 12 x 12 grid of counts: C(24, 12) ~ 2.7 million paths, 169 states
    n = 12

    def trans(s):
        a, b = s
        return [(lit("a"), (a + 1, b))] * (a < n) + [(lit("b"), (a, b + 1))] * (b < n)

    expr = counting_language((0, 0), trans, lambda s: EMPTY if s == (n, n) else None, lambda s: s[0] + s[1])
    assert _nodes(expr) < 20 * (n + 1) ** 2
    assert matches(expr, "ab" * n) and matches(expr, "a" * n + "b" * n) and not matches(expr, "ab" * (n - 1) + "a")


def test_too_many_states_is_refused():
    with pytest.raises(GrammarTooLargeError, match="states"):
        counting_language(0, lambda s: [(lit("a"), s + 1)], lambda s: EMPTY, lambda s: s)
    assert MAX_DP_STATES >= 1000  # the array/object constructions real schemas need fit
