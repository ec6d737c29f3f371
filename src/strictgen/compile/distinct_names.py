"""minProperties at run time: the matcher's side of schema.emit_objects' distinct-name objects.

The grammar counts an object's members; minProperties counts its distinct names (a JSON parser
keeps one member per name: `{"a":0,"a":1}` has one property). Where members with names that no
property lists could reach the count by repeating a name, the object is a called rule named with
DISTINCT_MARK, and the matcher follows its text here: a `Frame` per open such object keeps the
names of its members so far, decoded (every JSON spelling of a name is that name), and the
closing quote of a key that repeats one of them rules out the parses inside that object. So a
count of members is a count of distinct names, and an object with a repeated name is refused
(in these objects only; elsewhere the grammar still allows repeats, as JSON does).

Why that leaves no dead end: the front end marks an object only when every key language of its
unlisted members can, from every prefix of a key, still become infinitely many names
(schema.emit_objects._names_tracked), and names repeat only there (a listed name has one slot).
A key refused at its closing quote could still have become a name not seen yet, by a way that
passes no refused token (a token is refused only when it closes a key on a seen name).

Like uniqueItems, a repeat drops only the parses inside the object (tracked_rules.RuleTracker):
under an `anyOf` of such an object and a free one, `{"a":0,"a":0}` is read on by the free one.
Tracks are tuples of frames, innermost last; the matcher keeps one per accepted token.
"""

from __future__ import annotations

import json
import threading
import weakref
from dataclasses import dataclass, replace

import numpy as np

from strictgen.grammar.schema.emit_objects import DISTINCT_MARK

from .machine import DEAD
from .tracked_rules import VETO, RuleTracker, merged_ids

__all__ = ["DistinctNames", "DISTINCT_MARK"]

_QUOTE, _BACKSLASH, _COMMA = 0x22, 0x5C, 0x2C
_OPEN, _CLOSE = frozenset(b"[{"), frozenset(b"]}")


@dataclass(frozen=True, slots=True)
class Frame:
    """One followed object: its names so far; `depth` counts the brackets open inside it (its own
    `{` is 1); `mode` is "key" (between members, a key may come next), "name" (reading a key) or
    "value" (after a key's closing quote); `text` is the key read so far, quotes included."""

    owners: frozenset  # the objects it follows, as RuleTracker.inside names them
    seen: frozenset = frozenset()
    depth: int = 1
    mode: str = "key"
    in_string: bool = False
    escaped: bool = False
    text: bytes = b""


class _Repeat:
    """What `_feed` returns when a byte closes a repeated name in the frame at `level`."""

    __slots__ = ("level",)

    def __init__(self, level: int):
        self.level = level


def _lex(f: Frame, b: int):
    """The frame after byte `b`: a Frame, None when `b` closes its object, or VETO when it closes
    a key on a name seen before."""
    if f.in_string:
        if f.escaped:
            return replace(f, escaped=False, text=f.text + bytes((b,)) if f.mode == "name" else b"")
        if b == _BACKSLASH:
            return replace(f, escaped=True, text=f.text + b"\\" if f.mode == "name" else b"")
        if f.mode != "name":
            return replace(f, in_string=b != _QUOTE) if b == _QUOTE else f
        text = f.text + bytes((b,))
        if b != _QUOTE:
            return replace(f, text=text)
        name = json.loads(text.decode("utf-8", "surrogatepass"))
        if name in f.seen:
            return VETO
        return replace(f, seen=f.seen | {name}, mode="value", in_string=False, text=b"")
    if b == _QUOTE:
        if f.depth == 1 and f.mode == "key":
            return replace(f, mode="name", in_string=True, text=b'"')
        return replace(f, in_string=True)
    if b in _OPEN:
        return replace(f, depth=f.depth + 1)
    if b in _CLOSE:
        return None if f.depth == 1 else replace(f, depth=f.depth - 1)
    if b == _COMMA and f.depth == 1:
        return replace(f, mode="key")
    return f


def _feed(frames: tuple, b: int):
    """The frames after one byte (a closed object's frame gone), or the _Repeat of a frame whose
    key it closes on a seen name. Each frame reads every byte: an outer one only counts brackets
    and strings while an inner object is read."""
    out = []
    for level, f in enumerate(frames):
        got = _lex(f, b)
        if got is VETO:
            return _Repeat(level)
        if got is not None:
            out.append(got)
    return tuple(out)


