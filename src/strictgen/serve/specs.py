"""Each dialect's format fields → one FormatSpec (or None: free text).

OpenAI `response_format` (chat and the Responses API's `text.format`), vLLM's `guided_*` and
`structured_outputs`, llama.cpp's `grammar` / `json_schema`, Ollama's `format` and `tool_choice`
are read here, each through an explicit table of the names it knows, into the one spec the format
table (grammar/format_spec.py) compiles. Nothing here builds a grammar.
"""

from __future__ import annotations

from typing import Any

from dataclasses import replace

from strictgen.grammar.format_spec import FormatOptions, FormatSpec

from .chat import call_format
from .errors import RequestError
from .grammars import Tool, ToolCalls
from .tools.detect import ChatFormat

def _spec(o: FormatOptions, kind: str, value: Any = None, origin: str | None = None, **options: Any) -> FormatSpec:
    """A FormatSpec under the server's options `o` (`options` overrides some: strict=...)."""
    return FormatSpec(kind, value, replace(o, **options) if options else o, origin)


# vLLM's extras: request field → format kind
GUIDED = {"guided_json": "json_schema", "guided_regex": "regex", "guided_choice": "choice", "guided_grammar": "grammar"}
STRUCTURED_OUTPUTS = {"json": "json_schema", "regex": "regex", "choice": "choice", "grammar": "grammar", "json_object": "json_object", "structural_tag": "structural_tag"}


def response_format(o: FormatOptions, rf: Any, param: str) -> FormatSpec | None:
    """OpenAI's `response_format` (chat: `{"json_schema": {...}}`; Responses `text.format`: flat)."""
    if not isinstance(rf, dict):
        raise RequestError(f"{param} must be an object", param)
    kind = rf.get("type")
    if kind in (None, "text"):
        return None
    if kind == "json_object":
        return _spec(o, "json_object", origin=param)
    if kind == "json_schema":
        spec = rf.get("json_schema", rf)
        if not isinstance(spec, dict) or "schema" not in spec:
            raise RequestError("json_schema needs a 'schema'", f"{param}.json_schema")
        return _spec(o, "json_schema", spec["schema"], f"{param}.json_schema.schema", strict=spec.get("strict") is not False)
    if kind == "structural_tag":
        return _spec(o, "structural_tag", rf, param)
    raise RequestError(f"unknown {param} type {kind!r}; the types are text, json_object, json_schema, structural_tag", f"{param}.type")


def openai_format(o: FormatOptions, req) -> FormatSpec | None:
    """The format of a chat or completions request: response_format or one vLLM extra."""
    so = req.structured_outputs or {}
    if not isinstance(so, dict):
        raise RequestError("structured_outputs must be an object", "structured_outputs")
    given: list[tuple[str, str, Any]] = [(field, kind, getattr(req, field)) for field, kind in GUIDED.items()]
    given += [(f"structured_outputs.{k}", STRUCTURED_OUTPUTS[k], v) for k, v in so.items() if k in STRUCTURED_OUTPUTS]
    given = [(f, k, v) for f, k, v in given if v is not None and not (k == "json_object" and v is False)]
    rf = req.response_format
    if rf is not None and rf.get("type") not in (None, "text"):
        given.append(("response_format", "response_format", rf))
    if len(given) > 1:
        raise RequestError(f"give one structured-output format, not {len(given)} ({', '.join(f for f, _, _ in given)})", given[1][0])
    if not given:
        return None
    field, kind, value = given[0]
    if kind == "response_format":
        return response_format(o, value, field)
    if kind == "json_schema" and value is True:  # guided_json: true, any JSON
        kind = "json_object"
    return _spec(o, kind, value, field)


def llama_cpp_format(o: FormatOptions, req) -> FormatSpec | None:
    """llama.cpp's `/completion`: `grammar` (GBNF) or `json_schema`."""
    if req.grammar is not None and req.json_schema is not None:
        raise RequestError("give grammar or json_schema, not both", "grammar")
    if req.grammar is not None:
        return _spec(o, "grammar", req.grammar, "grammar")
    if req.json_schema is not None:
        return _spec(o, "json_schema", req.json_schema, "json_schema")
    return None


def ollama_format(o: FormatOptions, fmt: Any) -> FormatSpec | None:
    """Ollama's `format`: "json" or a JSON Schema."""
    if fmt in (None, ""):
        return None
    if fmt == "json":
        return _spec(o, "json_object", origin="format")
    if isinstance(fmt, dict):
        return _spec(o, "json_schema", fmt, "format")
    raise RequestError('format must be "json" or a JSON Schema object', "format")


def tool_format(o: FormatOptions, tools: list[Tool], choice: Any, parallel: bool, chat: ChatFormat) -> FormatSpec | None:
    """The format `tool_choice` asks for in the template's call syntax (None: no calls are
    constrained or read: "auto" where the template's call syntax was not found)."""
    if not tools:
        if choice not in (None, "none", "auto"):
            raise RequestError("tool_choice needs tools", "tool_choice")
        return None
    if choice is None:
        choice = "auto"
    if choice == "none":
        return None
    if isinstance(choice, dict):
        fn = choice.get("function", choice)
        name = fn.get("name") if isinstance(fn, dict) else None
        if name not in {t.name for t in tools}:
            raise RequestError(f"tool_choice names {name!r}, which is not one of the tools", "tool_choice")
        return _spec(o, "tool_calls", ToolCalls(tuple(tools), "named", False, call_format(chat, "named"), name), "tools")
    if choice in ("auto", "required"):
        fmt = call_format(chat, choice)
        return _spec(o, "tool_calls", ToolCalls(tuple(tools), choice, parallel, fmt), "tools") if fmt else None
    raise RequestError(f"unknown tool_choice {choice!r}; use none, auto, required or a named function", "tool_choice")

