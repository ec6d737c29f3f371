"""Which JSON Schema a request asks for, so the format hint (engine.format_hint) can describe it.

Chat and Responses requests with a JSON Schema format get the hint in their system turn unless the
request says `"format_hint": false` (docs/serve.md says exactly what is added)."""

from __future__ import annotations

from typing import Any

from strictgen.engine.format_hint import with_format_hint


def requested_schema(req) -> Any:
    """The schema of response_format json_schema, vLLM guided_json / structured_outputs.json, or a
    Responses text.format json_schema (None: no schema asked for; any-JSON modes give none)."""
    candidates = []
    rf = getattr(req, "response_format", None)
    if isinstance(rf, dict) and rf.get("type") == "json_schema":
        spec = rf.get("json_schema", rf)
        candidates.append(spec.get("schema") if isinstance(spec, dict) else None)
    candidates.append(getattr(req, "guided_json", None))
    so = getattr(req, "structured_outputs", None)
    if isinstance(so, dict):
        candidates.append(so.get("json"))
    text = getattr(req, "text", None)
    fmt = text.get("format") if isinstance(text, dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        candidates.append(fmt.get("schema"))
    return next((c for c in candidates if isinstance(c, dict)), None)


def hinted(messages: list[dict], req) -> list[dict]:
    """`messages` with the format hint added where the request asks for a schema and allows it."""
    schema = requested_schema(req)
    if schema is None or getattr(req, "format_hint", True) is False:
        return messages
    return with_format_hint(messages, schema)
