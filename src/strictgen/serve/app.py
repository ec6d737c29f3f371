"""The OpenAI-compatible HTTP server (FastAPI): chat, completions, responses, and the vLLM,
llama.cpp and Ollama dialects, all over one model pool and one grammar factory.

`Server` holds what requests share (the pool, the grammar cache, the template's tool format and
reasoning markers, the limits) and the request pieces every dialect uses; each dialect is an
APIRouter of its own module that parses its body into (prompt, FormatSpec, config) and renders its
reply; `create_app` wires them under the body bounds, the error handlers and the operations
middleware. Every refusal is a 4xx in OpenAI's error shape, whatever the dialect.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading

from fastapi import FastAPI, Request

from strictgen.compile.compiler import GrammarCompiler
from strictgen.engine.generate import GenerationConfig, GenerationResult
from strictgen.engine.reasoning_limit import ReasoningLimit
from strictgen.engine.sampling import SamplingParams
from strictgen.errors import StrictgenError

from . import llama_cpp, ollama, openai_chat, openai_completions, openai_responses
from .bounds import BoundedBody, ServerLimits, check_prompt_bytes, check_prompt_tokens, content_bytes, longest_token_bytes
from .chat import render_prompt
from .errors import RequestError, install_handlers
from .grammars import GrammarFactory, Tool, warm_up
from .inspect_routes import router as inspect_router
from .ops import Operations, ServeOptions
from .tools.detect import chat_format
from .worker import BatchedPool, Job, ModelPool

DIALECTS = (openai_chat, openai_completions, openai_responses, llama_cpp, ollama)  # each module's router(server)


class Server:
    """State shared by requests: the (immutable) model pool and grammar cache, nothing per request."""

    def __init__(self, pool: ModelPool, model_name: str, limits: ServerLimits | None = None, options: ServeOptions | None = None):
        self.pool = pool
        self.model_name = model_name
        self.limits = limits or ServerLimits()
        self.longest_token = longest_token_bytes(pool.primary.tokenizer_info)  # prompt bytes → a bound on its tokens
        self.chat = chat_format(pool.primary.chat_template)  # tool format, reasoning markers, stops
        self.reasoning = self.chat.reasoning
        self.grammars = GrammarFactory(GrammarCompiler(pool.primary.tokenizer_info), self.reasoning)
        self.format_options = self.grammars.options  # every dialect's FormatSpecs: JSON layout, reasoning block
        self.warm_up_grammar = warm_up(self.grammars)  # before ready: a first request imports nothing
        self.ops = Operations(options, pool.size)  # keys, admission, deadlines, metrics, request log
        self.ops.attach(self.grammars.compiler)

    async def off_loop(self, fn, *args):
        """`fn(*args)` in a preparation thread: a slow compile never stalls the event loop (other streams)."""
        return await self.ops.prepare(fn, *args)

    # ---- request pieces shared by the dialects ----

    def max_tokens(self, *values: int | None) -> int:
        asked = next((v for v in values if v is not None), None)
        if asked is None:
            return self.limits.default_max_tokens
        if asked > self.limits.max_tokens:
            raise RequestError(f"max_tokens={asked} exceeds this server's limit of {self.limits.max_tokens}", "max_tokens")
        return asked

    def config(self, max_tokens: int, temperature, top_p, seed=None, stop=None, top_k=None, chat: bool = False) -> GenerationConfig:
        """`chat`: a chat turn, which also stops at the template's end-of-turn marker."""
        stops = (stop,) if isinstance(stop, str) else tuple(stop or ())
        if chat:
            stops += tuple(s for s in self.chat.stops if s not in stops)
        try:
            sampling = SamplingParams(
                temperature=1.0 if temperature is None else float(temperature),
                top_p=1.0 if top_p is None else float(top_p),
                top_k=max(0, top_k or 0),
                seed=seed,
            )
            return GenerationConfig(max_tokens=max_tokens, sampling=sampling, stop=stops)
        except StrictgenError as exc:
            raise RequestError(str(exc)) from exc

    def reasoning_limit(self, budget: int | None) -> ReasoningLimit | None:
        """`thinking_token_budget` as a bound on the template's reasoning block (None: unbounded,
        also where the template has no block)."""
        r = self.reasoning
        if budget is None or budget < 0 or r is None:
            return None
        return ReasoningLimit(r.open, r.close, budget, r.starts_inside)

    def encode_chat(self, messages: list[dict], tools: list[Tool]) -> list[int]:
        check_prompt_bytes(content_bytes(messages), self.limits.max_prompt_tokens, self.longest_token)
        ids = self.pool.tokenize(lambda m: render_prompt(m, messages, tools))
        check_prompt_tokens(len(ids), self.limits.max_prompt_tokens, "messages")
        return ids

    def encode_raw(self, text: str) -> list[int]:
        check_prompt_bytes(len(text.encode("utf-8", "surrogatepass")), self.limits.max_prompt_tokens, self.longest_token)
        def enc(m):
            ids = m.tokenize(text)
            if m.add_bos and m.bos_token_id is not None:
                ids = [m.bos_token_id] + ids
            return ids

        ids = self.pool.tokenize(enc)
        if not ids:
            raise RequestError("the prompt is empty", "prompt")
        check_prompt_tokens(len(ids), self.limits.max_prompt_tokens, "prompt")
        return ids

    async def run(self, job: Job, request: Request) -> GenerationResult:
        """Generate without streaming; a client that disconnects cancels the run."""
        cancelled = threading.Event()
        watcher = asyncio.create_task(_watch_disconnect(request, cancelled))
        try:
            return await asyncio.to_thread(self.pool.run, job, None, cancelled)
        finally:
            watcher.cancel()


