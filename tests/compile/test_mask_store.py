"""The C store of token masks (compile/_mask_store.c): a bounded map from machine state to a
read-only mask row, CLOCK eviction, rows valid after eviction, safe from several threads."""

import threading

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from strictgen.compile._mask_store import MaskStore


def _row(value: int, width: int = 3) -> np.ndarray:
    row = np.full(width, value, dtype=np.int32)
    row.setflags(write=False)
    return row


def test_get_peek_put_and_eviction_keeps_rows_valid():
    store = MaskStore(3, 2)
    first = _row(1)
    store.put(10, first)
    store.put(11, _row(2))
    assert store.peek(10) is first and store.peek(11)[0] == 2 and store.peek(12) is None
    assert len(store) == 2 and sorted(store.states()) == [10, 11]
    store.put(12, _row(3))
    store.put(13, _row(4))  # neither 10 nor 11 was read since it was put: both go
    assert sorted(store.states()) == [12, 13] and store.peek(10) is None
    assert first[0] == 1 and not first.flags.writeable  # a row handed out stays valid after its eviction


def test_clock_spares_what_was_read_since_the_hand_passed():
    store = MaskStore(3, 4)
    for s in range(4):
        store.put(s, _row(s))
    store.touch([0, 2, 99])  # 99 is not stored: passed over
    store.put(4, _row(4))  # the hand clears 0's bit and takes 1
    assert store.peek(1) is None and store.peek(0) is not None
    store.put(5, _row(5))  # 2 was read: 3 goes
    assert store.peek(3) is None and store.peek(2) is not None


def test_bad_rows_and_a_zero_bound():
    store = MaskStore(3, 4)
    with pytest.raises(ValueError, match="read-only"):
        store.put(1, np.zeros(3, dtype=np.int32))  # writable
    with pytest.raises(ValueError, match="read-only"):
        store.put(1, _row(0, width=4))
    with pytest.raises(ValueError):
        MaskStore(0, 4)
    none = MaskStore(3, 0)
    none.put(1, _row(1))
    assert none.peek(1) is None and len(none) == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.lists(st.tuples(st.booleans(), st.integers(0, 12)), max_size=80))
def test_the_store_is_a_bounded_map(capacity, ops):
    """Against a dict: every stored state holds the last row put for it, never more than the bound
    are kept, and a state just put is always there (the probe runs stay whole across deletions)."""
    store, model = MaskStore(2, capacity), {}
    for is_put, state in ops:
        if is_put:
            row = _row(state * 7 + len(model), 2)
            store.put(state, row)
            model[state] = row
            assert store.peek(state) is row
        else:
            store.get(state)
        kept = store.states()
        assert len(kept) == len(set(kept)) == len(store) <= capacity
        for s in kept:
            assert store.peek(s) is model[s]


class _ClockModel:
    """The store's eviction in Python (_mask_store.c's comment): entries in put order, a used bit
    set by reads once the store is half full, the hand clearing bits until an unused entry."""

    def __init__(self, capacity: int):
        self.capacity, self.keys, self.used, self.hand = capacity, [], [], 0

    def put(self, key: int) -> None:
        if key in self.keys:
            self.used[self.keys.index(key)] = False
        elif len(self.keys) < self.capacity:
            self.keys.append(key), self.used.append(False)
        else:
            while self.used[self.hand]:
                self.used[self.hand] = False
                self.hand = (self.hand + 1) % self.capacity
            self.keys[self.hand], self.used[self.hand] = key, False
            self.hand = (self.hand + 1) % self.capacity

    def read(self, key: int) -> None:
        if key in self.keys and 2 * len(self.keys) >= self.capacity:
            self.used[self.keys.index(key)] = True


# a sure case: 200 entries reached through 64 and 128, then evictions spared and not
_LONG = [(["put", "get", "touch"][(i * 7) % 3] if i > 300 else "put", (i * 37) % 450) for i in range(2000)]


@settings(max_examples=25, deadline=None)
@example(200, _LONG)
@given(st.sampled_from([1, 63, 64, 65, 200, 300]), st.lists(st.tuples(st.sampled_from(["put", "get", "touch"]), st.integers(0, 500)), max_size=400))
def test_a_store_grown_as_it_fills_evicts_as_one_made_whole(capacity, ops):
    """The store allocates a few entries first and doubles them as puts need (a compile no longer
    pays for 4096 entries up front): the states it keeps, in their order, are those of the CLOCK
    model of a store whose whole capacity is there from the start, through every growth."""
    store, model = MaskStore(2, capacity), _ClockModel(capacity)
    for op, state in ops:
        if op == "put":
            row = _row(state, 2)
            store.put(state, row)
            model.put(state)
            assert store.peek(state) is row
        elif op == "get":
            store.get(state)
            model.read(state)
        else:
            store.touch([state])
            model.read(state)
        assert store.states() == model.keys
        assert all(got is not None and got[0] == s for s, got in zip(model.keys, map(store.peek, model.keys)))  # all still found


