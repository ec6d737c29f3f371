"""JSON Schema → grammar IR: the public names of the JSON Schema front end, which lives in the
`grammar.schema` package (the entry point and what it produces: schema.entry's docstring)."""

from __future__ import annotations

from .json_value import JsonStyle
from .schema.emitter import SchemaEmitter
from .schema.entry import json_schema_grammar, loaded_schema, schema_cache_text

__all__ = ["JsonStyle", "SchemaEmitter", "json_schema_grammar", "loaded_schema", "schema_cache_text"]