async def _watch_disconnect(request: Request, cancelled: threading.Event) -> None:
    while not cancelled.is_set():
        if await request.is_disconnected():
            cancelled.set()
            return
        await asyncio.sleep(0.2)


def create_app(server: Server) -> FastAPI:
    app = FastAPI(title="strictgen", version="0.1.0")
    app.state.server = server
    install_handlers(app)
    app.add_middleware(BoundedBody, limits=server.limits)  # inside the operations middleware: a 413 is counted and logged
    server.ops.install(app)  # outermost: keys, admission, /metrics, the request log, the 500s

    @app.get("/health")
    async def health():
        return {"status": "ok", "model": server.model_name, "slots": server.pool.size}

    for dialect in DIALECTS:
        app.include_router(dialect.router(server))
    app.include_router(inspect_router)  # /inspect and /v1/strictgen/inspect (serve/inspect_routes.py)
    return app


def build_server(
    model: str = "default", *, slots: int = 2, runtime: str = "auto", n_ctx: int = 4096, limits: ServerLimits | None = None,
    progress: bool = False, deterministic: bool = False, options: ServeOptions | None = None, chat_template: str | None = None,
) -> Server:
    """Load the model and the server around it: on llama.cpp one context decoding up to `slots`
    requests per forward pass (`deterministic`: each request's pieces in passes of their own, so
    concurrent requests get exactly what they get alone), on other runtimes `slots` copies of the
    model (one request each: always what it gets alone). `chat_template`: a Jinja file replacing the
    model's template (its tool format, reasoning markers and stops follow)."""
    import os

    from strictgen.engine.loader import choose_runtime, load_model, resolve_model_path

    if choose_runtime(resolve_model_path(model), runtime) == "llama.cpp":
        # the loaded model's own context only tokenizes: keep it small
        pool: ModelPool = BatchedPool(
            load_model(model, runtime="llama.cpp", n_ctx=256, progress=progress), slots, n_ctx=n_ctx, deterministic=deterministic
        )
    else:
        threads = max(1, (os.cpu_count() or 2) // max(1, slots))
        pool = ModelPool(lambda: load_model(model, runtime=runtime, n_ctx=n_ctx, threads=threads, progress=progress), slots)
    if chat_template:
        pool.primary.chat_template = pool.primary.chat_template.replaced_by(chat_template)  # prompts render on the primary only
    name = "strictgen/" + pool.primary.name if model == "default" else pool.primary.name
    limits = limits or ServerLimits()
    if limits.max_prompt_tokens is None:
        limits = dataclasses.replace(limits, max_prompt_tokens=n_ctx)
    return Server(pool, name, limits, options)
