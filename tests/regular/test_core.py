"""The C regular-language core against a slow, obvious Python reference on random automata.

The reference simulates the NFA directly (sets of states, epsilon closures, one byte at a time)
and decides emptiness by a plain breadth-first search over those sets. The core's determinise,
trim, minimise (Hopcroft), product (∩, −), lazy emptiness / shortest member and Moore rounds must
agree with it: the same language on every string up to a length, the same shortest-member length,
and a minimal DFA as small as the number of distinct residual languages.
"""

from __future__ import annotations

import array
import itertools
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictgen import regular
from strictgen.deadline import compile_deadline
from strictgen.errors import CompileTimeoutError, GrammarTooLargeError

# a few bytes, edges over ranges of them, so byte classes split the byte line unevenly
BYTES = (0x61, 0x62, 0x63, 0xC3, 0xFF)
RANGES = [(0x61, 0x61), (0x62, 0x62), (0x61, 0x63), (0x63, 0xC3), (0x00, 0xFF), (0xC3, 0xFF), (0x62, 0x63)]
WORDS = [bytes(w) for n in range(5) for w in itertools.product(BYTES, repeat=n)]


class RefNFA:
    def __init__(self, n, edges, eps, calls=()):
        self.n, self.edges, self.eps, self.calls = n, edges, eps, list(calls)

    def __repr__(self):
        return f"RefNFA({self.n}, {self.edges}, {self.eps}, {self.calls})"

    def live(self, states) -> bool:
        """Does the set hold a state that reads, calls or is final (else it is a dead end)?"""
        return any(q == self.n - 1 or any(s == q for s, *_ in self.edges) or any(s == q for s, *_ in self.calls) for q in states)

    def closure(self, states):
        seen, work = set(states), list(states)
        while work:
            q = work.pop()
            for s, t in self.eps:
                if s == q and t not in seen:
                    seen.add(t)
                    work.append(t)
        return frozenset(seen)

    def step(self, states, b):
        return self.closure({t for s, lo, hi, t in self.edges if s in states and lo <= b <= hi})

    def run(self, states, data):
        for b in data:
            states = self.step(states, b)
        return states

    def core(self):
        nfa = regular.NFA()
        nfa.add_states(self.n)
        for s, lo, hi, t in self.edges:
            nfa.add_range(s, lo, hi, t)
        for s, t in self.eps:
            nfa.add_eps(s, t)
        for s, c, t in self.calls:
            nfa.add_call(s, c, t)
        return nfa


@st.composite
def nfas(draw, max_states=6, calls=False):
    n = draw(st.integers(2, max_states))
    state = st.integers(0, n - 1)
    edges = draw(st.lists(st.tuples(state, st.sampled_from(RANGES), state), max_size=3 * n))
    eps = draw(st.lists(st.tuples(state, state), max_size=n))
    call_edges = draw(st.lists(st.tuples(state, st.integers(0, 2), state), max_size=n)) if calls else []
    return RefNFA(n, [(s, lo, hi, t) for s, (lo, hi), t in edges], eps, call_edges)


def accepts(ref: RefNFA, data: bytes) -> bool:
    return (ref.n - 1) in ref.run(ref.closure({0}), data)


def dfa_accepts(dfa: regular.DFA, data: bytes) -> bool:
    s = dfa.step(0, data)
    return s >= 0 and dfa.is_accepting(s)


def ref_shortest(refs: list[tuple[RefNFA, bool]]) -> int | None:
    """Length of a shortest string in every positive language and no negative one (plain BFS)."""
    start = tuple(r.closure({0}) for r, _ in refs)
    seen, frontier, length = {start}, [start], 0
    while frontier:
        for sets in frontier:
            if all(((r.n - 1) in s) == positive for (r, positive), s in zip(refs, sets)):
                return length
        nxt = []
        for sets in frontier:
            for b in range(256):
                got = tuple(r.step(s, b) for (r, _), s in zip(refs, sets))
                if any(positive and not s for (_, positive), s in zip(refs, got)):
                    continue
                if got not in seen:
                    seen.add(got)
                    nxt.append(got)
        frontier, length = nxt, length + 1
    return None


