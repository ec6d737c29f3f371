"""Errors as clients see them: OpenAI's error shape for every status, whatever the dialect.

A refusal (400, 401, 413, 429) says what was wrong with the request. A failure of ours (500) says
only "internal error" and the request's id; the traceback goes to the `strictgen.errors` log under
the same id, so an operator finds it and a client learns nothing of the server's insides.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse

from strictgen.errors import StrictgenError

LOGGER = "strictgen.errors"


class RequestError(StrictgenError):
    """A request the server refuses with HTTP 400 (`param` names the offending field)."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.param = param
        self.code = code


def openai_error(status: int, message: str, param: str | None = None, code: str | None = None, kind: str | None = None, headers: dict | None = None) -> JSONResponse:
    kind = kind or ("invalid_request_error" if status < 500 else "server_error")
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": code}}, status_code=status, headers=headers)


def internal_error(request_id: str | None, exc: BaseException) -> JSONResponse:
    """The 500 a client gets for `exc`; its traceback is logged under `request_id`."""
    logging.getLogger(LOGGER).error("request %s failed", request_id or "-", exc_info=(type(exc), exc, exc.__traceback__))
    rid = f" (request id {request_id})" if request_id else ""
    return openai_error(500, f"internal error{rid}", code="internal_error")


def error_event(exc: BaseException, request_id: str | None) -> dict:
    """The error object a stream ends with when `exc` cuts it: a StrictgenError's own message (it
    speaks of the request), anything else as an internal error (logged)."""
    if isinstance(exc, StrictgenError):
        return {"message": str(exc), "type": "invalid_request_error", "param": getattr(exc, "param", None), "code": getattr(exc, "code", None) or type(exc).__name__}
    logging.getLogger(LOGGER).error("request %s failed mid-stream", request_id or "-", exc_info=(type(exc), exc, exc.__traceback__))
    rid = f" (request id {request_id})" if request_id else ""
    return {"message": f"internal error{rid}", "type": "server_error", "param": None, "code": "internal_error"}


def install_handlers(app: FastAPI) -> None:
    """Refusals as 4xx in OpenAI's shape. (A 500 is answered by the operations middleware, which
    holds the request id: serve/ops.py.)"""

    @app.exception_handler(RequestError)
    async def _request_error(_: Request, exc: RequestError):
        return openai_error(400, str(exc), exc.param, exc.code)

    @app.exception_handler(StrictgenError)
    async def _strictgen_error(_: Request, exc: StrictgenError):
        return openai_error(400, str(exc), None, type(exc).__name__)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError):
        errs = exc.errors()
        first = errs[0] if errs else {}
        loc = [str(x) for x in first.get("loc", ()) if x != "body"]
        msg = "; ".join(f"{'.'.join(str(x) for x in e.get('loc', ()) if x != 'body') or 'body'}: {e.get('msg')}" for e in errs[:5])
        return openai_error(400, msg or "invalid request", ".".join(loc) or None)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException):
        return openai_error(exc.status_code, str(exc.detail))
