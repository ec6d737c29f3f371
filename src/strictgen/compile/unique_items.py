"""uniqueItems at run time: the matcher's side of grammar/schema_unique.py.

An array whose items must be unique stays an ordinary rule of the grammar (named with
UNIQUE_MARK and its item kinds). Its items are scalars, so once a `[` opens it (the machine's
stacks say so) the items can be followed as text up to the `]` that closes it. `Track` is that
position: the values of the items so far (by `value_key`: 1, 1.0 and 1e0 are one value, as are
all spellings of a string) and the item being read. A token is refused when it completes, or fixes
the value of, a copy of an earlier item: a string at its closing quote, a number at the byte after
it (an integer as soon as `0` or `.` leaves it one value), true/false/null at their first letter.
The items schema_unique admits can still become infinitely many values while unfinished, so a
refusal never leaves the matcher at a dead end. Tracks are immutable: the matcher keeps one per
accepted token, so rollback is a pop.
"""

from __future__ import annotations

import json
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from strictgen.tokenizer.trie import words_for
from strictgen.grammar.schema_unique import UNIQUE_MARK
from strictgen.grammar.schema_values import value_key

VETO = object()  # what `advance` returns for data that would repeat an item
_NUMBER = frozenset(b"0123456789+-.eE")
_LITERALS = {ord("t"): True, ord("f"): False, ord("n"): None}


@dataclass(frozen=True, slots=True)
class Track:
    """Inside a unique array: its item kinds, the values seen, and the item being read (mode
    "between", "string", "number" or "literal"; its text so far; a pending backslash)."""

    kinds: str
    seen: frozenset
    mode: str = "between"
    text: bytes = b""
    escaped: bool = False


class UniqueItems:
    """The unique arrays of one compiled grammar (None from `of` when it has none)."""

    def __init__(self, compiled, rules: dict[int, str]):
        self.machine = compiled.machine
        self.rules = rules
        info = compiled.tokenizer_info
        self.token_bytes = info.all_token_bytes
        self.vocab_size = info.vocab_size
        self.plain, self.with_quote, self.with_comma, self.opening = _token_classes(info)

    @classmethod
    def of(cls, compiled) -> "UniqueItems | None":
        rules = {i: r.name.split(UNIQUE_MARK, 1)[1] for i, r in enumerate(compiled.automaton.rules) if UNIQUE_MARK in r.name}
        return cls(compiled, rules) if rules else None

    def opened(self, state: int) -> str | None:
        """The item kinds of the unique array some stack of `state` is inside (None: none is)."""
        machine = self.machine
        for node in machine.stacks(state):
            while node:
                node, rule, _ = machine.node(node)
                kinds = self.rules.get(rule)
                if kinds is not None:
                    return kinds
        return None

    def advance(self, track: Track | None, state: int, data: bytes):
        """The track after `data` read from machine `state` (with `track`), or VETO."""
        i = 0
        while i < len(data):
            if track is None:
                j = data.find(b"[", i)
                if j < 0:
                    return None
                kinds = self.opened(self.machine.step_bytes(state, data[: j + 1]))
                i = j + 1
                if kinds is not None:
                    track = Track(kinds, frozenset())
                continue
            track, i = _lex(track, data, i)
            if track is VETO:
                return VETO
        return track

    def mask(self, row: np.ndarray, track: Track | None, state: int) -> np.ndarray:
        """`row` (the machine's mask) without the tokens that would repeat an item."""
        allowed = np.unpackbits(row.view(np.uint8), bitorder="little")[: self.vocab_size].astype(bool) & self.plain
        if track is None:
            allowed &= self.opening
        elif track.mode == "string":
            allowed &= self.with_quote
        elif not track.seen:
            allowed &= self.with_comma
        vetoed = [t for t in np.flatnonzero(allowed).tolist() if self.advance(track, state, self.token_bytes[t]) is VETO]
        if not vetoed:
            return row
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")
        bits[vetoed] = 0
        out = np.packbits(bits, bitorder="little").view(np.int32)[: words_for(self.vocab_size)].copy()
        out.setflags(write=False)
        return out


_CLASSES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_CLASSES_LOCK = threading.Lock()


def _token_classes(info) -> tuple[np.ndarray, ...]:
    """Per vocabulary, once (a scan of every token): the tokens that are not special, and those of
    them holding a quote, a comma, and a bracket with a comma (that may hold two items of a new array)."""
    with _CLASSES_LOCK:
        got = _CLASSES.get(info)
    if got is not None:
        return got
    tokens = info.all_token_bytes
    plain = np.zeros(info.vocab_size, dtype=bool)
    plain[: len(tokens)] = ~np.fromiter((info.is_special[i] for i in range(len(tokens))), dtype=bool, count=len(tokens))

    def having(byte: bytes) -> np.ndarray:
        out = np.zeros(info.vocab_size, dtype=bool)
        out[: len(tokens)] = np.fromiter((byte in t for t in tokens), dtype=bool, count=len(tokens))
        return out & plain

    with_comma = having(b",")
    got = (plain, having(b'"'), with_comma, having(b"[") & with_comma)
    with _CLASSES_LOCK:
        _CLASSES[info] = got
    return got


def _value(text: bytes):
    return value_key(json.loads(text.decode("utf-8")))


def _lex(track: Track, data: bytes, i: int):
    """Read `data` from i inside a unique array until the array closes (then (None, just past
    its `]`)) or the data ends; (VETO, i) where an item repeats an earlier one."""
    kinds, seen, mode, text, escaped = track.kinds, track.seen, track.mode, track.text, track.escaped
    while i < len(data):
        b = data[i]
        if mode == "between":
            i += 1
            if b == 0x5D:  # ]
                return None, i
            if b == 0x22:
                mode, text, escaped = "string", b'"', False
            elif b in _NUMBER:
                mode, text = "number", bytes((b,))
            elif b in _LITERALS:
                key = value_key(_LITERALS[b])
                if key in seen:
                    return VETO, i
                mode, text = "literal", bytes((b,))
                seen = seen | {key}
            else:
                continue
        elif mode == "string":
            text += bytes((b,))
            i += 1
            if escaped:
                escaped = False
            elif b == 0x5C:
                escaped = True
            elif b == 0x22:
                key = _value(text)
                if key in seen:
                    return VETO, i
                seen, mode = seen | {key}, "between"
            continue
        elif mode == "number":
            if b in _NUMBER:
                text += bytes((b,))
                i += 1
            else:
                if not _fixed(kinds, text):  # a fixed integer was checked when it became fixed
                    key = _value(text)
                    if key in seen:
                        return VETO, i
                    seen = seen | {key}
                mode = "between"
                continue
        else:  # literal: its value was taken at the first letter
            if 0x61 <= b <= 0x7A:
                text += bytes((b,))
                i += 1
                continue
            mode = "between"
            continue
        if mode == "number" and _fixed(kinds, text) and not _fixed(kinds, text[:-1]):
            # an integer item that can only stay this value (0, -0, 5., 5.0...): fixed now
            key = value_key(int(text.split(b".")[0]))
            if key in seen:
                return VETO, i
            seen = seen | {key}
    return Track(kinds, seen, mode, text, escaped), i


def _fixed(kinds: str, text: bytes) -> bool:
    """Is an integer item (no other number allowed) with this text one value whatever follows?
    After 0 or -0 only .0... may follow, after a point only zeros."""
    return "i" in kinds and (text.lstrip(b"-") == b"0" or b"." in text)
