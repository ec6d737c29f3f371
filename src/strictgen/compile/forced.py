"""Forced text up to spelling: what jump-forward may emit when only a character's spelling is open.

Inside a constrained JSON string every character may also be written as an escape, so after
`{"` both `n` and `\\` continue the key "name": byte by byte nothing is forced, and jump-forward
would save no forward pass. But when the raw character c and every escape the machine allows
next are spellings of the same c, and all of them lead to the same machine state, the document is
decided and only its spelling is open: emitting c raw (as `json.dumps` writes it) loses no
document. `forced_text` follows single live bytes and such characters.
"""

from __future__ import annotations

import numpy as np

__all__ = ["forced_text"]

_SHORT = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}
_LETTER = {v: k for k, v in _SHORT.items()}


def _spellings(c: str) -> set[bytes]:
    """Every escape spelling of c (short escape, \\uXXXX or a surrogate pair, hex in either case)."""
    cp = ord(c)
    units = [cp] if cp < 0x10000 else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)]
    forms = [""]
    for u in units:
        hexes = [""]
        for d in f"{u:04x}":
            hexes = [h + x for h in hexes for x in dict.fromkeys((d, d.upper()))]
        forms = [f + "\\u" + h for f in forms for h in hexes]
    out = {f.encode() for f in forms}
    if c in _SHORT:
        out.add(("\\" + _SHORT[c]).encode())
    return out


def _live(machine, state: int) -> np.ndarray:
    return np.flatnonzero(machine.compute_row(state))


def _raw_char(machine, state: int, first: int) -> tuple[bytes, int] | None:
    """The one character whose UTF-8 starts with `first` that the machine reads from `state` (its
    continuation bytes each the only live byte), and the state after it."""
    n = 1 if first < 0x80 else 2 if first < 0xE0 else 3 if first < 0xF0 else 4
    data = bytes((first,))
    state = int(machine.compute_row(state)[first])
    for _ in range(n - 1):
        live = _live(machine, state)
        if len(live) != 1:
            return None
        data += bytes((int(live[0]),))
        state = int(machine.compute_row(state)[live[0]])
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return data, state


def _escapes_lead_to(machine, state: int, c: str, target: int) -> bool:
    """Does every input the machine allows after the backslash at `state` spell c and reach `target`?"""
    spellings = _spellings(c)
    prefixes = {s[:i] for s in spellings for i in range(1, len(s) + 1)}
    work = [(int(machine.compute_row(state)[0x5C]), b"\\")]
    while work:
        st, text = work.pop()
        if text in spellings:
            if st != target:
                return False
            continue
        for b in _live(machine, st).tolist():
            nxt = text + bytes((b,))
            if nxt not in prefixes:
                return False
            work.append((int(machine.compute_row(st)[b]), nxt))
    return True


def forced_text(machine, state: int, limit: int = 4096) -> bytes:
    """Bytes forced from `state` up to the spelling of characters: while the grammar cannot end
    here, either exactly one byte continues, or every way on spells one character and leads to
    one state (then json.dumps's spelling of it is taken)."""
    out = bytearray()
    while len(out) < limit and not machine.accepting[state]:
        live = _live(machine, state).tolist()
        got = _one_character(machine, state, live) if 0x5C in live and len(live) <= 2 else None
        if got is not None:
            data, state = got
            out += data
            continue
        if len(live) != 1:
            break
        out.append(live[0])
        state = int(machine.compute_row(state)[live[0]])
    return bytes(out[:limit])


def _one_character(machine, state: int, live: list[int]) -> tuple[bytes, int] | None:
    """(the spelling json.dumps writes, next state) when every way on from `state` spells one
    character and reaches one state: a raw character besides its escapes, or (for `"`, `\\` and
    the controls with a short escape) a short escape besides the \\u forms."""
    if len(live) == 2:
        got = _raw_char(machine, state, live[0] if live[1] == 0x5C else live[1])
        if got is None:
            return None
        data, target = got
        c = data.decode("utf-8")
    else:
        after = _live(machine, int(machine.compute_row(state)[0x5C])).tolist()
        letters = [b for b in after if b != ord("u")]
        if len(letters) != 1 or chr(letters[0]) not in _LETTER:
            return None
        c = _LETTER[chr(letters[0])]
        data = b"\\" + bytes(letters)
        target = machine.step_bytes(state, data)
    return (data, target) if _escapes_lead_to(machine, state, c, target) else None
