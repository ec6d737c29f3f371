"""Production operation of the server: API keys, admission (429), request deadlines, `/metrics`
and the per-request log line, as one ASGI middleware around the dialect routes.

The middleware is the only place that sees every request whole (a stream ends when its last body
chunk is sent), so it opens the request's trace (serve/trace.py), and when the answer's last byte
goes out it counts the request, logs its line and releases its admission, before the client can
see the end of it.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from starlette.responses import Response

from .admission import Admission, Preparer
from .auth import ApiKeys
from .errors import error_event, internal_error, openai_error
from .logs import RequestLog
from .metrics import Metrics
from .trace import RequestTrace, current_trace

if TYPE_CHECKING:
    from strictgen.compile.compiler import GrammarCompiler

# routes that generate (admission applies to these), and the dialect each belongs to
GENERATION_ROUTES = {
    "/v1/chat/completions": "openai",
    "/v1/completions": "openai",
    "/v1/responses": "openai",
    "/completion": "llama.cpp",
    "/api/chat": "ollama",
    "/api/generate": "ollama",
    "/v1/strictgen/inspect": "strictgen",  # a prompt generates; a document walk is CPU work too
}
OTHER_ROUTES = {"/v1/models": "openai", "/health": "server", "/metrics": "server"}


@dataclass
class ServeOptions:
    """The operating flags of `strictgen serve` (docs/serve.md)."""

    api_keys: ApiKeys = field(default_factory=ApiKeys)
    max_queue: int = 256  # admitted requests beyond the slots; more get 429
    max_concurrent_compiles: int = 2  # cold grammar compiles running at once
    request_timeout: float | None = None  # seconds from arrival; past it the generation stops
    log_format: str = "text"
    log_content: bool = False
    cache_dir: str | None = None  # compiled grammars kept on disk across restarts (compile/disk_cache.py)
    cache_max_bytes: int = 1 << 30


def options_from_args(args) -> ServeOptions:
    """The options of `strictgen serve`'s flags; prints the exposure warning; sets up the request log."""
    import sys

    from strictgen.errors import StrictgenError

    from .auth import exposure_warning, load_keys
    from .logs import configure

    keys = load_keys(args.api_key, args.api_key_file)
    if args.max_queue < 0 or args.max_concurrent_compiles < 1 or (args.request_timeout is not None and args.request_timeout <= 0):
        raise StrictgenError("--max-queue must be >= 0, --max-concurrent-compiles >= 1 and --request-timeout > 0")
    warning = exposure_warning(args.host, keys)
    if warning:
        print(warning, file=sys.stderr)
    configure(args.log_level)
    if args.cache_max_bytes <= 0:
        raise StrictgenError("--cache-max-bytes must be > 0")
    return ServeOptions(keys, args.max_queue, args.max_concurrent_compiles, args.request_timeout, args.log_format, args.log_content,
                        args.cache_dir, args.cache_max_bytes)


