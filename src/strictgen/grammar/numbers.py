"""Exact JSON number languages for the numeric keywords of JSON Schema.

Every function here returns grammar IR whose language is *exactly* a set of JSON number texts
(RFC 8259: ``-? (0|[1-9][0-9]*) (\\.[0-9]+)? ([eE][+-]?[0-9]+)?``) defined by the mathematical
value of the text, compared with exact rational arithmetic:

* `integer_range` -- ``"type": "integer"`` with ``minimum``/``maximum`` (inclusive or exclusive).
  Only the canonical integer syntax ``-?(0|[1-9][0-9]*)`` is emitted, without ``-0``: every value
  has exactly one text. (JSON Schema would also call ``1.0`` or ``1e2`` an integer; those spellings
  are deliberately left out.)
* `number_range` -- ``"type": "number"``. With no bound and no fraction limit it is the whole
  JSON number syntax, exponents included. As soon as a bound or a fraction limit is given, only
  plain decimals ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?`` are emitted: with exponents the language is not
  regular in general (``10...0e-N <= 100`` compares a digit count with the value of ``N``).
  All spellings of an admitted value are accepted: trailing zeros (``1.50``), and ``-0``,
  ``-0.0`` when 0 is admitted (they equal 0).
* `multiple_of_grammar`, `multiple_of_integers`, `multiple_of_numbers` -- ``multipleOf``,
  optionally with bounds, exactly (the syntax is that of `integer_range` / bounded
  `number_range`, no exponents). They return ``(root_expression, extra_rules)``: the caller merges
  the rules (all named ``<prefix>_<i>``) into its grammar. How:

  - a step of 10**-n on numbers is just "no non-zero digit past the n-th fraction digit"
    (`number_range(..., max_fraction_digits=n)`), no rules;
  - bounds leaving at most MAX_ENUMERATED multiples: the values are listed, no rules;
  - otherwise the minimal DFA of the range language is intersected with a remainder automaton
    (value * 10**n mod p for a step p / 10**n, p <= MAX_MODULUS), minimised, and written as
    right-linear rules (one per state on a cycle; acyclic states are inlined, or become rules
    kept as calls when inlining them would copy too much; see `_emit`).
  Sizes past the limits raise GrammarTooLargeError; nothing is ever approximated.

Bounds may be ints, floats (read as ``Decimal(str(x))``: the JSON text they came from), Decimals or
Fractions. ``multipleOf`` uses exact decimal semantics too (0.1 is one tenth, not the binary float).
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np

from strictgen import deadline, regular
from strictgen.errors import GrammarTooLargeError, SchemaError

from .automata import regular_dfa
from .ir import (
    EMPTY,
    NOTHING,
    Alt,
    ByteSet,
    Expr,
    Literal,
    Repeat,
    RuleRef,
    Seq,
    alt,
    charset,
    lit,
    opt,
    repeat,
    seq,
)
from .json_value import json_number

__all__ = [
    "MAX_DIGITS",
    "MAX_ENUMERATED",
    "MAX_MODULUS",
    "integer_range",
    "multiple_of_grammar",
    "multiple_of_integers",
    "multiple_of_numbers",
    "number_range",
    "residue_filter",
]

MAX_DIGITS = 400  # digits of a bound (integer part or fraction); covers every float
MAX_ENUMERATED = 1000  # bounded multipleOf with at most this many values: list them
MAX_MODULUS = 10_000  # largest remainder automaton for multipleOf
MAX_TRACKER_STATES = 200_000
MAX_PRODUCT_STATES = 20_000
_INLINE_BUDGET = 4_000  # IR size up to which acyclic automaton states are inlined
_MAX_INLINE_CHAIN = 30  # automaton states inlined into one another, at most
MAX_NESTING = 150  # IR nesting depth of a result (recursive passes over the IR must stay safe)

DIGIT = ByteSet(((0x30, 0x39),))
NONZERO = ByteSet(((0x31, 0x39),))
ZERO = lit("0")


def _digits(lo: int, hi: int) -> Expr:
    """One digit in lo..hi."""
    if lo > hi:
        return NOTHING
    if lo == hi:
        return lit(str(lo))
    return ByteSet(((0x30 + lo, 0x30 + hi),))


def _digit_set(ds) -> Expr:
    ds = sorted(ds)
    if len(ds) == 1:
        return lit(str(ds[0]))
    return charset((0x30 + d, 0x30 + d) for d in ds)


def _exactly(n: int) -> Expr:
    return repeat(DIGIT, n, n)


# ---- bounds -------------------------------------------------------------------------------------


def _to_fraction(value, keyword: str) -> Fraction | float | None:
    """A bound as an exact Fraction, or ±math.inf, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal, Fraction)):
        raise SchemaError(f"{keyword} must be a number, not {value!r}", keyword=keyword)
    if isinstance(value, float):
        if math.isnan(value):
            raise SchemaError(f"{keyword} must not be NaN", keyword=keyword)
        if math.isinf(value):
            return value
        value = Decimal(repr(value))  # the shortest text that reads back as this float
    if isinstance(value, Decimal):
        if value.is_nan():
            raise SchemaError(f"{keyword} must not be NaN", keyword=keyword)
        if value.is_infinite():
            return math.inf if value > 0 else -math.inf
        if value and abs(value.adjusted()) > 4 * MAX_DIGITS:
            raise GrammarTooLargeError(f"{keyword} {value} has too many digits (more than {MAX_DIGITS})")
        return Fraction(value)
    if isinstance(value, int):
        if abs(value) >= 10 ** (4 * MAX_DIGITS):
            raise GrammarTooLargeError(f"{keyword} has too many digits (more than {MAX_DIGITS})")
        return Fraction(value)
    return value


