"""The OpenAI-compatible HTTP server (FastAPI): chat, completions, responses, and the vLLM,
llama.cpp and Ollama dialects, all over one model pool and one grammar factory.

Every refusal is HTTP 400 in OpenAI's error shape, whatever the dialect, so clients get the
compiler's message (with its JSON pointer) instead of a crash.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, AsyncIterator

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from strictgen.compile.compiled import CompiledGrammar
from strictgen.compile.compiler import GrammarCompiler
from strictgen.engine.generate import GenerationConfig, GenerationResult
from strictgen.engine.reasoning_limit import ReasoningLimit
from strictgen.engine.sampling import SamplingParams
from strictgen.errors import StrictgenError

from .chat import call_format, render_prompt, tool_prompt_headers
from .hint import hinted
from .inspect_routes import router as inspect_router
from .formats import GrammarFactory, RequestError, Tool, tools_from_request
from .ops import Operations, ServeOptions
from .tools.detect import chat_format
from .tools.parse import parse_output
from .protocol import (
    ChatCompletionRequest,
    CompletionRequest,
    LlamaCppCompletionRequest,
    OllamaChatRequest,
    OllamaGenerateRequest,
    ResponsesRequest,
)
from .worker import BatchedPool, Job, ModelPool


@dataclass
class ServerLimits:
    max_body_bytes: int = 1 << 20
    max_tokens: int = 2048
    default_max_tokens: int = 256


def _error(status: int, message: str, param: str | None = None, code: str | None = None, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": code}}, status_code=status)


def _now() -> int:
    return int(time.time())


class Server:
    """State shared by requests: the (immutable) model pool and grammar cache, nothing per request."""

    def __init__(self, pool: ModelPool, model_name: str, limits: ServerLimits | None = None, options: ServeOptions | None = None):
        self.pool = pool
        self.model_name = model_name
        self.limits = limits or ServerLimits()
        self.grammars = GrammarFactory(GrammarCompiler(pool.primary.tokenizer_info))
        self.chat = chat_format(pool.primary.chat_template)  # tool format, reasoning markers, stops
        self.reasoning = self.chat.reasoning
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

    def format_grammar(self, req) -> CompiledGrammar | None:
        """The grammar asked for by response_format or the vLLM extras (None: free text)."""
        g = self.grammars
        so = req.structured_outputs or {}
        if not isinstance(so, dict):
            raise RequestError("structured_outputs must be an object", "structured_outputs")
        given = [
            (k, v)
            for k, v in (
                ("guided_json", req.guided_json),
                ("guided_regex", req.guided_regex),
                ("guided_choice", req.guided_choice),
                ("guided_grammar", req.guided_grammar),
                *((f"structured_outputs.{k}", v) for k, v in so.items() if k in ("json", "regex", "choice", "grammar", "json_object", "structural_tag")),
            )
            if v is not None
        ]
        rf = req.response_format
        if rf is not None and rf.get("type") not in (None, "text"):
            given.append(("response_format", rf))
        if len(given) > 1:
            raise RequestError(f"give one structured-output format, not {len(given)} ({', '.join(k for k, _ in given)})", given[1][0])
        if not given:
            return None
        key, value = given[0]
        kind = key.split(".")[-1].replace("guided_", "")
        if key == "response_format":
            return self.response_format(value, key)
        if kind == "json":
            grammar = g.json_any() if value is True else g.json_schema(value, param=key)
            return g.after_reasoning(grammar, value, "json_schema", self.reasoning) if self.reasoning and value is not True else grammar
        if kind == "json_object":
            return g.json_any()
        if kind == "regex":
            return g.regex(value, key)
        if kind == "structural_tag":
            return g.structural_tag(value, key)
        if kind == "choice":
            return g.choice(value, key)
        return g.gbnf(value, key)

    def response_format(self, rf: dict, param: str) -> CompiledGrammar | None:
        kind = rf.get("type")
        if kind in (None, "text"):
            return None
        if kind == "json_object":
            return self.grammars.json_any()
        if kind == "json_schema":
            spec = rf.get("json_schema", rf)  # chat: {"json_schema": {...}}; responses: flat
            if not isinstance(spec, dict) or "schema" not in spec:
                raise RequestError("json_schema needs a 'schema'", f"{param}.json_schema")
            grammar = self.grammars.json_schema(spec["schema"], strict=spec.get("strict") is not False, param=f"{param}.json_schema.schema")
            return self.grammars.after_reasoning(grammar, spec["schema"], "json_schema", self.reasoning) if self.reasoning else grammar
        if kind == "structural_tag":
            return self.grammars.structural_tag(rf, param)
        raise RequestError(f"unknown response_format type {kind!r}", f"{param}.type")

    def tool_grammar(self, tools: list[Tool], choice: Any, parallel: bool) -> tuple[CompiledGrammar | None, bool]:
        """(grammar, parse tool calls?) for `tool_choice`."""
        if not tools:
            if choice not in (None, "none", "auto"):
                raise RequestError("tool_choice needs tools", "tool_choice")
            return None, False
        if choice is None:
            choice = "auto"
        if choice == "none":
            return None, False
        if isinstance(choice, dict):
            fn = choice.get("function", choice)
            name = fn.get("name") if isinstance(fn, dict) else None
            if name not in {t.name for t in tools}:
                raise RequestError(f"tool_choice names {name!r}, which is not one of the tools", "tool_choice")
            return self.grammars.tool_calls(tools, mode="named", parallel=False, reasoning=self.reasoning, name=name, fmt=call_format(self.chat, "named")), True
        if choice in ("auto", "required"):
            fmt = call_format(self.chat, choice)  # None: the template's call syntax is unknown, free text
            return (self.grammars.tool_calls(tools, mode=choice, parallel=parallel, reasoning=self.reasoning, fmt=fmt), True) if fmt else (None, False)
        raise RequestError(f"unknown tool_choice {choice!r}", "tool_choice")

    def encode_chat(self, messages: list[dict], tools: list[Tool]) -> list[int]:
        return self.pool.tokenize(lambda m: render_prompt(m, messages, tools))

    def encode_raw(self, text: str) -> list[int]:
        def enc(m):
            ids = m.tokenize(text)
            if m.add_bos and m.bos_token_id is not None:
                ids = [m.bos_token_id] + ids
            return ids

        ids = self.pool.tokenize(enc)
        if not ids:
            raise RequestError("the prompt is empty", "prompt")
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


def _usage(job: Job, result: GenerationResult | None) -> dict:
    n = len(result.token_ids) if result else 0
    return {"prompt_tokens": len(job.prompt_ids), "completion_tokens": n, "total_tokens": len(job.prompt_ids) + n}


def _visible(text: str, job: Job, sent: int = 0) -> str:
    """Text that can be sent while generating: a stop string's possible start is held back."""
    hold = max((len(s) for s in job.config.stop), default=1) - 1
    return text[: max(sent, len(text) - hold)]