def residual_count(dfa: regular.DFA) -> int:
    """States of the minimal DFA, by Python Moore refinement of the core's table (dead state apart)."""
    n = dfa.num_states
    table = [[dfa.step(s, bytes([b])) for b in range(256)] for s in range(n)]
    calls = [dfa.calls(s) for s in range(n)]
    cls = {s: (dfa.is_accepting(s), tuple(c for c, _ in calls[s])) for s in range(n)}
    cls[-1] = "dead"
    while True:
        sig = {s: (cls[s], tuple(cls[t] for t in table[s]), tuple((c, cls[r]) for c, r in calls[s])) for s in range(n)}
        ids = {v: i for i, v in enumerate(dict.fromkeys(sig.values()))}
        new = {s: ids[sig[s]] for s in range(n)}
        new[-1] = "dead"
        if len(set(new.values())) == len(set(cls.values())):
            return len(ids)
        cls = new


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(nfas())
def test_determinize_and_minimize_keep_the_language(ref):
    nfa = ref.core()
    dfa = regular.determinize(nfa, 0, ref.n - 1)
    small = regular.minimal(dfa)
    for w in WORDS:
        want = accepts(ref, w)
        assert dfa_accepts(dfa, w) == want, w
        assert dfa_accepts(small, w) == want, w
        assert regular.lazy(nfa, 0, ref.n - 1).accepts(w) == want
    assert small.num_states == residual_count(small) <= max(1, dfa.num_states)
    # minimal is idempotent and trimmed: every state can still finish
    assert regular.minimal(small).num_states == small.num_states


def ref_determinized(ref: RefNFA) -> tuple[list[int], bytes]:
    """The core's subset construction by the book: subsets of kernel states (those with byte edges,
    and the final state) numbered as first met, the start's then each subset's row byte by byte;
    (the n x 256 table, the accepting flags)."""
    kernel = {s for s, *_ in ref.edges} | {ref.n - 1}

    def subset(states) -> tuple[int, ...]:
        return tuple(sorted(q for q in ref.closure(states) if q in kernel))

    order = [subset({0})]
    if not order[0]:
        return [-1] * 256, b"\x00"  # the empty language: one dead state
    ids, table = {order[0]: 0}, []
    for sub in order:  # grows as subsets are met
        for b in range(256):
            got = subset({t for s, lo, hi, t in ref.edges if s in sub and lo <= b <= hi})
            if got and got not in ids:
                ids[got] = len(order)
                order.append(got)
            table.append(ids[got] if got else -1)
    return table, bytes(ref.n - 1 in sub for sub in order)


@FAST
@given(nfas(max_states=8))
def test_determinize_numbers_subsets_as_the_book_does(ref):
    """Not only the language: the very table, states numbered as the reference meets them (rows of
    several NFA states are made by segments of classes, single states' by their edges: each must ask
    for closures in class order, or compiled grammars and their masks would change)."""
    dfa = regular.determinize(ref.core(), 0, ref.n - 1)
    table, accepting = ref_determinized(ref)
    assert list(array.array("i", dfa.table256())) == table
    assert dfa.accepting() == accepting


@FAST
@given(nfas(), nfas(), st.booleans())
def test_product_is_intersection_or_difference(a, b, difference):
    da = regular.minimal(regular.determinize(a.core(), 0, a.n - 1))
    db = regular.minimal(regular.determinize(b.core(), 0, b.n - 1))
    prod = regular.product(da, db, difference)
    small = regular.minimal(prod)
    for w in WORDS:
        want = accepts(a, w) and (accepts(b, w) != difference)
        assert dfa_accepts(prod, w) == want
        assert dfa_accepts(small, w) == want
    assert small.num_states == residual_count(small)


@FAST
@given(st.lists(st.tuples(nfas(max_states=4), st.booleans()), min_size=1, max_size=3))
def test_lazy_emptiness_finds_a_shortest_member(operands):
    if not any(positive for _, positive in operands):
        operands[0] = (operands[0][0], True)
    langs = [(regular.lazy(r.core(), 0, r.n - 1), positive) for r, positive in operands]
    got = regular.find_member(langs)
    want = ref_shortest(operands)
    assert (got is None) == (want is None)
    if got is not None:
        assert len(got) == want
        assert all(accepts(r, got) == positive for r, positive in operands)
    assert regular.is_empty(langs) == (want is None)


