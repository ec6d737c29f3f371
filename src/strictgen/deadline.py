"""A time limit for compiling, so that a pathological format is a clear error rather than a hang.

Compiling is plain Python work spread over several layers (schema normalisation, automaton
construction); each of their long loops calls `check()`, which is cheap. The limit is per thread
(a context variable), set by `GrammarCompiler` around one compile."""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

from strictgen.errors import CompileTimeoutError

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("strictgen_compile_deadline", default=None)


@contextmanager
def compile_deadline(seconds: float | None) -> Iterator[None]:
    """Within the block, `check()` raises once `seconds` have passed (None or 0: no limit). An
    enclosing, earlier deadline stays in force."""
    outer = _deadline.get()
    limit = (time.monotonic() + seconds, seconds) if seconds else None
    if outer is not None and (limit is None or outer[0] < limit[0]):
        limit = outer
    token = _deadline.set(limit)
    try:
        yield
    finally:
        _deadline.reset(token)


def check() -> None:
    """Raise GrammarTooLargeError if the current compile has run past its time limit."""
    limit = _deadline.get()
    if limit is not None and time.monotonic() > limit[0]:
        raise CompileTimeoutError(
            f"compiling took longer than the {limit[1]:g} s limit (GrammarCompiler(compile_timeout=...)); "
            "the format is too large or too intricate to compile here"
        )


def expires_at() -> float:
    """The current compile's deadline on the `time.monotonic` clock, or 0.0 when there is none
    (what the C loops of `strictgen.regular` compare their clock against)."""
    limit = _deadline.get()
    return limit[0] if limit is not None else 0.0


def current_limit() -> float | None:
    """The current compile's limit in seconds (None: no limit), for work a compile leaves to run
    later under the same limit (a rule built when the machine first enters it)."""
    limit = _deadline.get()
    return limit[1] if limit is not None else None