def _check_int(n: int | None) -> None:
    if n is not None and abs(n) >= 10**MAX_DIGITS:
        raise GrammarTooLargeError(f"numeric bound with more than {MAX_DIGITS} digits")


def _check_flags(exclusive_minimum, exclusive_maximum) -> None:
    # a draft-6 style numeric exclusiveMinimum passed here by mistake must not be read as True
    for flag, keyword in ((exclusive_minimum, "exclusive_minimum"), (exclusive_maximum, "exclusive_maximum")):
        if not isinstance(flag, bool):
            raise TypeError(f"{keyword} must be a bool, not {flag!r} (pass a numeric bound as minimum/maximum)")


def _int_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum) -> tuple[int | None, int | None, bool]:
    """(lowest integer, highest integer, empty) admitted by the bounds; None = unbounded."""
    _check_flags(exclusive_minimum, exclusive_maximum)
    lo_f = _to_fraction(minimum, "minimum")
    hi_f = _to_fraction(maximum, "maximum")
    empty = False
    lo = hi = None
    if isinstance(lo_f, float):
        empty |= lo_f > 0
    elif lo_f is not None:
        lo = math.floor(lo_f) + 1 if exclusive_minimum else math.ceil(lo_f)
    if isinstance(hi_f, float):
        empty |= hi_f < 0
    elif hi_f is not None:
        hi = math.ceil(hi_f) - 1 if exclusive_maximum else math.floor(hi_f)
    if lo is not None and hi is not None and lo > hi:
        empty = True
    if not empty:
        _check_int(lo)
        _check_int(hi)
    return lo, hi, empty


def decimal_places(x: Fraction) -> int | None:
    """How many fraction digits x needs in plain decimal notation; None if x is no finite decimal."""
    d, twos, fives = x.denominator, 0, 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    return max(twos, fives) if d == 1 else None