@FAST
@given(nfas())
def test_dfa_shortest_member(ref):
    dfa = regular.determinize(ref.core(), 0, ref.n - 1)
    got = dfa.shortest()
    want = ref_shortest([(ref, True)])
    assert (got is None) == (want is None)
    if got is not None:
        assert len(got) == want and accepts(ref, got)
    assert dfa.can_finish() == (want is not None)


@FAST
@given(nfas(max_states=5, calls=True))
def test_call_edges_follow_the_subsets(ref):
    """After any word, the DFA state calls exactly the callees the NFA subset calls, returning to a
    state with the language of the closure of the call targets; minimisation keeps that."""
    dfa = regular.determinize(ref.core(), 0, ref.n - 1)
    small = regular.minimal(dfa)
    final = ref.n - 1
    for d in (dfa, small):
        for w in WORDS[:31]:
            subset = ref.run(ref.closure({0}), w)
            s = d.step(0, w)
            if s < 0:
                continue  # trimmed away (small) or a dead subset (only when the subset is empty)
            want = {}
            for q, c, t in ref.calls:
                if q in subset:
                    want.setdefault(c, set()).add(t)
            want = {c: ts for c, ts in want.items() if ref.live(ref.closure(ts))}  # dead returns may go
            got = dict(d.calls(s))
            if d is dfa:
                assert set(got) == set(want)
            for c, ret in got.items():
                back = ref.closure(want[c])
                for u in WORDS[:31]:
                    r = d.step(ret, u)
                    assert (r >= 0 and d.is_accepting(r)) == (final in ref.run(back, u))


def test_moore_rounds_tell_states_apart_by_horizon():
    # a^0..a^5 then end: a counter of 7 states; after r rounds states at distance > r agree
    n = 7
    ref = RefNFA(n, [(i, 0x61, 0x61, i + 1) for i in range(n - 1)], [])
    dfa = regular.minimal(regular.determinize(ref.core(), 0, n - 1))
    assert dfa.num_states == n
    raw, stable = dfa.refine(2)
    classes = list(memoryview(raw).cast("i"))
    assert stable == -1
    assert len(set(classes[:4])) == 1 and len(set(classes)) == 4  # 3+ left, 2 left, 1 left, the end
    raw, stable = dfa.refine(100)
    assert len(set(memoryview(raw).cast("i"))) == n and stable == n - 1  # round n - 1 changes nothing


def moore_classes(dfa: regular.DFA, rounds: int) -> tuple[list[int], int]:
    """Python Moore rounds over the core's table: (a class per state, the round that changed
    nothing or -1), the reference for the core's incremental refine."""
    n = dfa.num_states
    table = [[dfa.step(s, bytes([b])) for b in range(256)] for s in range(n)]
    calls = [dfa.calls(s) for s in range(n)]
    ids0 = {}
    cls = [ids0.setdefault((dfa.is_accepting(s), tuple(c for c, _ in calls[s])), len(ids0)) for s in range(n)]
    for r in range(1, rounds + 1):
        ids = {}
        sig = [(cls[s], tuple(cls[t] if t >= 0 else -1 for t in table[s]), tuple((c, cls[t]) for c, t in calls[s])) for s in range(n)]
        new = [ids.setdefault(x, len(ids)) for x in sig]
        if len(ids) == len(set(cls)):
            return new, r
        cls = new
    return cls, -1


def same_partition(a, b) -> bool:
    return len(set(a)) == len(set(b)) == len(set(zip(a, b)))


@FAST
@given(nfas(max_states=6, calls=True), st.integers(0, 8), st.booleans())
def test_incremental_refine_is_moore_round_by_round(ref, rounds, minimise):
    """The core's refine (which recomputes only states next to a split) ends every round with the
    same partition as plain Moore rounds, and reports the same stable round."""
    dfa = regular.determinize(ref.core(), 0, ref.n - 1)
    if minimise:
        dfa = regular.minimal(dfa)
    raw, stable = dfa.refine(rounds)
    want, want_stable = moore_classes(dfa, rounds)
    assert same_partition(list(memoryview(raw).cast("i")), want)
    assert stable == want_stable


