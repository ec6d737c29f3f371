"""`DFA.trim_minimize_rounds` (what `regular.minimal_with_splits` asks): Moore's minimisation of
the trimmed DFA, which skips trimming's own scans where trimming would keep the DFA as it is (the
partition's in-edges and row runs answer that). It must give exactly what trimming and then
minimising give, history of splits included, on both sides of that test."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from strictgen import regular

from .test_core import FAST, nfas
from .test_minimize_rounds import same_dfa

PRODUCTIVE = [None, b"\x01\x01\x01", b"\x01\x00\x01", b"\x00\x00\x00", b"\x01"]


@FAST
@given(nfas(max_states=6, calls=True), st.sampled_from(PRODUCTIVE))
def test_fused_is_trim_then_moore(ref, productive):
    dfa = regular.determinize(ref.core(), 0, ref.n - 1)
    want, want_born, want_parent, want_last = dfa.trim(productive).minimize_rounds()
    got, born, parent, last = dfa.trim_minimize_rounds(productive)
    assert same_dfa(got, want)
    assert (born, parent, last) == (want_born, want_parent, want_last)


def test_both_sides_of_the_already_trim_test():
    """A DFA trimming keeps (then the partition is used as it is) and ones it changes: a dead
    state, a call of an unproductive rule, states not numbered breadth first."""
    rows = [[-1] * 256 for _ in range(4)]
    rows[0][ord("a")], rows[0][ord("b")], rows[1][ord("c")], rows[2][ord("c")] = 1, 2, 3, 3
    kept = regular.from_table(rows, [False, False, False, True])  # a c | b c
    assert kept.trim() is kept
    dead = [row[:] for row in rows] + [[-1] * 256]
    dead[0][ord("d")] = 4  # d leads nowhere
    not_bfs = [rows[0][:], rows[2][:], rows[1][:], rows[3][:]]
    not_bfs[0][ord("a")], not_bfs[0][ord("b")] = 2, 1  # a is read first but goes to state 2
    nfa = regular.NFA()
    s, m, t = nfa.add_state(), nfa.add_state(), nfa.add_state()
    nfa.add_literal(s, b"x", m)
    nfa.add_call(m, 1, t)
    nfa.add_literal(s, b"y", t)
    calls = regular.determinize(nfa, s, t)
    cases = [(kept, None), (regular.from_table(dead, [False, False, False, True, False]), None),
             (regular.from_table(not_bfs, [False, False, False, True]), None), (calls, b"\x01\x01"), (calls, b"\x01\x00")]
    for dfa, productive in cases:
        trimmed = dfa.trim(productive)
        want, want_born, want_parent, want_last = trimmed.minimize_rounds()
        got, born, parent, last = dfa.trim_minimize_rounds(productive)
        assert same_dfa(got, want) and (born, parent, last) == (want_born, want_parent, want_last)
    assert [dfa.trim(p) is dfa for dfa, p in cases] == [True, False, False, True, False]


@st.composite
def tables_with_dead_states(draw):
    """A random partial DFA over 3 letters with states that cannot finish (never accepting, and
    edges among themselves only: what a product leaves) and states the start never reaches."""
    live, dead = draw(st.integers(1, 12)), draw(st.integers(0, 6))
    n = live + dead
    rows = [[-1] * 256 for _ in range(n)]
    for s in range(n):
        for letter in b"abc":
            if draw(st.integers(0, 2)):
                rows[s][letter] = draw(st.integers(0, n - 1)) if s < live else draw(st.integers(live, n - 1)) if dead else -1
    accepting = [s < live and draw(st.booleans()) for s in range(n)]
    return regular.from_table(rows, accepting)


@FAST
@given(tables_with_dead_states())
def test_minimal_without_the_trimmed_copy_is_trim_then_minimize(dfa):
    """`regular.minimal` (DFA.trim_minimize: dead states in a block that is never a splitter,
    no trimmed copy) gives exactly what trimming and then Hopcroft give, the empty language's one
    dead state included."""
    assert same_dfa(regular.minimal(dfa), regular.minimize(dfa.trim()))


@FAST
@given(nfas(max_states=6, calls=True), st.sampled_from(PRODUCTIVE))
def test_minimal_with_calls_is_trim_then_minimize(ref, productive):
    dfa = regular.determinize(ref.core(), 0, ref.n - 1)
    assert same_dfa(regular.minimal(dfa, productive), regular.minimize(dfa.trim(productive)))


def test_a_dead_branch_and_an_unreachable_state_leave_no_trace():
    """a c | b c | d (dead), and a state nothing enters: the minimal DFA of a c | b c, two states
    fewer than the input's, whose dead target would otherwise stay apart from missing edges."""
    rows = [[-1] * 256 for _ in range(6)]
    rows[0][ord("a")], rows[0][ord("b")], rows[1][ord("c")], rows[2][ord("c")] = 1, 2, 3, 3
    rows[0][ord("d")], rows[4][ord("d")] = 4, 4  # d leads to a state that loops and never accepts
    rows[5][ord("c")] = 3  # state 5: nothing enters it
    dfa = regular.from_table(rows, [False, False, False, True, False, False])
    got = regular.minimal(dfa)
    assert same_dfa(got, regular.minimize(dfa.trim()))
    assert got.num_states == 3 and got.step(0, b"d") == -1 and got.step(0, b"ac") == got.step(0, b"bc") == 2