def _sse(obj, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj, ensure_ascii=False)}\n\n"


class _ChatDeltas:
    """Turns growing output text into OpenAI chat deltas (what the parser is sure of, minus what was sent)."""

    def __init__(self, fmt, tools: dict[str, dict], reasoning, id_prefix: str):
        self.fmt, self.tools = fmt, tools  # the call format (None: no calls are read) and name → schema
        self.reasoning = reasoning
        self.id_prefix = id_prefix
        self.sent_reasoning = 0
        self.sent_content = 0
        self.sent_calls: list[int] = []  # per call: argument characters sent (-1: nothing yet)

    def call_id(self, i: int) -> str:
        return f"{self.id_prefix}_{i}"

    def deltas(self, text: str, final: bool) -> list[dict]:
        p = parse_output(text, self.fmt, self.tools, self.reasoning, final=final)
        out = []
        if len(p.reasoning) > self.sent_reasoning:
            out.append({"reasoning_content": p.reasoning[self.sent_reasoning :]})
            self.sent_reasoning = len(p.reasoning)
        content = p.content
        if final and p.calls and not content.strip():
            content = ""
        if len(content) > self.sent_content:
            out.append({"content": content[self.sent_content :]})
            self.sent_content = len(content)
        for i, call in enumerate(p.calls):
            if call.name is None:
                break
            if i == len(self.sent_calls):
                self.sent_calls.append(0)
                out.append({"tool_calls": [{"index": i, "id": self.call_id(i), "type": "function", "function": {"name": call.name, "arguments": ""}}]})
            sent = self.sent_calls[i]
            if len(call.arguments) > sent:
                out.append({"tool_calls": [{"index": i, "function": {"arguments": call.arguments[sent:]}}]})
                self.sent_calls[i] = len(call.arguments)
        return out

    def message(self, text: str) -> tuple[dict, bool]:
        """The whole assistant message for the final text, and whether it holds tool calls."""
        p = parse_output(text, self.fmt, self.tools, self.reasoning, final=True)
        calls = [
            {"id": self.call_id(i), "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for i, c in enumerate(p.calls)
            if c.name is not None
        ]
        content = p.content if (p.content.strip() or not calls) else None
        msg: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            msg["tool_calls"] = calls
        if p.reasoning:
            msg["reasoning_content"] = p.reasoning
        return msg, bool(calls)


def _tool_map(tools: list[Tool]) -> dict[str, dict]:
    return {t.name: t.parameters for t in tools}


def _finish(result: GenerationResult, has_calls: bool) -> str:
    if has_calls:
        return "tool_calls"
    return "length" if result.finish_reason == "length" else "stop"


def create_app(server: Server) -> FastAPI:
    app = FastAPI(title="strictgen", version="0.1.0")
    app.state.server = server

    @app.exception_handler(RequestError)
    async def _request_error(_: Request, exc: RequestError):
        return _error(400, str(exc), exc.param, exc.code)

    @app.exception_handler(StrictgenError)
    async def _strictgen_error(_: Request, exc: StrictgenError):
        return _error(400, str(exc), None, type(exc).__name__)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError):
        errs = exc.errors()
        first = errs[0] if errs else {}
        loc = [str(x) for x in first.get("loc", ()) if x != "body"]
        msg = "; ".join(f"{'.'.join(str(x) for x in e.get('loc', ()) if x != 'body') or 'body'}: {e.get('msg')}" for e in errs[:5])
        return _error(400, msg or "invalid request", ".".join(loc) or None)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException):
        return _error(exc.status_code, str(exc.detail), kind="invalid_request_error" if exc.status_code < 500 else "server_error")

    @app.exception_handler(Exception)
    async def _crash(_: Request, exc: Exception):
        return _error(500, f"internal error: {type(exc).__name__}: {exc}", kind="server_error")

    @app.middleware("http")
    async def _limit_body(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > server.limits.max_body_bytes:
            return _error(400, f"request body of {length} bytes exceeds the limit of {server.limits.max_body_bytes}", code="body_too_large")
        return await call_next(request)

    server.ops.install(app)  # outermost: keys, admission, /metrics, the request log
    app.include_router(inspect_router)  # /inspect and /v1/strictgen/inspect (serve/inspect_routes.py)

    @app.get("/health")
    async def health():
        return {"status": "ok", "model": server.model_name, "slots": server.pool.size}

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": server.model_name, "object": "model", "created": 0, "owned_by": "strictgen"}]}

    # ---- OpenAI chat ----

    @app.post("/v1/chat/completions")
    async def chat_completions(req: ChatCompletionRequest, request: Request, response: Response):
        tools = tools_from_request(req.tools)
        grammar, parse_tools = await server.off_loop(server.tool_grammar, tools, req.tool_choice, req.parallel_tool_calls)
        if grammar is None:
            grammar = await server.off_loop(server.format_grammar, req)
        messages = [m.model_dump(exclude_none=True) for m in req.messages]
        if not parse_tools:
            messages = hinted(messages, req)
        prompt = server.encode_chat(messages, tools)
        cfg = server.config(server.max_tokens(req.max_completion_tokens, req.max_tokens), req.temperature, req.top_p, req.seed, req.stop, req.top_k, chat=True)
        cfg.reasoning_limit = server.reasoning_limit(req.thinking_token_budget)
        job = Job(prompt, grammar, cfg)
        rid = "chatcmpl-" + uuid.uuid4().hex[:24]
        deltas = _ChatDeltas(server.chat.tools if parse_tools else None, _tool_map(tools), server.reasoning, "call_" + rid[9:21])
        if req.stream:
            include_usage = bool((req.stream_options or {}).get("include_usage"))
            return StreamingResponse(_chat_stream(server, job, rid, deltas, include_usage), media_type="text/event-stream", headers=tool_prompt_headers(server.chat, tools))
        result = await server.run(job, request)
        msg, has_calls = deltas.message(result.text)
        response.headers.update(tool_prompt_headers(server.chat, tools))
        return {
            "id": rid,
            "object": "chat.completion",
            "created": _now(),
            "model": server.model_name,
            "choices": [{"index": 0, "message": msg, "finish_reason": _finish(result, has_calls), "logprobs": None}],
            "usage": _usage(job, result),
        }

    # ---- OpenAI legacy completions ----

    @app.post("/v1/completions")
    async def completions(req: CompletionRequest, request: Request):
        prompt_text = req.prompt if isinstance(req.prompt, str) else "".join(req.prompt[:1]) if len(req.prompt) == 1 else None
        if prompt_text is None:
            raise RequestError("one prompt per request", "prompt")
        job = Job(server.encode_raw(prompt_text), await server.off_loop(server.format_grammar, req), server.config(server.max_tokens(req.max_tokens), req.temperature, req.top_p, req.seed, req.stop, req.top_k))
        job.config.heal_prompt = True  # a raw prompt may end mid-word (applies to unconstrained output)
        rid = "cmpl-" + uuid.uuid4().hex[:24]
        if req.stream:
            include_usage = bool((req.stream_options or {}).get("include_usage"))
            return StreamingResponse(_completion_stream(server, job, rid, include_usage), media_type="text/event-stream")
        result = await server.run(job, request)
        return {
            "id": rid,
            "object": "text_completion",
            "created": _now(),
            "model": server.model_name,
            "choices": [{"index": 0, "text": result.text, "finish_reason": _finish(result, False), "logprobs": None}],
            "usage": _usage(job, result),
        }

    # ---- OpenAI Responses ----

    @app.post("/v1/responses")
    async def responses(req: ResponsesRequest, request: Request, response: Response):
        tools = tools_from_request(req.tools)
        grammar, parse_tools = await server.off_loop(server.tool_grammar, tools, req.tool_choice, req.parallel_tool_calls)
        if grammar is None and req.text and isinstance(req.text.get("format"), dict):
            grammar = await server.off_loop(server.response_format, req.text["format"], "text.format")
        messages = _responses_messages(req)
        if not parse_tools:
            messages = hinted(messages, req)
        job = Job(server.encode_chat(messages, tools), grammar, server.config(server.max_tokens(req.max_output_tokens), req.temperature, req.top_p, chat=True))
        reply = _Responses(server, req, job, "resp_" + uuid.uuid4().hex[:24], parse_tools, _tool_map(tools))
        if req.stream:
            return StreamingResponse(_responses_stream(server, job, reply), media_type="text/event-stream", headers=tool_prompt_headers(server.chat, tools))
        result = await server.run(job, request)
        response.headers.update(tool_prompt_headers(server.chat, tools))
        return reply.body(result, reply.deltas.message(result.text)[0])

    # ---- llama.cpp ----

    @app.post("/completion")
    async def llama_completion(req: LlamaCppCompletionRequest, request: Request):
        if req.grammar is not None and req.json_schema is not None:
            raise RequestError("give grammar or json_schema, not both", "grammar")
        grammar = None
        if req.grammar is not None:
            grammar = await server.off_loop(server.grammars.gbnf, req.grammar, "grammar")
        elif req.json_schema is not None:
            grammar = await server.off_loop(lambda: server.grammars.json_schema(req.json_schema, param="json_schema"))
        n = None if req.n_predict in (None, -1) else req.n_predict
        job = Job(server.encode_raw(req.prompt), grammar, server.config(server.max_tokens(n), req.temperature if req.temperature is not None else 0.8, req.top_p, req.seed, req.stop, req.top_k))
        if req.stream:
            return StreamingResponse(_llama_stream(server, job), media_type="text/event-stream")
        result = await server.run(job, request)
        return _llama_body(server, job, result, result.text)

    # ---- Ollama ----

    @app.post("/api/chat")
    async def ollama_chat(req: OllamaChatRequest, request: Request):
        opts = req.options or _no_options()
        messages = [m.model_dump(exclude_none=True) for m in req.messages]
        job = Job(server.encode_chat(messages, []), await server.off_loop(_ollama_format, server, req.format), _ollama_config(server, opts))
        return await _ollama_reply(server, job, request, req.stream, chat=True)

    @app.post("/api/generate")
    async def ollama_generate(req: OllamaGenerateRequest, request: Request):
        opts = req.options or _no_options()
        if req.raw:
            prompt = server.encode_raw(req.prompt)
        else:
            messages = ([{"role": "system", "content": req.system}] if req.system else []) + [{"role": "user", "content": req.prompt}]
            prompt = server.encode_chat(messages, [])
        job = Job(prompt, await server.off_loop(_ollama_format, server, req.format), _ollama_config(server, opts))
        return await _ollama_reply(server, job, request, req.stream, chat=False)

    return app


def _responses_messages(req: ResponsesRequest) -> list[dict]:
    """Responses-API input (a string or items) → chat messages."""
    messages: list[dict] = [{"role": "system", "content": req.instructions}] if req.instructions else []
    if isinstance(req.input, str):
        return messages + [{"role": "user", "content": req.input}]
    for i, item in enumerate(req.input):
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item.get("role", "user"), "content": item.get("content")})
        elif kind == "function_call":
            messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": item.get("call_id"), "type": "function", "function": {"name": item.get("name"), "arguments": item.get("arguments", "{}")}}]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output", "")})
        else:
            raise RequestError(f"input items of type {kind!r} are not supported", f"input[{i}].type")
    if not messages:
        raise RequestError("input is empty", "input")
    return messages


