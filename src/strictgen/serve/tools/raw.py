"""A string written raw between markers (per-parameter blocks, Gemma 4's quotes): the text never
holds the closing marker, and keeps the schema's length bounds (in code points) and pattern."""

from __future__ import annotations

from strictgen.grammar.ir import Expr, charset, intersect, repeat
from strictgen.grammar.regex import parse_regex_search
from strictgen.grammar.structural_tag import text_without


def raw_string(schema: dict, stop: str) -> Expr:
    body = [text_without(stop)]
    if "minLength" in schema or "maxLength" in schema:
        body.append(repeat(charset(((0, 0x10FFFF),)), int(schema.get("minLength", 0)), schema.get("maxLength")))
    if isinstance(schema.get("pattern"), str):
        body.append(parse_regex_search(schema["pattern"]))
    return intersect(*body)
