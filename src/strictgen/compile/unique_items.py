"""uniqueItems at run time: the matcher's side of schema/unique.py.

An array whose items must be unique stays an ordinary rule of the grammar (named with
UNIQUE_MARK and, as JSON, one item spec per position). Once a `[` opens it (the machine's stacks
say so) its items are followed as text up to the `]` that closes it: a `Frame` is that position
(the keys of the items so far, the item being read and what it may still be). A unique array
inside an item of another gets a frame of its own on top, so a `Track` is a stack of frames.

A finished item is keyed by its JSON value (`item_key`: numbers by exact value, so 1, 1.0 and
1e0 are one value; strings by their decoded text, whatever the spelling; objects with sorted keys;
true distinct from 1). A token is refused when it completes, or fixes the value of, a copy of an
earlier item: a string at its closing quote (a string that can run out as soon as every value
its text can still spell is seen: enum values are listed, other languages counted on their DFA,
schema/unique_strings.py), a number at the byte after it (an integer as soon as `0` or `.` leaves
it one value, a canonical number at the fraction digit after which all its values are seen),
true/false/null at their first letter, an object or array at its closing bracket; and the `,`
that would start an item at a position whose values can run out and all are seen.
schema/unique.py admits only items where a refusal leaves another way to a new value, so a
refusal never leaves the matcher at a dead end. Tracks are immutable: the matcher keeps one per
accepted token, so rollback is a pop.

Where the machine's stacks disagree (an `anyOf` of an array with uniqueItems and an overlapping
one without), the array is followed as soon as one stack is inside it, and a repeat rules out only
the parses inside it: the data that repeats an item is refused when every stack is inside the
array, else the stacks inside it are dropped (`machine.sub_state`, taken before the byte that
fixes the repeat, since that byte may close the array) and the rest of the data is read by the
others. So `{"anyOf":[{"uniqueItems":true},{}]}` accepts `[null,null]` through the free array,
and a parse that repeated an item cannot come back later, when the free branch dies (fuzz
finding B). A frame names the arrays it follows as (rule, parent node), which stays the same
while an array is read: the parses of a frame are the stacks inside one of its arrays, and a `[`
opens a frame for the stacks whose innermost array no frame follows yet, so one parse's unique
array opened by the same `[` as another parse's free one is followed too (fuzz finding E:
`[[1,1]]` was accepted under an anyOf of a unique array of string arrays and an array of
unique integer arrays).
"""

from __future__ import annotations

import json
import threading
import weakref
from dataclasses import dataclass, replace
from decimal import Decimal

import numpy as np

from strictgen.grammar.json_value import MAX_FRACTION_DIGITS
from strictgen.grammar.schema.unique import INFINITE_KINDS, UNIQUE_MARK
from strictgen.grammar.schema.unique_strings import StringCounter, escape_ranges
from . import _unique_classes
from .machine import DEAD
from .tracked_rules import VETO, RuleTracker
from .unique_spelling import consistent, split_text

_NUMBER = frozenset(b"0123456789+-.eE")
_DIGIT_START = frozenset(b"-0123456789")
_LITERALS = {ord("t"): True, ord("f"): False, ord("n"): None}
_OPEN, _CLOSE = frozenset(b"[{"), frozenset(b"]}")
_WS = frozenset(b" \t\n\r")


@dataclass(frozen=True, slots=True)
class Spec:
    """What the item at one position may be (schema.unique.unique_item_spec)."""

    kinds: str  # infinite kinds: s string, i integer, n number, d canonical number, a array, o object
    strings: tuple | None  # enum strings (only without kind s)
    literals: tuple  # true/false/null
    int_only: bool
    finite_keys: frozenset | None  # the keys of every value, when all are finite and listed
    lang: StringCounter | None = None  # strings of a language that can run out (counted)

    @classmethod
    def of(cls, d: dict) -> "Spec":
        kinds = d["k"]
        finite = None
        lang = StringCounter.of(*d["r"]) if "r" in d else None
        if not set(kinds) & INFINITE_KINDS and lang is None:
            finite = frozenset(item_key(v) for v in list(d["s"] or ()) + list(d["l"]))
        return cls(kinds, tuple(d["s"]) if d["s"] is not None else None, tuple(d["l"]), "i" in kinds and not {"n", "d"} & set(kinds), finite, lang)

    def exhausted(self, seen: frozenset) -> bool:
        """Is every value an item here can be among `seen`? (the `,` before it is refused)"""
        if self.finite_keys is not None:
            return self.finite_keys <= seen
        if self.lang is None or set(self.kinds) & INFINITE_KINDS:
            return False
        total = self.lang.total()
        if total is None or total + len(self.literals) > len(seen):
            return False
        strings = [v for v in _seen_strings(seen) if self.lang.accepts(v)]
        return len(strings) == total and all(item_key(v) in seen for v in self.literals)