@pytest.mark.parametrize("capacity, num_states, fresh_every", [(16, 64, None), (600, 1000, 700)])
def test_puts_and_reads_from_several_threads(capacity, num_states, fresh_every):
    """Readers (peek, and the C batch copy) on several threads while another thread puts and evicts:
    every row read is a whole row that was put for that state. With `fresh_every`, the writer
    starts a new store that often, so its entries grow (64, 128, ...) while the readers read."""
    from strictgen.compile import _mask_store

    width = 64
    current = [MaskStore(width, capacity)]
    rows = {s: _row(s, width) for s in range(num_states)}
    stop = threading.Event()
    errors = []

    def writer():
        k = 0
        while not stop.is_set():
            if fresh_every and k % fresh_every == 0:
                current[0] = MaskStore(width, capacity)
            current[0].put(k % num_states, rows[k % num_states])
            k += 1

    def reader():
        target = np.zeros((8, width), dtype=np.int32)
        codes = np.zeros(8, dtype=np.uint8)
        states = np.arange(8, dtype=np.int64) * (num_states // 8)
        for _ in range(2000):
            store = current[0]
            got = store.peek(int(states[0]))
            if got is not None and not (got == 0).all():
                errors.append("peek")
            _mask_store.fill_rows(_row_states(store, states), None, target, codes)
            hit = np.flatnonzero(codes != _mask_store.MISSED)
            if not all((target[i] == states[i]).all() for i in hit):
                errors.append("fill")

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads[1:]:
        t.join()
    stop.set()
    threads[0].join()
    assert not errors


def _row_states(store, states):
    """RowStates as a matcher keeps them (runtime/matcher.py), one per state."""
    from strictgen.compile import _mask_store

    out = []
    for state in states:
        r = _mask_store.RowState()
        r._state, r._row_store, r._terminated = int(state), store, False
        out.append(r)
    return out


def _fill(store, states):
    from strictgen.compile import _mask_store

    n = len(states)
    target = np.zeros((n, store.width), dtype=np.int32)
    return _mask_store.fill_rows(_row_states(store, states), None, target, np.zeros(n, dtype=np.uint8))


def test_batch_copies_age_hits_once_the_store_is_half_full():
    """fill_rows ages what it copies (TokenMasker.age's rule): not below half full, after."""
    below = MaskStore(3, 8)
    for s in range(3):
        below.put(s, _row(s))
    assert _fill(below, [0]) == 0  # a hit, 3 of 8: not aged
    for s in range(3, 9):
        below.put(s, _row(s))  # the ninth evicts the first unread from the hand: 0
    assert below.peek(0) is None
    half = MaskStore(3, 4)
    for s in range(4):
        half.put(s, _row(s))
    assert _fill(half, [0, 7]) == 1  # 0 a hit (aged), 7 a miss
    half.put(4, _row(4))
    assert half.peek(0) is not None and half.peek(1) is None


def test_fill_rows_reads_row_states_and_refuses_bad_input():
    """fill_rows says per row what it did (a hit's flag, MISSED, NOT_PLAIN: ended or without a
    store), and refuses what is not a RowState, a row out of range and a bitmask too narrow."""
    from strictgen.compile import _mask_store

    store = MaskStore(3, 4)
    store.put(1, _row(1))
    full = np.full(3, -1, dtype=np.int32)
    full.setflags(write=False)
    store.put(2, full)
    rows = _row_states(store, [1, 2, 5, 1, 1])
    rows[3]._terminated = True  # ended: EOS only, read by Python
    rows[4]._row_store = None  # a tracked grammar's row
    target, codes = np.zeros((5, 4), dtype=np.int32), np.zeros(5, dtype=np.uint8)
    assert _mask_store.fill_rows(rows, None, target, codes) == 3
    assert codes.tolist() == [1, 0, _mask_store.MISSED, _mask_store.NOT_PLAIN, _mask_store.NOT_PLAIN]
    assert (target[0, :3] == 1).all() and (target[1, :3] == -1).all() and not target[2:].any() and not target[:, 3].any()
    with pytest.raises(TypeError, match="RowState"):
        _mask_store.fill_rows([rows[0], object()], None, target, codes)
    with pytest.raises(ValueError, match="out of range"):
        _mask_store.fill_rows(rows[:1], np.array([5], dtype=np.int64), target, codes)
    with pytest.raises(ValueError, match="narrower"):
        _mask_store.fill_rows(rows[:1], None, np.zeros((1, 2), dtype=np.int32), codes)
