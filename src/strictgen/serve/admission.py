"""Admission control: a bounded number of generation requests at once, and request preparation
(format compiles, prompt rendering) off the event loop.

A generation request is admitted while fewer than `slots + max_queue` are in flight; past that the
server answers 429 with Retry-After at once, before reading the body, so a burst costs neither
memory nor latency for the requests already admitted. Preparation runs in a thread pool sized so
every admitted request can prepare at once; cold compiles among them are bounded separately by the
compiler's semaphore (`max_concurrent_compiles`), so cache hits never wait behind a slow compile.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class Admission:
    """Counts of admitted requests and of their jobs in the model pool (thread-safe)."""

    def __init__(self, slots: int, max_queue: int):
        if max_queue < 0:
            raise ValueError(f"max_queue must be 0 or more, not {max_queue}")
        self.slots = slots
        self.max_queue = max_queue
        self.limit = slots + max_queue
        self.admitted = 0
        self.in_pool = 0
        self._mean_s: float | None = None  # moving mean of admitted requests' durations
        self._lock = threading.Lock()

    def try_admit(self) -> bool:
        with self._lock:
            if self.admitted >= self.limit:
                return False
            self.admitted += 1
        return True

    def leave(self, seconds: float) -> None:
        with self._lock:
            self.admitted -= 1
            self._mean_s = seconds if self._mean_s is None else 0.9 * self._mean_s + 0.1 * seconds

    def job(self, _trace: Any, delta: int) -> None:
        """A job entered (+1) or left (-1) the model pool (called from its thread)."""
        with self._lock:
            self.in_pool += delta

    def retry_after(self) -> int:
        """Seconds a refused client should wait: until one admitted request is likely done (a request's
        mean time over the slots that finish them), 1 to 60."""
        mean = self._mean_s or 1.0
        return max(1, min(60, math.ceil(mean / max(1, self.slots))))


class Preparer:
    """Runs request preparation in threads, in the caller's context (its request trace)."""

    def __init__(self, workers: int):
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="strictgen-prepare")

    async def run(self, fn: Callable[..., T], *args) -> T:
        ctx = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self._pool, ctx.run, fn, *args)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
