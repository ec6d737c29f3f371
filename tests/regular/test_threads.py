"""The regular core's long algorithms (determinise, trim, minimise, product, refine, the JSON spellings) let the GIL go
on automata past a small size, so that rules built by several threads at once run in parallel
(issues 28/29). Run from many threads on shared automata they must give exactly what one thread
gets, their limits must still be clear errors, and a Lazy automaton that one thread determinises
must be refused to the others, never seen half-grown (which also shows that the GIL was let go:
another thread ran Python while the first was inside the C call).
"""

from __future__ import annotations

import array
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from strictgen import regular
from strictgen.deadline import compile_deadline
from strictgen.errors import CompileTimeoutError, GrammarTooLargeError


def _big_nfa(k: int, tail: int) -> tuple[regular.NFA, int, int]:
    """(a|b)* a (a|b){k} | c{tail}: 2^(k+1) DFA states; enough edges to pass the GIL-free size."""
    nfa = regular.NFA()
    s, f = nfa.add_state(), nfa.add_state()
    first = nfa.add_states(k + 1)
    nfa.add_eps(s, first)
    nfa.add_range(first, 0x61, 0x62, first)
    nfa.add_range(first, 0x61, 0x61, first + 1)
    for i in range(1, k):
        nfa.add_range(first + i, 0x61, 0x62, first + i + 1)
    nfa.add_range(first + k, 0x61, 0x62, f)
    nfa.add_literal(s, b"c" * tail, f)
    return nfa, s, f


def _every_step(k: int) -> tuple:
    """What each GIL-free algorithm gives on one automaton, as comparable bytes."""
    nfa, s, f = _big_nfa(k, 600)
    other_nfa, s2, f2 = _big_nfa(k - 2, 300)
    dfa = regular.determinize(nfa, s, f)
    small = regular.minimize(dfa.trim())
    other = regular.minimal(regular.determinize(other_nfa, s2, f2))
    both = regular.minimal(regular.product(small, other))
    minus = regular.minimal(regular.product(small, other, True))
    return (dfa.table256(), dfa.accepting(), small.table256(), both.table256(), minus.table256(), regular.refine(small, 64))


def test_threads_get_what_one_thread_gets():
    sizes = [9, 10, 11, 12]
    alone = [_every_step(k) for k in sizes]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(_every_step, sizes * 3))
    assert together == alone * 3
    assert len({a[2] for a in alone}) == len(sizes)  # the automata differ: equality says something


def _limited(kind: str):
    nfa, s, f = _big_nfa(14, 600)
    if kind == "states":
        return regular.determinize(nfa, s, f, 1000, "too big here")
    with compile_deadline(1e-9):
        return regular.determinize(nfa, s, f)


def test_limits_met_without_the_gil_are_clear_errors():
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(_limited, kind) for kind in ("states", "time") * 4]
        for i, fut in enumerate(futures):
            with pytest.raises(GrammarTooLargeError if i % 2 == 0 else CompileTimeoutError):
                fut.result()


def test_a_lazy_determinised_by_one_thread_is_refused_to_others():
    nfa, s, f = _big_nfa(16, 600)
    expected = regular.determinize(nfa, s, f).num_states
    refusals = 0
    for _ in range(5):  # the other thread must be inside the C call when this one asks
        lz = regular.lazy(nfa, s, f)
        started = threading.Event()
        got: list[regular.DFA] = []

        def determinise() -> None:
            started.set()
            got.append(lz.determinize())

        worker = threading.Thread(target=determinise)
        worker.start()
        started.wait()
        while worker.is_alive():
            try:
                lz.accepts(b"ab")
            except RuntimeError as exc:
                assert "in use by another thread" in str(exc)
                refusals += 1
        worker.join()
        assert got[0].num_states == expected
        assert lz.accepts(b"a" + b"b" * 16) and not lz.accepts(b"b" * 17)  # free again, and whole
        if refusals:
            break
    assert refusals, "no call ever ran while another thread was inside determinize: the GIL was held"


def _utf8_words(n: int) -> tuple[bytes, bytes, bytes]:
    """(table, accepting, classmap) as DFA.compact() gives them, of the strings of up to n
    characters from ASCII, 2-byte and 3-byte UTF-8 ranges: 3 states a character, each of which
    reads a lead byte or a continuation, so the spellings have escapes everywhere."""
    classmap = bytearray(256)
    for lo, hi, c in ((0x20, 0x7E, 1), (0xC2, 0xDF, 2), (0xE1, 0xEC, 3), (0x80, 0xBF, 4)):
        classmap[lo : hi + 1] = bytes([c]) * (hi - lo + 1)
    rows = []
    for i in range(n + 1):  # state 3i reads a character's lead, 3i + 1 one more byte, 3i + 2 two
        nxt = 3 * (i + 1) if i < n else -1
        lead = [-1, nxt, 3 * i + 1, 3 * i + 2, -1] if i < n else [-1] * 5
        rows += [lead, [-1, -1, -1, -1, nxt], [-1, -1, -1, -1, 3 * i + 1]]
    table = array.array("i", [t for row in rows for t in row]).tobytes()
    return table, bytes([1, 0, 0] * (n + 1)), bytes(classmap)


def _spelled(n: int) -> tuple[bytes, bytes]:
    got = regular.json_spellings(*_utf8_words(n)[:2], 10**7, True, _utf8_words(n)[2])
    return got.table256(), got.accepting()


def test_spellings_from_threads_are_one_threads():
    sizes = [400, 700, 1000]
    alone = [_spelled(n) for n in sizes]
    with ThreadPoolExecutor(3) as pool:
        together = list(pool.map(_spelled, sizes * 3))
    assert together == alone * 3 and len(set(alone)) == len(sizes)


def test_a_big_spelling_lets_other_threads_run():
    """Python on another thread runs in the middle of one long spelling: a held GIL would leave
    that middle empty (a thread can take the GIL only between bytecodes, so at most a switch
    interval, 5 ms, at either end of the call, which takes tens of ms)."""
    table, accepting, classmap = _utf8_words(12_000)
    for _ in range(3):
        span: list[float] = []
        started = threading.Event()

        def spell() -> None:
            started.set()
            t0 = time.perf_counter()
            regular.json_spellings(table, accepting, 10**7, True, classmap)
            span.extend((t0, time.perf_counter()))

        worker = threading.Thread(target=spell)
        worker.start()
        started.wait()
        ticks = []
        while worker.is_alive():
            ticks.append(time.perf_counter())
        worker.join()
        t0, t1 = span
        if t1 - t0 < 0.03:  # too short for the window below to be clear of the ends
            continue
        middle = [t for t in ticks if t0 + 0.3 * (t1 - t0) < t < t0 + 0.7 * (t1 - t0)]
        assert middle, f"no Python ran in the middle of a {1e3 * (t1 - t0):.0f} ms spelling: the GIL was held"
        return
    pytest.fail("the spelling never took 30 ms: make the automaton bigger")