def _decimal_parts(x: Fraction) -> tuple[int, str]:
    """x >= 0, a finite decimal -> (integer part, fraction digits without trailing zeros)."""
    ip = x.numerator // x.denominator
    f = x - ip
    if not f:
        return ip, ""
    k = decimal_places(f)
    assert k is not None, "not a finite decimal"
    if k > MAX_DIGITS:
        raise GrammarTooLargeError(f"numeric bound with more than {MAX_DIGITS} fraction digits")
    return ip, str(f.numerator * 10**k // f.denominator).rjust(k, "0").rstrip("0")


def _is_finite_decimal(x: Fraction) -> bool:
    d = x.denominator
    for q in (2, 5):
        while d % q == 0:
            d //= q
    return d == 1


def _number_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum):
    """(lo, lo_strict, hi, hi_strict, empty) with Fraction or None bounds."""
    _check_flags(exclusive_minimum, exclusive_maximum)
    lo = _to_fraction(minimum, "minimum")
    hi = _to_fraction(maximum, "maximum")
    empty = False
    ls, hs = bool(exclusive_minimum), bool(exclusive_maximum)
    if isinstance(lo, float):
        empty |= lo > 0
        lo, ls = None, False
    if isinstance(hi, float):
        empty |= hi < 0
        hi, hs = None, False
    for value, keyword in ((lo, "minimum"), (hi, "maximum")):
        if value is not None and not _is_finite_decimal(value):
            raise SchemaError(f"{keyword} must be a finite decimal number, not {value}", keyword=keyword)
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (ls or hs))):
        empty = True
    return lo, ls, hi, hs, empty


def _checked(expr: Expr) -> Expr:
    """`expr`, after making sure it is not nested deeper than MAX_NESTING (iteratively)."""
    stack = [(expr, 1)]
    while stack:
        e, depth = stack.pop()
        if depth > MAX_NESTING:
            raise GrammarTooLargeError(f"numeric bounds too intricate: expression nested deeper than {MAX_NESTING}")
        if isinstance(e, (Seq, Alt)):
            stack.extend((item, depth + 1) for item in e.items)
        elif isinstance(e, Repeat):
            stack.append((e.item, depth + 1))
    return expr


# ---- integers: digit-range decomposition -------------------------------------------------------


def _ge(s: str) -> Expr:
    """Digit strings of length len(s) that are >= s (s may have leading zeros)."""
    expr: Expr = EMPTY
    zeros_after = True
    for j in range(len(s) - 1, -1, -1):
        d, rest = int(s[j]), len(s) - j - 1
        if zeros_after:
            expr = seq(_digits(d, 9), _exactly(rest))
        else:
            expr = alt(seq(lit(s[j]), expr), seq(_digits(d + 1, 9), _exactly(rest)))
        zeros_after = zeros_after and s[j] == "0"
    return expr


def _le(s: str) -> Expr:
    """Digit strings of length len(s) that are <= s."""
    expr: Expr = EMPTY
    nines_after = True
    for j in range(len(s) - 1, -1, -1):
        d, rest = int(s[j]), len(s) - j - 1
        if nines_after:
            expr = seq(_digits(0, d), _exactly(rest))
        else:
            expr = alt(seq(lit(s[j]), expr), seq(_digits(0, d - 1), _exactly(rest)))
        nines_after = nines_after and s[j] == "9"
    return expr


def _fixed(x: str, y: str) -> Expr:
    """Digit strings s with len(s) == len(x) == len(y) and x <= s <= y."""
    n = len(x)
    i = 0
    while i < n and x[i] == y[i]:
        i += 1
    if i == n:
        return lit(x)
    k = n - i - 1
    xs, ys = x[i + 1 :], y[i + 1 :]
    xd, yd = int(x[i]), int(y[i])
    lo_mid = xd if xs == "0" * k else xd + 1
    hi_mid = yd if ys == "9" * k else yd - 1
    parts = []
    if lo_mid != xd:
        parts.append(seq(lit(x[i]), _ge(xs)))
    if lo_mid <= hi_mid:
        parts.append(seq(_digits(lo_mid, hi_mid), _exactly(k)))
    if hi_mid != yd:
        parts.append(seq(lit(y[i]), _le(ys)))
    return seq(lit(x[:i]), alt(*parts))


