"""A grammar's token masks kept across processes (the disk cache's mask entries, disk_cache.py).

Masks are cached per machine state, and states are numbered in the order decoding visits them,
so a state number means nothing to another process (nor do a rule's DFA state numbers: a rule
rebuilt from a file may number its states otherwise). A stored mask is named by a byte path
from the start state instead: the shortest one through the rows computed so far. The mask after
a byte path depends only on the grammar's language, the path and the vocabulary, which the
entry's key covers (format, options, strictgen version, compiler source, vocabulary content),
whatever the numbering.

Nothing is replayed on load: the grammar's masker asks the stored set when it misses
(`StoredMasks.find`), which replays the paths in order (`step_bytes`, computing the rows it
needs) until one reaches the state asked for; that state must have the shape stored beside the
mask (the bytes that continue from it, whether it accepts), and the mask must allow EOS exactly
where the state accepts; one entry that fails refuses the whole file (no mask from it after
that). So a restart's first mask costs a file read and one decompression, and no background
thread competes with requests for the GIL (the preload this replaced made first masks up to
25 ms slower on a busy host). Masks are stored as runs of equal words, zlib-compressed (one copy per
distinct mask: a 151k-token mask is 19 kB raw, a few hundred bytes to a few kB stored, and
decodes in ~11 us, against ~100 us to a few ms to compute). At most MAX_MASKS per grammar, the shallowest
paths first: every document passes the states near the start. A store keeps the stored masks a
process did not use beside those it cached.
"""

from __future__ import annotations

import threading
import zlib
from typing import TYPE_CHECKING, Callable

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
    """The arrays of a mask entry for the masks `compiled` has cached, and the stored ones it
    has not used (None: none): per mask, its path (`paths` laid end to end, `path_ends`), its
    state's shape (`shapes`) and which distinct mask it is (`mask_of`); the distinct masks
    compressed (`masks`, `mask_ends`). The `limit` shallowest paths are kept."""
    masker = compiled.masker
    cached = masker.cached_states()
    entries: dict[bytes, tuple[bytes, bytes]] = {}  # path -> (shape, raw mask)
    for state, path in state_paths(compiled, cached).items():
        packed = masker.cached(state)
        if packed is not None:  # else evicted meanwhile
            entries[path] = (shape(compiled, state), packed.tobytes())
    if masker.stored is not None:
        for path, state_shape, raw in masker.stored.unused(set(cached)):
            entries.setdefault(path, (state_shape, raw))
    if not entries:
        return None
    chosen = sorted(entries, key=lambda p: (len(p), p))[:limit]
    distinct: dict[bytes, int] = {}
    mask_of = [distinct.setdefault(entries[p][1], len(distinct)) for p in chosen]
    blobs = [zlib.compress(_runs(np.frombuffer(m, dtype=np.int32)), 1) for m in distinct]
    return {
        "path_ends": np.cumsum([len(p) for p in chosen], dtype=np.int64),
        "paths": np.frombuffer(b"".join(chosen), dtype=np.uint8),
        "shapes": np.frombuffer(b"".join(entries[p][0] for p in chosen), dtype=np.uint8),
        "mask_of": np.asarray(mask_of, dtype=np.int32),
        "mask_ends": np.cumsum([len(b) for b in blobs], dtype=np.int64),
        "masks": np.frombuffer(b"".join(blobs), dtype=np.uint8),
    }


def _runs(mask: np.ndarray) -> bytes:
    """A packed mask as runs of equal words: each run's word, then each run's length (int32
    little-endian, as many of each). Masks are long runs of 0 or -1 with a few other words
    between: zlib over the runs is as small as zlib over the words, and its inflate writes
    ~2 kB instead of 19 kB (~11 us to decode, against 15-90 us on a busy 2-core machine)."""
    starts = np.concatenate([[0], np.flatnonzero(np.diff(mask)) + 1])
    lengths = np.diff(np.append(starts, len(mask)))
    return mask[starts].astype("<i4").tobytes() + lengths.astype("<i4").tobytes()


def _from_runs(data: bytes, words: int) -> np.ndarray:
    """The mask `_runs` wrote (ValueError where the runs do not make `words` words)."""
    n = len(data) // 8
    if len(data) != 8 * n:
        raise ValueError("a stored mask's runs are cut")
    values = np.frombuffer(data, dtype="<i4", count=n)
    lengths = np.frombuffer(data, dtype="<i4", count=n, offset=4 * n)
    if n == 0 or lengths.min() <= 0 or int(lengths.sum(dtype=np.int64)) != words:
        raise ValueError(f"a stored mask's runs do not make the vocabulary's {words} words")
    return np.repeat(values.astype(np.int32), lengths)