@dataclass(frozen=True, slots=True)
class Frame:
    """One unique array being read: its specs (per prefix position, then the rest), the keys of
    its items so far, and the item being read: mode "between", "string", "number", "literal" or
    "container"; its text; a pending backslash; bracket depth and in-string flag (containers);
    the enum strings it can still be (enum strings)."""

    specs: tuple
    seen: frozenset = frozenset()
    index: int = 0
    mode: str = "between"
    text: bytes = b""
    escaped: bool = False
    depth: int = 0
    in_string: bool = False
    candidates: tuple | None = None
    owners: frozenset = frozenset()  # the arrays it follows, as RuleTracker.inside names them

    @property
    def spec(self) -> Spec:
        return self.specs[min(self.index, len(self.specs) - 1)]


@dataclass(frozen=True, slots=True)
class Track:
    """The unique arrays open at a position, outermost first (an inner one lies inside an item
    of the one below it, which is then reading that item as a container)."""

    frames: tuple

    @property
    def mode(self) -> str:
        """What the innermost frame is reading: "string" also inside a string of a container."""
        f = self.frames[-1]
        return "string" if f.in_string else f.mode


class UniqueItems(RuleTracker):
    """The unique arrays of one compiled grammar (None from `of` when it has none); `rules` maps
    each unique array rule to its item specs."""

    def __init__(self, compiled, rules: dict[int, tuple]):
        super().__init__(compiled, rules)
        self.classes = _token_classes(compiled.tokenizer_info)
        self.brackets = _token_classes(compiled.tokenizer_info)["brackets"]

    @classmethod
    def of(cls, compiled) -> "UniqueItems | None":
        rules = {}
        for i, r in enumerate(compiled.automaton.rules):
            if UNIQUE_MARK in r.name:
                rules[i] = tuple(Spec.of(d) for d in json.loads(r.name.split(UNIQUE_MARK, 1)[1]))
        return cls(compiled, rules) if rules else None

    def opened(self, state: int, known: frozenset = frozenset()) -> "Frame | None":
        """A frame for the unique arrays that stacks of `state` have just opened (the innermost
        array of a stack, where no open frame follows it: not in `known`), or None."""
        owners, rule = self.newly_inside(state, known)
        return Frame(self.rules[rule], owners=frozenset(owners)) if owners else None

    def advance(self, track: Track | None, state: int, data: bytes):
        """(the track after `data` read from machine `state` with `track`, the machine state
        after it when a repeat dropped some stacks, else None), or VETO when a repeat leaves no
        stack."""
        frames = track.frames if track is not None else ()
        base, off = state, 0  # data[off:] is read from `base` (a state with stacks dropped, once some are)
        i = 0
        while i < len(data):
            if not frames:
                j = data.find(b"[", i)
                if j < 0:
                    break
                i = j + 1
                frame = self.opened(self.machine.step_bytes(base, data[off:i]))
                frames = (frame,) if frame is not None else ()
                continue
            b = data[i]
            i += 1
            got = _feed(frames, b)
            while isinstance(got, Repeat):  # the parses inside that array end; the others read on
                before = self.machine.step_bytes(base, data[off : i - 1])
                base = self.without_parses(before, frames[got.level].owners)
                if base == DEAD:
                    return VETO
                off = i - 1
                frames = self.followed(frames[: got.level] + frames[got.level + 1 :], base)
                got = _feed(frames, b) if frames else ()
            frames = got
            if b == 0x5B and frames and _opens(frames[-1]):
                frame = self.opened(self.machine.step_bytes(base, data[off:i]), frozenset().union(*(f.owners for f in frames)))
                if frame is not None:
                    frames = frames + (frame,)
        after = None
        if off or base != state:
            after = self.machine.step_bytes(base, data[off:])
            if after == DEAD:
                return VETO
        return Track(frames) if frames else None, after

    def passive(self, track: Track | None) -> np.ndarray:
        """Tokens that cannot repeat an item from `track` (a conservative class: the rest are
        tried one by one). Special tokens never advance a track."""
        c = self.classes
        if track is None:
            return c["not_opening"]
        f = track.frames[-1]
        outer = len(track.frames) > 1  # an outer item may end at a closing bracket
        if f.mode == "string" and f.candidates is None and f.spec.lang is None:
            base = c["no_quote"]
        elif f.mode == "container":
            base = c["no_bracket"]
        elif f.mode == "between" and not f.seen:
            base = c["no_comma"]
        elif f.mode == "between" and f.spec.finite_keys is None and f.spec.strings is None and f.spec.lang is None:
            base = c["starts_item"]
        else:
            base = c["special"]
        return base & c["no_close"] if outer else base

    def suspects(self, track: Track | None) -> np.ndarray:
        """While the innermost item is a container, only tokens that close some frame's item
        (as many closing brackets as its depth) or open an array (maybe a unique one, inside
        the item) may repeat an item; brackets inside the string being read do not count, in
        a token without a backslash. Elsewhere, those outside `passive`."""
        if track is None or track.frames[-1].mode != "container":
            return super().suspects(track)
        b = self.brackets
        f = track.frames[-1]
        after = f.in_string and not f.escaped  # the token's first quote closes that string
        closes = np.where(after & b.plain, b.closes_after_quote, b.closes)
        opens = np.where(after & b.plain, b.opens_after_quote, b.opens)
        return b.ids[(opens > 0) | (closes >= min(g.depth for g in track.frames))]


