"""BoundedLRU: the one bounded, thread-safe least-recently-used map that strictgen's caches use.

Caches that outlive one compile (compiled grammars, token masks, automata, vocabulary splits) are
bounded in entries and, where their values differ much in size, in a size summed over the values
(bytes, table cells): DESIGN.md §1. This module is the lowest layer (it imports nothing of
strictgen), so every layer can hold one. The map is `cachetools.LRUCache` behind one lock; an
identity-keyed cache puts `(id(obj), ...)` keys with a value that holds `obj`, so that the id stays
that object's while the entry lives (the caller's part: the map keeps whatever value it is given).
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, Hashable, TypeVar

import cachetools

V = TypeVar("V")


class _Evicting(cachetools.LRUCache):
    """An LRUCache that reports each entry its bounds drop (BoundedLRU keeps its mirror in step)."""

    def __init__(self, maxsize: int, getsizeof: Callable | None, dropped: Callable[[Hashable, object], object]):
        super().__init__(maxsize, getsizeof)
        self._dropped = dropped

    def popitem(self):
        key, value = super().popitem()
        self._dropped(key, value)
        return key, value


def _dropper(plain: dict, evicted: Callable | None) -> Callable[[Hashable, object], None]:
    """What the map calls for each entry its bounds drop: the mirror forgets it, and `evicted`
    hears of it. A closure over those two, not a method of the BoundedLRU: the map must not refer
    back to its owner (a cycle, which only the cyclic collector frees, per cache made)."""
    if evicted is None:
        return lambda key, value: plain.pop(key, None)

    def drop(key, value) -> None:
        plain.pop(key, None)
        evicted(key, value)

    return drop


class BoundedLRU(Generic[V]):
    """At most `entries` values (0: none kept), and with `size_of` at most `max_size` summed over
    them; the least recently used go first. `get` and `put` are atomic. `peek(key, default=None)`
    reads without the lock and without aging the entry, one dict read in C: for hot paths, where
    an entry read as older than it is only means that it may be evicted and built again.
    `evicted(key, value)`, when given, is told of each entry the bounds drop (under the map's lock:
    it must not call back into the map), so that an index over the values can follow them; a
    bound method of the map's owner would make a reference cycle: pass what it updates instead."""

    def __init__(self, entries: int, max_size: int | None = None, size_of: Callable[[V], int] | None = None,
                 evicted: Callable[[Hashable, V], object] | None = None):
        if entries < 0:
            raise ValueError("a BoundedLRU's bound on entries is not negative")
        if (max_size is None) != (size_of is None):
            raise ValueError("max_size and size_of go together")
        self.entries = entries
        self.max_size = max_size
        # the entries as a plain dict too, for peek: a lookup in C, no lock, no exception on a miss
        # (the identity caches peek at every node of a walk, and most nodes are not there)
        self._plain: dict = {}
        # cachetools bounds one sum: the sizes when they are given (entries are bounded in put),
        # else the count
        self._map = _Evicting(max_size if size_of else entries, size_of, _dropper(self._plain, evicted))
        self._lock = threading.Lock()
        self.peek: Callable[..., V | None] = self._plain.get

    def get(self, key: Hashable, default: V | None = None) -> V | None:
        """The value of `key` (now the most recently used), or `default`."""
        with self._lock:
            try:
                return self._map[key]  # one lookup (Cache.get would ask `in` first): this is a hit path
            except KeyError:
                return default

    def touch(self, keys) -> None:
        """Make each of `keys` that is present the most recently used, under one lock for all (what
        `get` does to one key): a hot path that read them with `peek` ages them in one go."""
        with self._lock:
            for key in keys:
                try:
                    self._map[key]
                except KeyError:
                    pass

    def put(self, key: Hashable, value: V) -> bool:
        """Store `value` under `key` (the most recently used), evicting the least recently used past
        either bound. False, and nothing stored, for a value larger than `max_size` by itself."""
        with self._lock:
            try:
                self._map[key] = value
            except ValueError:  # cachetools: a value too large for the whole map
                return False
            self._plain[key] = value
            while len(self._map) > self.entries:
                self._map.popitem()
            return True

    def pop(self, key: Hashable, default: V | None = None) -> V | None:
        with self._lock:
            self._plain.pop(key, None)
            return self._map.pop(key, default)

    def keys(self) -> list[Hashable]:
        """A snapshot of the keys (in no particular order; reading them ages nothing)."""
        with self._lock:
            return list(self._plain)

    def values(self) -> list[V]:
        """A snapshot of the values (in no particular order; reading them ages nothing)."""
        with self._lock:
            return list(self._plain.values())

    @property
    def size(self) -> int:
        """The summed size of the values (their count without `size_of`)."""
        with self._lock:  # a put may be past a bound for a moment, before it evicts
            return int(self._map.currsize)

    def clear(self) -> None:
        with self._lock:
            self._map.clear()
            self._plain.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._map)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._plain
