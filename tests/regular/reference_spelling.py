"""The JSON spellings of a string DFA, in plain Python: the slow, obvious reference that the
core's `regular.json_spellings` (C) is checked against (tests/regular/test_spelling.py). It was
the implementation before the C one; it builds the same construction with dicts and tuples."""

from __future__ import annotations

import numpy as np

SHORT_ESCAPES = {0x22: '"', 0x5C: "\\", 0x2F: "/", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}
_RAW_FORBIDDEN = list(range(0x20)) + [0x22, 0x5C]  # bytes JSON never writes raw inside a string
SPELL_ALL_STATES = 8_000  # raw automata up to this size get every spelling of every character
SPELLED_FACTOR = 8  # ... unless their spellings need more than this many times their states
_NOT_PLAIN = ((0, 0x1F), (0x22, 0x22), (0x5C, 0x5C), (0x7F, 0x10FFFF))  # escaped even when plain ASCII is not
_HEX = [[ord(c) for c in {f"{d:x}", f"{d:X}"}] for d in range(16)]
_LEADS = ((0xC2, 0xDF, 1, 0x1F), (0xE0, 0xEF, 2, 0x0F), (0xF0, 0xF4, 3, 0x07))  # lead bytes, continuations, payload mask


def _merge(runs: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    for lo, hi, t in runs:
        if out and out[-1][2] == t and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi, t)
        else:
            out.append((lo, hi, t))
    return out


class _Spelling:
    def __init__(self, rows: list[list[int]], accepting: list[bool], max_states: int, all_spellings: bool):
        self.all = all_spellings
        self.raw = rows
        self.rows: list[list[int]] = []
        self.accepting = list(accepting)
        self.max_states = max_states
        self._cont: dict[tuple[int, int], list] = {}
        self._tries: dict[tuple, int] = {}
        self._pairs: dict[tuple, int] = {}

    def new(self) -> int:
        if len(self.rows) >= self.max_states:
            raise TooLarge
        self.rows.append([-1] * 256)
        self.accepting.append(False)
        return len(self.rows) - 1

    def continuations(self, state: int, k: int) -> list[tuple[int, int, int]]:
        """(payload lo, payload hi, target) for the k continuation bytes read from `state`."""
        key = (state, k)
        got = self._cont.get(key)
        if got is None:
            runs: list[tuple[int, int, int]] = []
            row = self.raw[state]
            p = 64 ** (k - 1)
            for c in range(64):
                t = row[0x80 + c]
                if t < 0:
                    continue
                if k == 1:
                    runs.append((c, c, t))
                else:
                    runs.extend((c * p + lo, c * p + hi, tt) for lo, hi, tt in self.continuations(t, k - 1))
            got = self._cont[key] = _merge(runs)
        return got

    def characters(self, state: int) -> list[tuple[int, int, int]]:
        """(code point lo, hi, target) for the whole characters read from a character-boundary state."""
        row = self.raw[state]
        runs = [(b, b, row[b]) for b in range(0x80) if row[b] >= 0]
        for first, last, k, mask in _LEADS:
            for b in range(first, last + 1):
                if row[b] >= 0:
                    base = (b & mask) << (6 * k)
                    runs.extend((base + lo, base + hi, t) for lo, hi, t in self.continuations(row[b], k))
        return _merge(runs)

    def trie(self, sig: tuple, width: int) -> int:
        """The state reading `width` hex digits, then going where `sig` ((lo, hi, cont), disjoint
        value ranges) sends their value: cont is a state, or ("pair", low sig) for a high surrogate."""
        if width == 0:
            (_, _, cont), = sig
            return cont if isinstance(cont, int) else self.pair(cont[1])
        key = (sig, width)
        got = self._tries.get(key)
        if got is None:
            got = self._tries[key] = self.new()
            p = 16 ** (width - 1)
            for d in range(16):
                base, top = d * p, d * p + p - 1
                sub = tuple((max(lo, base) - base, min(hi, top) - base, c) for lo, hi, c in sig if lo <= top and hi >= base)
                if sub:
                    child = self.trie(sub, width - 1)
                    for b in _HEX[d]:
                        self.rows[got][b] = child
        return got

    def pair(self, low_sig: tuple) -> int:
        """After a high surrogate: `\\u` and a low surrogate."""
        got = self._pairs.get(low_sig)
        if got is None:
            got = self._pairs[low_sig] = self.new()
            u = self.new()
            self.rows[got][0x5C] = u
            self.rows[u][ord("u")] = self.trie(low_sig, 4)
        return got

    def escapes(self, chars: list[tuple[int, int, int]]) -> int | None:
        """The state after a backslash, for a state whose characters are `chars`."""
        if not self.all:  # printable ASCII other than '"' and '\\' only raw
            chars = [(max(lo, a), min(hi, b), t) for lo, hi, t in chars for a, b in _NOT_PLAIN if max(lo, a) <= min(hi, b)]
        sig: list = []
        for lo, hi, t in chars:
            for a, b in ((lo, min(hi, 0xD7FF)), (max(lo, 0xE000), min(hi, 0xFFFF))):
                if a <= b:
                    sig.append((a, b, t))
            if hi >= 0x10000:
                _pairs_of(max(lo, 0x10000) - 0x10000, hi - 0x10000, t, sig)
        sig.sort(key=lambda r: r[0])
        short = []
        for cp, letter in SHORT_ESCAPES.items():
            t = _target(chars, cp)
            if t is not None:
                short.append((ord(letter), t))
        if not sig and not short:
            return None
        e = self.new()
        for b, t in short:
            self.rows[e][b] = t
        if sig:
            self.rows[e][ord("u")] = self.trie(tuple(sig), 4)
        return e