def _uint_range(a: int, b: int | None) -> Expr:
    """Canonical texts (no leading zeros) of the integers a..b, 0 <= a; b None = unbounded."""
    if b is not None and a > b:
        return NOTHING
    _check_int(a)
    _check_int(b)
    parts: list[Expr] = []
    if a == 0:
        parts.append(lit("0"))
        if b == 0:
            return parts[0]
        a = 1
    sa = str(a)
    na = len(sa)
    if b is not None and len(str(b)) == na:
        parts.append(_fixed(sa, str(b)))
        return alt(*parts)
    if a == 10 ** (na - 1):
        first_full = na
    else:
        parts.append(_fixed(sa, "9" * na))
        first_full = na + 1
    if b is None:
        parts.append(seq(NONZERO, repeat(DIGIT, first_full - 1)))
    else:
        sb = str(b)
        nb = len(sb)
        if b == 10**nb - 1:
            last_full = nb
        else:
            parts.append(_fixed("1" + "0" * (nb - 1), sb))
            last_full = nb - 1
        if first_full <= last_full:
            parts.append(seq(NONZERO, repeat(DIGIT, first_full - 1, last_full - 1)))
    return alt(*parts)


def _int_range_expr(lo: int | None, hi: int | None) -> Expr:
    """Canonical integer texts (no "-0") with lo <= value <= hi."""
    parts = []
    if hi is None or hi >= 0:
        parts.append(_uint_range(max(lo, 0) if lo is not None else 0, hi))
    if lo is None or lo < 0:
        a = 1 if hi is None or hi >= 0 else -hi
        b = None if lo is None else -lo
        parts.append(seq(lit("-"), _uint_range(a, b)))
    return alt(*parts)


def integer_range(minimum=None, maximum=None, exclusive_minimum: bool = False, exclusive_maximum: bool = False) -> Expr:
    """Canonical JSON integers ``-?(0|[1-9][0-9]*)`` (never ``-0``) whose value lies within the bounds.

    Bounds may be fractional (``minimum=1.5`` admits 2, 3, ...); an empty range gives NOTHING.
    """
    lo, hi, empty = _int_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum)
    if empty:
        return NOTHING
    return _checked(_int_range_expr(lo, hi))


# ---- plain decimals ------------------------------------------------------------------------------
#
# A magnitude text is I(.F)? with I canonical. For a bound a = ia + 0.A (A: fraction digits, no
# trailing zeros) the texts with I == ia need 0.F >= 0.A; this compares F and A digit by digit,
# both padded with zeros. Fraction constraints are (digits, strict) pairs, None = no constraint.
# `limit` (max_fraction_digits) forces every fraction digit at position >= limit to be 0.


def _constraint(digits: str, strict: bool):
    return None if digits == "" and not strict else (digits, strict)


def _free_nonempty(p: int, limit: int | None) -> Expr:
    """Non-empty fraction digit strings starting at position p, any value."""
    if limit is None:
        return repeat(DIGIT, 1)
    m = max(0, limit - p)
    if m == 0:
        return repeat(ZERO, 1)
    return seq(DIGIT, repeat(DIGIT, 0, m - 1), repeat(ZERO))


def _positive_nonempty(p: int, limit: int | None) -> Expr:
    """Fraction digit strings from position p with at least one non-zero digit."""
    if limit is None:
        return seq(repeat(ZERO), NONZERO, repeat(DIGIT))
    m = max(0, limit - p)
    if m == 0:
        return NOTHING
    return seq(repeat(DIGIT, 0, m - 1), NONZERO, repeat(ZERO))


