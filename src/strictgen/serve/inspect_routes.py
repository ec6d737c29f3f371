"""`POST /v1/strictgen/inspect` (the mask step by step, as JSON) and `GET /inspect` (one page that
is a client of it), over the server's model and grammar factory.

The steps themselves come from strictgen.engine.inspect; this module only turns a request into a
grammar and a document or a generation, and a compile error into OpenAI's error shape with where
it points (keyword and JSON pointer, line and column, or position) so the page can mark it. The
routes sit behind the server's API keys like every other route (serve/ops.py).
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict

from strictgen.compile.compiled import CompiledGrammar
from strictgen.engine.format_hint import with_format_hint
from strictgen.engine.inspect import MAX_SAMPLE, MAX_TOP, SAMPLE, TOP, GenerationRecorder, describe_error, inspect_document
from strictgen.errors import StrictgenError
from strictgen.grammar.format_spec import FormatSpec

from .errors import RequestError
from .grammars import SERVE_KINDS, tools_from_request
from .specs import tool_format
from .worker import Job

router = APIRouter()


class InspectRequest(BaseModel):
    """One inspection: a format and either a document or a prompt (docs/serve.md, "Inspect")."""

    model_config = ConfigDict(extra="forbid")
    format: dict[str, Any]
    document: str | None = None
    prompt: str | None = None
    max_tokens: int | None = None
    temperature: float = 0.0
    top_p: float | None = None
    seed: int | None = None
    format_hint: bool = True  # prompt with a JSON Schema: describe it in the system turn, as chat does
    sample: int = SAMPLE
    top: int = TOP
    search: str | None = None


# the page's format types → the format table's kinds, and the request field that holds each value
KINDS = {"json_schema": ("json_schema", "schema"), "regex": ("regex", "pattern"), "grammar": ("grammar", "grammar"), "choice": ("choice", "choices"), "json_object": ("json_object", None), "lark": ("lark", "grammar")}
FORMATS = (*KINDS, "tools")  # what the error for an unknown type lists


def _compile(server, fmt: dict[str, Any], document: bool) -> tuple[CompiledGrammar, list]:
    """(grammar, tools) of the request's `format`, through the server's one format table; a bad
    one raises the compiler's own StrictgenError (keyword and pointer, line and column kept).
    A document is walked without the template's reasoning block (it is the answer itself); a
    generation gets the block, as chat does."""
    kind = fmt.get("type")
    options = replace(server.format_options, reasoning=None) if document else server.format_options
    if kind == "tools":
        tools = tools_from_request(fmt.get("tools"), "format.tools")
        spec = tool_format(options, tools, fmt.get("tool_choice", "required"), bool(fmt.get("parallel_tool_calls", False)), server.chat)
        if spec is None:
            raise RequestError("tool_choice 'none' leaves nothing to inspect", "format.tool_choice")
        return server.grammars.compiler.compile_format(spec, SERVE_KINDS), tools
    if kind not in KINDS:
        raise RequestError(f"format.type must be one of {', '.join(FORMATS)}, not {kind!r}", "format.type")
    table_kind, field = KINDS[kind]
    spec = FormatSpec(table_kind, fmt.get(field) if field else None, options, f"format.{field}" if field else "format")
    return server.grammars.compiler.compile_format(spec, SERVE_KINDS), []


def _compile_error(exc: StrictgenError) -> JSONResponse:
    """HTTP 400 in OpenAI's shape, with the compile error's location fields beside the message."""
    where = describe_error(exc)
    error = {"message": where.pop("message"), "type": "invalid_request_error", "param": getattr(exc, "param", None), "code": where.pop("type")}
    return JSONResponse({"error": {**error, **where}}, status_code=400)


@lru_cache(maxsize=1)
def _page() -> str:
    return resources.files("strictgen.serve").joinpath("static/inspect.html").read_text(encoding="utf-8")


@router.get("/inspect", response_class=HTMLResponse)
async def inspect_page() -> HTMLResponse:
    return HTMLResponse(_page())


@router.post("/v1/strictgen/inspect")
async def inspect(req: InspectRequest, request: Request):
    server = request.app.state.server
    if (req.document is None) == (req.prompt is None):
        raise RequestError("give either a document or a prompt", "document")
    if not 0 <= req.sample <= MAX_SAMPLE or not 0 <= req.top <= MAX_TOP:
        raise RequestError(f"sample must be in 0..{MAX_SAMPLE} and top in 0..{MAX_TOP}", "sample")
    try:
        grammar, tools = await server.off_loop(_compile, server, req.format, req.document is not None)
    except StrictgenError as exc:
        return _compile_error(exc)
    if req.document is not None:
        special = bool(grammar.marker_tokens)  # marker text as its tokens, as generation spells it
        encode = lambda text: server.pool.tokenize(lambda m: m.tokenize(text, special=special))  # noqa: E731
        found = await server.off_loop(lambda: inspect_document(grammar, req.document, encode, sample=req.sample, search=req.search))
        return {"format": req.format.get("type"), "model": server.model_name, **found.to_dict()}
    messages = [{"role": "user", "content": req.prompt}]
    schema = req.format.get("schema") if req.format.get("type") == "json_schema" else None
    if isinstance(schema, str):
        schema = json.loads(schema)  # it compiled, so it is JSON
    if isinstance(schema, dict) and req.format_hint:
        messages = with_format_hint(messages, schema)
    prompt_ids = await server.off_loop(server.encode_chat, messages, tools)
    config = server.config(server.max_tokens(req.max_tokens), req.temperature, req.top_p, req.seed, chat=True)
    recorder = GenerationRecorder(grammar, req.top)
    config.observer = recorder
    result = await server.run(Job(prompt_ids, grammar, config), request)
    found = await server.off_loop(lambda: recorder.inspection(grammar, result, sample=req.sample, search=req.search))
    return {"format": req.format.get("type"), "model": server.model_name, "prompt_tokens": len(prompt_ids), **found.to_dict()}
