"""The llama.cpp server dialect: `POST /completion` (one raw prompt; `grammar` in GBNF or
`json_schema` as its format; `n_predict`, llama.cpp's sampling fields and stops)."""

from __future__ import annotations

from typing import TYPE_CHECKING, AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from strictgen.engine.generate import GenerationResult

from .protocol import LlamaCppCompletionRequest
from .replies import pieces, sse, stream_error
from .specs import llama_cpp_format
from .worker import Job

if TYPE_CHECKING:
    from .app import Server


def router(server: "Server") -> APIRouter:
    r = APIRouter()

    @r.post("/completion")
    async def completion(req: LlamaCppCompletionRequest, request: Request):
        grammar = await server.off_loop(server.grammars.compile, llama_cpp_format(server.format_options, req))
        n = None if req.n_predict in (None, -1) else req.n_predict
        temperature = 0.8 if req.temperature is None else req.temperature  # llama.cpp's default
        job = Job(server.encode_raw(req.prompt), grammar, server.config(server.max_tokens(n), temperature, req.top_p, req.seed, req.stop, req.top_k))
        if req.stream:
            return StreamingResponse(_llama_stream(server, job), media_type="text/event-stream")
        result = await server.run(job, request)
        return _llama_body(server, job, result, result.text)

    return r


def _llama_body(server: "Server", job: Job, result: GenerationResult, content: str) -> dict:
    return {
        "content": content,
        "model": server.model_name,
        "stop": True,
        "stop_type": "limit" if result.finish_reason == "length" else "eos",
        "tokens_predicted": len(result.token_ids),
        "tokens_evaluated": len(job.prompt_ids),
    }


async def _llama_stream(server: "Server", job: Job) -> AsyncIterator[str]:
    try:
        async for piece, done in pieces(server, job):
            yield sse({"content": piece, "stop": False} if done is None else _llama_body(server, job, done, piece))
    except Exception as exc:  # noqa: BLE001 - the stream ends with an error event (an internal one logged, not shown)
        yield sse({"error": stream_error(exc)})
