"""The server's Prometheus metrics (`GET /metrics`), with prometheus-client.

One registry per server (two servers in one process never mix their counts). Counters end in
`_total`, durations are histograms in seconds; rates (tokens/s, masks/s) are `rate()` of the counters
on the Prometheus side, and per-request decode speed is a histogram too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

if TYPE_CHECKING:
    from .trace import RequestTrace

LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
COMPILE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
SPEED_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, slots: int = 1):
        r = self.registry = CollectorRegistry()
        p = "strictgen_"
        self.requests = Counter(p + "requests", "HTTP requests answered, by route, dialect and status", ["route", "dialect", "status"], registry=r)
        self.duration = Histogram(p + "request_duration_seconds", "Time from request to the last byte of the answer", ["route", "dialect"], buckets=LATENCY_BUCKETS, registry=r)
        self.ttft = Histogram(p + "time_to_first_token_seconds", "Time from request to the first output token", ["route"], buckets=LATENCY_BUCKETS, registry=r)
        self.speed = Histogram(p + "request_decode_tokens_per_second", "Output tokens per second of one request after its first token", ["route"], buckets=SPEED_BUCKETS, registry=r)
        self.queue_depth = Gauge(p + "queue_depth", "Admitted generation requests not holding a slot (compiling, tokenizing or waiting)", registry=r)
        self.active = Gauge(p + "active_slots", "Slots generating now", registry=r)
        Gauge(p + "slots", "Slots this server decodes at once", registry=r).set(slots)
        self.rejected = Counter(p + "rejected_requests", "Requests refused before any work, by reason", ["reason"], registry=r)
        self.timeouts = Counter(p + "request_timeouts", "Generations stopped by their deadline", ["route"], registry=r)
        self.prompt_tokens = Counter(p + "prompt_tokens", "Prompt tokens of finished generations", ["route"], registry=r)
        self.output_tokens = Counter(p + "generation_tokens", "Output tokens of finished generations", ["route"], registry=r)
        self.finished = Counter(p + "generations", "Finished generations, by format kind and finish reason", ["format", "finish_reason"], registry=r)
        self.compiles = Counter(p + "grammar_compiles", "Grammar compiles asked for, by format kind and cache outcome", ["format", "cache"], registry=r)
        self.compile_s = Histogram(p + "grammar_compile_seconds", "Cold grammar compile time, by format kind", ["format"], buckets=COMPILE_BUCKETS, registry=r)
        self.masks = Counter(p + "masks", "Token masks computed for constrained generations", registry=r)
        self.mask_s = Counter(p + "mask_seconds", "Time spent computing and applying token masks", registry=r)
        self.jump_saved = Counter(p + "jump_forward_tokens_saved", "Forward passes saved by jump-forward (forced text)", registry=r)
        self.jump_forced = Counter(p + "jump_forward_tokens", "Output tokens put there by jump-forward rather than sampled", registry=r)
        self.guarded = Counter(p + "truncation_guard_interventions", "Steps where the truncation guard overruled the first choice", registry=r)

        self._children: dict[tuple, object] = {}

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def _child(self, metric, *labels):
        """`metric.labels(*labels)`, remembered (prometheus-client validates and locks on every call)."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def watch(self, admission) -> None:
        """Queue depth and active slots, read from the admission counts when scraped (no per-request cost):
        jobs in the pool fill the slots first-come, the other admitted requests wait."""
        active = lambda: min(admission.in_pool, admission.slots)  # noqa: E731
        self.active.set_function(active)
        self.queue_depth.set_function(lambda: max(0, admission.admitted - active()))

    # ---- observers ----

    def compiled(self, kind: str, seconds: float, hit: bool) -> None:
        self._child(self.compiles, kind, "hit" if hit else "miss").inc()
        if not hit:
            self._child(self.compile_s, kind).observe(seconds)

    def answered(self, trace: "RequestTrace", status: int, seconds: float) -> None:
        c = self._child
        c(self.requests, trace.route, trace.dialect, str(status)).inc()
        c(self.duration, trace.route, trace.dialect).observe(seconds)
        result = trace.result
        if result is None:
            return
        route = trace.route
        if trace.timed_out:
            c(self.timeouts, route).inc()
        c(self.prompt_tokens, route).inc(trace.prompt_tokens)
        c(self.output_tokens, route).inc(trace.output_tokens)
        c(self.finished, trace.format, result.finish_reason).inc()
        ttft, speed = trace.ttft(), trace.tokens_per_second()
        if ttft is not None:
            c(self.ttft, route).observe(ttft)
        if speed is not None:
            c(self.speed, route).observe(speed)
        s = result.stats
        if trace.format != "none":
            self.masks.inc(s.sampled_tokens)
            self.mask_s.inc(s.mask_s)
        self.jump_saved.inc(s.passes_saved)
        self.jump_forced.inc(sum(result.forced))
        self.guarded.inc(s.guarded)
