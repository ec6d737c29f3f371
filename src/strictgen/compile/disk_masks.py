"""A grammar's token masks kept across processes (the disk cache's mask entries, disk_cache.py).

Masks are cached per machine state, and states are numbered in the order decoding visits them,
so a state number means nothing to another process (nor do a rule's DFA state numbers: a rule
rebuilt from a file may number its states otherwise). A stored mask is named by a byte path
from the start state instead: the shortest one through the rows computed so far. The mask after
a byte path depends only on the grammar's language, the path and the vocabulary, which the
entry's key covers (format, options, strictgen version, compiler source, vocabulary content),
whatever the numbering.

On load every path is replayed (`step_bytes`, computing the rows it needs), and the state it
reaches must be live and have the shape stored beside the mask (the bytes that continue from
it, whether it accepts), and the mask must allow EOS exactly where the state accepts; one entry
that fails refuses the whole file. Masks are stored zlib-compressed (one copy per distinct mask:
a 151k-token mask is 19 kB raw, a few hundred bytes to a few kB compressed, and decompresses in
~15-20 us, against ~100 us to a few ms to compute). At most MAX_MASKS per grammar, the shallowest
paths first: every document passes the states near the start.
"""

from __future__ import annotations

import time
import zlib
from typing import TYPE_CHECKING

import numpy as np

from .machine import DEAD

if TYPE_CHECKING:
    from .compiled import CompiledGrammar

MAX_MASKS = 512
SHAPE_BYTES = 33  # 256 bits: the bytes that continue from the state; then 1 if it accepts


def state_paths(compiled: "CompiledGrammar", states: list[int]) -> dict[int, bytes]:
    """The shortest byte path from the start to each of `states`, through the rows computed so
    far (breadth first, a whole frontier per numpy step); states not reached are left out."""
    machine = compiled.machine
    index_bytes, row_bytes = machine.tables  # copies below: the machine may grow its own
    index = np.frombuffer(bytes(index_bytes), dtype=np.int32)
    used = int(index.max(initial=-1)) + 1  # the rows past it are room to grow, not rows
    rows = np.frombuffer(bytes(row_bytes[: used * 1024]), dtype=np.int32).reshape(-1, 256)
    size = max(len(index), machine.num_states, machine.start + 1)
    came_from = np.full(size, -1, dtype=np.int64)
    by_byte = np.zeros(size, dtype=np.uint8)
    seen = np.zeros(size, dtype=bool)
    seen[machine.start] = True
    frontier = np.array([machine.start], dtype=np.int64)
    wanted = set(states)
    while frontier.size and not wanted.issubset(np.flatnonzero(seen).tolist()):
        frontier = frontier[frontier < len(index)]
        row = index[frontier]
        frontier, row = frontier[row >= 0], row[row >= 0]
        targets = rows[row].ravel()
        live = (targets != DEAD) & (targets < size)
        live[live] = ~seen[targets[live]]
        targets = targets[live]
        source = np.repeat(frontier, 256)[live]
        byte = np.tile(np.arange(256, dtype=np.uint8), len(frontier))[live]
        frontier, first = np.unique(targets, return_index=True)  # the smallest byte into each new state
        came_from[frontier], by_byte[frontier] = source[first], byte[first]
        seen[frontier] = True
    out = {}
    for state in states:
        if not (0 <= state < size and seen[state]):
            continue
        path, at = bytearray(), state
        while at != machine.start:
            path.append(int(by_byte[at]))
            at = int(came_from[at])
        out[state] = bytes(reversed(path))
    return out


def shape(compiled: "CompiledGrammar", state: int) -> bytes:
    """What a stored mask's state is checked against: its live bytes as 256 bits, and whether it accepts."""
    live = compiled.machine.compute_row(state) != DEAD
    return np.packbits(live, bitorder="little").tobytes() + bytes([bool(compiled.machine.accepting[state])])