async def _delta_stream(server: Server, job: Job, deltas: _ChatDeltas) -> AsyncIterator[tuple[list[dict], GenerationResult | None]]:
    """(chat deltas, None) after each step, then (the last deltas, result); the run stops if the client leaves."""
    cancelled = threading.Event()
    try:
        async for text, done in server.pool.stream(job, cancelled):
            yield deltas.deltas(text if done is not None else _visible(text, job), final=done is not None), done
    finally:
        cancelled.set()  # the client went away (or we are done): stop generating


async def _chat_stream(server: Server, job: Job, rid: str, deltas: _ChatDeltas, include_usage: bool) -> AsyncIterator[str]:
    created = _now()

    def chunk(delta: dict, finish: str | None = None) -> str:
        body = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": server.model_name, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}
        if include_usage:
            body["usage"] = None
        return _sse(body)

    try:
        yield chunk({"role": "assistant", "content": ""})
        result = None
        async for step, done in _delta_stream(server, job, deltas):
            for d in step:
                yield chunk(d)
            result = done
        has_calls = bool(deltas.sent_calls)
        yield chunk({}, _finish(result, has_calls))
        if include_usage:
            yield _sse({"id": rid, "object": "chat.completion.chunk", "created": created, "model": server.model_name, "choices": [], "usage": _usage(job, result)})
        yield "data: [DONE]\n\n"
    except StrictgenError as exc:
        yield _sse({"error": {"message": str(exc), "type": "invalid_request_error", "param": None, "code": type(exc).__name__}})


