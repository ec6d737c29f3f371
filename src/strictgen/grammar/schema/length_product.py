"""A string language under a long length bound, as rules built at run time.

`"pattern": "^(?:\\S+\\s+){0,49}\\S+$", "maxLength": 500` is regular, but its automaton pairs each
pattern state with each count: ~10^5 states over UTF-8 bytes, and several times that once every
JSON spelling is added, too big to build ahead. Here the pattern's minimal DFA is read as an
automaton over whole characters, and each (pattern state, characters so far) is a member of a
`LazyFamily` (like any_order's key sets, schema.key_sets), built the first time a document
reaches it: a string of n characters builds n + 1 small rules, each one spelled character class
per next state. A member is handed out only when an accepting state is still reachable within
the bound (`_Lengths`), so every allowed token extends to a whole string.
"""

from __future__ import annotations

import bisect

import numpy as np

from strictgen import regular
from strictgen.errors import GrammarTooLargeError

from ..ir import EMPTY, NOTHING, Expr, Lazy, LazyFamily, alt, charset, seq
from ..json_escapes import json_escaped
from ._length_classes import count as count_classes

__all__ = ["CharMoves", "LengthProduct", "char_successors", "char_transitions", "length_product", "MAX_LAYERS", "product_exceeds", "product_states"]

MAX_LAYERS = 4096  # distinct "accepts in exactly k characters" state sets before they repeat
_CONTINUATIONS = ((0xC0, 0xDF, 1, 0x1F), (0xE0, 0xEF, 2, 0x0F), (0xF0, 0xF7, 3, 0x07))  # lead bytes, continuations, payload mask


def char_transitions(dfa: regular.DFA) -> list[dict[int, list[tuple[int, int]]]]:
    """For each state of a byte-level DFA over UTF-8 text, the code point ranges by next state
    (a state reached inside a character's bytes is never a key: whole characters only)."""
    moves = CharMoves(dfa)
    return [moves.of(q) for q in range(dfa.num_states)]


class CharMoves:
    """`of(q)`: the code point ranges by next state of the whole characters read from state `q`
    of a byte-level DFA over UTF-8 text, found when first asked (a length product asks only the
    states a document reaches; its set-up asks every state's successors, `char_successors`).

    Bytes are read in runs of equal targets: a run of lead (or continuation) bytes whose common
    target takes any continuation to one state is one range, so a class like ``\\S`` costs a few
    ranges per state instead of one per byte and per continuation below it."""

    def __init__(self, dfa: regular.DFA):
        table = np.frombuffer(dfa.table256(), dtype=np.int32).reshape(-1, 256)
        # per state, the bytes whose target differs from the byte before's (one numpy pass for all)
        changes = np.nonzero(table[:, 1:] != table[:, :-1])
        self._bounds = np.searchsorted(changes[0], np.arange(dfa.num_states + 1)).tolist()
        self._cut_at = (changes[1] + 1).tolist()
        self._flat = memoryview(dfa.table256()).cast("i")
        self._tails: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
        self._made: dict[int, dict[int, list[tuple[int, int]]]] = {}

    def of(self, q: int) -> dict[int, list[tuple[int, int]]]:
        got = self._made.get(q)
        if got is None:
            found = self._runs(q, 0, 0x7F, 0x7F, 0)
            for first, last, r, mask in _CONTINUATIONS:
                found.extend(self._runs(q, first, last, mask, r))
            got = {}
            for lo, hi, e in _merged(found):
                got.setdefault(e, []).append((lo, hi))
            self._made[q] = got
        return got

    def _runs(self, q: int, first: int, last: int, mask: int, r: int) -> list[tuple[int, int, int]]:
        """(lo, hi, state): the values of the bytes first..last read from q (their payload bits
        `mask`), each followed by r continuation bytes, by end state."""
        out: list[tuple[int, int, int]] = []
        shift = 6 * r
        full = (1 << shift) - 1
        row = q * 256
        cut_at, flat = self._cut_at, self._flat
        lo_cut, hi_cut = self._bounds[q], self._bounds[q + 1]
        i = bisect.bisect_right(cut_at, first, lo_cut, hi_cut)
        b = first
        while b <= last:
            e = cut_at[i] - 1 if i < hi_cut and cut_at[i] <= last else last
            i += 1
            t = flat[row + b]
            if t >= 0:
                below = self._tail(t, r)
                if len(below) == 1 and below[0][0] == 0 and below[0][1] == full:
                    out.append(((b & mask) << shift, (e & mask) << shift | full, below[0][2]))
                else:
                    for x in range(b, e + 1):
                        out.extend(((x & mask) << shift | lo, (x & mask) << shift | hi, end) for lo, hi, end in below)
            b = e + 1
        return out

    def _tail(self, s: int, r: int) -> list[tuple[int, int, int]]:
        """(lo, hi, state): the values of r continuation bytes read from s, by end state."""
        if r == 0:
            return [(0, 0, s)]
        got = self._tails.get((s, r))
        if got is None:
            self._tails[(s, r)] = got = _merged(self._runs(s, 0x80, 0xBF, 0x3F, r - 1))
        return got