def _frac(p: int, lo, hi, limit: int | None) -> tuple[bool, Expr]:
    """Digit strings R from fraction position p with lo <= 0.R <= hi (strictness per constraint).

    Returns (whether the empty string qualifies, the non-empty strings)."""
    if lo is None and hi is None:
        return True, _free_nonempty(p, limit)
    if hi is None and lo == ("", True):
        return False, _positive_nonempty(p, limit)
    if hi is not None and hi[0] == "":  # R <= 0 (or < 0): only zeros, and only if lo allows 0
        if hi[1] or lo is not None:
            return False, NOTHING
        return True, repeat(ZERO, 1)
    if limit is None and (lo is None) != (hi is None):
        return _frac_run(lo, hi)
    ok = lo is None  # a non-empty hi is > 0; a remaining lo is > 0 or strict
    groups: dict[tuple, list[int]] = {}
    for d in range(10) if limit is None or p < limit else (0,):
        lo_n = hi_n = None
        if lo is not None:
            ld = int(lo[0][0]) if lo[0] else 0
            if d < ld:
                continue
            if d == ld:
                lo_n = _constraint(lo[0][1:], lo[1])
        if hi is not None:
            hd = int(hi[0][0])
            if d > hd:
                continue
            if d == hd:
                hi_n = (hi[0][1:], hi[1])
        groups.setdefault((lo_n, hi_n), []).append(d)
    items = []
    for (lo_n, hi_n), ds in groups.items():
        sub_ok, sub = _frac(p + 1, lo_n, hi_n, limit)
        items.append(seq(_digit_set(ds), alt(EMPTY, sub) if sub_ok else sub))
    return ok, alt(*items)


def _frac_run(lo, hi) -> tuple[bool, Expr]:
    """`_frac` without a digit limit and with one non-empty bound, a run of equal digits at a time.

    Leaving a run c^r of the bound early (c^i then a digit above c for a lower bound, below c or
    the end of the string for an upper bound) is one alternative with ``c{0,r-1}``, so the
    nesting depth grows with the number of runs, not of digits (1e-300 has two runs)."""
    digits, strict = lo if lo is not None else hi
    c = int(digits[0])
    r = len(digits) - len(digits.lstrip(digits[0]))
    rest = digits[r:]
    if lo is not None:
        sub_ok, sub = _frac(0, _constraint(rest, strict), None, None)
        leave = seq(repeat(lit(str(c)), 0, r - 1), _digits(c + 1, 9), repeat(DIGIT))
        end_early: Expr = NOTHING
    else:
        sub_ok, sub = _frac(0, None, (rest, strict), None)
        leave = seq(repeat(lit(str(c)), 0, r - 1), _digits(0, c - 1), repeat(DIGIT))
        end_early = repeat(lit(str(c)), 1, r - 1) if r > 1 else NOTHING
    stay = seq(lit(str(c) * r), alt(EMPTY, sub) if sub_ok else sub)
    return lo is None, alt(leave, end_early, stay)


def _fraction_suffix(lo, hi, limit: int | None) -> Expr:
    """"" or "." F, with the fraction 0.F constrained by lo/hi."""
    ok, body = _frac(0, lo, hi, limit)
    dotted = seq(lit("."), body)
    return opt(dotted) if ok else dotted


def _magnitude(a: Fraction, a_strict: bool, b: Fraction | None, b_strict: bool, limit: int | None) -> Expr:
    """Unsigned plain decimals I(.F)? with a <(=) value <(=) b; 0 <= a, b None = unbounded."""
    if b is not None and (a > b or (a == b and (a_strict or b_strict))):
        return NOTHING
    ia, fa = _decimal_parts(a)
    _check_int(ia)
    lo = _constraint(fa, a_strict)
    if b is not None:
        ib, fb = _decimal_parts(b)
        _check_int(ib)
        hi = (fb, b_strict)
        if ia == ib:
            return seq(lit(str(ia)), _fraction_suffix(lo, hi, limit))
    parts = [seq(lit(str(ia)), _fraction_suffix(lo, None, limit))]
    parts.append(seq(_uint_range(ia + 1, None if b is None else ib - 1), _fraction_suffix(None, None, limit)))
    if b is not None:
        parts.append(seq(lit(str(ib)), _fraction_suffix(None, hi, limit)))
    return alt(*parts)