@dataclass(frozen=True)
class _Brackets:
    """Per vocabulary, the tokens holding a bracket `[`, `]` or `}` (special ones left out), as
    sorted ids, with their counts of `[` and of `]}`, in all and after their first quote, and
    whether they have no backslash (so that the first quote is no escaped one)."""

    ids: np.ndarray
    opens: np.ndarray
    closes: np.ndarray
    opens_after_quote: np.ndarray
    closes_after_quote: np.ndarray
    plain: np.ndarray

    @classmethod
    def of(cls, info, flags: np.ndarray, counts: np.ndarray) -> "_Brackets":
        """From the vocabulary's byte facts (_byte_facts)."""
        n = len(flags)
        keep = ((flags & (_unique_classes.OPEN | _unique_classes.CLOSE)) != 0) & ~np.asarray(info.is_special[:n], dtype=bool)
        ids = np.flatnonzero(keep).astype(np.int64)
        opens, closes, opens_after_quote, closes_after_quote = np.ascontiguousarray(counts[ids].T, dtype=np.int64)
        return cls(ids, opens, closes, opens_after_quote, closes_after_quote, (flags[ids] & _unique_classes.BACKSLASH) == 0)


def _opens(frame: Frame) -> bool:
    """Did the `[` just fed open an array inside the frame's item (so maybe a unique one)?"""
    return frame.mode == "container" and not frame.in_string


@dataclass(frozen=True, slots=True)
class Repeat:
    """What `_feed` returns when a byte repeats an item of the frame at index `level`."""

    level: int


def _feed(frames: tuple, b: int):
    """The frames after one byte, or the Repeat of the innermost frame whose item it repeats.
    The innermost frame reads it as its item's text; the ones below are reading items that hold
    it (containers) and only follow brackets and strings."""
    top = _lex(frames[-1], b)
    if top is VETO:
        return Repeat(len(frames) - 1)
    out = list(frames[:-1])
    for k in range(len(out) - 1, -1, -1):
        got = _container(out[k], b)
        if got is VETO:
            return Repeat(k)
        out[k] = got
    if top is not None:
        out.append(top)
    return tuple(out)


