"""Rules a compile deferred, built in the background before the fills that enter them (issue 28).

A compile builds the rules nearest the root and defers the rest until a walk first enters them
(compile/lazy_rules.py). Such a build, and the horizon classes of its states, costs a few
milliseconds, and it used to land inside a batch fill, under the grammar's lock: it made the
slowest steps of a cold batch (profiled with scripts/cold_fill_profile.py: one rule's build and
classes were 70–85% of each of the worst fills). So when a batch fill meets first-time states
of a grammar with deferred rules (runtime/batch.py), one background thread builds the rest of
them, nearest the root first (the compile's order, which a document mostly follows), one rule per
grammar in turn across the grammars in use, between the fills: while the model runs. No build
starts while a batch fill runs (builds hold the GIL). A fill that enters a rule before its turn
builds it itself, as before (or waits for the build in progress under the grammar's lock):
prefetching only moves work earlier, never changes a mask. Row-by-row fills (one request) never
start it.

The thread is this module's own (not the fill's pool), started when there is work and gone when
there is none. A grammar's job stops once no matcher that asked for it is alive and unfinished,
so a finished or dropped request stops its prefetch after the rule in progress. A build that fails
here fails as it would in the fill (the machine keeps the error and raises it again to the walk
that enters the rule: that row's request fails, not the batch); the prefetch just goes on.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque

from strictgen.compile.token_mask import TokenMasker
from strictgen.errors import StrictgenError


class Prefetch:
    """The deferred rules of one grammar (its `TokenMasker`) still to build, for the matchers that
    asked (weakly held: the job does not keep a request alive)."""

    def __init__(self, masker: TokenMasker):
        self.masker = weakref.ref(masker)
        self.matchers: weakref.WeakSet = weakref.WeakSet()
        self._todo = deque(masker.deferred_rules())

    def wanted(self) -> bool:
        """Whether some matcher that asked is alive and has not ended."""
        return any(not m.is_terminated() for m in list(self.matchers))

    def step(self) -> bool:
        """Build the next rule not built yet; whether there may be more to do."""
        masker = self.masker()
        if masker is None or not self.wanted():
            return False
        added = masker.machine.added
        while self._todo and self._todo[0] in added:  # built by a fill meanwhile
            self._todo.popleft()
        if not self._todo:
            return False
        try:
            masker.build_rule(self._todo.popleft())
        except StrictgenError:
            pass  # kept by the machine: the walk that enters this rule raises it for its own request
        return bool(self._todo)


class Prefetcher:
    """One background thread serving every grammar's `Prefetch`, one rule each in turn."""

    def __init__(self):
        self._jobs: deque[Prefetch] = deque()
        self._by_masker: weakref.WeakKeyDictionary[TokenMasker, Prefetch] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._quiet = threading.Condition(self._lock)  # notified when the last fill running ends
        self._fills = 0  # batch fills running now: no build starts meanwhile
        self._thread: threading.Thread | None = None

    enabled = True  # False: no new prefetch starts (tests that count the builds inside fills)

    def start(self, masker: TokenMasker, matchers) -> None:
        """Build `masker`'s deferred rules ahead while one of `matchers` (or of the matchers that
        asked before) is alive and has not ended."""
        if masker.machine.automaton.lazy is None or not self.enabled:
            return
        with self._lock:
            job = self._by_masker.get(masker)
            if job is None:
                if not masker.deferred_rules():
                    return
                job = self._by_masker[masker] = Prefetch(masker)
                self._jobs.append(job)
            job.matchers.update(matchers)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="strictgen-prefetch", daemon=True)
                self._thread.start()

    def __enter__(self) -> None:
        """A batch fill runs: no new build starts until it ends (`with PREFETCHER:`). Builds hold
        the GIL, so one running beside a fill would hold the fill up; between fills (the model's
        forward pass, sampling) the thread has the CPU to itself."""
        with self._lock:
            self._fills += 1

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._fills -= 1
            if not self._fills:
                self._quiet.notify_all()

    def _run(self) -> None:
        while True:
            with self._lock:
                while self._fills:
                    self._quiet.wait()
                if not self._jobs:
                    self._thread = None  # gone when idle; the next start makes another
                    return
                job = self._jobs.popleft()
            more = job.step()
            with self._lock:
                if more:
                    self._jobs.append(job)
                else:  # done or no longer wanted: a later matcher starts a new job
                    masker = job.masker()
                    if masker is not None and self._by_masker.get(masker) is job:
                        del self._by_masker[masker]
                    del masker

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until no prefetch runs (tests, benchmarks); whether it got there in time."""
        end = None if timeout is None else time.monotonic() + timeout
        while (thread := self._thread) is not None:
            thread.join(None if end is None else max(0.0, end - time.monotonic()))
            if thread.is_alive():
                return False
        return True


PREFETCHER = Prefetcher()
