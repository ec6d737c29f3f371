"""The Ollama dialect: `POST /api/chat` and `POST /api/generate` (`format`: "json" or a JSON
Schema; `options`: Ollama's sampling fields; streamed by default, as NDJSON lines).

A chat (and a generate that is not `raw`) renders through the template, so it also stops at the
template's end-of-turn marker, as the OpenAI chat dialect does.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from strictgen.engine.generate import GenerationConfig, GenerationResult

from .protocol import OllamaChatRequest, OllamaGenerateRequest, OllamaOptions
from .replies import pieces, stream_error
from .specs import ollama_format
from .worker import Job

if TYPE_CHECKING:
    from .app import Server


def router(server: "Server") -> APIRouter:
    r = APIRouter()

    @r.post("/api/chat")
    async def chat(req: OllamaChatRequest, request: Request):
        messages = [m.model_dump(exclude_none=True) for m in req.messages]
        grammar = await server.off_loop(server.grammars.compile, ollama_format(server.format_options, req.format))
        job = Job(server.encode_chat(messages, []), grammar, _config(server, req.options or OllamaOptions(), chat=True))
        return await _reply(server, job, request, req.stream, chat=True)

    @r.post("/api/generate")
    async def generate(req: OllamaGenerateRequest, request: Request):
        grammar = await server.off_loop(server.grammars.compile, ollama_format(server.format_options, req.format))
        if req.raw:
            prompt = server.encode_raw(req.prompt)
        else:
            messages = ([{"role": "system", "content": req.system}] if req.system else []) + [{"role": "user", "content": req.prompt}]
            prompt = server.encode_chat(messages, [])
        job = Job(prompt, grammar, _config(server, req.options or OllamaOptions(), chat=not req.raw))
        return await _reply(server, job, request, req.stream, chat=False)

    return r


def _config(server: "Server", opts: OllamaOptions, chat: bool) -> GenerationConfig:
    n = None if opts.num_predict in (None, -1) else opts.num_predict
    temperature = 0.8 if opts.temperature is None else opts.temperature  # Ollama's default
    return server.config(server.max_tokens(n), temperature, opts.top_p, opts.seed, opts.stop, opts.top_k, chat=chat)


def _body(server: "Server", job: Job, result: GenerationResult | None, piece: str, chat: bool) -> dict:
    body: dict[str, Any] = {"model": server.model_name, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "done": result is not None}
    if chat:
        body["message"] = {"role": "assistant", "content": piece}
    else:
        body["response"] = piece
    if result is not None:
        body.update({"done_reason": "length" if result.finish_reason == "length" else "stop", "prompt_eval_count": len(job.prompt_ids), "eval_count": len(result.token_ids)})
    return body


async def _reply(server: "Server", job: Job, request: Request, stream: bool, chat: bool):
    if not stream:
        result = await server.run(job, request)
        return _body(server, job, result, result.text, chat)

    async def lines() -> AsyncIterator[str]:
        try:
            async for piece, done in pieces(server, job):
                yield json.dumps(_body(server, job, done, piece, chat), ensure_ascii=False) + "\n"
        except Exception as exc:  # noqa: BLE001 - the stream ends with an error line (an internal one logged, not shown)
            yield json.dumps({"error": stream_error(exc)["message"]}) + "\n"

    return StreamingResponse(lines(), media_type="application/x-ndjson")