def export(compiled: "CompiledGrammar", limit: int = MAX_MASKS) -> dict[str, np.ndarray] | None:
    """The arrays of a mask entry for the masks `compiled` has cached (None: none): per mask, its
    path (`paths` laid end to end, `path_ends`), its state's shape (`shapes`) and which distinct
    mask it is (`mask_of`); the distinct masks compressed (`masks`, `mask_ends`)."""
    masker = compiled.masker
    paths = state_paths(compiled, masker.cached_states())
    chosen = sorted(paths, key=lambda s: (len(paths[s]), paths[s]))[:limit]
    distinct: dict[bytes, int] = {}
    kept, mask_of, shapes = [], [], []
    for state in chosen:
        packed = masker.cached(state)
        if packed is None:  # evicted meanwhile
            continue
        kept.append(state)
        mask_of.append(distinct.setdefault(packed.tobytes(), len(distinct)))
        shapes.append(shape(compiled, state))
    if not kept:
        return None
    chosen = kept
    blobs = [zlib.compress(m, 1) for m in distinct]
    return {
        "path_ends": np.cumsum([len(paths[s]) for s in chosen], dtype=np.int64),
        "paths": np.frombuffer(b"".join(paths[s] for s in chosen), dtype=np.uint8),
        "shapes": np.frombuffer(b"".join(shapes), dtype=np.uint8),
        "mask_of": np.asarray(mask_of, dtype=np.int32),
        "mask_ends": np.cumsum([len(b) for b in blobs], dtype=np.int64),
        "masks": np.frombuffer(b"".join(blobs), dtype=np.uint8),
    }


class StoredMasks:
    """A mask entry's arrays, checked for sizes (ValueError); masks decompressed as asked."""

    def __init__(self, arrays: dict[str, np.ndarray], words: int):
        self.path_ends, self.paths, self.shapes = arrays["path_ends"], arrays["paths"], arrays["shapes"]
        self.mask_of, self.mask_ends, self.masks = arrays["mask_of"], arrays["mask_ends"], arrays["masks"]
        n, distinct = len(self.path_ends), len(self.mask_ends)
        for ends, total in ((self.path_ends, len(self.paths)), (self.mask_ends, len(self.masks))):
            if len(ends) and (ends[0] < 0 or (np.diff(ends) < 0).any() or ends[-1] != total):
                raise ValueError("entry ends out of order")
        if len(self.shapes) != n * SHAPE_BYTES or len(self.mask_of) != n or (n and (self.mask_of.min() < 0 or self.mask_of.max() >= distinct)):
            raise ValueError("mask entries of inconsistent sizes")
        self.words = words
        self._unpacked: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.path_ends)

    def path(self, i: int) -> bytes:
        return self.paths[(self.path_ends[i - 1] if i else 0) : self.path_ends[i]].tobytes()

    def mask(self, i: int) -> np.ndarray:
        """Entry i's packed mask (read-only; entries of one distinct mask share it)."""
        j = int(self.mask_of[i])
        got = self._unpacked.get(j)
        if got is None:
            blob = self.masks[(self.mask_ends[j - 1] if j else 0) : self.mask_ends[j]]
            raw = zlib.decompress(blob.tobytes(), bufsize=4 * self.words)
            if len(raw) != 4 * self.words:
                raise ValueError(f"a mask of {len(raw)} bytes, the vocabulary's are {4 * self.words}")
            got = self._unpacked[j] = np.frombuffer(raw, dtype=np.int32)
        return got

    def state(self, compiled: "CompiledGrammar", i: int) -> int:
        """The state entry i's path leads to in `compiled`, checked against its stored shape and
        its mask's EOS bits (ValueError)."""
        state = compiled.machine.step_bytes(compiled.machine.start, self.path(i))
        if state == DEAD:
            raise ValueError("a stored path leads nowhere")
        if shape(compiled, state) != self.shapes[i * SHAPE_BYTES : (i + 1) * SHAPE_BYTES].tobytes():
            raise ValueError("a stored path leads to a state of another shape")
        mask, eos = self.mask(i), compiled.masker.eos
        allows_eos = bool(((mask[eos // 32] >> (eos % 32)) & 1).all()) if len(eos) else False
        if len(eos) and allows_eos != bool(compiled.machine.accepting[state]):
            raise ValueError("a stored mask allows EOS where the state does not accept, or the reverse")
        return state

    def preload(self, compiled: "CompiledGrammar", start: int = 0, until: float | None = None, background: bool = False) -> int:
        """Check entries from `start` on, then give their masks to the grammar's masker; stops
        after the first entry past `until` (time.perf_counter()); returns the index reached.
        `background`: on a thread beside requests: it lets the GIL go after each entry."""
        states = []
        for i in range(start, len(self)):
            states.append((self.state(compiled, i), self.mask(i)))
            if background:
                time.sleep(0)
            elif until is not None and time.perf_counter() > until:
                break
        for state, mask in states:
            compiled.masker.preload(state, mask)
        return start + len(states)
