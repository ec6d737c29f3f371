"""The OpenAI Responses dialect: `POST /v1/responses`.

The body becomes (prompt, FormatSpec, config): `input` items become chat messages, tools and
`tool_choice` a "tool_calls" spec, else `text.format` the format. The reply's output items (and,
streamed, its events) are translated from the chat deltas of the same output parser, so the
streamed items are the final body's items.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, AsyncIterator

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

from strictgen.engine.generate import GenerationResult

from .errors import RequestError
from .chat import tool_prompt_headers
from .grammars import tools_from_request
from .hint import hinted
from .protocol import ResponsesRequest
from .replies import ChatDeltas, delta_stream, now, sse, stream_error, tool_map, usage
from .specs import response_format, tool_format
from .worker import Job

if TYPE_CHECKING:
    from .app import Server


def router(server: "Server") -> APIRouter:
    r = APIRouter()

    @r.post("/v1/responses")
    async def responses(req: ResponsesRequest, request: Request, response: Response):
        tools = tools_from_request(req.tools)
        spec = tool_format(server.format_options, tools, req.tool_choice, req.parallel_tool_calls, server.chat)
        parse_tools = spec is not None
        if spec is None and req.text and isinstance(req.text.get("format"), dict):
            spec = response_format(server.format_options, req.text["format"], "text.format")
        grammar = await server.off_loop(server.grammars.compile, spec)
        messages = _responses_messages(req)
        if not parse_tools:
            messages = hinted(messages, spec, req.format_hint)
        job = Job(server.encode_chat(messages, tools), grammar, server.config(server.max_tokens(req.max_output_tokens), req.temperature, req.top_p, chat=True))
        reply = Reply(server, req, job, "resp_" + uuid.uuid4().hex[:24], parse_tools, tool_map(tools))
        if req.stream:
            return StreamingResponse(_responses_stream(server, job, reply), media_type="text/event-stream", headers=tool_prompt_headers(server.chat, tools))
        result = await server.run(job, request)
        response.headers.update(tool_prompt_headers(server.chat, tools))
        return reply.body(result, reply.deltas.message(result.text)[0])

    return r


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




class Reply:
    """One reply of the Responses API: its output items and body, shared by the plain reply and the
    stream, and the stream's events, translated from the chat deltas of the same output parser (so
    the streamed items are the final body's items)."""

    def __init__(self, server: "Server", req: ResponsesRequest, job: Job, rid: str, parse_tools: bool, tools: dict[str, dict] | None = None):
        self.server, self.req, self.job, self.rid = server, req, job, rid
        self.created = now()
        self.deltas = ChatDeltas(server.chat.tools if parse_tools else None, tools, server.reasoning, "call_" + rid[5:17])
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
        counts = usage(self.job, result) if result is not None else None
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
            if counts is None
            else {
                "input_tokens": counts["prompt_tokens"],
                "output_tokens": counts["completion_tokens"],
                "total_tokens": counts["total_tokens"],
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }

    # ---- stream events ----

    def event(self, kind: str, **fields) -> str:
        self.seq += 1
        return sse({"type": kind, "sequence_number": self.seq - 1, **fields}, kind)

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


async def _responses_stream(server: "Server", job: Job, reply: Reply) -> AsyncIterator[str]:
    try:
        for e in reply.start():
            yield e
        async for step, done in delta_stream(server, job, reply.deltas):
            for d in step:
                for e in reply.step(d):
                    yield e
            if done is not None:
                for e in reply.finish(done):
                    yield e
    except Exception as exc:  # noqa: BLE001 - the stream ends with an error event (an internal one logged, not shown)
        err = stream_error(exc)
        yield reply.event("error", code=err["code"], message=err["message"], param=err["param"])


