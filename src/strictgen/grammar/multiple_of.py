"""``multipleOf`` (and ``not multipleOf``) exactly: remainder automata over decimal numerals.

Divisibility of a decimal numeral is a regular language: reading the digits left to right, the
value modulo p is a state of `_tracker`. The functions here multiply such trackers with the range
languages of `numbers` (on the regular core's DFAs) and write the result back as grammar IR:

* `multiple_of_grammar`, `multiple_of_integers`, `multiple_of_numbers` -- ``multipleOf``,
  optionally with bounds (the syntax is that of `numbers.integer_range` / bounded
  `numbers.number_range`, no exponents). How:

  - a step of 10**-n on numbers is just "no non-zero digit past the n-th fraction digit"
    (`number_range(..., max_fraction_digits=n)`), no rules;
  - bounds leaving at most MAX_ENUMERATED multiples: the values are listed, no rules;
  - otherwise the minimal DFA of the range language is intersected with a remainder automaton
    (value * 10**n mod p for a step p / 10**n, p <= MAX_MODULUS), minimised, and written as
    right-linear rules (one per state on a cycle; acyclic states are inlined, or become rules
    kept as calls when inlining them would copy too much; see `_Layout`).
* `residue_filter` -- any regular language of plain decimals, filtered by steps to keep and
  steps to exclude (a difference with the tracker).

They return ``(root_expression, extra_rules)``: the caller merges the rules (all named
``<prefix>_<i>``) into its grammar. Sizes past the limits raise GrammarTooLargeError; nothing is
ever approximated. ``multipleOf`` uses exact decimal semantics (0.1 is one tenth, not the binary
float).
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np

from strictgen import deadline, regular
from strictgen.errors import GrammarTooLargeError, SchemaError
from strictgen.lru import BoundedLRU

from .automata import regular_dfa
from .ir import EMPTY, NOTHING, Alt, Expr, Literal, RuleRef, Seq, alt, charset, lit, seq, states_on_cycles
from .numbers import (
    MAX_DIGITS,
    bound_fraction,
    decimal_scale,
    check_nesting,
    decimal_texts,
    int_bounds,
    integer_texts,
    number_bounds,
    number_spellings,
)

__all__ = [
    "MAX_ENUMERATED",
    "MAX_MODULUS",
    "Multiples",
    "integer_multiples",
    "multiple_of_grammar",
    "multiple_of_integers",
    "multiple_of_numbers",
    "number_multiples",
    "residue_filter",
    "unbounded_product",
]

MAX_ENUMERATED = 1000  # bounded multipleOf with at most this many values: list them
MAX_MODULUS = 10_000  # largest remainder automaton for multipleOf
MAX_TRACKER_STATES = 200_000
MAX_PRODUCT_STATES = 20_000
_INLINE_BUDGET = 4_000  # IR size up to which acyclic automaton states are inlined
_MAX_INLINE_CHAIN = 30  # automaton states inlined into one another, at most

# ---- small DFAs over the number alphabet (the automaton work is the regular core's) --------------

_ALPHA = b"-.0123456789"
_SYM = {b: i for i, b in enumerate(_ALPHA)}
_NSYM = len(_ALPHA)
_DOT = _SYM[ord(".")]
_MINUS = _SYM[ord("-")]
_D0 = _SYM[ord("0")]


# the bytes of _ALPHA are the byte classes 0.._NSYM-1 of the core's tables; other bytes, class _NSYM, are dead
_CLASSMAP = bytes(_SYM.get(b, _NSYM) for b in range(256))


def _symbol_rows(dfa: regular.DFA) -> tuple[list[list[int]], list[bool]]:
    """A trimmed core DFA as rows over `_ALPHA` (start 0, -1 = dead); ([], []) when it is empty."""
    if not dfa.can_finish():
        return [], []
    table = np.frombuffer(dfa.table256(), dtype=np.int32).reshape(-1, 256)[:, list(_ALPHA)]
    return table.tolist(), [bool(a) for a in dfa.accepting()]


def _tracker(p: int, n: int, fraction: bool) -> regular.DFA:
    """DFA over `_ALPHA` accepting texts whose value * 10**n is a multiple of p (syntax unchecked).

    State phase * p + r: phase 0 reads the integer part (r = its value mod p), phase 1 + t has read
    t fraction digits (r = value * 10**t mod p); past n fraction digits only zeros can follow.
    Built as one numpy table (a Python row per state cost ~20 ms for allany9's steps)."""
    phases = n + 2 if fraction else 1
    if p * phases > MAX_TRACKER_STATES:
        raise GrammarTooLargeError(f"multipleOf needs a remainder automaton of more than {MAX_TRACKER_STATES} states")
    deadline.check()
    r = np.arange(p, dtype=np.int64)
    digits = (10 * r[:, None] + np.arange(10)) % p  # the remainder after reading digit d
    table = np.full((phases, p, _NSYM + 1), -1, dtype=np.int32)  # the last class: bytes outside _ALPHA
    table[0, :, _MINUS] = r
    if fraction:
        table[0, :, _DOT] = p + r
    table[0, :, _D0 : _D0 + 10] = digits
    accepting = np.empty((phases, p), dtype=np.uint8)
    accepting[0] = r * pow(10, n, p) % p == 0
    for phase in range(1, phases):
        t = phase - 1
        if t < n:
            table[phase, :, _D0 : _D0 + 10] = (phase + 1) * p + digits
        else:
            table[phase, :, _D0] = phase * p + r
        accepting[phase] = r * pow(10, n - t, p) % p == 0
    return regular.from_classes(table.tobytes(), accepting.tobytes(), _CLASSMAP)


class _Layout:
    """Which states of a DFA (start 0, -1 dead) become rules when it is written as right-linear
    rules, decided before anything is written: `needs_rules` is known without writing them.

    States on a cycle become rules. Acyclic states are inlined into the expression that uses them,
    unless that would copy too much (the compiler inlines a non-recursive rule once per use): then
    states used from several places become rules too. Chains of more than _MAX_INLINE_CHAIN
    inlined states are cut the same way, which bounds the nesting depth."""

    def __init__(self, trans: list[list[int]], accepting: list[bool]):
        self.trans, self.accepting = trans, accepting
        n = len(trans)
        self.groups = groups = []
        indeg = [0] * n
        for s in range(n):
            by_target: dict[int, list[int]] = {}
            for c, t in enumerate(trans[s]):
                if t >= 0:
                    by_target.setdefault(t, []).append(c)
            groups.append(sorted(by_target.items()))
            for t in by_target:
                indeg[t] += 1
        self.cyclic = cyclic = states_on_cycles([[t for t, _ in g] for g in groups])
        # size of each state's expression when every acyclic target is inlined (DAG, memoised)
        size: list[int | None] = [None] * n

        def inlined_size(s: int) -> int:
            stack = [s]
            while stack:
                u = stack[-1]
                pending = [t for t, _ in groups[u] if not cyclic[t] and size[t] is None]
                if pending:
                    stack.extend(pending)
                    continue
                stack.pop()
                if size[u] is None:
                    size[u] = 1 + sum(2 + (0 if cyclic[t] else size[t]) for t, _ in groups[u])
            return size[s]

        roots = [s for s in range(n) if cyclic[s] or s == 0]
        total = sum(inlined_size(s) for s in roots)
        shared = total > _INLINE_BUDGET
        self.is_rule = is_rule = [cyclic[s] or (shared and indeg[s] > 1) for s in range(n)]
        # long chains of inlined states would nest deeply: cut them into rules
        height = [0] * n
        done = [False] * n
        for root in range(n):
            stack = [root]
            while stack:
                u = stack[-1]
                if done[u]:
                    stack.pop()
                    continue
                pending = [t for t, _ in groups[u] if not is_rule[t] and not done[t]]
                if pending:
                    stack.extend(pending)
                    continue
                stack.pop()
                done[u] = True
                height[u] = 1 + max((height[t] for t, _ in groups[u] if not is_rule[t]), default=0)
                if height[u] > _MAX_INLINE_CHAIN and u != 0:
                    is_rule[u] = True

    def needs_rules(self) -> bool:
        return any(self.is_rule)


def _write(layout: _Layout, prefix: str) -> tuple[Expr, dict[str, Expr]]:
    """The DFA of `layout` as a root expression plus rules named prefix_<i> (the layout's rule
    states). An acyclic rule state gets a self-reference that can never be taken
    (``Seq((NOTHING, RuleRef(self)))``), which keeps the compiler calling it instead of copying
    it. Every rule reference is in tail position, so the pushdown machine's stack never grows
    inside these rules."""
    n = len(layout.trans)
    groups, is_rule, cyclic, accepting = layout.groups, layout.is_rule, layout.cyclic, layout.accepting
    names: dict[int, str] = {}
    for s in range(n):
        if is_rule[s]:
            names[s] = f"{prefix}_{len(names)}"

    memo: dict[int, Expr] = {}
    refs = {s: RuleRef(name) for s, name in names.items()}

    def body(s: int) -> Expr:
        # post-order over inlined states so that deep chains need no Python recursion
        stack = [s]
        while stack:
            u = stack[-1]
            pending = [t for t, _ in groups[u] if not is_rule[t] and t not in memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if u in memo:
                continue
            items: list[Expr] = [EMPTY] if accepting[u] else []
            for t, cs in groups[u]:
                symbols = _symbols(tuple(cs))
                # the items are distinct (one per target), so build the nodes directly
                items.append(Seq((symbols, refs[t])) if is_rule[t] else seq(symbols, memo[t]))
            memo[u] = items[0] if len(items) == 1 else Alt(tuple(items))
        return memo[s]

    rules: dict[str, Expr] = {}
    for s, name in names.items():
        expr = body(s)
        if not cyclic[s]:  # keep it a called rule: a reference cycle that no input can take
            expr = alt(expr, Seq((NOTHING, RuleRef(name))))
        rules[name] = expr
    root = RuleRef(names[0]) if is_rule[0] else body(0)
    return root, rules


@functools.cache
def _symbols(cs: tuple[int, ...]) -> Expr:
    if len(cs) == 1:
        return Literal(_ALPHA[cs[0] : cs[0] + 1])
    return charset((_ALPHA[c], _ALPHA[c]) for c in cs)


class Multiples:
    """A multiples language before it is written as grammar: a plain expression (listed values, a
    range), or the rows of the minimal DFA of a range times a remainder automaton. A caller that
    only needs to know whether the language would bring rules (`needs_rules`) learns it without
    laying out or writing them (`emit` writes them)."""

    def __init__(self, expr: Expr = NOTHING, trans: list[list[int]] | None = None, accepting: list[bool] | None = None):
        self.expr, self.trans, self.accepting = expr, trans, accepting

    def needs_rules(self) -> bool:
        # a state on a cycle is a rule: a cycle decides it without the layout
        return bool(self.trans) and (_has_cycle(self.trans) or _Layout(self.trans, self.accepting).needs_rules())

    def emit(self, prefix: str) -> tuple[Expr, dict[str, Expr]]:
        """(root expression, extra rules named prefix_<i>)."""
        return _write(_Layout(self.trans, self.accepting), prefix) if self.trans else (self.expr, {})


def _has_cycle(trans: list[list[int]]) -> bool:
    """Is there a cycle among the states? (Kahn's order: the states never freed lie on or after one.)"""
    indeg = [0] * len(trans)
    for row in trans:
        for t in set(row):
            if t >= 0:
                indeg[t] += 1
    free = [s for s, d in enumerate(indeg) if d == 0]
    seen = 0
    while free:
        s = free.pop()
        seen += 1
        for t in set(trans[s]):
            if t >= 0:
                indeg[t] -= 1
                if indeg[t] == 0:
                    free.append(t)
    return seen < len(trans)


def _dfa_multiples(dfa: regular.DFA) -> Multiples:
    trans, accepting = _symbol_rows(dfa)
    return Multiples(trans=trans, accepting=accepting)


# minimal remainder automata by (p, n, fraction): schemas repeat their steps across conjuncts
# (an allOf of anyOfs of multipleOf distributes into many), bounded in table cells
_TRACKERS: BoundedLRU[regular.DFA] = BoundedLRU(64, 1 << 22, lambda dfa: dfa.num_states * dfa.num_classes)


def _minimal_tracker(p: int, n: int, fraction: bool) -> regular.DFA:
    key = (p, n, fraction)
    dfa = _TRACKERS.get(key)
    if dfa is None:
        dfa = regular.minimal(_tracker(p, n, fraction))
        _TRACKERS.put(key, dfa)
    return dfa


def _product(range_expr: Expr, p: int, n: int) -> Multiples:
    """Texts of `range_expr` (plain decimals) whose value * 10**n is a multiple of p."""
    if range_expr == NOTHING:
        return Multiples()
    ranges = regular_dfa(range_expr)
    r_trans, _ = _symbol_rows(ranges)
    if not r_trans:
        return Multiples()
    fraction = any(row[_DOT] >= 0 for row in r_trans)
    both = regular.product(
        ranges,
        _minimal_tracker(p, n, fraction),
        max_states=MAX_PRODUCT_STATES,
        too_large=f"multipleOf {Decimal(p).scaleb(-n)} together with these bounds needs more than {MAX_PRODUCT_STATES} automaton states",
    )
    return _dfa_multiples(regular.minimal(both))


def residue_filter(expr: Expr, keep=(), drop=(), prefix: str = "num_residue") -> tuple[Expr, dict[str, Expr]]:
    """Texts of `expr` whose value is a multiple of every step in `keep` and of no step in `drop`.

    `expr` must be a regular language of plain decimals (``-``, ``.`` and digits only: what
    `integer_range`, bounded `number_range` and their intersections give). Divisibility of a
    decimal numeral is regular (the remainder automaton of `_tracker`), so its complement is too:
    a `drop` step is a difference with its tracker (`not: {multipleOf: k}` over any range). The
    trackers are multiplied on as minimal DFAs; past MAX_PRODUCT_STATES (or a step p / 10**n with
    p over MAX_MODULUS) this raises GrammarTooLargeError. Returns (root expression, extra rules
    named prefix_<i>), as `multiple_of_numbers`."""
    if expr == NOTHING:
        return NOTHING, {}
    dfa = regular.minimal(regular_dfa(expr))
    rows, _ = _symbol_rows(dfa)
    if not rows:
        return NOTHING, {}
    fraction = any(row[_DOT] >= 0 for row in rows)
    for step, negated in [(k, False) for k in keep] + [(k, True) for k in drop]:
        p, n = _step(step)
        if p > MAX_MODULUS:
            raise GrammarTooLargeError(f"multipleOf {step} needs a remainder automaton with {p} states (at most {MAX_MODULUS})")
        dfa = regular.minimal(
            regular.product(
                dfa,
                _minimal_tracker(p, n, fraction),
                difference=negated,
                max_states=MAX_PRODUCT_STATES,
                too_large=f"{'not ' if negated else ''}multipleOf {step} together with the other number keywords needs more than {MAX_PRODUCT_STATES} automaton states",
            )
        )
    return _dfa_multiples(dfa).emit(prefix)


# ---- multipleOf ------------------------------------------------------------------------------------


def _step(value) -> tuple[int, int]:
    """multipleOf as p / 10**n (p >= 1, n >= 0) with the same multiples among finite decimals."""
    s = bound_fraction(value, "multipleOf")
    if s is None or isinstance(s, float) or s <= 0:
        raise SchemaError(f"multipleOf must be a positive number, not {value!r}", keyword="multipleOf")
    # a decimal j*s needs the part of s's denominator coprime to 10 to divide j: drop that part
    w, n = decimal_scale(s.denominator)
    s *= w
    if n > MAX_DIGITS:
        raise GrammarTooLargeError(f"multipleOf {value} has more than {MAX_DIGITS} fraction digits")
    p = s * 10**n
    assert p.denominator == 1
    return int(p), n


def integer_multiples(k, minimum=None, maximum=None, exclusive_minimum: bool = False, exclusive_maximum: bool = False) -> Multiples:
    """Canonical integers (as `integer_range`) within the bounds that are multiples of `k`, unwritten.

    `k` may be any positive number: integers that are multiples of 2.5 are the multiples of 5,
    every integer is a multiple of 0.5. Bounded ranges with at most MAX_ENUMERATED multiples are
    listed (no rules); otherwise the range automaton is intersected with a remainder automaton
    (k up to MAX_MODULUS), and GrammarTooLargeError is raised when that would get too big."""
    p, n = _step(k)
    modulus = p // math.gcd(p, 10**n)
    lo, hi, empty = int_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum)
    if empty:
        return Multiples()
    if modulus == 1:
        return Multiples(check_nesting(integer_texts(lo, hi)))
    if lo is not None and hi is not None:
        first = -(-lo // modulus)
        last = hi // modulus
        if last - first + 1 <= MAX_ENUMERATED:
            return Multiples(_alternatives([lit(str(j * modulus)) for j in range(first, last + 1)]))
    if modulus > MAX_MODULUS:
        raise GrammarTooLargeError(
            f"multipleOf {k} on integers needs a remainder automaton with {modulus} states (at most {MAX_MODULUS})"
        )
    return _product(check_nesting(integer_texts(lo, hi)), modulus, 0)


def multiple_of_integers(k, minimum=None, maximum=None, exclusive_minimum: bool = False, exclusive_maximum: bool = False,
                         prefix: str = "int_multiple") -> tuple[Expr, dict[str, Expr]]:
    """`integer_multiples` written: (root expression, extra rules named prefix_<i>)."""
    return integer_multiples(k, minimum, maximum, exclusive_minimum, exclusive_maximum).emit(prefix)


def multiple_of_grammar(k: int, prefix: str) -> tuple[Expr, dict[str, Expr]]:
    """Canonical integers (no ``-0``) divisible by the positive int `k`: a remainder automaton.

    Returns (root expression, rules to merge into the caller's grammar, named prefix_<i>)."""
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise SchemaError(f"multipleOf must be a positive integer here, not {k!r}", keyword="multipleOf")
    if k > MAX_MODULUS:
        raise GrammarTooLargeError(f"multipleOf {k}: at most {MAX_MODULUS} is supported")
    return multiple_of_integers(k, prefix=prefix)


def _alternatives(items: list[Expr]) -> Expr:
    """Alt of distinct items (without `alt`'s quadratic de-duplication)."""
    return items[0] if len(items) == 1 else Alt(tuple(items))


def number_multiples(step, minimum=None, maximum=None, exclusive_minimum: bool = False, exclusive_maximum: bool = False) -> Multiples:
    """Plain decimals (as `number_range` with bounds) within the bounds whose value is a multiple of `step`, unwritten.

    A step of 10**-n needs no rules (`number_range(..., max_fraction_digits=n)`). Other steps
    (0.5, 0.3, 2.5, 7, ...) list the values when the bounds leave at most MAX_ENUMERATED of them,
    and otherwise intersect with a remainder automaton (step = p / 10**n with p up to
    MAX_MODULUS)."""
    p, n = _step(step)
    lo, ls, hi, hs, empty = number_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum)
    if empty:
        return Multiples()
    if p == 1:
        return Multiples(check_nesting(decimal_texts(lo, ls, hi, hs, n)))
    s = Fraction(p, 10**n)
    if lo is not None and hi is not None:
        first = math.floor(lo / s) + 1 if ls else math.ceil(lo / s)
        last = math.ceil(hi / s) - 1 if hs else math.floor(hi / s)
        if last - first + 1 <= MAX_ENUMERATED:
            return Multiples(_alternatives([number_spellings(j * s) for j in range(first, last + 1)]))
    if p > MAX_MODULUS:
        raise GrammarTooLargeError(f"multipleOf {step} needs a remainder automaton with {p} states (at most {MAX_MODULUS})")
    return _product(check_nesting(decimal_texts(lo, ls, hi, hs, n)), p, n)


def unbounded_product(step, minimum=None, maximum=None, exclusive_minimum: bool = False, exclusive_maximum: bool = False) -> bool:
    """Is `number_multiples(step, bounds)` a remainder product over a range unbounded on a side?
    Then it has infinitely many members, so its minimal automaton has a cycle and brings rules
    (or it is refused as too large): decided without building it."""
    p, _ = _step(step)
    lo, _, hi, _, empty = number_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum)
    return p != 1 and not empty and (lo is None or hi is None)


def multiple_of_numbers(step, minimum=None, maximum=None, exclusive_minimum: bool = False, exclusive_maximum: bool = False,
                        prefix: str = "num_multiple") -> tuple[Expr, dict[str, Expr]]:
    """`number_multiples` written: (root expression, extra rules named prefix_<i>)."""
    return number_multiples(step, minimum, maximum, exclusive_minimum, exclusive_maximum).emit(prefix)
