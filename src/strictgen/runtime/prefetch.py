"""Rules a compile deferred, built in the background before the fills that enter them (issue 28).

A compile builds the rules nearest the root and defers the rest until a walk first enters them
(compile/lazy_rules.py). Such a build, and the horizon classes of its states, costs a few
milliseconds, and it used to land inside a batch fill, under the grammar's lock: it made the
slowest steps of a cold batch (profiled with scripts/cold_fill_profile.py: one rule's build and
classes were 70–85% of each of the worst fills). So when a batch fill meets first-time states of
a grammar (runtime/batch.py), one background thread builds the rules those states may call next
and are not built yet (`nearest_calls`: from each stack's top frame down, the calls its rule's
automaton reaches first), newest states first, one rule per grammar in turn across the grammars
in use, between the fills: while the model runs. A rule the document is about to enter is built
before it gets there, a rule it may never enter costs nothing unless its caller is on a stack.
No build starts while a batch fill runs (builds hold the GIL). A fill that enters a rule before
its turn builds it itself, as before (or waits for the build in progress under the grammar's
lock): prefetching only moves work earlier, never changes a mask. Row-by-row fills (one request)
never start it, nor batch fills whose driver says `prefetch=False` (`fill_next_token_bitmask_batch`:
a forward pass on the same CPU cores, as the embedded engine's llama.cpp batching, gains nothing from
builds moved into it).

The thread is this module's own (not the fill's pool), started when there is work and gone when
there is none. A grammar's job stops once no matcher that asked for it is alive and unfinished,
so a finished or dropped request stops its prefetch after the rule in progress. A build that fails
here fails as it would in the fill (the machine keeps the error and raises it again to the walk
that enters the rule: that row's request fails, not the batch); the prefetch just goes on.
"""

from __future__ import annotations

import atexit
import statistics
import threading
import time
import weakref
from collections import deque

import numpy as np

from strictgen.compile.token_mask import TokenMasker
from strictgen.errors import StrictgenError


IDLE_S = 0.5  # no batch fill for this long: the batch is idle, and a build may start at any time
NEAREST = 3  # rules queued per new state: the nearest calls not built yet, from its top frames down
MAX_FRAMES = 16  # stacks read per state, frames per stack (a deep recursion's lower frames call nothing soon)
MAX_STATES = 64  # new states kept per grammar until the thread reads them


class Prefetch:
    """The rules of one grammar (its `TokenMasker`) to build ahead, found from the first-time
    states its batch fills met, for the matchers that asked (weakly held: the job keeps no
    request alive). Kept while the grammar lives, with each rule's `CallOrder`."""

    def __init__(self, masker: TokenMasker):
        self.masker = weakref.ref(masker)
        self.matchers: weakref.WeakSet = weakref.WeakSet()
        self.states: deque[int] = deque(maxlen=MAX_STATES)  # the newest last
        self._todo: deque[int] = deque()
        self._orders: dict[int, CallOrder] = {}  # by rule
        self.queued = False  # in the thread's turns (the Prefetcher's lock guards it)
        self.built = False  # whether the last step built a rule

    def wanted(self) -> bool:
        """Whether some matcher that asked is alive and has not ended."""
        return any(not m.is_terminated() for m in list(self.matchers))

    def step(self, wanted: bool | None = None) -> bool:
        """Build the next rule not built yet; whether there may be more to do. `wanted`: what
        `wanted()` says, asked by the caller under the lock that guards `matchers` (None: asked
        here, where no other thread adds to them)."""
        self.built = False
        masker = self.masker()
        if masker is None or not (self.wanted() if wanted is None else wanted):
            self.states.clear()
            self._todo.clear()
            return False
        machine = masker.machine
        while self.states:  # the newest state's calls first: the nearest in time
            for rule in reversed(nearest_calls(machine, self.states.pop(), self._orders)):
                self._todo.appendleft(rule)
        while self._todo and self._todo[0] in machine.added:  # built meanwhile
            self._todo.popleft()
        if not self._todo:
            return bool(self.states)
        self.built = True
        try:
            masker.build_rule(self._todo.popleft())
        except StrictgenError:
            pass  # kept by the machine: the walk that enters this rule raises it for its own request
        return bool(self._todo or self.states)


def nearest_calls(machine, state: int, orders: dict, limit: int = NEAREST) -> list[int]:
    """Up to `limit` rules not built yet that `state` may call next: from each stack's top frame
    down, the calls of its rule ahead of the frame's place (`CallOrder`), nearest first; `orders`
    keeps each rule's `CallOrder` between calls."""
    lazy = machine.automaton.lazy
    if lazy is None:
        return []
    added, built = machine.added, len(machine.automaton.rules)
    out: list[int] = []
    for stack in machine.stacks(state)[:MAX_FRAMES]:
        node, frames = stack, 0
        while node and frames < MAX_FRAMES and len(out) < limit:
            node, rule, place = machine.node(node)
            order = orders.get(rule)
            if order is None:
                order = orders[rule] = CallOrder(machine.automaton.rules[rule].dfa if rule < built else added[rule].dfa)
            for callee in order.ahead(place):
                if callee >= built and callee not in added and callee not in out:
                    out.append(callee)
                    if len(out) == limit:
                        break
            frames += 1
    return out


