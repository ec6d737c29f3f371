"""Bounds on what a request may make the server hold: the body's bytes, its JSON's nesting and
string lengths, and the prompt's size, each checked before the costly step it guards.

The body is bounded at the ASGI level, on the bytes as they arrive: a `Content-Length` that is too
big is refused before anything is read, and any other framing (chunked, no length, a length that
lies) is counted chunk by chunk and refused the moment it passes the limit, so no route ever reads,
parses or tokenizes more than `max_body_bytes`. The JSON scan runs on the bounded body before the
parser sees it: Python's `json` recurses per nesting level and keeps every string whole.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from starlette.responses import JSONResponse

from .errors import RequestError, openai_error


@dataclass
class ServerLimits:
    max_body_bytes: int = 1 << 20
    max_tokens: int = 2048
    default_max_tokens: int = 256
    max_json_depth: int = 128  # arrays and objects inside each other in a request body
    max_json_string_bytes: int = 512 << 10  # one JSON string's bytes as sent (escapes included)
    max_prompt_tokens: int | None = None  # None: unbounded here (build_server sets the context size)


def check_json_shape(body: bytes, max_depth: int, max_string_bytes: int) -> None:
    """Refuse (RequestError) a JSON body nested deeper than `max_depth` or holding a string longer
    than `max_string_bytes` (its bytes as sent). Exact on valid JSON; on invalid JSON it may
    over-count, and the parser refuses that body anyway. Vectorised (numpy over the bytes, no
    Python step per token): a megabyte of brackets or of tiny strings is scanned in milliseconds,
    on the event loop."""
    b = np.frombuffer(body, dtype=np.uint8)
    n = b.size
    if n == 0:
        return
    pos = np.arange(n)
    last_plain = np.maximum.accumulate(np.where(b != 0x5C, pos, -1))  # the last byte at or before i that is not a backslash
    backslashes_before = pos - 1 - np.concatenate(([-1], last_plain[:-1]))
    quotes = np.flatnonzero((b == 0x22) & (backslashes_before % 2 == 0))  # quotes that are not escaped
    opens, closes = quotes[0::2], np.append(quotes[1::2], n)[: (quotes.size + 1) // 2]  # an unclosed string runs to the end
    if opens.size and int((closes - opens).max()) - 1 > max_string_bytes:
        raise RequestError(f"a JSON string in the body is longer than this server's limit of {max_string_bytes} bytes", code="string_too_long")
    edges = np.zeros(n + 1, dtype=np.int32)
    edges[opens] += 1
    edges[np.minimum(closes + 1, n)] -= 1
    inside = np.cumsum(edges[:n]) > 0
    steps = ((b == 0x5B) | (b == 0x7B)).astype(np.int32) - ((b == 0x5D) | (b == 0x7D)).astype(np.int32)
    steps[inside] = 0
    if int(np.cumsum(steps).max()) > max_depth:
        raise RequestError(f"the JSON body is nested deeper than this server's limit of {max_depth} levels", code="json_too_deep")


def too_large(limit: int) -> JSONResponse:
    return openai_error(413, f"the request body exceeds this server's limit of {limit} bytes", code="body_too_large")


class BoundedBody:
    """Pure ASGI: the request body read whole, at most `limits.max_body_bytes` of it, whatever the
    framing, its JSON shape checked, then handed to the app as one message (later `receive` calls,
    a disconnect, pass through)."""

    def __init__(self, app, limits: ServerLimits):
        self.app = app
        self.limits = limits

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.limits.max_body_bytes
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                return await too_large(limit)(scope, receive, send)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left before the body ended
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return await too_large(limit)(scope, receive, send)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body.lstrip()[:1] in (b"{", b"["):
            try:
                check_json_shape(body, self.limits.max_json_depth, self.limits.max_json_string_bytes)
            except RequestError as exc:
                return await openai_error(400, str(exc), exc.param, exc.code)(scope, receive, send)
        delivered = False

        async def replay():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def content_bytes(messages: list[dict]) -> int:
    """The UTF-8 bytes of the messages' text (strings and text parts): a lower bound on the
    rendered prompt's bytes, known before the template runs."""
    n = 0
    for m in messages:
        content = m.get("content")
        parts = content if isinstance(content, list) else [content]
        for p in parts:
            text = p if isinstance(p, str) else p.get("text") if isinstance(p, dict) else None
            if isinstance(text, str):
                n += len(text.encode("utf-8", "surrogatepass"))
    return n


def longest_token_bytes(tokenizer_info) -> int:
    """The longest token's bytes: a text of B bytes is at least B / this many tokens."""
    return max((len(tokenizer_info.token_bytes(i)) for i in range(tokenizer_info.vocab_size)), default=1) or 1


def check_prompt_bytes(n_bytes: int, max_tokens: int | None, longest: int) -> None:
    """Refuse a prompt of `n_bytes` that cannot fit `max_tokens` tokens whatever its tokenization."""
    if max_tokens is not None and n_bytes > max_tokens * longest:
        raise RequestError(
            f"the prompt ({n_bytes} bytes) cannot fit this server's context of {max_tokens} tokens", "messages", code="context_length_exceeded"
        )


def check_prompt_tokens(n_tokens: int, max_tokens: int | None, param: str) -> None:
    if max_tokens is not None and n_tokens > max_tokens:
        raise RequestError(f"the prompt has {n_tokens} tokens, more than this server's context of {max_tokens}", param, code="context_length_exceeded")


__all__ = ["BoundedBody", "ServerLimits", "check_json_shape", "check_prompt_bytes", "check_prompt_tokens", "content_bytes"]