def _decimal_range(lo, ls: bool, hi, hs: bool, limit: int | None) -> Expr:
    """Plain decimal texts (both signs, "-0" forms included) with a value within the bounds."""
    zero = Fraction(0)
    if limit is not None:  # only multiples of 10**-limit qualify: move the bounds onto that grid
        grid = Fraction(1, 10**limit)
        if lo is not None:
            lo, ls = (math.floor(lo / grid) + 1 if ls else math.ceil(lo / grid)) * grid, False
        if hi is not None:
            hi, hs = (math.ceil(hi / grid) - 1 if hs else math.floor(hi / grid)) * grid, False
        if lo is not None and hi is not None and lo > hi:
            return NOTHING
    parts = []
    if hi is None or hi > 0 or (hi == 0 and not hs):  # texts without "-": magnitude = value
        a, a_s = (lo, ls) if lo is not None and lo >= 0 else (zero, False)
        parts.append(_magnitude(a, a_s, hi, hs, limit))
    if lo is None or lo < 0 or (lo == 0 and not ls):  # texts with "-": magnitude = -value
        a, a_s = (-hi, hs) if hi is not None and hi <= 0 else (zero, False)
        b, b_s = (None, False) if lo is None else (-lo, ls)
        parts.append(seq(lit("-"), _magnitude(a, a_s, b, b_s, limit)))
    return alt(*parts)


def number_range(
    minimum=None,
    maximum=None,
    exclusive_minimum: bool = False,
    exclusive_maximum: bool = False,
    max_fraction_digits: int | None = None,
) -> Expr:
    """JSON numbers whose value lies within the bounds.

    Without bounds and fraction limit: the full JSON number syntax (exponents included). Otherwise
    plain decimals ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?`` only, every spelling of an admitted value
    (trailing zeros; ``-0``, ``-0.0`` when 0 is admitted). `max_fraction_digits` = n admits only
    values that are multiples of 10**-n (``1.230`` passes for n = 2: digits past n must be 0).
    """
    if max_fraction_digits is not None:
        if isinstance(max_fraction_digits, bool) or not isinstance(max_fraction_digits, int) or max_fraction_digits < 0:
            raise ValueError(f"max_fraction_digits must be a non-negative int, not {max_fraction_digits!r}")
        if max_fraction_digits > MAX_DIGITS:
            raise GrammarTooLargeError(f"more than {MAX_DIGITS} fraction digits")
    lo, ls, hi, hs, empty = _number_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum)
    if empty:
        return NOTHING
    if lo is None and hi is None and max_fraction_digits is None:
        return json_number()
    return _checked(_decimal_range(lo, ls, hi, hs, max_fraction_digits))


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
    t fraction digits (r = value * 10**t mod p); past n fraction digits only zeros can follow."""
    phases = n + 2 if fraction else 1
    if p * phases > MAX_TRACKER_STATES:
        raise GrammarTooLargeError(f"multipleOf needs a remainder automaton of more than {MAX_TRACKER_STATES} states")
    trans: list[list[int]] = []
    accepting: list[bool] = []
    for phase in range(phases):
        deadline.check()  # up to MAX_TRACKER_STATES rows are built here, p at a time
        t = phase - 1
        weight = pow(10, n - t if phase else n, p)
        for r in range(p):
            row = [-1] * _NSYM
            if phase == 0:
                row[_MINUS] = r
                if fraction:
                    row[_DOT] = p + r
            for d in range(10):
                if phase == 0:
                    row[_D0 + d] = (10 * r + d) % p
                elif t < n:
                    row[_D0 + d] = (phase + 1) * p + (10 * r + d) % p
                elif d == 0:
                    row[_D0] = phase * p + r
            trans.append(row + [-1])  # the last class: bytes outside _ALPHA
            accepting.append(r * weight % p == 0)
    return regular.from_table(trans, accepting, _CLASSMAP)


def _sccs_cyclic(trans: list[list[int]]) -> list[bool]:
    """For each state: does it lie on a cycle? (Kosaraju, iterative.)"""
    n = len(trans)
    succ = [sorted({t for t in row if t >= 0}) for row in trans]
    pred: list[list[int]] = [[] for _ in range(n)]
    for s in range(n):
        for t in succ[s]:
            pred[t].append(s)
    seen = [False] * n
    finish: list[int] = []
    for root in range(n):
        if seen[root]:
            continue
        seen[root] = True
        stack = [(root, iter(succ[root]))]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                finish.append(node)
            elif not seen[nxt]:
                seen[nxt] = True
                stack.append((nxt, iter(succ[nxt])))
    comp = [-1] * n
    sizes: list[int] = []
    for root in reversed(finish):
        if comp[root] >= 0:
            continue
        c = len(sizes)
        comp[root] = c
        members = [root]
        for u in members:
            for v in pred[u]:
                if comp[v] < 0:
                    comp[v] = c
                    members.append(v)
        sizes.append(len(members))
    return [sizes[comp[s]] > 1 or s in succ[s] for s in range(n)]


def _emit(trans: list[list[int]], accepting: list[bool], prefix: str) -> tuple[Expr, dict[str, Expr]]:
    """A DFA (start 0, -1 dead) as a root expression plus right-linear rules named prefix_<i>.

    States on a cycle become rules. Acyclic states are inlined into the expression that uses them,
    unless that would copy too much (the compiler inlines a non-recursive rule once per use): then
    states used from several places become rules too, each with a self-reference that can never
    be taken (``Seq((NOTHING, RuleRef(self)))``), which keeps the compiler calling them instead
    of copying them. Chains of more than _MAX_INLINE_CHAIN inlined states are cut the same way,
    which bounds the nesting depth. Every rule reference is in tail position, so the pushdown
    machine's stack never grows inside these rules."""
    if not trans:
        return NOTHING, {}
    n = len(trans)
    cyclic = _sccs_cyclic(trans)
    groups: list[list[tuple[int, list[int]]]] = []
    indeg = [0] * n
    for s in range(n):
        by_target: dict[int, list[int]] = {}
        for c, t in enumerate(trans[s]):
            if t >= 0:
                by_target.setdefault(t, []).append(c)
        groups.append(sorted(by_target.items()))
        for t in by_target:
            indeg[t] += 1

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
    is_rule = [cyclic[s] or (shared and indeg[s] > 1) for s in range(n)]
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