def test_incremental_refine_on_a_long_counter_with_branches():
    """A counter of 300 with a second counter beside it: the cheap rounds still split exactly."""
    rows = [[-1] * 256 for _ in range(602)]
    for i in range(300):
        rows[i][ord("a")] = i + 1
        rows[301 + i][ord("a")] = 302 + i
        rows[i][ord("b")] = 301 + (i * 7) % 300
    dfa = regular.from_table(rows, [i in (300, 601, 450) for i in range(602)])
    for rounds in (1, 5, 64, 299, 700):
        raw, stable = dfa.refine(rounds)
        want, want_stable = moore_classes(dfa, rounds)
        assert same_partition(list(memoryview(raw).cast("i")), want) and stable == want_stable, rounds


def test_from_table_and_embed_round_trip():
    rows = [[-1] * 256 for _ in range(3)]
    rows[0][ord("x")] = 1
    rows[1][ord("y")] = 2
    rows[2][ord("x")] = 1
    dfa = regular.from_table(rows, [False, False, True])  # (xy)+
    assert [dfa_accepts(dfa, w) for w in (b"xy", b"xyxy", b"x", b"")] == [True, True, False, False]
    nfa = regular.NFA()
    s, t = nfa.add_state(), nfa.add_state()
    nfa.embed(dfa, s, t)
    again = regular.determinize(nfa, s, t)
    assert [dfa_accepts(again, w) for w in (b"xy", b"xyxy", b"x", b"")] == [True, True, False, False]
    assert dfa.shortest() == b"xy"


def _blowup(k: int) -> tuple[regular.NFA, int, int]:
    """(a|b)* a (a|b){k}: its DFA needs 2^(k+1) states."""
    nfa = regular.NFA()
    first = nfa.add_states(k + 2)
    nfa.add_range(first, 0x61, 0x62, first)
    nfa.add_range(first, 0x61, 0x61, first + 1)
    for i in range(1, k + 1):
        nfa.add_range(first + i, 0x61, 0x62, first + i + 1)
    return nfa, first, first + k + 1


def test_state_budget_and_deadline_are_clear_errors():
    nfa, s, f = _blowup(12)
    assert regular.determinize(nfa, s, f).num_states == 2**13
    with pytest.raises(GrammarTooLargeError, match="too big here"):
        regular.determinize(nfa, s, f, 1000, "too big here")
    with compile_deadline(0.001):
        time.sleep(0.01)
        with pytest.raises(CompileTimeoutError):
            regular.determinize(nfa, s, f)
    other, s2, f2 = _blowup(11)
    langs = [(regular.lazy(nfa, s, f), True), (regular.lazy(other, s2, f2), False)]
    assert regular.find_member(langs) is not None
    with pytest.raises(GrammarTooLargeError):
        regular.find_member([(regular.lazy(nfa, s, f), True), (regular.lazy(nfa, s, f), False)], 100)


def test_empty_languages():
    nfa = regular.NFA()
    s, f = nfa.add_state(), nfa.add_state()
    dfa = regular.determinize(nfa, s, f)
    assert dfa.num_states == 1 and not dfa.can_finish() and dfa.shortest() is None
    assert regular.find_member([(regular.lazy(nfa, s, f), True)]) is None
    assert regular.find_member([(regular.lazy(nfa, s, f), False)]) == b""
    assert regular.minimal(dfa).num_states == 1


@FAST
@given(nfas(max_states=6, calls=True), st.lists(st.binary(max_size=6), max_size=6))
def test_a_lazy_determinised_twice_or_after_use_gives_the_same_dfa(ref, words):
    """Determinising hands the rows made in subset order to the DFA as its table (no copy); the
    Lazy makes them again when asked after (the same DFA), and a Lazy whose rows were made out of
    order (asked before: its subsets are numbered as met) copies them (the same minimal DFA)."""
    def table(d):
        return d.num_states, d.compact(), d.accepting(), d.call_arrays()

    fresh = regular.lazy(ref.core(), 0, ref.n - 1)
    first = fresh.determinize()
    assert [fresh.accepts(w) for w in words] == [dfa_accepts(first, w) for w in words] == [accepts(ref, w) for w in words]
    assert table(fresh.determinize()) == table(first)
    used = regular.lazy(ref.core(), 0, ref.n - 1)
    for w in reversed(words):  # rows made in the order these words need them (subsets numbered so)
        used.accepts(w)
    other = used.determinize()
    assert other.num_states == first.num_states
    assert table(regular.minimal(other)) == table(regular.minimal(first))
