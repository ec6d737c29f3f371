"""What every build of automata runs under, at compile time and when a rule is built at run time:
errors a user can read, and the cyclic collector paused."""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

from strictgen.errors import GrammarTooLargeError, InternalError, StrictgenError


@contextmanager
def user_errors(source: str) -> Iterator[None]:
    """Whatever goes wrong inside a compile reaches the caller as one of strictgen's errors: a
    format too deeply nested for Python's stack or too big for memory is a GrammarTooLargeError
    (the input's size), and an internal slip (AttributeError and the like) an InternalError, which
    never shows its Python text and is not a verdict on the input (a server's 500, not a 400)."""
    try:
        yield
    except StrictgenError:
        raise
    except RecursionError:
        raise GrammarTooLargeError(f"the {source} format is nested too deeply to compile (Python's recursion limit); flatten it") from None
    except MemoryError:
        raise GrammarTooLargeError(f"the {source} format needs more memory to compile than is available") from None
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:  # ValueError: not ours (ours are StrictgenErrors)
        raise InternalError(f"cannot compile this {source} format: strictgen met an internal error on it (please report it)") from exc


_collector_lock = threading.Lock()
_collector_holders = 0  # compiles running with the cyclic collector paused
_collector_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic collector paused while compiles run. A compile makes and drops some 10^5
    IR nodes, tuples and dicts, freed by reference counting; they set off collections that walk
    the whole heap (a server's is large) and found nothing: 5-7% of compile time in perf. The
    collector comes back, as it was, when the last running compile ends."""
    global _collector_holders, _collector_was_enabled
    with _collector_lock:
        if _collector_holders == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _collector_holders += 1
    try:
        yield
    finally:
        with _collector_lock:
            _collector_holders -= 1
            if _collector_holders == 0 and _collector_was_enabled:
                gc.enable()