def _merged(runs: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    for lo, hi, e in sorted(runs):
        if out and out[-1][2] == e and out[-1][1] + 1 >= lo:
            out[-1] = (out[-1][0], max(out[-1][1], hi), e)
        else:
            out.append((lo, hi, e))
    return out


class _Lengths:
    """Which states accept after exactly k more characters, for every k: the sets S_k (S_0 the
    accepting states, S_k+1 the predecessors of S_k) repeat from some k on, so a few sets answer
    "can q accept within lo..hi more characters" for any bound."""

    def __init__(self, succ: list[set[int]], accepting: frozenset):
        layers: list[frozenset] = []
        seen: dict[frozenset, int] = {}
        layer = accepting
        while layer not in seen:
            if len(layers) >= MAX_LAYERS:
                raise GrammarTooLargeError(f"a pattern under a length bound whose accepting lengths repeat only after {MAX_LAYERS} characters")
            seen[layer] = len(layers)
            layers.append(layer)
            layer = frozenset(q for q in range(len(succ)) if succ[q] & layer)
        self.layers, self.start = layers, seen[layer]
        self.period = len(layers) - self.start

    def possible(self, q: int, lo: int, hi: int | None) -> bool:
        """Does q accept after k more characters for some lo <= k <= hi (hi None: unbounded)?"""
        lo = max(lo, 0)
        end = max(lo, self.start) + self.period  # past it the layers only repeat
        if hi is not None:
            end = min(end, hi)
        for k in range(lo, end + 1):
            i = k if k < self.start else self.start + (k - self.start) % self.period
            if q in self.layers[i]:
                return True
        return False


class LengthProduct(LazyFamily):
    """Members (pattern state, characters read): the strings of the pattern's language from that
    state whose length keeps the whole within lo..hi characters."""

    def __init__(self, dfa: regular.DFA, lo: int, hi: int | None):
        self.lo, self.hi = lo, hi
        self.accepting = frozenset(q for q in range(dfa.num_states) if dfa.is_accepting(q))
        self.lengths = _Lengths(char_successors(dfa), self.accepting)
        self._chars = CharMoves(dfa)
        self._moves: dict[int, list[tuple[Expr, int]]] = {}  # spelled, for the states a document reaches
        self.uses = ()

    def moves(self, q: int) -> list[tuple[Expr, int]]:
        """(every spelling of the characters, next state) from pattern state q, made when a member
        at q is first built (a pattern of thousands of states is mostly never reached). Built under
        the compiled grammar's lock; a second grammar sharing this family makes the same list."""
        got = self._moves.get(q)
        if got is None:
            got = self._moves[q] = [(json_escaped(charset(ranges), "all"), t) for t, ranges in sorted(self._chars.of(q).items())]
        return got

    def alive(self, state) -> bool:
        q, n = state
        return self.lengths.possible(q, self.lo - n, None if self.hi is None else self.hi - n)

    def body(self, state) -> Expr:
        q, n = state
        exits = [seq(chars, Lazy(self, (t, n + 1), ())) for chars, t in self.moves(q) if self.alive((t, n + 1))]
        if q in self.accepting and n >= self.lo:
            exits.append(EMPTY)
        return alt(*exits) if exits else NOTHING


def length_product(dfa: regular.DFA, lo: int, hi: int | None) -> Expr:
    """The JSON string bodies (between the quotes) of the strings of `dfa`'s language (raw UTF-8)
    with lo..hi characters, in every spelling, as a call of the family's first member."""
    family = LengthProduct(dfa, lo, hi)
    if not family.alive((0, 0)):
        return NOTHING
    return Lazy(family, (0, 0), ())


# A byte's role in UTF-8: a continuation byte (-1), or a lead byte and the continuations it asks for
# (-9: never a byte of a valid character).
_BYTE_ROLE = np.array([0] * 0x80 + [-1] * 0x40 + [-9] * 2 + [1] * 30 + [2] * 16 + [3] * 5 + [-9] * 11)
_BYTE_WEIGHT = np.random.default_rng(20261205).integers(1, 2**63, size=256, dtype=np.uint64) | np.uint64(1)
# the weights of bytes 0..b-1 summed (wrapping, as the sums of a move's bytes wrap): a run b..e weighs
# _WEIGHT_BELOW[e + 1] - _WEIGHT_BELOW[b]
_WEIGHT_BELOW = np.concatenate(([np.uint64(0)], np.cumsum(_BYTE_WEIGHT, dtype=np.uint64)))
_CONT = slice(0x80, 0xC0)
_NOT_CONT = np.r_[0:0x80, 0xC0:0x100]  # the other bytes, in order
_NOT_CONT_ROLE = _BYTE_ROLE[_NOT_CONT]
_NEVER = _BYTE_ROLE == -9


def product_exceeds(dfa: regular.DFA, lo: int, hi: int | None, limit: int) -> bool:
    """Is the minimal DFA of `dfa`'s language (raw UTF-8) cut to lo..hi characters proven to have
    more than `limit` states? False: not proven either way (ask the product itself).

    Why: deciding "too big to build ahead" by building and minimising the product cost ~100 ms
    for a pattern of a few hundred states under maxLength 500, only to throw the product away."""
    count = product_states(dfa, lo, hi, limit)
    return count is not None and count > limit


def product_states(dfa: regular.DFA, lo: int, hi: int | None, stop_past: int) -> int | None:
    """States of the minimal DFA of `dfa`'s language cut to lo..hi characters, at most: exact
    unless two residuals' names collide, and the count stops once it passes `stop_past`; None
    where it does not apply (no upper bound, not whole UTF-8 characters, over 20 * stop_past pairs
    listed or named before the count passes stop_past).

    With a finite bound the product is acyclic and layered (k = characters read, counted by lead
    bytes; a pattern state `q` reached after k characters leaves `q`'s strings of lo-k..hi-k
    characters), so its minimal states, the distinct nonempty residuals of reachable (q, k), are
    counted from the last layer down (Revuz's acyclic minimisation, in C: _length_classes), each
    residual named by a hash of its acceptance and of the name each byte leads to. A hash collision
    can only merge two residuals, never split one, so the count never exceeds the true one: past
    the limit, it is a proof."""
    if hi is None:
        return None
    moves = _utf8_moves(dfa)
    if moves is None:
        return None  # not whole UTF-8 characters: lead bytes would not count characters
    count = count_classes(*moves, lo, hi, stop_past, 20 * stop_past)
    return None if count < 0 else count


def _utf8_moves(dfa: regular.DFA) -> tuple[bytes, bytes, bytes, bytes, bytes] | None:
    """The DFA as _length_classes.count reads it (levels, acceptance, moves by state: one per
    target, weighted by the sum of its bytes' weights), when every path reads whole UTF-8
    characters (a lead byte leads to a state that asks for exactly its continuations); else None."""
    whole = _whole_characters(dfa)
    if whole is None:
        return None
    table, level, accepting = whole
    n = dfa.num_states
    # a residual's name depends on which name each byte leads to, not on how bytes group by target:
    # a move's weight is the sum of its bytes', summed here run by run
    q, t, first, end = _runs(table)
    edges, inverse = np.unique(q.astype(np.int64) * n + t, return_inverse=True)
    weights = np.zeros(len(edges), dtype=np.uint64)
    np.add.at(weights, inverse, _WEIGHT_BELOW[end] - _WEIGHT_BELOW[first])
    offsets = np.searchsorted(edges // n, np.arange(n + 1)).astype(np.int32)
    targets = (edges % n).astype(np.int32)
    return level.astype(np.int8).tobytes(), accepting.astype(np.uint8).tobytes(), offsets.tobytes(), targets.tobytes(), weights.tobytes()


def _whole_characters(dfa: regular.DFA) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(the byte table, each state's level: the continuation bytes it asks for before the next
    character, acceptance) when every path reads whole UTF-8 characters; else None.

    Dense passes over the table's columns: a 2,700-state pattern DFA has ~700,000 live (state,
    byte) cells, and listing and sorting them was most of o21053's front end."""
    n = dfa.num_states
    table = np.frombuffer(dfa.table256(), dtype=np.int32).reshape(n, 256)
    live = table >= 0
    if live[:, _NEVER].any():
        return None  # a byte never in valid UTF-8
    cont = table[:, _CONT]
    cont_live = live[:, _CONT]
    has_cont = cont_live.any(axis=1)
    if (has_cont & live[:, _NOT_CONT].any(axis=1)).any():
        return None  # a state both inside and between characters
    cont_target = np.where(cont_live, cont, 0)
    level = np.zeros(n, dtype=np.int64)
    for _ in range(4):  # a state inside a character: one more than its continuations' targets
        level = np.where(cont_live, level[cont_target] + 1, 0).max(axis=1)
    low = np.where(cont_live, level[cont_target] + 1, 9).min(axis=1)
    accepting = np.frombuffer(dfa.accepting(), dtype=np.uint8).astype(bool)
    if (has_cont & (low != level)).any() or (level > 3).any() or level[0] or (accepting & has_cont).any():
        return None
    other = table[:, _NOT_CONT]
    other_live = other >= 0
    if (other_live & (level[np.where(other_live, other, 0)] != _NOT_CONT_ROLE)).any():
        return None
    return table, level, accepting


def _runs(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The table's runs of equal live targets, by state then byte: (state, target, first byte,
    one past the last byte). A few tens of thousands where the live cells are ~700,000."""
    n = table.shape[0]
    starts = np.ones((n, 256), dtype=bool)
    starts[:, 1:] = table[:, 1:] != table[:, :-1]
    q, b = np.nonzero(starts)
    t = table[q, b]
    end = np.empty_like(b)
    end[:-1] = np.where(q[1:] == q[:-1], b[1:], 256)
    end[-1:] = 256
    keep = t >= 0
    return q[keep], t[keep], b[keep], end[keep]


def char_successors(dfa: regular.DFA) -> list[set[int]]:
    """For each state of a byte-level DFA over UTF-8 text, the states one whole character leads
    to (the keys of `char_transitions`, without the code point ranges: _Lengths needs them for
    every state, the ranges only the states a document reaches). From the levels of
    `_whole_characters`: a state inside a character reaches, through its continuations, the
    states its targets reach; where the DFA is not whole characters, from char_transitions."""
    whole = _whole_characters(dfa)
    if whole is None:
        return [set(m) for m in char_transitions(dfa)]
    table, level, _ = whole
    q, t, _, _ = _runs(table)
    n = dfa.num_states
    edges = np.unique(q.astype(np.int64) * n + t)
    bounds = np.searchsorted(edges // n, np.arange(n + 1)).tolist()
    targets = (edges % n).tolist()
    levels = level.tolist()
    out: list[set[int]] = [set() for _ in range(n)]
    reach: dict[int, set[int]] = {}  # a state inside a character: the states its character ends in
    for depth in (1, 2, 3):
        for s in range(n):
            if levels[s] == depth:
                ends: set[int] = set()
                for x in targets[bounds[s]:bounds[s + 1]]:
                    ends |= reach[x] if levels[x] else {x}
                reach[s] = ends
    for s in range(n):
        if not levels[s]:
            ends = out[s]
            for x in targets[bounds[s]:bounds[s + 1]]:
                if levels[x]:
                    ends |= reach[x]
                else:
                    ends.add(x)
    return out