def _lex(f: Frame, b: int):
    """The innermost frame after byte b: a Frame, None when b closes its array, or VETO."""
    mode = f.mode
    if mode == "between":
        if b == 0x5D:  # ]
            return None
        if b == 0x2C:  # ,: the next item's position must have a new value left
            nxt = replace(f, index=f.index + 1)
            return VETO if nxt.spec.exhausted(f.seen) else nxt
        if b == 0x22:
            spec = f.spec
            listed = "s" not in spec.kinds and spec.lang is None
            g = replace(f, mode="string", text=b'"', escaped=False, candidates=spec.strings or () if listed else None)
            return _check_string(g)
        if b in _DIGIT_START:
            return _number_byte(replace(f, mode="number", text=b""), b)
        if b in _LITERALS:
            return _finish(replace(f, mode="literal", text=bytes((b,))), item_key(_LITERALS[b]), "literal")
        if b in _OPEN:
            return replace(f, mode="container", text=bytes((b,)), depth=1, in_string=False)
        return f
    if mode == "string":
        text = f.text + bytes((b,))
        if f.escaped:
            g = replace(f, text=text, escaped=False)
        elif b == 0x5C:
            g = replace(f, text=text, escaped=True)
        elif b == 0x22:
            return _finish(replace(f, text=text), _text_key(text), "between")
        else:
            g = replace(f, text=text)
        return _check_string(g)
    if mode == "number":
        if b in _NUMBER:
            return _number_byte(f, b)
        g = f if f.spec.int_only and _fixed(f.text) else _finish(f, _text_key(f.text), "between")  # a fixed integer was checked
        return g if g is VETO else _lex(replace(g, mode="between", text=b""), b)
    if mode == "literal":  # its value was taken at the first letter
        if 0x61 <= b <= 0x7A:
            return f
        return _lex(replace(f, mode="between", text=b""), b)
    return _container(f, b)


def _container(f: Frame, b: int):
    """A frame reading an array or object item: follows strings and brackets; the closing one
    finishes the item. Whitespace between tokens is left out of the text (it changes no value)."""
    if b in _WS and not f.in_string:
        return f
    text = f.text + bytes((b,))
    if f.in_string:
        if f.escaped:
            return replace(f, text=text, escaped=False)
        if b == 0x5C:
            return replace(f, text=text, escaped=True)
        return replace(f, text=text, in_string=b != 0x22)
    if b == 0x22:
        return replace(f, text=text, in_string=True)
    if b in _OPEN:
        return replace(f, text=text, depth=f.depth + 1)
    if b in _CLOSE:
        if f.depth == 1:
            return _finish(replace(f, text=text), _text_key(text), "between")
        return replace(f, text=text, depth=f.depth - 1)
    return replace(f, text=text)


def _number_byte(f: Frame, b: int):
    text = f.text + bytes((b,))
    g = replace(f, text=text)
    if f.spec.int_only and _fixed(text) and not _fixed(f.text):
        # an integer item that can only stay this value (0, -0, 5., 5.0...): fixed now
        key = item_key(int(text.split(b".")[0]))
        if key in f.seen:
            return VETO
        return replace(g, seen=f.seen | {key})
    if "d" in f.spec.kinds and b"." in text and not _canonical_left(text, f.seen):
        return VETO
    return g


def _canonical_left(text: bytes, seen: frozenset) -> bool:
    """Can a canonical number (at most MAX_FRACTION_DIGITS fraction digits) starting `text`
    still be a value not in `seen`? With r digits free it can be 10**r values (the shorter ones
    equal some with trailing zeros), less zero after `-0.`: listed only when that few."""
    free = MAX_FRACTION_DIGITS - len(text.split(b".")[1])
    if 10**free > len(seen):
        return True
    for n in range(10**free):
        tail = f"{n:0{free}d}".encode() if free else b""
        if text.startswith(b"-0.") and not (text[3:] + tail).strip(b"0"):
            continue  # -0.000... is no canonical number
        if item_key(Decimal((text + tail).decode())) not in seen:
            return True
    return False


def _finish(f: Frame, key: str, mode: str):
    """The frame with its item's value fixed as `key`, or VETO for a repeat."""
    if key in f.seen:
        return VETO
    return replace(f, seen=f.seen | {key}, mode=mode, text=f.text if mode == "literal" else b"", candidates=None, depth=0)


def _check_string(f: Frame):
    """A string that can run out: an enum keeps the values its text can still be, a counted
    language counts them; VETO when all of them are seen."""
    if f.candidates is not None:
        cands = consistent(f.text, f.candidates)
        if all(item_key(v) in f.seen for v in cands):
            return VETO
        return replace(f, candidates=cands)
    lang = f.spec.lang
    if lang is None or not f.seen:
        return f
    return VETO if _lang_exhausted(lang, f.text, f.seen) else f