def _authorization(scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            return value.decode("latin-1")
    return None


class Operations:
    """Keys, admission, metrics, log and the preparation threads of one server."""

    def __init__(self, options: ServeOptions | None = None, slots: int = 1):
        o = self.options = options or ServeOptions()
        if o.max_concurrent_compiles < 1:
            raise ValueError(f"max_concurrent_compiles must be at least 1, not {o.max_concurrent_compiles}")
        if o.request_timeout is not None and o.request_timeout <= 0:
            raise ValueError(f"request_timeout must be positive, not {o.request_timeout}")
        self.keys = o.api_keys
        self.metrics = Metrics(slots)
        self.admission = Admission(slots, o.max_queue)
        self.metrics.watch(self.admission)
        self.log = RequestLog(o.log_format, o.log_content)
        self.preparer = Preparer(self.admission.limit + 1)

    def attach(self, compiler: "GrammarCompiler") -> None:
        """Bound the compiler's cold compiles, observe every compile, and keep them on disk if asked."""
        compiler.compile_slots = threading.BoundedSemaphore(self.options.max_concurrent_compiles)
        compiler.on_compile = self._compiled
        if self.options.cache_dir:
            compiler.use_disk_cache(self.options.cache_dir, self.options.cache_max_bytes)

    def _compiled(self, kind: str, seconds: float, hit: bool) -> None:
        self.metrics.compiled(kind, seconds, hit)
        trace = current_trace()
        if trace is not None:
            trace.compile_s += seconds

    async def prepare(self, fn: Callable, *args):
        """`fn(*args)` (compiling a format, rendering a prompt) in a thread, off the event loop."""
        return await self.preparer.run(fn, *args)

    def install(self, app) -> None:
        app.add_middleware(OperationsMiddleware, ops=self)

    def close(self) -> None:
        self.preparer.close()


class OperationsMiddleware:
    """Pure ASGI (a streamed body passes through untouched, chunk by chunk)."""

    def __init__(self, app, ops: Operations):
        self.app = app
        self.ops = ops

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        ops = self.ops
        path = scope["path"]
        generating = scope["method"] == "POST" and path in GENERATION_ROUTES
        dialect = GENERATION_ROUTES.get(path) or OTHER_ROUTES.get(path, "other")
        route = path if dialect != "other" else "other"  # unknown paths share one label
        trace = RequestTrace("req-" + uuid.uuid4().hex[:20], route, dialect, ops.options.request_timeout, on_job=ops.admission.job)
        if path == "/metrics" and scope["method"] == "GET":
            return await self._answer(trace, Response(ops.metrics.render(), media_type=ops.metrics.content_type), scope, receive, send)
        if ops.keys.needed(path) and not ops.keys.allows(given := _authorization(scope)):
            ops.metrics.rejected.labels("unauthorized").inc()
            message = "incorrect API key" if given and given.strip().lower() != "bearer" else "no API key: send 'Authorization: Bearer KEY'"
            refusal = openai_error(401, message, code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"})
            return await self._answer(trace, refusal, scope, receive, send)
        if generating and not ops.admission.try_admit():
            ops.metrics.rejected.labels("queue_full").inc()
            wait = ops.admission.retry_after()
            message = f"the server is at capacity ({ops.admission.limit} requests in flight); retry after {wait} s"
            refusal = openai_error(429, message, code="rate_limit_exceeded", kind="requests", headers={"Retry-After": str(wait)})
            return await self._answer(trace, refusal, scope, receive, send)
        state = {"status": 500, "done": False, "started": False}

        def finish() -> None:
            if state["done"]:
                return
            state["done"] = True
            seconds = time.perf_counter() - trace.start
            if generating:
                ops.admission.leave(seconds)
            self._record(trace, state["status"], seconds)

        async def receive_body():
            message = await receive()
            if generating and message["type"] == "http.request":
                trace.body.append(message.get("body", b""))
            return message

        async def send_observed(message):
            if message["type"] == "http.response.start":
                state["status"], state["started"] = message["status"], True
                message = {**message, "headers": [*message.get("headers", ()), (b"x-request-id", trace.id.encode())]}
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finish()  # counted and logged before the client sees the end
            await send(message)

        token = trace.activate()
        try:
            await self.app(scope, receive_body, send_observed)
        except Exception as exc:  # noqa: BLE001 - a failure of ours: logged with the id, never shown
            await self._failed(exc, trace, state["started"], scope, receive, send_observed)
        finally:
            trace.deactivate(token)
            finish()

    @staticmethod
    async def _failed(exc: Exception, trace: RequestTrace, started: bool, scope, receive, send) -> None:
        """A 500 saying only "internal error" and the request id (the traceback is logged under
        it); a response already under way is ended where it stands."""
        if not started:
            return await internal_error(trace.id, exc)(scope, receive, send)
        error_event(exc, trace.id)  # logs it
        try:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except Exception:  # noqa: BLE001 - the client is gone
            pass

    async def _answer(self, trace: RequestTrace, response: Response, scope, receive, send) -> None:
        self._record(trace, response.status_code, time.perf_counter() - trace.start)
        await response(scope, receive, send)

    def _record(self, trace: RequestTrace, status: int, seconds: float) -> None:
        self.ops.metrics.answered(trace, status, seconds)
        self.ops.log.emit(trace, status, seconds)
