"""A per-cell time budget, enforced with SIGALRM (main thread only; C calls are interrupted as
soon as they return to Python)."""

from __future__ import annotations

import contextlib
import signal
import threading
import time


class CellTimeout(Exception):
    pass


class CellClock:
    def __init__(self, seconds: float | None):
        self.end = None if seconds is None else time.monotonic() + seconds

    @property
    def expired(self) -> bool:
        return self.end is not None and time.monotonic() >= self.end


@contextlib.contextmanager
def cell_deadline(seconds: float | None):
    """Raise CellTimeout in this (main) thread after `seconds`; yields a clock with `.expired`, for
    libraries that turn the exception raised inside their C code into one of their own."""
    clock = CellClock(seconds if seconds and seconds > 0 else None)
    usable = (
        seconds is not None and seconds > 0 and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield clock
        return

    def on_alarm(signum, frame):
        raise CellTimeout()

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield clock
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_delay > 0:  # someone else's timer (e.g. pytest-timeout): give back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(1e-3, old_delay - (time.monotonic() - start)), old_interval)
