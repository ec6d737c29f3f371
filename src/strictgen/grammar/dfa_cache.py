"""The bounded, thread-safe cache of immutable DFAs that the IR → automata builders share across
compiles (grammar/automata.py's pieces, products and spellings; compile/automaton.py's rule
automata)."""

from __future__ import annotations

import threading

from strictgen import regular
from strictgen.lru import BoundedLRU


class DfaCache:
    """A thread-safe LRU map from keys to immutable DFAs, shared by compiles. Bounded in entries
    and in table cells (states x byte classes), so a few huge automata cannot hold memory. A
    value may carry what its key's ids stand for (`put(key, dfa, keep)`; `get_kept` returns it)."""

    def __init__(self, entries: int, cells: int = 1 << 24):
        self.entries, self.cells = entries, cells
        # id -> how many entries' keeps hold that object: followed on each put and eviction, so a
        # compile's question (which bodies did an earlier compile build?) costs no walk of the cache
        counts: dict[int, int] = {}
        self._kept_counts = counts
        self._map: BoundedLRU[tuple] = BoundedLRU(entries, cells, lambda entry: entry[0].num_states * entry[0].num_classes,
                                                  lambda key, entry: _count(counts, entry[1], -1))
        self._lock = threading.Lock()  # over a put and the kept ids it changes
        self._offered: set[int] = set()  # put_same: ids offered once

    def get(self, key) -> regular.DFA | None:
        got = self.get_kept(key)
        return None if got is None else got[0]

    def get_kept(self, key) -> tuple | None:
        """(dfa, keep) for `key`, or None. A miss costs one dict read, without the lock (the map's
        `get` raised two exceptions inside cachetools on each: a third of a bench pass's lookups
        miss); a hit is read again under the lock, which makes it the most recently used."""
        if self._map.peek(key) is None:
            return None
        return self._map.get(key)

    def kept_ids(self):
        """The ids of every object the entries' `keep`s hold: a live, read-only view (a set-like
        `keys()` view; ask `in` of it, and copy it to keep a snapshot)."""
        return self._kept_counts.keys()

    def get_same(self, node) -> regular.DFA | None:
        """The automaton put for this very object (`put_same`), or None. Without the lock or the
        move to the recent end, for lookups on every node of a walk (the entry found is held, so
        it stays valid): entries age as if unread, and an evicted piece is built and kept again."""
        got = self._map.peek(id(node))
        return got[0] if got is not None and got[1][0] is node else None

    def same_lookup(self):
        """`get_same` as one dict read for walks over every node: a function of id(node) giving an
        entry (dfa, keep) or None; the entry is this node's only where keep[0] is the node."""
        return self._map.peek

    def put_same(self, node, dfa: regular.DFA) -> None:
        """Keep `dfa` for the object `node` (held, so that its id stays its own), from the second
        time it is offered: a piece of one compile only is never held (held IR is heap that every
        full collection walks). The ids offered once are plain ints, never objects."""
        with self._lock:
            if id(node) not in self._offered:
                if len(self._offered) >= 8 * self.entries:
                    self._offered.clear()
                self._offered.add(id(node))
                return
        self.put(id(node), dfa, (node,))

    def __len__(self) -> int:
        return len(self._map)

    def clear(self) -> None:
        """Drop every entry (what is built next is kept again as it comes)."""
        with self._lock:
            self._map.clear()
            self._offered.clear()
            self._kept_counts.clear()

    def put(self, key, dfa: regular.DFA, keep=None) -> None:
        if dfa.num_states * dfa.num_classes > self.cells // 8:
            return  # one automaton would crowd out the rest
        with self._lock:
            # a replaced entry is forgotten here (the map reports evictions only); asked first with
            # a lock-free read, as every put of a bench pass was of a new key (the pop cost as much as the put)
            old = self._map.pop(key) if key in self._map else None
            if old is not None:
                _count(self._kept_counts, old[1], -1)
            if self._map.put(key, (dfa, keep)):
                _count(self._kept_counts, keep, 1)


def _count(counts: dict[int, int], keep, step: int) -> None:
    """Add `step` to the count of each object `keep` holds (an entry put: 1; dropped: -1)."""
    for x in keep or ():
        n = counts.get(id(x), 0) + step
        if n:
            counts[id(x)] = n
        else:
            del counts[id(x)]
