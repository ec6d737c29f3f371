"""The OpenAI legacy completions dialect: `POST /v1/completions` (one raw prompt, with vLLM's
`guided_*` / `structured_outputs` extras or `response_format` as its format)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from .errors import RequestError
from .protocol import CompletionRequest
from .replies import finish_reason, now, pieces, sse, stream_error, usage
from .specs import openai_format
from .worker import Job

if TYPE_CHECKING:
    from .app import Server


def router(server: "Server") -> APIRouter:
    r = APIRouter()

    @r.post("/v1/completions")
    async def completions(req: CompletionRequest, request: Request):
        prompt_text = req.prompt if isinstance(req.prompt, str) else "".join(req.prompt[:1]) if len(req.prompt) == 1 else None
        if prompt_text is None:
            raise RequestError("one prompt per request", "prompt")
        grammar = await server.off_loop(server.grammars.compile, openai_format(server.format_options, req))
        cfg = server.config(server.max_tokens(req.max_tokens), req.temperature, req.top_p, req.seed, req.stop, req.top_k)
        cfg.heal_prompt = True  # a raw prompt may end mid-word (applies to unconstrained output)
        job = Job(server.encode_raw(prompt_text), grammar, cfg)
        rid = "cmpl-" + uuid.uuid4().hex[:24]
        if req.stream:
            include_usage = bool((req.stream_options or {}).get("include_usage"))
            return StreamingResponse(_completion_stream(server, job, rid, include_usage), media_type="text/event-stream")
        result = await server.run(job, request)
        return {
            "id": rid,
            "object": "text_completion",
            "created": now(),
            "model": server.model_name,
            "choices": [{"index": 0, "text": result.text, "finish_reason": finish_reason(result, False), "logprobs": None}],
            "usage": usage(job, result),
        }

    return r


async def _completion_stream(server: "Server", job: Job, rid: str, include_usage: bool) -> AsyncIterator[str]:
    def chunk(text: str, finish: str | None) -> str:
        return sse({"id": rid, "object": "text_completion", "created": now(), "model": server.model_name, "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}]})

    try:
        async for piece, done in pieces(server, job):
            if piece:
                yield chunk(piece, None)
            if done is not None:
                yield chunk("", finish_reason(done, False))
                if include_usage:
                    yield sse({"id": rid, "object": "text_completion", "created": now(), "model": server.model_name, "choices": [], "usage": usage(job, done)})
        yield "data: [DONE]\n\n"
    except Exception as exc:  # noqa: BLE001 - the stream ends with an error event (an internal one logged, not shown)
        yield sse({"error": stream_error(exc)})
