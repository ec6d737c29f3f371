"""One request's record: its deadline, and what its log line and metrics read.

The HTTP middleware (serve/ops.py) opens a trace per request in a context variable; a `Job`
created while that request is handled takes the trace, so the worker running the job in another
thread reports to it (slot taken, tokens so far, first-token time, result) and asks it whether the
deadline has passed. A trace belongs to one request: nothing in it is shared.
"""

from __future__ import annotations

import json
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from strictgen.engine.generate import GenerationResult

_current: ContextVar["RequestTrace | None"] = ContextVar("strictgen_request_trace", default=None)

# per-request deadline fields, in seconds: `timeout` (OpenAI / vLLM / Ollama bodies, an extension)
# and llama.cpp's own `t_max_predict_ms`
_TIMEOUT_KEYS = {b'"timeout"': ("timeout", 1.0), b'"t_max_predict_ms"': ("t_max_predict_ms", 1e-3)}


def current_trace() -> "RequestTrace | None":
    """The trace of the request being handled (None outside one)."""
    return _current.get()


@dataclass(eq=False)
class RequestTrace:
    id: str
    route: str
    dialect: str
    timeout: float | None = None  # the server's --request-timeout
    start: float = field(default_factory=time.perf_counter)
    body: list[bytes] = field(default_factory=list)  # the request body's chunks as the app read them
    on_job: Callable[["RequestTrace", int], None] | None = None  # (trace, +1 entering the pool / -1 leaving)
    format: str = "none"
    prompt_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str | None = None
    timed_out: bool = False
    compile_s: float = 0.0
    t_first: float | None = None  # first output token
    t_last: float | None = None
    t_end: float | None = None
    result: "GenerationResult | None" = None
    _deadline: float | None = None

    def activate(self):
        """Make this the current trace (returns the token for `deactivate`)."""
        return _current.set(self)

    @staticmethod
    def deactivate(token) -> None:
        _current.reset(token)

    # ---- the deadline ----

    def request_timeout(self) -> float | None:
        """The request's own timeout field, if its body has one at top level (seconds)."""
        raw = b"".join(self.body)
        found = [(name, scale) for key, (name, scale) in _TIMEOUT_KEYS.items() if key in raw]
        if not found:
            return None
        try:
            doc = json.loads(raw)
        except ValueError:
            return None
        for name, scale in found:
            value = doc.get(name) if isinstance(doc, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                return float(value) * scale
        return None

    def deadline(self) -> float | None:
        """perf_counter time past which the request stops (the tighter of the server's and its own)."""
        if self._deadline is None:
            limits = [t for t in (self.timeout, self.request_timeout()) if t is not None]
            self._deadline = self.start + min(limits) if limits else float("inf")
        return None if self._deadline == float("inf") else self._deadline

    # ---- reports from the worker thread ----

    def run(self, job: Any, generate: Callable[[], "GenerationResult"]) -> "GenerationResult":
        """Run `generate()` for `job` as this request's generation; past the deadline the run's
        "cancelled" finish becomes "length" (the output stops as if max_tokens were reached)."""
        grammar = job.grammar
        self.format = "none" if grammar is None else (grammar.source or "grammar").split(" ")[0]
        self.prompt_tokens = len(job.prompt_ids)
        self.deadline()
        if self.on_job is not None:
            self.on_job(self, +1)
        try:
            result = generate()
        finally:
            if self.on_job is not None:
                self.on_job(self, -1)
        if self.timed_out and result.finish_reason == "cancelled":
            result.finish_reason = "length"
        self.result = result
        self.output_tokens = len(result.token_ids)
        self.finish_reason = result.finish_reason
        return result

    def step(self, n_tokens: int) -> bool:
        """After each decoding step: False once the deadline has passed (the run then stops)."""
        now = time.perf_counter()
        if n_tokens and self.t_first is None:
            self.t_first = now
        self.t_last = now
        self.output_tokens = n_tokens
        if self._deadline is not None and now > self._deadline:
            self.timed_out = True
            return False
        return True

    # ---- derived figures ----

    def ttft(self) -> float | None:
        return None if self.t_first is None else self.t_first - self.start

    def tokens_per_second(self) -> float | None:
        """Decode speed after the first token (None with fewer than two tokens)."""
        if self.t_first is None or self.t_last is None or self.output_tokens < 2 or self.t_last <= self.t_first:
            return None
        return (self.output_tokens - 1) / (self.t_last - self.t_first)