class StoredMasks:
    """A mask entry's arrays, checked for sizes (ValueError), and looked up as a grammar's masker
    misses (`find`): paths replayed in order until one reaches the state asked for, its mask
    decompressed and checked only then. Nothing is done ahead of the first mask, and no thread
    competes with requests for the GIL: a restart pays only for the masks it uses, on the
    fills that use them."""

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
        # the lookup (attach): entries replayed so far, the state each reached, whether refused
        self._lock = threading.Lock()
        self._compiled: "CompiledGrammar | None" = None
        self._refuse: Callable[[str], None] = lambda reason: None
        self._reached: list[int] = []  # by entry replayed so far, the state it reached
        self._entry_of: dict[int, int] = {}  # state -> the first entry reaching it
        self.refused = False

    def __len__(self) -> int:
        return len(self.path_ends)

    def path(self, i: int) -> bytes:
        return self.paths[(self.path_ends[i - 1] if i else 0) : self.path_ends[i]].tobytes()

    def shape_of(self, i: int) -> bytes:
        return self.shapes[i * SHAPE_BYTES : (i + 1) * SHAPE_BYTES].tobytes()

    def mask(self, i: int) -> np.ndarray:
        """Entry i's packed mask (read-only; entries of one distinct mask share it)."""
        j = int(self.mask_of[i])
        got = self._unpacked.get(j)
        if got is None:
            blob = self.masks[(self.mask_ends[j - 1] if j else 0) : self.mask_ends[j]]
            got = _from_runs(zlib.decompress(blob.tobytes()), self.words)
            got.setflags(write=False)
            self._unpacked[j] = got
        return got

    def attach(self, compiled: "CompiledGrammar", refuse: Callable[[str], None]) -> None:
        """Answer `compiled`'s masker misses from now on; refuse(reason) is called once if an
        entry fails its checks (the file is then refused whole: no mask from it after that)."""
        self._compiled, self._refuse = compiled, refuse
        compiled.masker.stored = self

    def find(self, state: int) -> np.ndarray | None:
        """The stored mask of `state` (checked), or None: not stored, or the file refused."""
        with self._lock:
            if self.refused or self._compiled is None:
                return None
            try:
                i = self._entry_of.get(state)
                if i is None:
                    i = self._replay(state)
                return None if i is None else self._checked(i, state)
            except (ValueError, zlib.error) as exc:
                self.refused = True
                self._refuse(str(exc))
                return None

    def _replay(self, until: int | None) -> int | None:
        """Replay the paths not replayed yet, in order (nearest the start first), until one
        reaches `until` (its entry; None: none does, or `until` is None: replay all)."""
        machine = self._compiled.machine
        while len(self._reached) < len(self):
            i = len(self._reached)
            reached = machine.step_bytes(machine.start, self.path(i))
            if reached == DEAD:
                raise ValueError("a stored path leads nowhere")
            self._reached.append(reached)
            self._entry_of.setdefault(reached, i)
            if reached == until:
                return i
        return None

    def _checked(self, i: int, state: int) -> np.ndarray:
        """Entry i's mask for `state`, which its path reached: the state must have the stored
        shape, and the mask must allow EOS exactly where the state accepts (ValueError)."""
        compiled = self._compiled
        if shape(compiled, state) != self.shape_of(i):
            raise ValueError("a stored path leads to a state of another shape")
        mask, eos = self.mask(i), compiled.masker.eos
        if len(eos):
            allows_eos = bool(((mask[eos // 32] >> (eos % 32)) & 1).all())
            if allows_eos != bool(compiled.machine.accepting[state]):
                raise ValueError("a stored mask allows EOS where the state does not accept, or the reverse")
        return mask

    def resolve_all(self) -> int:
        """Replay and check every entry now (tests, benchmarks); how many states they name, or
        0 when the file is refused."""
        with self._lock:
            if self.refused or self._compiled is None:
                return 0
            try:
                self._replay(None)
                for state, i in self._entry_of.items():
                    self._checked(i, state)
            except (ValueError, zlib.error) as exc:
                self.refused = True
                self._refuse(str(exc))
                return 0
            return len(self._entry_of)

    def unused(self, cached: set[int]) -> list[tuple[bytes, bytes, bytes]]:
        """(path, shape, raw mask) of the entries whose state is not in `cached` or not known
        yet: what a store of this grammar's masks keeps besides the masks it has cached (a
        process that used a few stored masks does not drop the others). Empty when refused."""
        with self._lock:
            if self.refused:
                return []
            reached = self._reached
            try:
                return [(self.path(i), self.shape_of(i), self.mask(i).tobytes()) for i in range(len(self))
                        if i >= len(reached) or reached[i] not in cached]
            except (ValueError, zlib.error):
                return []
