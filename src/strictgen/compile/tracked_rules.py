"""What the run-time trackers share: rules marked by the schema front end, followed by the
matcher beside the machine, and the parses a tracker rules out dropped from the machine's state.

A tracker (unique_items.UniqueItems: uniqueItems arrays; distinct_names.DistinctNames: the member
names of objects whose minProperties must count distinct names) follows the text of the marked
rules the machine's stacks are inside, and refuses data where the text breaks a rule that the
grammar cannot state (an item or a name that repeats an earlier one). Each followed piece of text
is named by (rule, parent node), which stays the same while it is read, so a tracker knows which
stacks are inside it. When only some stacks are, a repeat drops those stacks
(`PushdownMachine.sub_state`) and the others read on; when all are, the data is refused (VETO).

`Trackers` runs two of them on one grammar, one byte at a time, so that each byte is read from
the state the other left: a byte that fixes a repeated item and one that closes a repeated name
are never the same byte (JSON's structure is the same on every parse: a key's closing quote
closes no item), so at most one of them drops parses at any byte.
"""

from __future__ import annotations

import numpy as np

from strictgen.lru import BoundedLRU
from strictgen.tokenizer.trie import words_for

from .machine import DEAD

__all__ = ["VETO", "RuleTracker", "Trackers", "merged_ids"]

VETO = object()  # what `advance` returns for data that breaks a tracked rule on every parse
PRUNED_ENTRIES = 4096  # states with a repeat's parses dropped, remembered per grammar


class RuleTracker:
    """The base of a tracker: `rules` maps the marked rules' indices to what the tracker needs of
    each. Subclasses give `advance(track, state, data)` and `passive(track)`."""

    def __init__(self, compiled, rules: dict):
        self.machine = compiled.machine
        self.rules = rules
        info = compiled.tokenizer_info
        self.token_bytes = info.all_token_bytes
        self.vocab_size = info.vocab_size
        self._pruned: BoundedLRU[int] = BoundedLRU(PRUNED_ENTRIES)  # (state, owners) -> without_parses

    def inside(self, node: int) -> list[tuple[int, int]]:
        """The marked rules the stack `node` is inside, innermost first, each as (rule, parent
        node). A frame still at its rule's start (state 0: its first byte not read yet, entered
        ahead because the rule may come next) is not inside."""
        machine = self.machine
        out = []
        while node:
            parent, rule, at = machine.node(node)
            if at != 0 and rule in self.rules:
                out.append((rule, parent))
            node = parent
        return out

    def newly_inside(self, state: int, known: frozenset) -> tuple[set, int | None]:
        """(the innermost marked rules of the stacks of `state` that no open frame follows: not
        in `known`, the rule index of one of them), after the byte that may have opened them."""
        owners, rule = set(), None
        for node in self.machine.stacks(state):
            found = self.inside(node)
            if found and found[0] not in known:
                owners.add(found[0])
                rule = found[0][0] if rule is None else rule
        return owners, rule

    def without_parses(self, state: int, owners: frozenset) -> int:
        """`state` without the stacks inside any of `owners`; DEAD when every stack is.
        Remembered: a mask asks it for each token that repeats, and those tokens mostly share the
        state before their repeating byte."""
        key = (state, owners)
        got = self._pruned.peek(key)
        if got is None:
            stacks = self.machine.stacks(state)
            got = self.machine.sub_state(state, [owners.isdisjoint(self.inside(node)) for node in stacks])
            self._pruned.put(key, got)
        return got

    def followed(self, frames: tuple, state: int) -> tuple:
        """The frames (each with `owners`) whose rules some stack of `state` is still inside."""
        present = {a for node in self.machine.stacks(state) for a in self.inside(node)}
        return tuple(f for f in frames if not f.owners.isdisjoint(present))

    def mask(self, row: np.ndarray, track, state: int) -> np.ndarray:
        """`row` (the machine's mask) without the tokens the tracker refuses from `track`: the
        suspects that `row` allows are read one by one (`advance`); the rest cannot be refused."""
        ids = self.suspects(track)
        if ids.dtype == bool:  # a class of the vocabulary: read through the row's bits
            ids = np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")[: self.vocab_size].astype(bool) & ids)
        else:
            ids = ids[(row[ids >> 5] >> (ids & 31)) & 1 != 0]  # the suspects `row` allows
        vetoed = [t for t in ids.tolist() if self.advance(track, state, self.token_bytes[t]) is VETO]
        if not vetoed:
            return row
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")
        bits[vetoed] = 0
        out = np.packbits(bits, bitorder="little").view(np.int32)[: words_for(self.vocab_size)].copy()
        out.setflags(write=False)
        return out

    def suspects(self, track) -> np.ndarray:
        """The tokens that may be refused from `track`, a superset of them: few as sorted int64
        ids, many as a bool class over the vocabulary; by default those outside `passive(track)`
        (a class). A subclass may narrow it from the track's text (DistinctNames), as long as
        every token outside it provably refuses nothing."""
        return ~self.passive(track)

    def advance(self, track, state: int, data: bytes):  # pragma: no cover - abstract
        raise NotImplementedError

    def passive(self, track) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class Trackers(RuleTracker):
    """Two trackers on one grammar; a track is the pair of their tracks."""

    def __init__(self, compiled, first: RuleTracker, second: RuleTracker):
        super().__init__(compiled, {})
        self.first, self.second = first, second

    def advance(self, track, state: int, data: bytes):
        t1, t2 = track if track is not None else (None, None)
        step = self.machine.step_bytes
        for i in range(len(data)):
            byte = data[i : i + 1]
            got1 = self.first.advance(t1, state, byte)
            got2 = self.second.advance(t2, state, byte) if got1 is not VETO else VETO
            if got2 is VETO:
                return VETO
            (t1, after1), (t2, after2) = got1, got2
            if after1 is not None and after2 is not None:
                raise AssertionError("two trackers dropped parses at one byte")  # see the module's docstring
            state = after1 if after1 is not None else after2 if after2 is not None else step(state, byte)
            if state == DEAD:
                return VETO
        return (t1, t2) if t1 is not None or t2 is not None else None, state

    def passive(self, track) -> np.ndarray:
        t1, t2 = track if track is not None else (None, None)
        return self.first.passive(t1) & self.second.passive(t2)

    def suspects(self, track) -> np.ndarray:
        """Either tracker's suspects: each one's rest refuses nothing whatever the other drops
        (a tracker's refusal comes from its own text; dropped parses only close its frames)."""
        t1, t2 = track if track is not None else (None, None)
        parts = [self.first.suspects(t1), self.second.suspects(t2)]
        if all(p.dtype != bool for p in parts):
            return merged_ids(parts)
        out = np.zeros(self.vocab_size, dtype=bool)
        for p in parts:
            if p.dtype == bool:
                out |= p
            else:
                out[p] = True
        return out


def merged_ids(parts: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct ids of `parts` (np.union1d and np.unique cost ~100 us on a few
    thousand ids here, a sort and a compare a fifth of that)."""
    ids = np.sort(np.concatenate(parts))
    return ids[np.concatenate(([True], ids[1:] != ids[:-1]))] if len(ids) else ids