class CallOrder:
    """A rule automaton's call edges as its states order them. A minimal automaton's states are
    numbered breadth first from its start (regular/_minimize.c), and its call edges are grouped by
    state in that order, so the calls ahead of a place (the place's and those of the states after
    it) are a tail of one list, nearest first: exactly so for the automata of JSON objects and
    sequences, whose places go one way; within a loop, calls behind the place are not listed until
    it comes round again, nor needed before."""

    def __init__(self, dfa):
        starts, callees, _ = (np.frombuffer(a, dtype=np.int32) for a in dfa.call_arrays())
        self._starts = starts.tolist()
        self._callees = callees.tolist()

    def ahead(self, place: int) -> list[int]:
        """The callees of the call edges of `place` and of the places after it, nearest first (a
        callee may repeat)."""
        return self._callees[self._starts[place]:]


class Prefetcher:
    """One background thread serving every grammar's `Prefetch`, one rule each in turn."""

    def __init__(self):
        self._jobs: deque[Prefetch] = deque()
        self._by_masker: weakref.WeakKeyDictionary[TokenMasker, Prefetch] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._quiet = threading.Condition(self._lock)  # notified when the last fill running ends
        self._fills = 0  # batch fills running now: no build starts meanwhile
        self._thread: threading.Thread | None = None
        # when the last fill ended, and the recent gaps between fills and builds' durations (s):
        # a build starts only where it is likely to end before the next fill starts
        self._fill_ended: float | None = None
        self._gaps: deque[float] = deque(maxlen=16)
        self._builds: deque[float] = deque(maxlen=16)

    enabled = True  # False: no new prefetch starts (tests that count the builds inside fills)

    def start(self, masker: TokenMasker, matchers, states) -> None:
        """Build the rules that `masker`'s new `states` may call next, ahead, while one of
        `matchers` (or of the matchers that asked before) is alive and has not ended."""
        if masker.machine.automaton.lazy is None or not self.enabled:
            return
        with self._lock:
            job = self._by_masker.get(masker)
            if job is None:
                job = self._by_masker[masker] = Prefetch(masker)
            job.matchers.update(matchers)
            job.states.extend(states)
            if not job.queued:
                job.queued = True
                self._jobs.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="strictgen-prefetch", daemon=True)
                self._thread.start()

    def __enter__(self) -> None:
        """A batch fill runs (`with PREFETCHER:`): no new build starts until it ends."""
        with self._lock:
            if not self._fills and self._fill_ended is not None:
                self._gaps.append(time.monotonic() - self._fill_ended)
            self._fills += 1

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._fills -= 1
            if not self._fills:
                self._fill_ended = time.monotonic()
                self._quiet.notify_all()

    def _room(self) -> bool:
        """Whether a build started now likely ends before the next fill starts (the lock held).

        Builds hold the GIL for most of their time, so one running beside a fill holds the fill
        up (each time the fill takes the GIL back from a walk it may wait for a switch interval,
        5 ms, or a whole C call of the build): a build starts only when no fill runs, and only
        where the median gap between fills, less the time since the last one ended, holds a
        build of the median duration; or when no fill came for IDLE_S (the batch is idle). Where
        the steps follow each other at once, then, the fills build what they enter as before;
        where the model's forward pass leaves the CPU idle between them, the rules are built there."""
        if self._fills:
            return False
        if self._fill_ended is None or not self._gaps or not self._builds:
            return True
        since = time.monotonic() - self._fill_ended
        return since >= IDLE_S or since + statistics.median(self._builds) <= statistics.median(self._gaps)

    def _run(self) -> None:
        try:
            self._serve()
        finally:  # whatever ended it (an error no build should raise included), the next start makes another
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None

    def _serve(self) -> None:
        while True:
            with self._lock:
                while self._jobs and not self._room():
                    self._quiet.wait(IDLE_S)
                if not self._jobs:
                    self._thread = None  # gone when idle; the next start makes another
                    return
                job = self._jobs.popleft()
                wanted = job.wanted()  # under the lock that `start` adds matchers under
            t0 = time.monotonic()
            try:
                more = job.step(wanted)
            except Exception:  # not a build's own error (those are kept for the request): drop the job, not the thread;
                more = False  # a fill that enters the rule builds it itself and meets the error in its request's path
            with self._lock:
                if job.built:
                    self._builds.append(time.monotonic() - t0)
                if more:
                    self._jobs.append(job)
                else:  # done or no longer wanted: out of turn until a fill brings new states
                    job.queued = False

    def close(self) -> None:
        """Drop every job and wait for the rule in progress (at exit: a thread still building when
        the interpreter finalises could abort it)."""
        with self._lock:
            for job in self._jobs:
                job.queued = False
            self._jobs.clear()
            self._by_masker.clear()
            self._quiet.notify_all()  # a thread waiting for room finds no job and ends
        self.idle()

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until no prefetch runs (tests, benchmarks); whether it got there in time."""
        end = None if timeout is None else time.monotonic() + timeout
        while (thread := self._thread) is not None:
            thread.join(None if end is None else max(0.0, end - time.monotonic()))
            if thread.is_alive():
                return False
        return True


PREFETCHER = Prefetcher()
atexit.register(PREFETCHER.close)
