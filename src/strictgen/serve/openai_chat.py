"""The OpenAI chat dialect: `POST /v1/chat/completions` (with vLLM's `guided_*` and
`structured_outputs` extras) and `GET /v1/models`.

The body becomes (prompt, FormatSpec, config): tools and `tool_choice` give a "tool_calls" spec
in the template's call format, else `response_format` or one vLLM extra gives the format; the reply
is the chat completion, or its chunks when streamed.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, AsyncIterator

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

from .chat import tool_prompt_headers
from .grammars import tools_from_request
from .hint import hinted
from .protocol import ChatCompletionRequest
from .replies import ChatDeltas, delta_stream, finish_reason, now, sse, stream_error, tool_map, usage
from .specs import openai_format, tool_format
from .worker import Job

if TYPE_CHECKING:
    from .app import Server


def router(server: "Server") -> APIRouter:
    r = APIRouter()

    @r.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": server.model_name, "object": "model", "created": 0, "owned_by": "strictgen"}]}

    @r.post("/v1/chat/completions")
    async def chat_completions(req: ChatCompletionRequest, request: Request, response: Response):
        tools = tools_from_request(req.tools)
        spec = tool_format(server.format_options, tools, req.tool_choice, req.parallel_tool_calls, server.chat)
        parse_tools = spec is not None
        if spec is None:
            spec = openai_format(server.format_options, req)
        grammar = await server.off_loop(server.grammars.compile, spec)
        messages = [m.model_dump(exclude_none=True) for m in req.messages]
        if not parse_tools:
            messages = hinted(messages, spec, req.format_hint)
        prompt = server.encode_chat(messages, tools)
        cfg = server.config(server.max_tokens(req.max_completion_tokens, req.max_tokens), req.temperature, req.top_p, req.seed, req.stop, req.top_k, chat=True)
        cfg.reasoning_limit = server.reasoning_limit(req.thinking_token_budget)
        job = Job(prompt, grammar, cfg)
        rid = "chatcmpl-" + uuid.uuid4().hex[:24]
        deltas = ChatDeltas(server.chat.tools if parse_tools else None, tool_map(tools), server.reasoning, "call_" + rid[9:21])
        if req.stream:
            include_usage = bool((req.stream_options or {}).get("include_usage"))
            return StreamingResponse(_chat_stream(server, job, rid, deltas, include_usage), media_type="text/event-stream", headers=tool_prompt_headers(server.chat, tools))
        result = await server.run(job, request)
        response.headers.update(tool_prompt_headers(server.chat, tools))
        msg, has_calls = deltas.message(result.text)
        return {
            "id": rid,
            "object": "chat.completion",
            "created": now(),
            "model": server.model_name,
            "choices": [{"index": 0, "message": msg, "finish_reason": finish_reason(result, has_calls), "logprobs": None}],
            "usage": usage(job, result),
        }

    return r


async def _chat_stream(server: "Server", job: Job, rid: str, deltas: ChatDeltas, include_usage: bool) -> AsyncIterator[str]:
    created = now()

    def chunk(delta: dict, finish: str | None = None) -> str:
        body = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": server.model_name, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}
        if include_usage:
            body["usage"] = None
        return sse(body)

    try:
        yield chunk({"role": "assistant", "content": ""})
        result = None
        async for step, done in delta_stream(server, job, deltas):
            for d in step:
                yield chunk(d)
            result = done
        has_calls = bool(deltas.sent_calls)
        yield chunk({}, finish_reason(result, has_calls))
        if include_usage:
            yield sse({"id": rid, "object": "chat.completion.chunk", "created": created, "model": server.model_name, "choices": [], "usage": usage(job, result)})
        yield "data: [DONE]\n\n"
    except Exception as exc:  # noqa: BLE001 - the stream ends with an error event (an internal one logged, not shown)
        yield sse({"error": stream_error(exc)})