class DistinctNames(RuleTracker):
    """The distinct-name objects of one compiled grammar (None from `of` when it has none)."""

    def __init__(self, compiled, rules: dict[int, bool]):
        super().__init__(compiled, rules)
        self.classes = _token_classes(compiled.tokenizer_info)

    @classmethod
    def of(cls, compiled) -> "DistinctNames | None":
        rules = {i: True for i, r in enumerate(compiled.automaton.rules) if DISTINCT_MARK in r.name}
        return cls(compiled, rules) if rules else None

    def _opened(self, state: int, frames: tuple) -> tuple:
        """`frames` and a new one for the objects a `{` just opened on some stacks of `state`."""
        owners, _ = self.newly_inside(state, frozenset().union(*(f.owners for f in frames)))
        return frames + (Frame(frozenset(owners)),) if owners else frames

    def advance(self, track: tuple | None, state: int, data: bytes):
        """(the track after `data` read from machine `state`, the machine state after it when a
        repeat dropped some stacks, else None), or VETO when a repeat leaves no stack."""
        frames = track or ()
        step = self.machine.step_bytes
        base, off = state, 0  # data[off:] is read from `base` (a state with stacks dropped, once some are)
        for i, b in enumerate(data):
            got = _feed(frames, b) if frames else ()
            while isinstance(got, _Repeat):  # the parses inside that object end; the others read on
                base = self.without_parses(step(base, data[off:i]), frames[got.level].owners)
                if base == DEAD:
                    return VETO
                off = i
                frames = self.followed(frames[: got.level] + frames[got.level + 1 :], base)
                got = _feed(frames, b) if frames else ()
            frames = got
            if b == 0x7B and not (frames and frames[-1].in_string):  # `{`: maybe a followed object opens
                frames = self._opened(step(base, data[off : i + 1]), frames)
        after = None
        if off or base != state:
            after = step(base, data[off:])
            if after == DEAD:
                return VETO
        return frames or None, after

    def passive(self, track: tuple | None) -> np.ndarray:
        """Tokens that cannot close a key on a seen name from `track` (a conservative class: the
        rest are tried one by one): without a quote; or, while no followed object has a name yet,
        with at most two (a repeat then needs a key closed, and another opened and closed after
        it; an object a `{` opens starts without names)."""
        if track and any(f.seen for f in track):
            return self.classes.no_quote
        return self.classes.few_quotes

    def suspects(self, track: tuple | None) -> np.ndarray:
        """The tokens outside `passive` that may close a key on a seen name, found from the names
        rather than token by token. A token with at most two quotes and no backslash closes at
        most one key on a name seen before it (a name it closes itself would need a third
        quote to close again), and spells that key's name raw (the name's UTF-8 bytes): either
        it closes the key being read at its first quote (the key so far, then its bytes before
        that quote), or it holds the whole key between its two quotes. The other tokens with a
        quote (three or more, or a backslash) are always suspects; all of them are while the
        key being read holds a backslash."""
        c = self.classes
        if not track or not any(f.seen for f in track):
            return c.three_quotes
        names = {n.encode("utf-8", "surrogatepass") for f in track for n in f.seen}
        found = [c.always]
        for f in track:
            if f.mode != "name":
                continue
            if f.escaped or b"\\" in f.text:
                return c.quoted
            head = f.text[1:]  # the key so far, after its opening quote
            found += [c.before_quote[r[len(head) :]] for r in names if r.startswith(head) and r[len(head) :] in c.before_quote]
        found += [c.between_quotes[r] for r in names if r in c.between_quotes]
        return merged_ids(found) if len(found) > 1 else c.always


@dataclass(frozen=True)
class _QuoteIndex:
    """Per vocabulary: the token classes of `DistinctNames.passive` (special tokens are in both:
    they never advance a track) and the ids `DistinctNames.suspects` draws from (sorted int64
    arrays, special tokens left out): `before_quote` maps the bytes before a token's first quote
    and `between_quotes` those between its two quotes to the tokens with at most two quotes
    and no backslash that have them."""

    few_quotes: np.ndarray
    no_quote: np.ndarray
    quoted: np.ndarray  # every token with a quote
    three_quotes: np.ndarray  # three quotes or more
    always: np.ndarray  # three quotes or more, or a quote and a backslash
    before_quote: dict
    between_quotes: dict


_CLASSES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_CLASSES_LOCK = threading.Lock()


def _token_classes(info) -> _QuoteIndex:
    """The vocabulary's _QuoteIndex, built once. Numpy finds the few tokens with a quote (their
    counts of quotes and backslashes, from the vocabulary's bytes laid end to end), and only those
    are split in Python: a loop over every token was 33-43 ms of the first such compile."""
    with _CLASSES_LOCK:
        got = _CLASSES.get(info)
    if got is not None:
        return got
    facts = info.trie.facts
    n = facts.lengths.shape[0]
    special = np.ones(info.vocab_size, dtype=bool)
    special[:n] = info.is_special[:n]
    quotes = np.zeros(info.vocab_size, dtype=np.int64)
    quotes[:n] = _per_token_count(facts, ord('"'))
    quotes[special] = 0  # special tokens are never text here
    backslash = _per_token_count(facts, ord("\\")) > 0
    quoted = np.flatnonzero(quotes[:n])
    many = quotes[quoted] >= 3
    always = many | backslash[quoted]
    before: dict[bytes, list[int]] = {}
    between: dict[bytes, list[int]] = {}
    texts = info.all_token_bytes
    for t in quoted[~always].tolist():  # ascending: each key's first token orders the dicts, as a loop over all did
        parts = texts[t].split(b'"')
        before.setdefault(parts[0], []).append(t)
        if len(parts) == 3:
            between.setdefault(parts[1], []).append(t)

    def ids(xs) -> np.ndarray:
        return np.array(xs, dtype=np.int64)

    got = _QuoteIndex(
        few_quotes=(quotes <= 2) | special,
        no_quote=(quotes == 0) | special,
        quoted=ids(quoted),
        three_quotes=ids(quoted[many]),
        always=ids(quoted[always]),
        before_quote={k: ids(v) for k, v in before.items()},
        between_quotes={k: ids(v) for k, v in between.items()},
    )
    with _CLASSES_LOCK:
        _CLASSES[info] = got
    return got


def _per_token_count(facts, byte: int) -> np.ndarray:
    """How many times `byte` occurs in each token (of `facts`' n): its positions in the bytes laid
    end to end, each given to the last token starting at or before it (an empty token shares its
    start with the next token, which comes after it and so owns the byte)."""
    at = np.flatnonzero(facts.flat == byte)
    owners = np.searchsorted(facts.starts, at, side="right") - 1
    return np.bincount(owners, minlength=facts.lengths.shape[0])
