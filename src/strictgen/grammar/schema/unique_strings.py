"""Counting the strings of a regular language that a JSON string's text so far can still become
(uniqueItems over strings of a language that can run out: maxLength, `^#[0-9a-f]{6}$`, an enum
beside a pattern). schema/unique.py puts the language's atoms in the array's spec; the matcher
(compile/unique_items.py) refuses a byte once every string it leaves possible is an item already.

The language's minimal DFA is over raw UTF-8, so `counts[q]` (the strings accepted from state q;
None when a cycle is reachable) is a sum over its states in peeling order. The text's complete
characters step the DFA; an unfinished tail is either part of a UTF-8 sequence (stepped too: the
strings from a mid-character state) or part of an escape, which leaves a range of code points
(``\\u00`` any of U+0000..U+00FF, a high surrogate the 1,024 characters above U+FFFF it starts),
counted by walking the UTF-8 bytes of that range through the DFA, dead branches pruned, stopping
once the count passes what could matter.
"""

from __future__ import annotations

import functools
import json

import numpy as np

from ..automata import regular_dfa
from ..ir import alt, literal_trie
from .strings import string_language
from .ir import AmongStrings, Format, Length, Matches, NotAll

__all__ = ["StringCounter", "atoms_from_json", "atoms_to_json", "escape_ranges"]

_LEADS = [(0x00, 0x7F, 1, 0x7F), (0xC2, 0xDF, 2, 0x1F), (0xE0, 0xEF, 3, 0x0F), (0xF0, 0xF4, 4, 0x07)]


def atoms_to_json(atoms: tuple) -> list:
    """A conjunction of string atoms (schema.ir) as JSON, for an array rule's name."""
    out = []
    for a in atoms:
        if isinstance(a, Length):
            out.append({"len": [a.lo, a.hi]})
        elif isinstance(a, Matches):
            out.append({"re": a.pattern})
        elif isinstance(a, Format):
            out.append({"fmt": a.name})
        elif isinstance(a, AmongStrings):
            out.append({"in": sorted(a.values)})
        elif isinstance(a, NotAll):
            out.append({"not": atoms_to_json(a.atoms)})
        else:
            raise TypeError(f"not a string atom: {a!r}")
    return out


def atoms_from_json(data: list) -> tuple:
    """atoms_to_json's inverse."""
    out = []
    for d in data:
        (kind, v), = d.items()
        if kind == "len":
            out.append(Length(v[0], v[1]))
        elif kind == "re":
            out.append(Matches(v))
        elif kind == "fmt":
            out.append(Format(v))
        elif kind == "in":
            out.append(AmongStrings(frozenset(v)))
        else:
            out.append(NotAll(atoms_from_json(v)))
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _counter(key: str) -> "StringCounter":
    clauses, strings = json.loads(key)
    parts = [string_language(atoms_from_json(a)) for a in clauses]
    if strings:
        parts.append(literal_trie(strings))
    return StringCounter(regular_dfa(alt(*parts)))


class StringCounter:
    """A string language's DFA with the number of strings accepted from each state."""

    @classmethod
    def of(cls, clauses: list, strings: list) -> "StringCounter":
        return _counter(json.dumps([clauses, strings], sort_keys=True))

    def __init__(self, dfa):
        self.dfa = dfa
        n = dfa.num_states
        table = np.frombuffer(dfa.table256(), dtype=np.int32).reshape(n, 256).tolist()
        acc = dfa.accepting()
        self.accepting = [bool(acc[s]) for s in range(n)]
        back: list[list[int]] = [[] for _ in range(n)]
        for s in range(n):
            for t in set(table[s]):
                if t >= 0:
                    back[t].append(s)
        live, todo = {s for s in range(n) if acc[s]}, [s for s in range(n) if acc[s]]
        while todo:
            for p in back[todo.pop()]:
                if p not in live:
                    live.add(p)
                    todo.append(p)
        self.table = [[t if t in live else -1 for t in row] for row in table]  # dead states cut off
        succ = [[t for t in row if t >= 0] for row in self.table]
        pred: list[list[int]] = [[] for _ in range(n)]
        for s in range(n):
            for t in set(succ[s]):
                pred[t].append(s)
        out = [len(set(s)) for s in succ]
        todo = [s for s in range(n) if out[s] == 0]
        order: list[int] = []
        while todo:
            s = todo.pop()
            order.append(s)
            for p in pred[s]:
                out[p] -= 1
                if out[p] == 0:
                    todo.append(p)
        self.counts: list[int | None] = [None] * n
        for s in order:  # every successor comes earlier
            self.counts[s] = int(self.accepting[s]) + sum(self.counts[t] for t in succ[s])
        self.dead = 0 not in live

    def total(self) -> int | None:
        return 0 if self.dead else self.counts[0]

    def walk(self, data: bytes, state: int = 0) -> int:
        for b in data:
            if state < 0:
                return -1
            state = self.table[state][b]
        return state

    def accepts(self, text: str) -> bool:
        s = self.walk(text.encode("utf-8", "surrogatepass"))
        return s >= 0 and self.accepting[s]

    def count(self, state: int, lo: int = 0, hi: int = 0x10FFFF, cap: int = 0) -> int | None:
        """Strings from `state` whose first character is in [lo, hi] (None: infinitely many),
        exact up to `cap` (past it the walk stops and returns something larger)."""
        row = self.table[state]
        leads = ((row[b], (b & bits) << 6 * (size - 1), 6 * (size - 1)) for first, last, size, bits in _LEADS for b in range(first, last + 1))
        return self._total(leads, lo, hi, cap)

    def _rest(self, state: int, base: int, shift: int, lo: int, hi: int, cap: int) -> int | None:
        """The strings from `state`, inside a character of code point bits `base` with `shift`
        bits to come: 0 when that character cannot be in [lo, hi]."""
        if base > hi or base + (1 << shift) - 1 < lo:
            return 0
        if shift == 0:
            return self.counts[state]
        row, shift = self.table[state], shift - 6
        return self._total(((row[b], base | ((b & 0x3F) << shift), shift) for b in range(0x80, 0xC0)), lo, hi, cap)

    def _total(self, branches, lo: int, hi: int, cap: int) -> int | None:
        total = 0
        for state, base, shift in branches:
            if state < 0:
                continue
            got = self._rest(state, base, shift, lo, hi, cap - total)
            if got is None:
                return None
            total += got
            if total > cap:
                break
        return total


def escape_ranges(tail: str) -> list[tuple[int, int]]:
    """The code points an unfinished escape (lowercased, from its backslash) can still spell."""
    if tail in ("\\", "\\u"):
        return [(0, 0x10FFFF)]
    digits = tail[2:6]
    if len(digits) < 4:
        free = 4 * (4 - len(digits))
        lo = int(digits, 16) << free if digits else 0
        hi = lo + (1 << free) - 1
        out = [(lo, hi)]  # surrogates in it spell nothing raw (no UTF-8 for them); high ones start:
        a, b = max(lo, 0xD800), min(hi, 0xDBFF)
        if a <= b:
            out.append((0x10000 + (a - 0xD800) * 1024, 0x10000 + (b - 0xD800) * 1024 + 1023))
        return out
    base = 0x10000 + (int(digits, 16) - 0xD800) * 1024  # a high surrogate, its low half to come
    low = tail[8:12] if tail[6:8] == "\\u" else ""
    free = 4 * (4 - len(low))
    lo = int(low, 16) << free if low else 0
    lo, hi = max(lo, 0xDC00), min(lo + (1 << free) - 1, 0xDFFF)
    return [(base + lo - 0xDC00, base + hi - 0xDC00)] if lo <= hi else []
