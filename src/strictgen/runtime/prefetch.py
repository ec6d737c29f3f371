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
No build starts while a batch fill runs (builds hold the GIL), nor one predicted from the rule's
size to run on into the next fill (`Prefetcher`). A fill that enters a rule before its turn builds
it itself, as before (or waits for the build in progress under the grammar's lock): prefetching
only moves work earlier, never changes a mask. Row-by-row fills (one request)
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
import sys
import threading
import time
import weakref
from collections import deque

import numpy as np

from strictgen.compile.token_mask import TokenMasker
from strictgen.errors import StrictgenError
from strictgen.grammar.ir import Lazy, Repeat, RuleRef, children, lazy_body


IDLE_S = 0.5  # no batch fill for this long: the batch is idle, and a build may start at any time
NEAREST = 3  # rules queued per new state: the nearest calls not built yet, from its top frames down
MAX_FRAMES = 16  # stacks read per state, frames per stack (a deep recursion's lower frames call nothing soon)
MAX_STATES = 64  # new states kept per grammar until the thread reads them
FILL_SWITCH_S = 0.0002  # the GIL's switch interval while a fill runs beside a build (Python's default: 0.005)


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
        self._sizes: dict[int, int] = {}  # each queued rule's `rule_size`, by rule
        self.queued = False  # in the thread's turns (the Prefetcher's lock guards it)
        self.built = False  # whether the last step built a rule
        self.size = 0  # the estimated size of the rule it built
        self.spent = 0.0  # and the CPU seconds the build took
        self.stalled_at = -1  # the fills ended (`Prefetcher._ends`) when no queued rule fitted: none fits again before the next

    def wanted(self) -> bool:
        """Whether some matcher that asked is alive and has not ended."""
        return any(not m.is_terminated() for m in list(self.matchers))

    def step(self, wanted: bool | None = None, fits=None) -> bool:
        """Build the next rule not built yet whose estimated size (`rule_size`) `fits` says a build
        has time for (None: any), leaving the others queued; whether there may be more to do.
        `wanted`: what `wanted()` says, asked by the caller under the lock that guards `matchers`
        (None: asked here, where no other thread adds to them). `built` says whether a rule was
        built, `size` its size and `spent` the CPU seconds it took."""
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
        rule = None
        for queued in [r for r in self._todo if r not in machine.added]:  # nearest first
            size = self._sizes.get(queued)
            if size is None:
                size = self._sizes[queued] = rule_size(machine, queued)
            if fits is None or fits(size):
                rule, self.size = queued, size
                break
        self._todo = deque(r for r in self._todo if r != rule and r not in machine.added)
        if rule is None:
            return bool(self._todo or self.states)
        self.built = True
        t0 = time.thread_time()  # the build's own CPU time, not the waits for a fill's GIL
        try:
            masker.build_rule(rule)
        except StrictgenError:
            pass  # kept by the machine: the walk that enters this rule raises it for its own request
        self.spent = time.thread_time() - t0
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


SIZE_CAP = 1 << 20  # an estimate stops counting here (a rule that big never fits a gap)


def rule_size(machine, index: int) -> int:
    """How much automaton deferred rule `index` makes, estimated from its grammar expression
    before it is built: its nodes, each repeat's item counted once per copy and each rule it
    inlines (a reference that is not a call) counted where it is used, as the lowering copies
    them (grammar/lowering.py). A build's time grows with it (scripts/cold_fill_profile.py fits
    it), so the prefetch predicts how long a build takes from it. Capped at SIZE_CAP."""
    lazy = machine.automaton.lazy
    if index < len(lazy.names):
        root = lazy.rules[lazy.names[index]]
    else:
        root = lazy_body(lazy.calls.lazy[index - lazy.calls.first_lazy])
    rules, calls = lazy.rules, lazy.calls
    sizes: dict[int, int] = {}  # by id of expression: each shared node is measured once
    inlining: set[str] = set()

    def size(expr) -> int:
        got = sizes.get(id(expr))
        if got is not None:
            return got
        t = type(expr)
        if t is RuleRef:
            name = expr.name
            if name in calls or name not in rules or name in inlining:
                got = 1
            else:
                inlining.add(name)
                got = 1 + size(rules[name])
                inlining.discard(name)
        elif t is Lazy:
            got = 1
        else:
            got = 1 + sum(size(c) for c in children(expr))
            if t is Repeat:
                copies = max(1, expr.min + (1 if expr.max is None else expr.max - expr.min))
                got = 1 + (got - 1) * copies
        got = min(got, SIZE_CAP)
        sizes[id(expr)] = got
        return got

    try:
        return size(root)
    except RecursionError:  # a nesting deeper than Python's stack: as big as it gets
        return SIZE_CAP


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
    """One background thread serving every grammar's `Prefetch`, one rule each in turn.

    A build holds the GIL for most of its time, so one that runs on into a fill holds the fill up
    (each time the fill takes the GIL back from a walk it may wait for a switch interval, 5 ms, or
    a whole C call of the build). Build times are heavy-tailed (0.1 to 100+ ms), and they follow
    the size of the rule's expression (`rule_size`; rank correlation 0.7–0.85 with the time,
    scripts/cold_fill_profile.py), so no build starts while a fill runs, and a build starts in
    the gap after a fill only where its predicted time (its size times the median CPU time per
    unit of size of this process's recent builds: a fitted rate, not a constant of one machine)
    fits what is likely left of the gap (the lower quartile of recent gaps between fills, less
    the time since the last one ended). A rule that does not fit waits, behind the smaller ones
    after it, for a longer gap (a long forward pass), for the batch to be idle (no fill for
    IDLE_S), or for the fill that enters it, which builds it itself as without the prefetch."""

    def __init__(self):
        self._jobs: deque[Prefetch] = deque()
        self._by_masker: weakref.WeakKeyDictionary[TokenMasker, Prefetch] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._quiet = threading.Condition(self._lock)  # notified when the last fill running ends
        self._fills = 0  # batch fills running now: no build starts meanwhile
        self._ends = 0  # how many times the last fill running ended: a new gap
        self._thread: threading.Thread | None = None
        self._building = False  # a build runs now
        self._switch: float | None = None  # the switch interval a fill beside a build lowered, to restore
        # when the last fill ended, the recent gaps between fills (s) and builds' CPU seconds per
        # unit of size: a build starts only where it is likely to end before the next fill starts
        self._fill_ended: float | None = None
        self._gaps: deque[float] = deque(maxlen=16)
        self._rates: deque[float] = deque(maxlen=32)

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
            if self._building and self._switch is None:  # the fill takes the GIL back from the build within FILL_SWITCH_S
                self._switch = sys.getswitchinterval()
                sys.setswitchinterval(FILL_SWITCH_S)

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._fills -= 1
            if not self._fills:
                self._fill_ended = time.monotonic()
                self._ends += 1
                self._restore_switch()
                self._quiet.notify_all()

    def _restore_switch(self) -> None:
        """The switch interval as it was before a fill beside a build lowered it (the lock held),
        unless someone set another since."""
        if self._switch is not None:
            if abs(sys.getswitchinterval() - FILL_SWITCH_S) < 1e-6:  # kept in microseconds
                sys.setswitchinterval(self._switch)
            self._switch = None

    def _budget(self) -> float | None:
        """Seconds a build started now likely has before the next fill starts (the lock held, no
        fill running); None: no limit (the batch is idle, or no gap is known yet)."""
        if self._fill_ended is None or not self._gaps:
            return None
        since = time.monotonic() - self._fill_ended
        if since >= IDLE_S:
            return None
        return sorted(self._gaps)[len(self._gaps) // 4] - since

    def _fits(self, budget: float | None):
        """What `Prefetch.step` asks of a rule's size: whether its predicted build time is within
        `budget` (None: anything fits, as before any build gave a rate)."""
        if budget is None or not self._rates:
            return None
        rate = statistics.median(self._rates)
        return lambda size: size * rate <= budget

    def _next_job(self) -> Prefetch | None:
        """The first job in turn that may build now (the lock held): none while a fill runs, nor
        one for which nothing fitted since the last fill ended, unless the batch is idle."""
        if self._fills:
            return None
        idle = self._fill_ended is None or time.monotonic() - self._fill_ended >= IDLE_S
        for _ in range(len(self._jobs)):
            job = self._jobs.popleft()
            if idle or job.stalled_at != self._ends:
                return job
            self._jobs.append(job)
        return None

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
                job = None
                while self._jobs and (job := self._next_job()) is None:
                    self._quiet.wait(IDLE_S)
                if job is None:
                    self._thread = None  # gone when idle; the next start makes another
                    return
                wanted = job.wanted()  # under the lock that `start` adds matchers under
                fits = self._fits(self._budget())
                self._building = True
            try:
                more = job.step(wanted, fits)
            except Exception:  # not a build's own error (those are kept for the request): drop the job, not the thread;
                job.built, more = False, False  # a fill that enters the rule builds it itself and meets the error in its request's path
            with self._lock:
                self._building = False
                self._restore_switch()
                if job.built:
                    self._rates.append(job.spent / max(1, job.size))
                elif more:  # nothing queued fits this gap: wait for the next
                    job.stalled_at = self._ends
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
