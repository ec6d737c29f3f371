"""Exact JSON number languages for the range keywords of JSON Schema.

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
* `number_spellings` -- every plain decimal spelling of one value (enum/const numbers, listed
  multiples).

``multipleOf`` (remainder automata multiplied with these ranges) lives in `multiple_of`.

Bounds may be ints, floats (read as ``Decimal(str(x))``: the JSON text they came from), Decimals or
Fractions. Sizes past the limits raise GrammarTooLargeError; nothing is ever approximated.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

from strictgen.errors import GrammarTooLargeError, SchemaError

from .ir import (
    EMPTY,
    NOTHING,
    Alt,
    ByteSet,
    Expr,
    Repeat,
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
    "ZERO_FRACTION",
    "bound_fraction",
    "check_nesting",
    "decimal_places",
    "decimal_scale",
    "decimal_texts",
    "int_bounds",
    "integer_range",
    "integer_texts",
    "number_bounds",
    "number_range",
    "number_spellings",
]

MAX_DIGITS = 400  # digits of a bound (integer part or fraction); covers every float
MAX_NESTING = 150  # IR nesting depth of a result (recursive passes over the IR must stay safe)

DIGIT = ByteSet(((0x30, 0x39),))
NONZERO = ByteSet(((0x31, 0x39),))
ZERO = lit("0")
ZERO_FRACTION = opt(seq(lit("."), repeat(ZERO, 1)))  # "", ".0", ".00", ...


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


def bound_fraction(value, keyword: str) -> Fraction | float | None:
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


def int_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum) -> tuple[int | None, int | None, bool]:
    """(lowest integer, highest integer, empty) admitted by the bounds; None = unbounded."""
    _check_flags(exclusive_minimum, exclusive_maximum)
    lo_f = bound_fraction(minimum, "minimum")
    hi_f = bound_fraction(maximum, "maximum")
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


def decimal_scale(denominator: int) -> tuple[int, int]:
    """(the part of `denominator` coprime to 10, the fraction digits its factors 2 and 5 need):
    a fraction is a finite decimal iff the first is 1."""
    d, twos, fives = denominator, 0, 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    return d, max(twos, fives)


def decimal_places(x: Fraction) -> int | None:
    """How many fraction digits x needs in plain decimal notation; None if x is no finite decimal."""
    rest, places = decimal_scale(x.denominator)
    return places if rest == 1 else None


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




def number_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum):
    """(lo, lo_strict, hi, hi_strict, empty) with Fraction or None bounds."""
    _check_flags(exclusive_minimum, exclusive_maximum)
    lo = bound_fraction(minimum, "minimum")
    hi = bound_fraction(maximum, "maximum")
    empty = False
    ls, hs = bool(exclusive_minimum), bool(exclusive_maximum)
    if isinstance(lo, float):
        empty |= lo > 0
        lo, ls = None, False
    if isinstance(hi, float):
        empty |= hi < 0
        hi, hs = None, False
    for value, keyword in ((lo, "minimum"), (hi, "maximum")):
        if value is not None and decimal_places(value) is None:
            raise SchemaError(f"{keyword} must be a finite decimal number, not {value}", keyword=keyword)
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (ls or hs))):
        empty = True
    return lo, ls, hi, hs, empty


def check_nesting(expr: Expr) -> Expr:
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


def integer_texts(lo: int | None, hi: int | None) -> Expr:
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
    lo, hi, empty = int_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum)
    if empty:
        return NOTHING
    return check_nesting(integer_texts(lo, hi))


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


def decimal_texts(lo, ls: bool, hi, hs: bool, limit: int | None) -> Expr:
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
    lo, ls, hi, hs, empty = number_bounds(minimum, maximum, exclusive_minimum, exclusive_maximum)
    if empty:
        return NOTHING
    if lo is None and hi is None and max_fraction_digits is None:
        return json_number()
    return check_nesting(decimal_texts(lo, ls, hi, hs, max_fraction_digits))


# ---- one value ------------------------------------------------------------------------------------


def _decimal_text(x: Fraction) -> str | None:
    """The shortest plain decimal text of x, None if x is not a finite decimal."""
    k = decimal_places(x)
    if k is None:
        return None
    sign = "-" if x < 0 else ""
    m = abs(x) * 10**k
    digits = str(m.numerator)
    if k == 0:
        return sign + digits
    digits = digits.rjust(k + 1, "0")
    return sign + digits[:-k] + "." + digits[-k:]


def number_spellings(x: Fraction) -> Expr:
    """Every plain decimal spelling of the value x (trailing zeros; -0 for zero); NOTHING if x
    is not a finite decimal."""
    text = _decimal_text(x)
    if text is None:
        return NOTHING
    if x == 0:
        return seq(opt(lit("-")), ZERO, ZERO_FRACTION)
    if "." in text:
        return seq(lit(text), repeat(ZERO))
    return seq(lit(text), ZERO_FRACTION)
