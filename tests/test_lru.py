"""BoundedLRU (strictgen/lru.py): the bounded LRU map every long-lived cache uses."""

import threading

import pytest

from strictgen.lru import BoundedLRU


def test_least_recently_used_goes_first():
    lru = BoundedLRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # a is now the most recent
    lru.put("c", 3)
    assert "b" not in lru and lru.get("a") == 1 and lru.get("c") == 3
    assert len(lru) == 2


def test_peek_does_not_refresh_an_entry():
    lru = BoundedLRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.peek("a") == 1 and lru.peek("zzz", "none") == "none"
    lru.put("c", 3)  # a was only peeked: still the oldest
    assert "a" not in lru and lru.get("b") == 2


def test_touch_refreshes_present_keys_under_one_call():
    lru = BoundedLRU(3)
    for k in "abc":
        lru.put(k, k)
    lru.touch(["a", "missing", "b"])  # a and b now newer than c; an absent key is passed over
    lru.put("d", "d")
    assert "c" not in lru and all(k in lru for k in "abd") and "missing" not in lru


def test_size_bound_evicts_and_refuses_what_cannot_fit():
    lru = BoundedLRU(100, max_size=10, size_of=len)
    assert lru.put("x", "aaaa") and lru.put("y", "bbbb")
    assert lru.size == 8
    assert lru.put("z", "cccc")  # 12 > 10: x goes
    assert "x" not in lru and lru.size == 8
    assert not lru.put("huge", "h" * 11)  # larger than the whole map: not stored, nothing evicted
    assert "huge" not in lru and len(lru) == 2
    lru.put("y", "b")  # a new value of a key is counted at its own size
    assert lru.size == 5


def test_evicted_hears_of_each_entry_either_bound_drops():
    dropped = []
    lru = BoundedLRU(2, max_size=10, size_of=len, evicted=lambda k, v: dropped.append((k, v)))
    lru.put("a", "aa")
    lru.put("b", "bb")
    lru.put("c", "cc")  # the entry bound: a goes
    lru.put("d", "dddddddd")  # the size bound: b goes (2 + 8 fits in 10)
    assert dropped == [("a", "aa"), ("b", "bb")]
    lru.pop("d")
    lru.clear()  # a pop and a clear are the caller's own: not reported
    assert len(dropped) == 2 and "c" not in lru and lru.peek("d") is None


def test_both_bounds_hold_at_once():
    lru = BoundedLRU(3, max_size=1000, size_of=len)
    for i in range(10):
        lru.put(i, "v")
    assert len(lru) == 3 and sorted(lru.values()) == ["v"] * 3
    assert all(i in lru for i in (7, 8, 9))


def test_zero_entries_keeps_nothing():
    lru = BoundedLRU(0)
    lru.put("a", 1)
    assert lru.get("a") is None and len(lru) == 0


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError):
        BoundedLRU(-1)
    with pytest.raises(ValueError):
        BoundedLRU(4, max_size=10)


def test_identity_keys_hold_their_objects():
    """An identity-keyed entry (id(obj) -> value holding obj) keeps obj alive, so the id is never
    reused by another object while the entry lives (DESIGN §1)."""
    lru = BoundedLRU(4)
    obj = object()
    key = id(obj)
    lru.put(key, ("value", obj))
    del obj
    others = [object() for _ in range(1000)]
    assert all(id(o) != key for o in others)
    assert lru.get(key)[1] is not None and id(lru.get(key)[1]) == key


def test_threads_never_exceed_the_bounds():
    lru = BoundedLRU(50, max_size=200, size_of=len)
    errors = []

    def work(t):
        try:
            for i in range(2000):
                lru.put((t, i % 97), "x" * (i % 7 + 1))
                lru.get((t, (i * 7) % 97))
                lru.peek((t, i % 13))
                assert len(lru) <= 50 and lru.size <= 200
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(lru) <= 50 and lru.size <= 200
