"""Number emission: a numeric subschema (`NumberConstraints`) as an exact language of JSON number texts.

Ranges come from `numbers`, multipleOf and `not multipleOf` from the remainder automata of
`multiple_of`; excluded values (``not: {const: 3}``) are differences with their spellings. Which
spellings are admitted follows `JsonStyle.numbers` (every spelling, or the canonical one)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

from strictgen.errors import CompileTimeoutError, GrammarTooLargeError
from strictgen.lru import BoundedLRU

from ..ir import NOTHING, Expr, alt, difference, intersect, lit, opt, repeat, seq
from ..json_value import CANONICAL_NUMBER, DIGIT, NONZERO, json_integer
from ..multiple_of import Multiples, integer_multiples, number_multiples, residue_filter, unbounded_product
from ..numbers import ZERO_FRACTION, integer_range, number_range, number_spellings
from .ir import NumberConstraints, keyword_pointer
from .kept_pieces import kept

if TYPE_CHECKING:
    from .emitter import SchemaEmitter

__all__ = ["emit_number"]

PLAIN_NUMBER = seq(json_integer(), opt(seq(lit("."), repeat(DIGIT, 1))))
NONINT_PLAIN = seq(opt(lit("-")), alt(lit("0"), seq(NONZERO, repeat(DIGIT))), lit("."), repeat(DIGIT), NONZERO, repeat(DIGIT))


def _lcm(a: Fraction, b: Fraction) -> Fraction:
    """Least common multiple of two positive rationals: the smallest positive common multiple."""
    return Fraction(math.lcm(a.numerator, b.numerator), math.gcd(a.denominator, b.denominator))


# A range without multipleOf (most numeric subschemas: `integer`, `minimum: 0`, ...) is a pure
# function of its constraints and the spelling style: no rules, no names, nothing refused. It is
# kept for the process (schema.kept_pieces: each use gets the expression a build would write;
# the ranges' digit trees were most of emit_number, in every compile and at every use); `where`
# is no part of the key (the dataclass compares without it) and no part of the language.
PLAIN_RANGES_KEPT = 512
_plain_ranges: BoundedLRU[tuple] = BoundedLRU(PLAIN_RANGES_KEPT)  # schema.kept_pieces' entries


def emit_number(em: SchemaEmitter, n: NumberConstraints) -> Expr:
    """A numeric subschema's language of JSON number texts (rules it needs go to `em`'s grammar
    through `fresh_name` and `merge_rules`; spellings follow `em.canonical_numbers`)."""
    if n.mults or n.not_mults:
        return _emit_number(em, n)
    return kept(_plain_ranges, (n, em.canonical_numbers), lambda: _emit_number(em, n))


def _emit_number(em: SchemaEmitter, n: NumberConstraints) -> Expr:
    if n.is_empty():
        return NOTHING
    mult = _multiple(n)
    excluded = _excluded(n)
    # the languages are planned first and written only when they stay: whether a remainder
    # automaton brings rules decides the route, and the residue route writes its own
    if mult is not None:
        prefix = em.fresh_name("int_mul" if n.int_only else "num_mul")
        plan = (integer_multiples if n.int_only else number_multiples)(mult, *_bounds(n))
    else:
        prefix = ""  # (a plain range has no rules to name)
        plan = Multiples(integer_range(*_bounds(n)) if n.int_only else _plain_range(n))
    not_mults = []
    for m in n.not_mults:
        not_prefix = em.fresh_name("not_mul")
        try:
            if unbounded_product(m, *_bounds(n)):
                break  # rules, or too large: the residue route either way
            mplan = number_multiples(m, *_bounds(n))
        except CompileTimeoutError:
            raise
        except GrammarTooLargeError:
            break  # _number_residues refuses it, naming the keyword
        if mplan.needs_rules():
            break
        not_mults.append(mplan.emit(not_prefix)[0])
    canonical = em.canonical_numbers and not n.int_only
    has_rules = plan.needs_rules()
    if has_rules and (n.nonint or excluded or n.not_mults or canonical) or len(not_mults) < len(n.not_mults):
        # a remainder automaton meets a difference or intersection (the canonical spelling's
        # too: it leaves out -0): build it on the DFAs
        return _number_residues(em, n, mult, excluded)
    expr, rules = plan.emit(prefix)
    em.merge_rules(rules)
    if n.int_only:
        expr = _integer_spellings(em, n, expr)
    elif n.nonint:
        expr = intersect(expr, NONINT_PLAIN)
    for mexpr in not_mults:
        expr = difference(expr, mexpr)
    if excluded:
        expr = difference(expr, alt(*(number_spellings(x) for x in excluded)))
    if canonical:  # (rules is empty here)
        expr = intersect(expr, CANONICAL_NUMBER)
    return expr


def _number_residues(em: SchemaEmitter, n: NumberConstraints, mult: Fraction | None, excluded: list) -> Expr:
    """`number` when multipleOf (or `not multipleOf`) needs a remainder automaton and is combined
    with a difference or an intersection: the rest is one regular language of plain decimals,
    which `residue_filter` multiplies with the remainder automata (their complements for
    `not multipleOf`)."""
    if n.int_only:
        base = _integer_spellings(em, n, integer_range(*_bounds(n)))
    else:
        base = _plain_range(n)
        if n.nonint:
            base = intersect(base, NONINT_PLAIN)
    if excluded:
        base = difference(base, alt(*(number_spellings(x) for x in excluded)))
    if em.canonical_numbers and not n.int_only:
        base = intersect(base, CANONICAL_NUMBER)
    keep = [mult] if mult is not None else []
    prefix = em.fresh_name("num_res")
    try:
        expr, rules = residue_filter(base, keep, n.not_mults, prefix=prefix)
    except CompileTimeoutError:
        raise
    except GrammarTooLargeError as e:
        if not n.not_mults:
            raise
        # a step too big for a remainder automaton (or too big a product): refused, or dropped
        em.reporter.refuse(f"'not multipleOf' cannot be enforced here: {e}", "multipleOf", keyword_pointer(n, "multipleOf"))
        expr, rules = residue_filter(base, keep, (), prefix=prefix)
    em.merge_rules(rules)
    return expr


def _plain_range(n: NumberConstraints) -> Expr:
    """The numbers within n's bounds, as plain decimals once anything else constrains them."""
    if n.lo is None and n.hi is None and (n.nonint or n.excluded or n.not_mults):
        return PLAIN_NUMBER
    return number_range(*_bounds(n))


