"""What every dialect's reply is made of: usage counts, finish reasons, server-sent events, the
output text a stream may send so far, and the chat deltas the output parser is sure of.

The dialect routers (serve/openai_*.py, llama_cpp.py, ollama.py) render their own bodies from
these; a stream that a failure cuts ends with an error event (serve/errors.py: a failure of ours
says only "internal error" and the request id).
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any, AsyncIterator

from strictgen.engine.generate import GenerationResult

from .errors import error_event
from .grammars import Tool
from .tools.parse import parse_output
from .trace import current_trace
from .worker import Job

if TYPE_CHECKING:
    from .app import Server


def now() -> int:
    return int(time.time())


def usage(job: Job, result: GenerationResult | None) -> dict:
    n = len(result.token_ids) if result else 0
    return {"prompt_tokens": len(job.prompt_ids), "completion_tokens": n, "total_tokens": len(job.prompt_ids) + n}


def visible(text: str, job: Job, sent: int = 0) -> str:
    """Text that can be sent while generating: a stop string's possible start is held back."""
    hold = max((len(s) for s in job.config.stop), default=1) - 1
    return text[: max(sent, len(text) - hold)]


def sse(obj, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj, ensure_ascii=False)}\n\n"


class ChatDeltas:
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


def tool_map(tools: list[Tool]) -> dict[str, dict]:
    return {t.name: t.parameters for t in tools}


def finish_reason(result: GenerationResult, has_calls: bool) -> str:
    if has_calls:
        return "tool_calls"
    return "length" if result.finish_reason == "length" else "stop"


async def delta_stream(server: "Server", job: Job, deltas: ChatDeltas) -> AsyncIterator[tuple[list[dict], GenerationResult | None]]:
    """(chat deltas, None) after each step, then (the last deltas, result); the run stops if the client leaves."""
    cancelled = threading.Event()
    try:
        async for text, done in server.pool.stream(job, cancelled):
            yield deltas.deltas(text if done is not None else visible(text, job), final=done is not None), done
    finally:
        cancelled.set()  # the client went away (or we are done): stop generating


async def pieces(server: "Server", job: Job) -> AsyncIterator[tuple[str, GenerationResult | None]]:
    """(new text, None) while generating, then (the rest, result); the run stops if the client leaves."""
    cancelled = threading.Event()
    sent = 0
    try:
        async for text, done in server.pool.stream(job, cancelled):
            if done is not None:
                yield text[sent:], done
                return
            text = visible(text, job, sent)
            if len(text) > sent:
                yield text[sent:], None
                sent = len(text)
    finally:
        cancelled.set()


def stream_error(exc: BaseException) -> dict:
    """The error object that ends a stream cut by `exc`."""
    trace = current_trace()
    return error_event(exc, trace.id if trace is not None else None)
