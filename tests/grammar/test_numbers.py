"""Exact numeric languages (strictgen.grammar.numbers, strictgen.grammar.multiple_of) against exact arithmetic.

Oracle: a text is in the language iff it has the expected syntax (a regex) and its value, read
with `decimal.Decimal` and compared as a `fractions.Fraction`, satisfies the bounds / multipleOf.
Membership is decided by the real engine (compile_automaton + PushdownMachine). Candidates are
spellings of values in and around the bounds (trailing zeros, negative zero, leading zeros,
exponents) plus random texts; random walks through the automaton check the other direction.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictgen.compile.automaton import compile_automaton
from strictgen.compile.machine import DEAD, PushdownMachine
from strictgen.errors import GrammarTooLargeError, SchemaError, StrictgenError
from strictgen.grammar.ir import NOTHING, Expr, Grammar, RuleRef, Seq
from strictgen.grammar.multiple_of import (
    MAX_ENUMERATED,
    integer_multiples,
    multiple_of_grammar,
    multiple_of_integers,
    multiple_of_numbers,
    number_multiples,
    residue_filter,
    unbounded_product,
)
from strictgen.grammar.numbers import integer_range, number_range

CANONICAL_INT = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")
PLAIN = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?\Z")
JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")

SETTINGS = settings(max_examples=int(os.environ.get("STRICTGEN_NUMBER_EXAMPLES", "120")), deadline=None, suppress_health_check=list(HealthCheck))


# ---- engine helpers ----------------------------------------------------------------------------


class Lang:
    """A compiled number language: membership and random members."""

    def __init__(self, expr: Expr, rules: dict[str, Expr] | None = None):
        self.machine = PushdownMachine(compile_automaton(Grammar({"root": expr, **(rules or {})})))

    def __contains__(self, text: str) -> bool:
        m = self.machine
        state = m.step_bytes(m.start, text.encode())
        return state != DEAD and m.accepting[state]

    def sample(self, rng: random.Random, soft_len: int = 25) -> str:
        m = self.machine
        state, out = m.start, bytearray()
        while len(out) < soft_len:
            row = m.compute_row(state)
            live = np.flatnonzero(row)
            if m.accepting[state] and (not len(live) or rng.random() < 0.15):
                return out.decode()
            assert len(live), "a live state with no way forward"
            b = int(rng.choice(list(live)))
            out.append(b)
            state = int(row[b])
        return (out + self._shortest_completion(state)).decode()

    def _shortest_completion(self, state: int) -> bytes:
        """Breadth-first: the shortest bytes from `state` to acceptance (the machine is trimmed, so one exists)."""
        m = self.machine
        parent = {state: None}
        queue = [state]
        for s in queue:
            if m.accepting[s]:
                path = bytearray()
                while parent[s] is not None:
                    s, b = parent[s]
                    path.append(b)
                return bytes(reversed(path))
            row = m.compute_row(s)
            for b in np.flatnonzero(row):
                t = int(row[b])
                if t not in parent:
                    parent[t] = (s, int(b))
                    queue.append(t)
        raise AssertionError("no accepting state reachable")


def value(text: str) -> Fraction:
    return Fraction(Decimal(text))


def exact(x) -> Fraction:
    """A bound the way the library reads it: floats by their shortest text."""
    return Fraction(Decimal(repr(x))) if isinstance(x, float) else Fraction(x)


def within(v: Fraction, lo, hi, ls: bool, hs: bool) -> bool:
    if lo is not None and (v < exact(lo) or (ls and v == exact(lo))):
        return False
    return not (hi is not None and (v > exact(hi) or hs and v == exact(hi)))


def plain(v: Fraction) -> str:
    """The canonical plain decimal text of a finite decimal."""
    sign = "-" if v < 0 else ""
    v = abs(v)
    ip = v.numerator // v.denominator
    f = v - ip
    if not f:
        return f"{sign}{ip}"
    k = 0
    while (f * 10**k).denominator != 1:
        k += 1
    return f"{sign}{ip}.{str(int(f * 10**k)).rjust(k, '0')}"


def spellings(v: Fraction) -> list[str]:
    """Texts with the value v (valid and not) plus a few syntactic near misses."""
    s = plain(v)
    out = [s]
    out += [s + "0", s + "000"] if "." in s else [s + ".0", s + ".00", s + "."]
    if v == 0:
        out += ["-0", "-0.0", "-0.000", "0.00", "-00"]
    out += [s + "e0", s + "E+0", s + "e-1"]
    out.append("-0" + s[1:] if s.startswith("-") else "0" + s)  # leading zero
    out.append(s.lstrip("-"))
    out.append(s[1:] if s.startswith("-") else "-" + s)
    return out


def around(bound) -> list[Fraction]:
    b = exact(bound)
    deltas = [0, 1, Fraction(1, 2), Fraction(1, 10), Fraction(1, 1000), Fraction(1, 10**7), 10, 1000]
    vals = [b + d for d in deltas] + [b - d for d in deltas] + [-b, b * 10, b / 10]
    vals += [Fraction(math.floor(b)), Fraction(math.ceil(b))]
    return [v for v in vals if (v * 10**40).denominator == 1]  # finite decimals only


def candidates(bounds, extra_values=(), extra_texts=()) -> list[str]:
    values = [Fraction(0), Fraction(1), Fraction(-1), Fraction(1, 2), Fraction(-1, 2), Fraction(10**20)]
    for b in bounds:
        if b is not None:
            values += around(b)
    values += list(extra_values)
    texts = [t for v in values for t in spellings(v)]
    texts += list(extra_texts)
    texts += ["", "-", ".", "0.", ".5", "-.5", "+1", "1e", "1e+", "00", "--1", "1.2.3", "0x10", " 1"]
    return texts


def check(lang: Lang | None, oracle, texts, rng: random.Random, samples: int = 15) -> None:
    """The language equals the oracle on `texts`; random members satisfy the oracle and parse as JSON."""
    for text in texts:
        expected = oracle(text)
        got = lang is not None and text in lang
        assert got == expected, (text, expected)
        if got:
            json.loads(text)
    if lang is not None:
        for _ in range(samples):
            text = lang.sample(rng)
            assert oracle(text), text
            assert isinstance(json.loads(text), (int, float))


# ---- strategies ------------------------------------------------------------------------------------

INT_BOUND = st.one_of(
    st.integers(-1000, 1000),
    st.integers(-(10**30), 10**30),
    st.sampled_from([0, 1, -1, 9, 10, -10, 99, 100, 10**18, -(10**18), 10**30 - 1, -(10**30) + 1]),
)
DECIMAL_BOUND = st.one_of(
    st.decimals(min_value=-(10**6), max_value=10**6, places=0),
    st.decimals(min_value=-1000, max_value=1000, places=2),
    st.decimals(min_value=-10, max_value=10, places=5),
    st.sampled_from([Decimal("0.5"), Decimal("-3.25"), Decimal("1e-3"), Decimal("-0.001"), Decimal("0.0"), Decimal("1E+2")]),
)
FLOAT_BOUND = st.floats(min_value=-1e7, max_value=1e7, allow_nan=False, allow_infinity=False)
BOUND = st.one_of(st.none(), INT_BOUND, DECIMAL_BOUND, FLOAT_BOUND)
NUMBER_TEXT = st.one_of(
    st.text(alphabet="-.0123456789eE+", max_size=9),
    st.decimals(min_value=-(10**7), max_value=10**7, allow_nan=False, allow_infinity=False).map(str),
    st.integers(-(10**31), 10**31).map(str),
)


# ---- integer ranges -----------------------------------------------------------------------------------


def integer_oracle(lo, hi, ls=False, hs=False):
    def oracle(text: str) -> bool:
        return bool(CANONICAL_INT.match(text)) and text != "-0" and within(value(text), lo, hi, ls, hs)

    return oracle


def has_integer(lo, hi, ls, hs) -> bool:
    a = None if lo is None else (math.floor(exact(lo)) + 1 if ls else math.ceil(exact(lo)))
    b = None if hi is None else (math.ceil(exact(hi)) - 1 if hs else math.floor(exact(hi)))
    return a is None or b is None or a <= b


@SETTINGS
@given(lo=BOUND, hi=BOUND, ls=st.booleans(), hs=st.booleans(), texts=st.lists(NUMBER_TEXT, max_size=15), seed=st.integers(0, 2**32))
def test_integer_range_is_exact(lo, hi, ls, hs, texts, seed):
    expr = integer_range(lo, hi, ls, hs)
    oracle = integer_oracle(lo, hi, ls, hs)
    if expr == NOTHING:
        assert not has_integer(lo, hi, ls, hs)
        lang = None
    else:
        lang = Lang(expr)
    check(lang, oracle, candidates([lo, hi], extra_texts=texts), random.Random(seed))


@pytest.mark.parametrize(
    "lo, hi, inside, outside",
    [
        (1.5, None, ["2", "3", "100000000000000000000"], ["1", "0", "-2", "1.5", "2.0", "-0"]),
        (None, -1, ["-1", "-1000"], ["0", "-0", "1"]),
        (0, 0, ["0"], ["-0", "1", "-1", "0.0", "00"]),
        (-5, 5, ["-5", "0", "5"], ["-6", "6", "-0", "05", "5e0"]),
        (10**30, None, [str(10**30), str(10**31)], [str(10**30 - 1), "-" + str(10**30)]),
        (-(10**30), 10**30, [str(-(10**30)), "0", str(10**30)], [str(-(10**30) - 1), str(10**30 + 1)]),
        (Decimal("-2.5"), Decimal("2.5"), ["-2", "2"], ["-3", "3"]),
        (None, None, ["0", "-1", "123"], ["-0", "1.0", "1e2"]),
    ],
)
def test_integer_range_examples(lo, hi, inside, outside):
    lang = Lang(integer_range(lo, hi))
    assert all(t in lang for t in inside) and not any(t in lang for t in outside)


def test_integer_exclusive_and_empty():
    lang = Lang(integer_range(0, 10, exclusive_minimum=True, exclusive_maximum=True))
    assert [str(i) for i in range(-2, 13) if str(i) in lang] == [str(i) for i in range(1, 10)]
    lang = Lang(integer_range(-0.5, 0.5, True, True))
    assert "0" in lang and "-0" not in lang and "1" not in lang
    assert integer_range(5, 4) == NOTHING
    assert integer_range(1.2, 1.8) == NOTHING
    assert integer_range(3, 3, exclusive_minimum=True) == NOTHING
    assert integer_range(math.inf) == NOTHING and integer_range(None, -math.inf) == NOTHING
    assert integer_range(-math.inf, math.inf) == integer_range()


def test_integer_range_is_small_for_big_bounds():
    lang = Lang(integer_range(-(10**18), 10**18))
    assert str(10**18) in lang and str(10**18 + 1) not in lang and str(-(10**18)) in lang
    lang = Lang(integer_range(-(2**63), 2**63 - 1))
    assert str(2**63 - 1) in lang and str(2**63) not in lang and str(-(2**63)) in lang and str(-(2**63) - 1) not in lang
    n = lang.machine.automaton.rules[0].num_states
    assert n < 2000, n


# ---- number ranges -------------------------------------------------------------------------------------


def number_oracle(lo, hi, ls=False, hs=False, digits=None):
    def oracle(text: str) -> bool:
        if lo is None and hi is None and digits is None:
            return bool(JSON_NUMBER.match(text))
        if not PLAIN.match(text):
            return False
        v = value(text)
        return within(v, lo, hi, ls, hs) and (digits is None or (v * 10**digits).denominator == 1)

    return oracle


def has_number(lo, hi, ls, hs) -> bool:
    return lo is None or hi is None or exact(lo) < exact(hi) or (exact(lo) == exact(hi) and not (ls or hs))


@SETTINGS
@given(
    lo=BOUND,
    hi=BOUND,
    ls=st.booleans(),
    hs=st.booleans(),
    digits=st.one_of(st.none(), st.integers(0, 4)),
    texts=st.lists(NUMBER_TEXT, max_size=15),
    seed=st.integers(0, 2**32),
)
def test_number_range_is_exact(lo, hi, ls, hs, digits, texts, seed):
    expr = number_range(lo, hi, ls, hs, max_fraction_digits=digits)
    oracle = number_oracle(lo, hi, ls, hs, digits)
    if expr == NOTHING:
        assert not has_number(lo, hi, ls, hs) or digits is not None
        lang = None
    else:
        lang = Lang(expr)
    check(lang, oracle, candidates([lo, hi], extra_texts=texts), random.Random(seed))


def test_number_range_examples():
    positive = Lang(number_range(0, exclusive_minimum=True))
    assert not any(t in positive for t in ["0", "0.0", "0.000", "-0.0", "-0", "-0.0001"])
    assert all(t in positive for t in ["0.0001", "1", "1.0", "123.456"])
    assert "1e2" not in positive  # bounded: plain decimals only
    half = Lang(number_range(Decimal("0.5"), 1.5))
    assert all(t in half for t in ["0.5", "0.50", "1", "1.5", "1.500", "0.9999"])
    assert not any(t in half for t in ["0.4999", "1.5001", "1.51", "0.49", "-0.5", "5e-1"])
    zero = Lang(number_range(0, 0))
    assert all(t in zero for t in ["0", "0.0", "-0", "-0.000"]) and "0.01" not in zero
    assert number_range(0, 0, exclusive_maximum=True) == NOTHING
    tiny = Lang(number_range(1e-3, None, exclusive_minimum=True))
    assert "0.0011" in tiny and "0.001" not in tiny and "0.00100" not in tiny and "0.0010001" in tiny
    cents = Lang(number_range(-3.25, 10, max_fraction_digits=2))
    assert all(t in cents for t in ["-3.25", "-3.250", "1.23", "1.230", "10.00", "0"])
    assert not any(t in cents for t in ["-3.26", "1.234", "1.2301", "10.01"])
    assert Lang(number_range(max_fraction_digits=0)).__contains__("7.000")
    unbounded = Lang(number_range())
    assert all(t in unbounded for t in ["1e400", "-0.5E-7", "-0", "12.5e+3"]) and "01" not in unbounded


def test_number_range_with_extreme_float_bounds_compiles():
    for lo, hi in [(-1.7976931348623157e308, 1.7976931348623157e308), (5e-324, 1.0), (-2.2250738585072014e-308, 0)]:
        lang = Lang(number_range(lo, hi))
        oracle = number_oracle(lo, hi)
        for v in around(lo) + around(hi):
            for text in spellings(v):
                assert (text in lang) == oracle(text), text


def test_bad_bounds_are_schema_errors():
    for bad in [True, "1", float("nan"), Decimal("NaN"), [1]]:
        with pytest.raises(SchemaError):
            integer_range(bad)
        with pytest.raises(SchemaError):
            number_range(None, bad)
    with pytest.raises(SchemaError):
        number_range(Fraction(1, 3))  # no finite decimal expansion
    with pytest.raises(TypeError):
        number_range(0, 10, exclusive_minimum=5)  # a draft-6 numeric bound is not a flag
    with pytest.raises(ValueError):
        number_range(0, 1, max_fraction_digits=-1)
    assert Lang(integer_range(Fraction(1, 3), Fraction(10, 3))).__contains__("3")
    with pytest.raises(GrammarTooLargeError):
        integer_range(10**500)
    assert issubclass(GrammarTooLargeError, StrictgenError)


# ---- multipleOf -------------------------------------------------------------------------------------------


def int_multiple_oracle(k, lo, hi, ls, hs):
    base = integer_oracle(lo, hi, ls, hs)
    step = exact(k)

    def oracle(text: str) -> bool:
        return base(text) and (value(text) / step).denominator == 1

    return oracle


K = st.one_of(st.integers(1, 40), st.sampled_from([7, 10, 12, 25, 60, 100, 360, 1000, 97]))
SMALL_INT_BOUND = st.one_of(st.none(), st.integers(-5000, 5000), st.sampled_from([0, 1, -1, 10**12, -(10**12)]))


@SETTINGS
@given(
    k=K,
    lo=SMALL_INT_BOUND,
    hi=SMALL_INT_BOUND,
    ls=st.booleans(),
    hs=st.booleans(),
    texts=st.lists(NUMBER_TEXT, max_size=10),
    seed=st.integers(0, 2**32),
)
def test_integer_multiples_are_exact(k, lo, hi, ls, hs, texts, seed):
    expr, rules = multiple_of_integers(k, lo, hi, ls, hs, prefix="mul")
    assert all(name.startswith("mul_") for name in rules)
    oracle = int_multiple_oracle(k, lo, hi, ls, hs)
    near = [Fraction(j * k) for b in (lo, hi, 0) if b is not None for j in range(b // k - 2, b // k + 3)]
    lang = None if expr == NOTHING else Lang(expr, rules)
    check(lang, oracle, candidates([lo, hi], near, texts), random.Random(seed))


def test_multiple_of_grammar_remainder_automaton():
    expr, rules = multiple_of_grammar(7, "seven")
    assert rules and all(name.startswith("seven_") for name in rules)
    lang = Lang(expr, rules)
    for i in range(-300, 301):
        assert (str(i) in lang) == (i % 7 == 0), i
    big = 7 * 123456789012345678901234567
    assert str(big) in lang and str(-big) in lang and str(big + 1) not in lang
    assert "-0" not in lang and "07" not in lang and "7.0" not in lang
    one, none = multiple_of_grammar(1, "one")
    assert none == {} and "-12" in Lang(one)
    expr, rules = multiple_of_grammar(1000, "k")
    assert len(rules) < 10  # the automaton is minimised
    lang = Lang(expr, rules)
    assert "12000" in lang and "-1000" in lang and "0" in lang and "12100" not in lang
    with pytest.raises(GrammarTooLargeError):
        multiple_of_grammar(10_001, "x")
    for bad in [0, -3, 2.5, True]:
        with pytest.raises(SchemaError):
            multiple_of_grammar(bad, "x")


def test_integer_multiples_with_bounds():
    # small bounded ranges are listed, without rules
    expr, rules = multiple_of_integers(5, 0, 100)
    assert rules == {}
    lang = Lang(expr)
    assert [i for i in range(-10, 120) if str(i) in lang] == list(range(0, 101, 5))
    # one-sided: small automaton, acyclic states inlined
    expr, rules = multiple_of_integers(5, minimum=10, prefix="m")
    lang = Lang(expr, rules)
    assert [i for i in range(-20, 60) if str(i) in lang] == list(range(10, 60, 5))
    assert str(10**40) in lang and str(-(10**40)) not in lang
    # big two-sided range: shared acyclic states become rules (no exponential inlining)
    expr, rules = multiple_of_integers(7, -(10**18), 10**18, prefix="w")
    lang = Lang(expr, rules)
    top = 10**18 // 7 * 7
    assert str(top) in lang and str(top + 7) not in lang and str(-top) in lang and str(top - 1) not in lang
    # decimal multipleOf on integers
    expr, rules = multiple_of_integers(2.5, 0, 20)
    assert [i for i in range(25) if str(i) in Lang(expr, rules)] == [0, 5, 10, 15, 20]
    expr, rules = multiple_of_integers(0.5, 1, 3)
    assert rules == {} and "2" in Lang(expr)
    assert multiple_of_integers(3, 4, 5) == (NOTHING, {})
    with pytest.raises(GrammarTooLargeError):
        multiple_of_integers(20_011, minimum=0)  # unbounded side, modulus too large


def _has_forced_rule(rules) -> bool:
    def walk(e):
        if isinstance(e, Seq) and e.items and e.items[0] == NOTHING and isinstance(e.items[-1], RuleRef):
            return True
        return any(walk(i) for i in getattr(e, "items", ()))

    return any(walk(e) for e in rules.values())


def test_shared_states_stay_rules():
    expr, rules = multiple_of_integers(7, 0, 10**18, prefix="w")
    assert _has_forced_rule(rules)
    lang = Lang(expr, rules)
    assert [i for i in range(200) if str(i) in lang] == list(range(0, 200, 7))


NUMBER_STEPS = st.sampled_from(["0.5", "0.25", "0.3", "2.5", "0.01", "0.1", "7", "0.125", "1.5", "0.05", "3"])
SMALL_DEC_BOUND = st.one_of(
    st.none(),
    st.decimals(min_value=-2000, max_value=2000, places=2),
    st.integers(-100000, 100000),
    st.sampled_from([Decimal(0), Decimal("0.3"), Decimal("-0.75")]),
)


@SETTINGS
@given(
    step=NUMBER_STEPS,
    lo=SMALL_DEC_BOUND,
    hi=SMALL_DEC_BOUND,
    ls=st.booleans(),
    hs=st.booleans(),
    texts=st.lists(NUMBER_TEXT, max_size=10),
    seed=st.integers(0, 2**32),
)
def test_number_multiples_are_exact(step, lo, hi, ls, hs, texts, seed):
    s = Decimal(step)
    expr, rules = multiple_of_numbers(s, lo, hi, ls, hs, prefix="n")

    def oracle(text: str) -> bool:
        if not PLAIN.match(text):
            return False
        v = value(text)
        return within(v, lo, hi, ls, hs) and (v / Fraction(s)).denominator == 1

    sf = Fraction(s)
    near = [j * sf for b in (lo, hi, 0) if b is not None for j in range(math.floor(exact(b) / sf) - 2, math.floor(exact(b) / sf) + 3)]
    lang = None if expr == NOTHING else Lang(expr, rules)
    check(lang, oracle, candidates([lo, hi], near, texts), random.Random(seed))


def test_number_multiples_examples():
    expr, rules = multiple_of_numbers(0.01, 0, 1)
    assert rules == {}  # a power of ten: just a fraction-digit limit
    lang = Lang(expr)
    assert "0.25" in lang and "0.230" in lang and "0.255" not in lang and "1.01" not in lang
    expr, rules = multiple_of_numbers(0.3)
    lang = Lang(expr, rules)
    assert all(t in lang for t in ["0", "-0.0", "0.3", "0.60", "-1.2", "3", "3000.3"])
    assert not any(t in lang for t in ["0.1", "0.33", "1", "0.30000001", "3e-1"])
    expr, rules = multiple_of_numbers(Decimal("0.5"), -1, 1)
    assert rules == {} and "-0.5" in Lang(expr) and "0.25" not in Lang(expr)
    assert len(list(range(MAX_ENUMERATED))) == MAX_ENUMERATED
    for bad in [0, -0.5, "x", float("nan")]:
        with pytest.raises(SchemaError):
            multiple_of_numbers(bad)


# ---- residue_filter: multipleOf and its complement on any regular range ------------------------------

DROP_STEPS = st.sampled_from(["2", "3", "7", "10", "12", "0.5", "0.3", "2.5", "0.25"])


@SETTINGS
@given(
    integers=st.booleans(),
    keep=st.one_of(st.none(), st.sampled_from(["2", "5", "0.5", "1.5"])),
    drop=st.lists(DROP_STEPS, min_size=1, max_size=2, unique=True),
    lo=st.one_of(st.none(), st.integers(-3000, 3000)),
    span=st.one_of(st.none(), st.integers(0, 5000)),
    texts=st.lists(NUMBER_TEXT, max_size=10),
    seed=st.integers(0, 2**32),
)
def test_residue_filter_is_exact(integers, keep, drop, lo, span, texts, seed):
    """Texts of the range whose value is a multiple of `keep` and of none of `drop` (unbounded above
    when span is None: the complement of a remainder automaton, not a list)."""
    hi = None if lo is None or span is None else lo + span
    if not integers and lo is None and hi is None:
        hi = 10**9  # number_range without bounds is the whole JSON syntax; with one, plain decimals
    base = integer_range(lo, hi) if integers else number_range(lo, hi)
    expr, rules = residue_filter(base, [Decimal(keep)] if keep else [], [Decimal(d) for d in drop], prefix="res")
    assert all(name.startswith("res_") for name in rules)
    syntax = CANONICAL_INT if integers else PLAIN

    def oracle(text: str) -> bool:
        if not syntax.match(text) or (integers and text == "-0"):
            return False
        v = value(text)
        if not within(v, lo, hi, False, False):
            return False
        if keep and (v / Fraction(Decimal(keep))).denominator != 1:
            return False
        return all((v / Fraction(Decimal(d))).denominator != 1 for d in drop)

    near = [Fraction(j, 4) for b in (lo, hi, 0) if b is not None for j in range(4 * b - 30, 4 * b + 30)]
    lang = None if expr == NOTHING else Lang(expr, rules)
    check(lang, oracle, candidates([lo, hi], near, texts), random.Random(seed))


def test_residue_filter_examples():
    lang = Lang(*residue_filter(integer_range(), [], [3]))
    assert [i for i in range(-10, 11) if str(i) in lang] == [i for i in range(-10, 11) if i % 3]
    assert "10000000000000000000001" in lang and "10000000000000000000002" not in lang
    # multiples of 2 and of no 3 nor 0.5 among plain decimals: 0.5 excludes every integer
    assert residue_filter(number_range(0, 100), [2], [Decimal("0.5")]) == (NOTHING, {})
    with pytest.raises(GrammarTooLargeError, match="remainder automaton"):
        residue_filter(integer_range(), [], [10**9 + 7])


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    step=st.one_of(NUMBER_STEPS, st.sampled_from(["11", "12", "33", "429"])),
    lo=st.one_of(st.none(), st.integers(-10**9, 10**9), st.sampled_from([-100000, 0, 10**15])),
    span=st.one_of(st.none(), st.integers(0, 10**6), st.sampled_from([10**12, 10**20])),
    ints=st.booleans(),
)
def test_a_plan_knows_whether_it_brings_rules_before_writing_them(step, lo, span, ints):
    # emit_number decides its route on needs_rules() and writes only the plan that stays: the
    # answer must be what writing says, and writing must not depend on having asked first
    hi = None if lo is None or span is None else lo + span
    make = integer_multiples if ints else number_multiples
    try:
        plan = make(Decimal(step), lo, hi)
    except GrammarTooLargeError:
        return
    asked = plan.needs_rules()
    expr, rules = plan.emit("p")
    assert asked == bool(rules)
    if not ints and unbounded_product(Decimal(step), lo, hi):  # decided unbuilt: rules for sure
        assert asked
    if not ints and hi is None and lo is not None and Decimal(step) not in (Decimal("0.01"), Decimal("0.1")):
        assert unbounded_product(Decimal(step), lo, hi)
    assert (expr, rules) == make(Decimal(step), lo, hi).emit("p")  # the same with no question asked
    want = (multiple_of_integers if ints else multiple_of_numbers)(Decimal(step), lo, hi, prefix="p")
    assert (expr, rules) == want