class _Responses:
    """One reply of the Responses API: its output items and body, shared by the plain reply and the
    stream, and the stream's events, translated from the chat deltas of the same output parser (so
    the streamed items are the final body's items)."""

    def __init__(self, server: Server, req: ResponsesRequest, job: Job, rid: str, parse_tools: bool, tools: dict[str, dict] | None = None):
        self.server, self.req, self.job, self.rid = server, req, job, rid
        self.created = _now()
        self.deltas = _ChatDeltas(server.chat.tools if parse_tools else None, tools, server.reasoning, "call_" + rid[5:17])
        self.seq = 0
        self.index = -1  # output index of the open item
        self.open: dict | None = None  # the open item: {"kind", "text", and "call_id"/"name" for calls}

    # ---- items and body ----

    def reasoning_item(self, text: str) -> dict:
        return {"type": "reasoning", "id": "rs_" + self.rid[5:], "summary": [], "content": [{"type": "reasoning_text", "text": text}]}

    def message_item(self, text: str, status: str) -> dict:
        return {"type": "message", "id": "msg_" + self.rid[5:], "status": status, "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}

    @staticmethod
    def call_item(call_id: str, name: str, arguments: str, status: str) -> dict:
        return {"type": "function_call", "id": "fc_" + call_id, "call_id": call_id, "name": name, "arguments": arguments, "status": status}

    @staticmethod
    def status(result: GenerationResult | None) -> str:
        if result is None:
            return "in_progress"
        return "incomplete" if result.finish_reason == "length" else "completed"

    def body(self, result: GenerationResult | None, msg: dict) -> dict:
        """The response object: in progress (result None, no output yet) or final for `msg`."""
        status = self.status(result)
        output: list[dict] = []
        if msg.get("reasoning_content"):
            output.append(self.reasoning_item(msg["reasoning_content"]))
        if msg.get("content"):  # a message followed by calls was complete, whatever stopped the calls
            output.append(self.message_item(msg["content"], "completed" if msg.get("tool_calls") else status))
        for call in msg.get("tool_calls", []):
            output.append(self.call_item(call["id"], call["function"]["name"], call["function"]["arguments"], "completed"))
        usage = _usage(self.job, result) if result is not None else None
        req = self.req
        return {
            "id": self.rid,
            "object": "response",
            "created_at": self.created,
            "model": self.server.model_name,
            "status": status,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "output": output,
            "parallel_tool_calls": req.parallel_tool_calls,
            "tool_choice": req.tool_choice if isinstance(req.tool_choice, (str, dict)) else "auto",
            "tools": req.tools or [],
            "text": req.text or {"format": {"type": "text"}},
            "usage": None
            if usage is None
            else {
                "input_tokens": usage["prompt_tokens"],
                "output_tokens": usage["completion_tokens"],
                "total_tokens": usage["total_tokens"],
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }

    # ---- stream events ----

    def event(self, kind: str, **fields) -> str:
        self.seq += 1
        return _sse({"type": kind, "sequence_number": self.seq - 1, **fields}, kind)

    def start(self) -> list[str]:
        body = self.body(None, {})
        return [self.event("response.created", response=body), self.event("response.in_progress", response=body)]

    def _add(self, item: dict, **open_item) -> list[str]:
        self.index += 1
        self.open = {"text": "", "item_id": item["id"], **open_item}
        out = [self.event("response.output_item.added", output_index=self.index, item=item)]
        if item["type"] != "function_call":
            part = {"type": "output_text", "text": "", "annotations": []} if item["type"] == "message" else {"type": "reasoning_text", "text": ""}
            out.append(self.event("response.content_part.added", item_id=item["id"], output_index=self.index, content_index=0, part=part))
        return out

    def _close(self, status: str) -> list[str]:
        """Events that finish the open item (`status`: a message's status)."""
        o, self.open = self.open, None
        if o is None:
            return []
        at, text = {"output_index": self.index}, o["text"]
        if o["kind"] == "call":
            item = self.call_item(o["call_id"], o["name"], text, "completed")
            return [self.event("response.function_call_arguments.done", item_id=item["id"], arguments=text, **at), self.event("response.output_item.done", item=item, **at)]
        if o["kind"] == "message":
            item = self.message_item(text, status)
            done = self.event("response.output_text.done", item_id=item["id"], content_index=0, text=text, logprobs=[], **at)
        else:
            item = self.reasoning_item(text)
            done = self.event("response.reasoning_text.done", item_id=item["id"], content_index=0, text=text, **at)
        part = item["content"][0]
        return [done, self.event("response.content_part.done", item_id=item["id"], content_index=0, part=part, **at), self.event("response.output_item.done", item=item, **at)]

    def step(self, delta: dict) -> list[str]:
        """Events for one chat delta (reasoning, content, a call's start or an argument fragment)."""
        if "tool_calls" in delta:
            tc = delta["tool_calls"][0]
            fn = tc["function"]
            out = []
            if "id" in tc:  # a new call
                out = self._close("completed") + self._add(self.call_item(tc["id"], fn["name"], "", "in_progress"), kind="call", call_id=tc["id"], name=fn["name"])
            return out + self._grow("response.function_call_arguments.delta", fn["arguments"])
        if "reasoning_content" in delta:
            kind, piece, event, extra = "reasoning", delta["reasoning_content"], "response.reasoning_text.delta", {"content_index": 0}
        else:
            kind, piece, event, extra = "message", delta["content"], "response.output_text.delta", {"content_index": 0, "logprobs": []}
        out = []
        if self.open is None or self.open["kind"] != kind:
            item = self.message_item("", "in_progress") if kind == "message" else {**self.reasoning_item(""), "content": []}
            out = self._close("completed") + self._add(item, kind=kind)
        return out + self._grow(event, piece, **extra)

    def _grow(self, event: str, piece: str, **extra) -> list[str]:
        assert self.open is not None
        if not piece:
            return []
        self.open["text"] += piece
        return [self.event(event, item_id=self.open["item_id"], output_index=self.index, delta=piece, **extra)]

    def finish(self, result: GenerationResult) -> list[str]:
        """Close the open item, then response.completed (response.incomplete when cut by max_output_tokens)."""
        body = self.body(result, self.deltas.message(result.text)[0])
        out = self._close(body["status"])
        return out + [self.event("response.completed" if body["status"] == "completed" else "response.incomplete", response=body)]


async def _responses_stream(server: Server, job: Job, reply: _Responses) -> AsyncIterator[str]:
    try:
        for e in reply.start():
            yield e
        async for step, done in _delta_stream(server, job, reply.deltas):
            for d in step:
                for e in reply.step(d):
                    yield e
            if done is not None:
                for e in reply.finish(done):
                    yield e
    except StrictgenError as exc:
        yield reply.event("error", code=type(exc).__name__, message=str(exc), param=None)


async def _completion_stream(server: Server, job: Job, rid: str, include_usage: bool) -> AsyncIterator[str]:
    def chunk(text: str, finish: str | None) -> str:
        return _sse({"id": rid, "object": "text_completion", "created": _now(), "model": server.model_name, "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}]})

    async for piece, done in _pieces(server, job):
        if piece:
            yield chunk(piece, None)
        if done is not None:
            yield chunk("", _finish(done, False))
            if include_usage:
                yield _sse({"id": rid, "object": "text_completion", "created": _now(), "model": server.model_name, "choices": [], "usage": _usage(job, done)})
    yield "data: [DONE]\n\n"


def _llama_body(server: Server, job: Job, result: GenerationResult, content: str) -> dict:
    return {
        "content": content,
        "model": server.model_name,
        "stop": True,
        "stop_type": "limit" if result.finish_reason == "length" else "eos",
        "tokens_predicted": len(result.token_ids),
        "tokens_evaluated": len(job.prompt_ids),
    }


async def _pieces(server: Server, job: Job) -> AsyncIterator[tuple[str, GenerationResult | None]]:
    """(new text, None) while generating, then (the rest, result); the run stops if the client leaves."""
    cancelled = threading.Event()
    sent = 0
    try:
        async for text, done in server.pool.stream(job, cancelled):
            if done is not None:
                yield text[sent:], done
                return
            text = _visible(text, job, sent)
            if len(text) > sent:
                yield text[sent:], None
                sent = len(text)
    finally:
        cancelled.set()


async def _llama_stream(server: Server, job: Job) -> AsyncIterator[str]:
    async for piece, done in _pieces(server, job):
        yield _sse({"content": piece, "stop": False} if done is None else _llama_body(server, job, done, piece))


def _no_options():
    from .protocol import OllamaOptions

    return OllamaOptions()


def _ollama_format(server: Server, fmt) -> CompiledGrammar | None:
    if fmt in (None, ""):
        return None
    if fmt == "json":
        return server.grammars.json_any()
    if isinstance(fmt, dict):
        return server.grammars.json_schema(fmt, param="format")
    raise RequestError('format must be "json" or a JSON Schema object', "format")


def _ollama_config(server: Server, opts) -> GenerationConfig:
    n = None if opts.num_predict in (None, -1) else opts.num_predict
    return server.config(server.max_tokens(n), opts.temperature if opts.temperature is not None else 0.8, opts.top_p, opts.seed, opts.stop, opts.top_k)


def _ollama_body(server: Server, job: Job, result: GenerationResult | None, piece: str, chat: bool) -> dict:
    body: dict[str, Any] = {"model": server.model_name, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "done": result is not None}
    if chat:
        body["message"] = {"role": "assistant", "content": piece}
    else:
        body["response"] = piece
    if result is not None:
        body.update({"done_reason": "length" if result.finish_reason == "length" else "stop", "prompt_eval_count": len(job.prompt_ids), "eval_count": len(result.token_ids)})
    return body


async def _ollama_reply(server: Server, job: Job, request: Request, stream: bool, chat: bool):
    if not stream:
        result = await server.run(job, request)
        return _ollama_body(server, job, result, result.text, chat)

    async def lines() -> AsyncIterator[str]:
        async for piece, done in _pieces(server, job):
            yield json.dumps(_ollama_body(server, job, done, piece, chat), ensure_ascii=False) + "\n"

    return StreamingResponse(lines(), media_type="application/x-ndjson")


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
    return Server(pool, name, limits, options)
