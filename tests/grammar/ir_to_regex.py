"""Test helper: a grammar IR without recursion -> a Python `re` pattern over bytes.

Used to check the language a front end produces while the real matching engine is elsewhere:

    pattern = grammar_to_regex(parse_gbnf('root ::= "a" [0-9]{2,3}'))
    assert pattern.fullmatch(b"a12")

* Rule references are inlined; a recursive grammar raises `RecursionInGrammar`.
* Literal -> escaped bytes; ByteSet -> a byte class; CharSet -> the alternatives of its UTF-8
  byte-range sequences (`utf8_sequences`, written here independently of the engine's);
  Seq/Alt/Repeat -> the obvious regex constructs; Alt(()) -> `(?!)` (matches nothing).
"""

from __future__ import annotations

import re

from strictgen.grammar.ir import Alt, ByteSet, CharSet, Expr, Grammar, Literal, Repeat, RuleRef, Seq
from tests.reference import utf8_sequences

__all__ = ["RecursionInGrammar", "utf8_sequences", "inline_rules", "expr_to_regex", "grammar_to_regex"]

_SURROGATE_LO, _SURROGATE_HI = 0xD800, 0xDFFF


class RecursionInGrammar(ValueError):
    """The grammar is recursive, so it has no regex."""


def _utf8(cp: int) -> bytes:
    return chr(cp).encode("utf-8")


def _byte_class(ranges) -> bytes:
    parts = []
    for a, b in ranges:
        parts.append(b"\\x%02x" % a if a == b else b"\\x%02x-\\x%02x" % (a, b))
    return b"[" + b"".join(parts) + b"]"


def inline_rules(grammar: Grammar) -> Expr:
    """The root expression with every rule reference replaced by its rule (non-recursive only)."""
    done: dict[str, Expr] = {}

    def sub(expr: Expr, active: tuple[str, ...]) -> Expr:
        if isinstance(expr, RuleRef):
            if expr.name in active:
                raise RecursionInGrammar(f"rule {expr.name!r} is recursive")
            if expr.name not in done:
                done[expr.name] = sub(grammar.rules[expr.name], active + (expr.name,))
            return done[expr.name]
        if isinstance(expr, Seq):
            return Seq(tuple(sub(e, active) for e in expr.items))
        if isinstance(expr, Alt):
            return Alt(tuple(sub(e, active) for e in expr.items))
        if isinstance(expr, Repeat):
            return Repeat(sub(expr.item, active), expr.min, expr.max)
        return expr

    return sub(RuleRef(grammar.root), ())


def expr_to_regex(expr: Expr) -> bytes:
    """A bytes regex source for an expression without rule references."""
    if isinstance(expr, Literal):
        return re.escape(expr.data)
    if isinstance(expr, ByteSet):
        return _byte_class(expr.ranges) if expr.ranges else b"(?!)"
    if isinstance(expr, CharSet):
        alts = [
            b"".join(_byte_class((r,)) for r in sequence)
            for lo, hi in expr.ranges
            for sequence in utf8_sequences(lo, hi)
        ]
        return b"(?:" + b"|".join(alts) + b")" if alts else b"(?!)"
    if isinstance(expr, Seq):
        return b"(?:" + b"".join(expr_to_regex(e) for e in expr.items) + b")"
    if isinstance(expr, Alt):
        if not expr.items:
            return b"(?!)"
        return b"(?:" + b"|".join(expr_to_regex(e) for e in expr.items) + b")"
    if isinstance(expr, Repeat):
        hi = b"" if expr.max is None else str(expr.max).encode()
        return b"(?:" + expr_to_regex(expr.item) + b"){%d,%s}" % (expr.min, hi)
    if isinstance(expr, RuleRef):
        raise ValueError("inline rule references first (inline_rules)")
    raise TypeError(f"not an IR expression: {expr!r}")


def grammar_to_regex(grammar: Grammar) -> re.Pattern[bytes]:
    """A compiled bytes pattern; use `.fullmatch(data)` for membership."""
    return re.compile(expr_to_regex(inline_rules(grammar)), re.DOTALL)