def _lang_exhausted(lang: StringCounter, text: bytes, seen: frozenset) -> bool:
    """Is every string of `lang` that the open string `text` can still spell among `seen`?"""
    decoded, tail = split_text(text[1:])
    state = lang.walk(decoded.encode("utf-8", "surrogatepass"))
    if state < 0:
        return False  # not in the language at all: another kind of string (the grammar decides)
    cap = sum(1 for _ in _seen_strings(seen))
    if tail.startswith("\\"):
        ranges = escape_ranges(tail)
        count = 0
        for lo, hi in ranges:
            got = lang.count(state, lo, hi, cap)
            if got is None:
                return False
            count += got
    else:
        raw = tail.encode("latin-1")
        state = lang.walk(raw, state)
        if state < 0:
            return False
        count = lang.counts[state]
        ranges = None
    if count is None or count > cap:
        return False
    n = len(decoded)
    hits = 0
    for v in _seen_strings(seen):
        if not v.startswith(decoded) or not lang.accepts(v):
            continue
        rest = v[n:]
        if ranges is not None:
            if not rest or not any(lo <= ord(rest[0]) <= hi for lo, hi in ranges):
                continue
        elif tail and not rest.encode("utf-8", "surrogatepass").startswith(tail.encode("latin-1")):
            continue
        hits += 1
    return hits == count


def _seen_strings(seen: frozenset):
    return (json.loads(k) for k in seen if k.startswith('"'))


def _fixed(text: bytes) -> bool:
    """Is an integer item (no other number allowed) with this text one value whatever follows?
    After 0 or -0 only .0... may follow, after a point only zeros."""
    return text.lstrip(b"-") == b"0" or b"." in text


def _text_key(text: bytes) -> str:
    return item_key(json.loads(text.decode("utf-8"), parse_float=Decimal))


def item_key(v) -> str:
    """A hashable key equal exactly for JSON-equal values: numbers by exact value (as a Decimal's
    digits and exponent, so 1e999999999 costs nothing), true != 1, objects by sorted keys."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (int, Decimal)):
        sign, digits, exp = Decimal(v).as_tuple()
        ds = "".join(map(str, digits)).lstrip("0")
        if not ds:
            return "n:0"
        stripped = ds.rstrip("0")
        return f"n:{'-' if sign else ''}{stripped}e{exp + len(ds) - len(stripped)}"
    if isinstance(v, list):
        return "[" + ",".join(item_key(x) for x in v) + "]"
    return "{" + ",".join(json.dumps(k) + ":" + item_key(v[k]) for k in sorted(v)) + "}"


_CLASSES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_CLASSES_LOCK = threading.Lock()


def _token_classes(info) -> dict[str, np.ndarray]:
    """Per vocabulary, once (one pass in C over the tokens' bytes, _unique_classes.c): classes
    of tokens that cannot repeat an item from some kind of position (see UniqueItems.passive);
    special tokens are in all of them."""
    with _CLASSES_LOCK:
        got = _CLASSES.get(info)
    if got is not None:
        return got
    facts = info.trie.facts
    n = len(facts.lengths)
    flags, counts = _byte_facts(facts)
    special = np.ones(info.vocab_size, dtype=bool)
    special[:n] = info.is_special[:n]

    def has(bits: int) -> np.ndarray:
        return (flags & bits) != 0

    def lacking(holds: np.ndarray) -> np.ndarray:
        out = np.zeros(info.vocab_size, dtype=bool)
        out[:n] = ~holds
        return out | special

    got = {
        "special": special,
        "no_quote": lacking(has(_unique_classes.QUOTE)),
        "no_comma": lacking(has(_unique_classes.COMMA)),
        "not_opening": lacking(has(_unique_classes.OPEN) & has(_unique_classes.COMMA)),
        "no_bracket": lacking(has(_unique_classes.OPEN | _unique_classes.CLOSE)),
        "no_close": lacking(has(_unique_classes.CLOSE)),
        "starts_item": lacking(~has(_unique_classes.STARTS_ITEM)),
        "brackets": _Brackets.of(info, flags, counts),
    }
    with _CLASSES_LOCK:
        _CLASSES[info] = got
    return got


def _byte_facts(facts) -> tuple[np.ndarray, np.ndarray]:
    """Per token, its class bits (_unique_classes' QUOTE, COMMA, OPEN, CLOSE, BACKSLASH,
    STARTS_ITEM) and its counts of `[` and of `]}`, in all and after its first quote (n x 4)."""
    n = len(facts.lengths)
    flags = np.empty(n, dtype=np.uint8)
    counts = np.empty((n, 4), dtype=np.int32)
    _unique_classes.token_classes(facts.flat, facts.starts, facts.lengths, flags, counts)
    return flags, counts