def _product(range_expr: Expr, p: int, n: int, prefix: str) -> tuple[Expr, dict[str, Expr]]:
    """Texts of `range_expr` (plain decimals) whose value * 10**n is a multiple of p."""
    if range_expr == NOTHING:
        return NOTHING, {}
    ranges = regular_dfa(range_expr)
    r_trans, _ = _symbol_rows(ranges)
    if not r_trans:
        return NOTHING, {}
    fraction = any(row[_DOT] >= 0 for row in r_trans)
    both = regular.product(
        ranges,
        regular.minimal(_tracker(p, n, fraction)),
        max_states=MAX_PRODUCT_STATES,
        too_large=f"multipleOf {Decimal(p).scaleb(-n)} together with these bounds needs more than {MAX_PRODUCT_STATES} automaton states",
    )
    return _emit(*_symbol_rows(regular.minimal(both)), prefix)


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
                regular.minimal(_tracker(p, n, fraction)),
                difference=negated,
                max_states=MAX_PRODUCT_STATES,
                too_large=f"{'not ' if negated else ''}multipleOf {step} together with the other number keywords needs more than {MAX_PRODUCT_STATES} automaton states",
            )
        )
    return _emit(*_symbol_rows(dfa), prefix)


# ---- multipleOf ------------------------------------------------------------------------------------


def _step(value) -> tuple[int, int]:
    """multipleOf as p / 10**n (p >= 1, n >= 0) with the same multiples among finite decimals."""
    s = _to_fraction(value, "multipleOf")
    if s is None or isinstance(s, float) or s <= 0:
        raise SchemaError(f"multipleOf must be a positive number, not {value!r}", keyword="multipleOf")
    # a decimal j*s needs the part of s's denominator coprime to 10 to divide j: drop that part
    w, twos, fives = s.denominator, 0, 0
    while w % 2 == 0:
        w //= 2
        twos += 1
    while w % 5 == 0:
        w //= 5
        fives += 1
    s *= w
    n = max(twos, fives)
    if n > MAX_DIGITS:
        raise GrammarTooLargeError(f"multipleOf {value} has more than {MAX_DIGITS} fraction digits")
    p = s * 10**n
    assert p.denominator == 1
    return int(p), n