def _pairs_of(lo: int, hi: int, t: int, sig: list) -> None:
    """Append to `sig` the high-surrogate ranges spelling the offsets lo..hi above U+10000, each
    continuing with its low surrogates; whole blocks of 1024 with one target share one range."""
    while lo <= hi:
        high, first = divmod(lo, 0x400)
        if first == 0 and hi - lo >= 0x3FF:  # whole blocks
            n = (hi - lo + 1) // 0x400
            entry = (0xD800 + high, 0xD800 + high + n - 1, ("pair", ((0xDC00, 0xDFFF, t),)))
            lo += n * 0x400
        else:
            last = min(hi, high * 0x400 + 0x3FF) - high * 0x400
            entry = (0xD800 + high, 0xD800 + high, ("pair", ((0xDC00 + first, 0xDC00 + last, t),)))
            lo = high * 0x400 + last + 1
        prev = sig[-1] if sig else None
        if prev is not None and prev[1] + 1 == entry[0] and prev[2] == entry[2]:
            sig[-1] = (prev[0], entry[1], entry[2])
        elif prev is not None and prev[0] == entry[0] == prev[1] == entry[1]:  # same high, more lows
            sig[-1] = (prev[0], prev[1], ("pair", tuple(_merge(list(prev[2][1] + entry[2][1])))))
        else:
            sig.append(entry)


def _target(chars, cp: int) -> int | None:
    for lo, hi, t in chars:
        if lo <= cp <= hi:
            return t
    return None


class TooLarge(Exception):
    """More states than the budget."""


def spell(rows, accepting, max_states: int, all_spellings: bool):
    """(rows, accepting) of the spelled dense DFA, or None past max_states."""
    try:
        return _spell(rows, accepting, max_states, all_spellings)
    except TooLarge:
        return None
def _spell(rows, accepting, max_states: int, all_spellings: bool):
    table = np.asarray(rows, dtype=np.int64).reshape(-1, 256)
    reads_char = (table[:, :0x80] >= 0).any(axis=1) | (table[:, 0xC2:0xF5] >= 0).any(axis=1)
    if not all_spellings:  # only states that read a character which is not plain printable ASCII
        reads_char = (table[:, _RAW_FORBIDDEN] >= 0).any(axis=1) | (table[:, 0x7F:0xF5] >= 0).any(axis=1)
    forbidden = (table[:, _RAW_FORBIDDEN] >= 0).any()
    if not forbidden and not reads_char.any():
        return rows, accepting  # plain printable ASCII throughout: spelled as itself
    sp = _Spelling(rows, accepting, max_states, all_spellings)
    if forbidden:
        table[:, _RAW_FORBIDDEN] = -1
    sp.rows = table.tolist()
    for s in np.flatnonzero(reads_char).tolist():  # states between characters (mid-character states read no lead byte)
        e = sp.escapes(sp.characters(s))
        if e is not None:
            sp.rows[s][0x5C] = e
    return sp.rows, sp.accepting
