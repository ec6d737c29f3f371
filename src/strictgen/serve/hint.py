"""The format hint (engine.format_hint) for a request whose format is a JSON Schema.

Chat and Responses requests with a JSON Schema format get the hint in their system turn unless the
request says `"format_hint": false` (docs/serve.md says exactly what is added). The schema is read
from the request's FormatSpec, the same one its grammar is compiled from."""

from __future__ import annotations

from strictgen.engine.format_hint import with_format_hint
from strictgen.grammar.format_spec import FormatSpec


def requested_schema(spec: FormatSpec | None) -> dict | None:
    """The JSON Schema object `spec` asks for (None: no schema; any-JSON modes give none)."""
    if spec is not None and spec.kind == "json_schema" and isinstance(spec.value, dict):
        return spec.value
    return None


def hinted(messages: list[dict], spec: FormatSpec | None, allowed: bool = True) -> list[dict]:
    """`messages` with the format hint added where `spec` is a JSON Schema object and the request
    allows it."""
    schema = requested_schema(spec)
    return messages if schema is None or not allowed else with_format_hint(messages, schema)
