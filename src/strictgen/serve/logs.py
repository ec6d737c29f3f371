"""One structured log line per request (`--log-format json|text`) on the `strictgen.requests` logger.

A line holds the request's id, route, status, format kind, token counts, finish reason and timings;
prompt and output text only with `--log-content`. API keys never appear (the headers are not read here).
"""

from __future__ import annotations

import json
import logging
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .trace import RequestTrace

LOGGER = "strictgen.requests"


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def _text_value(v) -> str:
    """logfmt-style: bare when it is one plain word, else JSON (quoted, escaped)."""
    if v is None:
        return "-"
    if isinstance(v, (bool, int, float)):
        return str(v).lower() if isinstance(v, bool) else str(v)
    if isinstance(v, str) and v and all(c.isalnum() or c in "-_./:" for c in v):
        return v
    return json.dumps(v, ensure_ascii=False)


class RequestLog:
    def __init__(self, fmt: str = "text", content: bool = False, logger: logging.Logger | None = None):
        if fmt not in ("json", "text"):
            raise ValueError(f"log format must be 'json' or 'text', not {fmt!r}")
        self.fmt = fmt
        self.content = content
        self.logger = logger or logging.getLogger(LOGGER)

    def record(self, trace: "RequestTrace", status: int, seconds: float) -> dict:
        """The fields of `trace`'s line (what is logged, as a dict)."""
        rec = {
            "id": trace.id,
            "route": trace.route,
            "dialect": trace.dialect,
            "status": status,
            "format": trace.format,
            "prompt_tokens": trace.prompt_tokens,
            "output_tokens": trace.output_tokens,
            "finish_reason": trace.finish_reason,
            "timed_out": trace.timed_out,
            "total_ms": _ms(seconds),
            "ttft_ms": _ms(trace.ttft()),
            "compile_ms": _ms(trace.compile_s),
            "tokens_per_s": None if trace.tokens_per_second() is None else round(trace.tokens_per_second(), 1),
        }
        if self.content:
            body = b"".join(trace.body).decode("utf-8", "replace")
            try:
                rec["request"] = json.loads(body) if body else None
            except ValueError:
                rec["request"] = body
            rec["output"] = None if trace.result is None else trace.result.text
        return rec

    def emit(self, trace: "RequestTrace", status: int, seconds: float) -> None:
        if not self.logger.isEnabledFor(logging.INFO):
            return
        rec = self.record(trace, status, seconds)
        if self.fmt == "json":
            line = json.dumps(rec, ensure_ascii=False)
        else:
            line = " ".join(f"{k}={_text_value(v)}" for k, v in rec.items())
        self.logger.info(line)


def configure(level: str = "info") -> None:
    """Send the request lines to stderr, one per line, unadorned (the CLI's set-up)."""
    logger = logging.getLogger(LOGGER)
    if not any(getattr(h, "_strictgen", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler._strictgen = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(level.upper() if level.upper() in logging.getLevelNamesMapping() else "INFO")
    logger.propagate = False
