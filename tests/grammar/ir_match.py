"""Test-only helpers: decide membership in, and draw members of, a RuleRef-free IR expression.

`matches` is a direct interpreter of the IR's definition: `_ends(expr, data, pos)` is the set of
positions where a match of `expr` starting at `pos` can end. Memoised by (node, position), so it is
polynomial (no backtracking blow-up) and needs no regex engine. `to_python_regex` is a second,
independent route (IR -> Python `re` over decoded text) used to cross-check the interpreter.
`sample` draws random members, used to compare against other oracles in both directions.
"""

from __future__ import annotations

import random
import re

from strictgen.grammar.ir import (
    Alt,
    ByteSet,
    CharSet,
    Expr,
    Literal,
    Repeat,
    RuleRef,
    Seq,
)

__all__ = ["NoSample", "matches", "sample", "to_python_regex"]


def _in_ranges(value: int, ranges) -> bool:
    return any(lo <= value <= hi for lo, hi in ranges)


def _decode_one(data: bytes, pos: int) -> tuple[int, int] | None:
    """The code point of the one well-formed UTF-8 character at `pos`, and its length."""
    for length in (1, 2, 3, 4):
        chunk = data[pos : pos + length]
        if len(chunk) < length:
            return None
        try:
            text = chunk.decode("utf-8")  # strict: rejects overlongs, surrogates, truncation
        except UnicodeDecodeError:
            continue
        if len(text) == 1:
            return ord(text), length
        return None
    return None


class _Matcher:
    def __init__(self, data: bytes):
        self.data = data
        self.memo: dict[tuple[int, int], frozenset[int]] = {}
        self.keep: list[Expr] = []  # keeps memo keys (ids) alive

    def ends(self, expr: Expr, pos: int) -> frozenset[int]:
        key = (id(expr), pos)
        got = self.memo.get(key)
        if got is None:
            self.keep.append(expr)
            got = self.memo[key] = frozenset(self._ends(expr, pos))
        return got

    def step(self, expr: Expr, positions) -> set[int]:
        out: set[int] = set()
        for pos in positions:
            out |= self.ends(expr, pos)
        return out

    def _ends(self, expr: Expr, pos: int):
        data = self.data
        if isinstance(expr, Literal):
            return {pos + len(expr.data)} if data.startswith(expr.data, pos) else set()
        if isinstance(expr, ByteSet):
            return {pos + 1} if pos < len(data) and _in_ranges(data[pos], expr.ranges) else set()
        if isinstance(expr, CharSet):
            got = _decode_one(data, pos)
            if got is None or not _in_ranges(got[0], expr.ranges):
                return set()
            return {pos + got[1]}
        if isinstance(expr, Seq):
            current = {pos}
            for item in expr.items:
                current = self.step(item, current)
                if not current:
                    break
            return current
        if isinstance(expr, Alt):
            return self.step_all(expr.items, pos)
        if isinstance(expr, Repeat):
            return self.repeat(expr, pos)
        if isinstance(expr, RuleRef):
            raise TypeError("ir_match does not handle RuleRef")
        raise TypeError(f"not an IR expression: {expr!r}")

    def step_all(self, items, pos: int) -> set[int]:
        out: set[int] = set()
        for item in items:
            out |= self.ends(item, pos)
        return out

    def repeat(self, expr: Repeat, pos: int) -> set[int]:
        # Exactly `min` iterations first (S_k = positions after k iterations; once S_k == S_(k-1)
        # it stays fixed), then either a bounded number more or the closure for max=None.
        current = {pos}
        k = 0
        while k < expr.min:
            nxt = self.step(expr.item, current)
            k += 1
            if nxt == current or not nxt:
                current = nxt
                break
            current = nxt
        result = set(current)
        if expr.max is None:
            frontier = set(current)
            while frontier:
                frontier = self.step(expr.item, frontier) - result
                result |= frontier
            return result
        while k < expr.max and current:
            current = self.step(expr.item, current)
            k += 1
            if current <= result:
                break  # nothing new can ever appear
            result |= current
        return result


def matches(expr: Expr, text: str | bytes) -> bool:
    """Whether the whole of `text` (str is UTF-8 encoded) is in the language of `expr`."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    return len(data) in _Matcher(data).ends(expr, 0)


# ---- a second route: Python `re` over text ----------------------------------------------------


def _class_char(cp: int) -> str:
    return f"\\U{cp:08x}"


def to_python_regex(expr: Expr) -> str:
    """A Python `re` pattern (over str, use with fullmatch) for an IR whose pieces are whole chars."""
    if isinstance(expr, Literal):
        return re.escape(expr.data.decode("utf-8"))
    if isinstance(expr, (ByteSet, CharSet)):
        if isinstance(expr, ByteSet) and expr.ranges and expr.ranges[-1][1] >= 0x80:
            raise ValueError("ByteSet beyond ASCII is not expressible over text")
        if not expr.ranges:
            return "(?!)"
        body = "".join(
            _class_char(lo) if lo == hi else f"{_class_char(lo)}-{_class_char(hi)}" for lo, hi in expr.ranges
        )
        return f"[{body}]"
    if isinstance(expr, Seq):
        return "".join(f"(?:{to_python_regex(item)})" for item in expr.items)
    if isinstance(expr, Alt):
        if not expr.items:
            return "(?!)"
        return "|".join(f"(?:{to_python_regex(item)})" for item in expr.items)
    if isinstance(expr, Repeat):
        hi = "" if expr.max is None else str(expr.max)
        return f"(?:{to_python_regex(expr.item)}){{{expr.min},{hi}}}"
    raise ValueError(f"cannot translate {type(expr).__name__}")


# ---- random members ---------------------------------------------------------------------------


class NoSample(Exception):
    """The drawn branch matches nothing."""


def _pick_cp(ranges, rng: random.Random) -> int:
    for _ in range(100):
        lo, hi = rng.choice(ranges)
        cp = rng.randint(lo, hi) if rng.random() < 0.7 else rng.choice((lo, hi))
        if not 0xD800 <= cp <= 0xDFFF:
            return cp
    raise NoSample


def sample(expr: Expr, rng: random.Random, extra: int = 3) -> bytes:
    """A random member of the language of `expr`; raises NoSample when the draw hits Alt(())."""
    if isinstance(expr, Literal):
        return expr.data
    if isinstance(expr, ByteSet):
        if not expr.ranges:
            raise NoSample
        return bytes([_pick_cp(expr.ranges, rng)])
    if isinstance(expr, CharSet):
        if not expr.ranges:
            raise NoSample
        return chr(_pick_cp(expr.ranges, rng)).encode("utf-8")
    if isinstance(expr, Seq):
        return b"".join(sample(item, rng, extra) for item in expr.items)
    if isinstance(expr, Alt):
        if not expr.items:
            raise NoSample
        return sample(rng.choice(expr.items), rng, extra)
    if isinstance(expr, Repeat):
        hi = expr.min + extra if expr.max is None else min(expr.max, expr.min + extra)
        count = rng.randint(expr.min, hi)
        return b"".join(sample(expr.item, rng, extra) for _ in range(count))
    raise ValueError(f"cannot sample {type(expr).__name__}")