def _integer_spellings(em: SchemaEmitter, n: NumberConstraints, expr: Expr) -> Expr:
    """Canonical integer texts `expr` with every other spelling a validator accepts (`12.0`,
    `-0` when 0 is admitted), unless numbers are canonical."""
    if em.canonical_numbers:
        return expr
    zero_ok = NumberConstraints(int_only=True, lo=n.lo, lo_strict=n.lo_strict, hi=n.hi, hi_strict=n.hi_strict).contains(Fraction(0))
    expr = seq(expr, ZERO_FRACTION)
    return alt(expr, seq(lit("-0"), ZERO_FRACTION)) if zero_ok else expr


def _multiple(n: NumberConstraints) -> Fraction | None:
    mult = None
    for m in n.mults:
        mult = m if mult is None else _lcm(mult, m)
    return mult


def _excluded(n: NumberConstraints) -> list:
    """The excluded values inside n's range that no `not multipleOf` excludes already."""
    base = NumberConstraints(n.int_only, n.nonint, n.lo, n.lo_strict, n.hi, n.hi_strict, n.mults)
    return sorted(x for x in n.excluded if base.contains(x) and not any((x / m).denominator == 1 for m in n.not_mults))


def _bounds(n: NumberConstraints):
    return n.lo, n.hi, n.lo_strict, n.hi_strict