def multiple_of_integers(
    k,
    minimum=None,
    maximum=None,
    exclusive_minimum: bool = False,
    exclusive_maximum: bool = False,
    prefix: str = "int_multiple",
) -> tuple[Expr, dict[str, Expr]]:
    """Canonical integers (as `integer_range`) within the bounds that are multiples of `k`.

    `k` may be any positive number: integers that are multiples of 2.5 are the multiples of 5,
    every integer is a multiple of 0.5. Returns (root expression, extra rules named prefix_<i>).
    Bounded ranges with at most MAX_ENUMERATED multiples are listed (no rules); otherwise the
    range automaton is intersected with a remainder automaton (k up to MAX_MODULUS), and
    GrammarTooLargeError is raised when that would get too big."""
    p, n = _step(k)
    modulus = p // math.gcd(p, 10**n)
    lo, hi, empty = _int_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum)
    if empty:
        return NOTHING, {}
    if modulus == 1:
        return _checked(_int_range_expr(lo, hi)), {}
    if lo is not None and hi is not None:
        first = -(-lo // modulus)
        last = hi // modulus
        if last - first + 1 <= MAX_ENUMERATED:
            return _alternatives([lit(str(j * modulus)) for j in range(first, last + 1)]), {}
    if modulus > MAX_MODULUS:
        raise GrammarTooLargeError(
            f"multipleOf {k} on integers needs a remainder automaton with {modulus} states (at most {MAX_MODULUS})"
        )
    return _product(_checked(_int_range_expr(lo, hi)), modulus, 0, prefix)


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


def _value_texts(v: Fraction) -> Expr:
    """Every plain decimal spelling of the value v."""
    ip, fd = _decimal_parts(abs(v))
    sign = opt(lit("-")) if v == 0 else (lit("-") if v < 0 else EMPTY)
    if fd:
        return seq(sign, lit(f"{ip}.{fd}"), repeat(ZERO))
    return seq(sign, lit(str(ip)), opt(seq(lit("."), repeat(ZERO, 1))))


def multiple_of_numbers(
    step,
    minimum=None,
    maximum=None,
    exclusive_minimum: bool = False,
    exclusive_maximum: bool = False,
    prefix: str = "num_multiple",
) -> tuple[Expr, dict[str, Expr]]:
    """Plain decimals (as `number_range` with bounds) within the bounds whose value is a multiple of `step`.

    A step of 10**-n needs no rules (`number_range(..., max_fraction_digits=n)`). Other steps
    (0.5, 0.3, 2.5, 7, ...) list the values when the bounds leave at most MAX_ENUMERATED of them,
    and otherwise intersect with a remainder automaton (step = p / 10**n with p up to
    MAX_MODULUS). Returns (root expression, extra rules named prefix_<i>)."""
    p, n = _step(step)
    lo, ls, hi, hs, empty = _number_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum)
    if empty:
        return NOTHING, {}
    if p == 1:
        return _checked(_decimal_range(lo, ls, hi, hs, n)), {}
    s = Fraction(p, 10**n)
    if lo is not None and hi is not None:
        first = math.floor(lo / s) + 1 if ls else math.ceil(lo / s)
        last = math.ceil(hi / s) - 1 if hs else math.floor(hi / s)
        if last - first + 1 <= MAX_ENUMERATED:
            return _alternatives([_value_texts(j * s) for j in range(first, last + 1)]), {}
    if p > MAX_MODULUS:
        raise GrammarTooLargeError(f"multipleOf {step} needs a remainder automaton with {p} states (at most {MAX_MODULUS})")
    return _product(_checked(_decimal_range(lo, ls, hi, hs, n)), p, n, prefix)
