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


class BoundedLRU(Generic[V]):
    """At most `entries` values (0: none kept), and with `size_of` at most `max_size` summed over
    them; the least recently used go first. `get` and `put` are atomic; `peek` reads without the
    lock."""

    def __init__(self, entries: int, max_size: int | None = None, size_of: Callable[[V], int] | None = None):
        if entries < 0:
            raise ValueError("a BoundedLRU's bound on entries is not negative")
        if (max_size is None) != (size_of is None):
            raise ValueError("max_size and size_of go together")
        self.entries = entries
        self.max_size = max_size
        # cachetools bounds one sum: the sizes when they are given (entries are bounded in put),
        # else the count
        self._map: cachetools.LRUCache = cachetools.LRUCache(max_size, size_of) if size_of else cachetools.LRUCache(entries)
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: V | None = None) -> V | None:
        """The value of `key` (now the most recently used), or `default`."""
        with self._lock:
            try:
                return self._map[key]  # one lookup (Cache.get would ask `in` first): this is a hit path
            except KeyError:
                return default

    def peek(self, key: Hashable, default: V | None = None) -> V | None:
        """The value of `key` without the lock and without touching its age: for lookups on a hot
        path, where an entry read as older than it is only means it may be evicted and built
        again. One dict read, atomic under the GIL."""
        try:
            return cachetools.Cache.__getitem__(self._map, key)  # the base class's plain read, no reordering
        except KeyError:
            return default

    def put(self, key: Hashable, value: V) -> bool:
        """Store `value` under `key` (the most recently used), evicting the least recently used past
        either bound. False, and nothing stored, for a value larger than `max_size` by itself."""
        with self._lock:
            try:
                self._map[key] = value
            except ValueError:  # cachetools: a value too large for the whole map
                return False
            while len(self._map) > self.entries:
                self._map.popitem()
            return True

    def pop(self, key: Hashable, default: V | None = None) -> V | None:
        with self._lock:
            return self._map.pop(key, default)

    def values(self) -> list[V]:
        """A snapshot of the values (in no particular order; reading them ages nothing)."""
        with self._lock:
            return [cachetools.Cache.__getitem__(self._map, k) for k in list(self._map)]

    @property
    def size(self) -> int:
        """The summed size of the values (their count without `size_of`)."""
        return int(self._map.currsize)

    def clear(self) -> None:
        with self._lock:
            self._map.clear()

    def __len__(self) -> int:
        return len(self._map)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._map
