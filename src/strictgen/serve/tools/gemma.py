"""Gemma 4's argument syntax: `key:value` pairs with bare keys in sorted order, strings between
`<|"|>` quotes, numbers and booleans bare, `{...}` and `[...]` for nesting, exactly as its template's
`format_argument` macro writes them. Rendering, reading back (to JSON) and the grammar live here.
Inference (tools/infer.py) recognises it by its rendering of the probe arguments: two probe values
cannot teach a value language, so this one is written by hand."""

from __future__ import annotations

import json

from strictgen.grammar.ir import Expr, RuleRef, alt, lit, opt, repeat, seq
from strictgen.grammar.regex import parse_regex
from strictgen.grammar.structural_tag import FormatBuilder, text_without

from .raw import raw_string

QUOTE = '<|"|>'


def render_value(value) -> str:
    if isinstance(value, str):
        return QUOTE + value + QUOTE
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + render_pairs(value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(render_value(v) for v in value) + "]"
    return str(value)


def render_pairs(arguments: dict) -> str:
    return ",".join(f"{k}:{render_value(v)}" for k, v in sorted(arguments.items()))


class Incomplete(Exception):
    """The text ends (or stops being Gemma syntax) before the value does."""


def read_value(text: str, pos: int) -> tuple[object, int]:
    if text.startswith(QUOTE, pos):
        end = text.find(QUOTE, pos + len(QUOTE))
        if end < 0:
            raise Incomplete
        return text[pos + len(QUOTE) : end], end + len(QUOTE)
    if text.startswith("{", pos):
        return read_pairs(text, pos + 1, "}")
    if text.startswith("[", pos):
        items, pos = [], pos + 1
        while not text.startswith("]", pos):
            if items:
                if not text.startswith(",", pos):
                    raise Incomplete
                pos += 1
            value, pos = read_value(text, pos)
            items.append(value)
        return items, pos + 1
    end = pos
    while end < len(text) and text[end] not in ",}]":
        end += 1
    if end == len(text) or end == pos:
        raise Incomplete
    word = text[pos:end]
    try:
        return json.loads(word), end
    except json.JSONDecodeError:
        return word, end


def read_pairs(text: str, pos: int, close: str) -> tuple[dict, int]:
    """`k:v,...` up to and past `close`."""
    out: dict = {}
    while not text.startswith(close, pos):
        if out:
            if not text.startswith(",", pos):
                raise Incomplete
            pos += 1
        colon = text.find(":", pos)
        if colon < 0:
            raise Incomplete
        out[text[pos:colon]], pos = read_value(text, colon + 1)
    return out, pos + len(close)


def _any_value(builder: FormatBuilder) -> Expr:
    """Any Gemma value (for schemas beyond flat strings, numbers and booleans)."""
    if "gemma_value" not in builder.rules:
        v = RuleRef("gemma_value")
        key = parse_regex("[A-Za-z_][A-Za-z0-9_]*")
        pairs = opt(seq(key, lit(":"), v, repeat(seq(lit(","), key, lit(":"), v))))
        items = opt(seq(v, repeat(seq(lit(","), v))))
        scalar = parse_regex("-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?|true|false|None")
        builder.rules["gemma_value"] = alt(seq(lit(QUOTE), text_without(QUOTE), lit(QUOTE)), scalar, seq(lit("{"), pairs, lit("}")), seq(lit("["), items, lit("]")))
    return RuleRef("gemma_value")


def _value(schema, builder: FormatBuilder, path: str) -> Expr:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(schema, dict) and isinstance(schema.get("enum"), list) and all(isinstance(e, str) for e in schema["enum"]) and schema["enum"]:
        return alt(*(lit(render_value(e)) for e in schema["enum"]))
    if isinstance(schema, dict) and "const" in schema:
        return lit(render_value(schema["const"]))
    if kind == "string":  # raw text between the quotes, with the schema's length and pattern
        return seq(lit(QUOTE), raw_string(schema, QUOTE), lit(QUOTE))
    if kind in ("integer", "number", "boolean"):
        return builder.build({"type": "json_schema", "json_schema": schema}, path, ())
    return _any_value(builder)


def arguments_grammar(parameters: dict, builder: FormatBuilder, path: str) -> Expr:
    """The pairs of a call's arguments: sorted keys, required ones present, commas between."""
    props = sorted((parameters.get("properties") or {}).items())
    required = set(parameters.get("required") or ())
    first: Expr = lit("")  # what may follow when nothing was written yet
    rest: Expr = lit("")  # ... and after at least one pair
    for key, sub in reversed(props):
        pair = seq(lit(f"{key}:"), _value(sub, builder, f"{path}/properties/{key}"))
        new_first = seq(pair, rest)
        new_rest = seq(lit(","), pair, rest)
        if key not in required:
            new_first, new_rest = alt(new_first, first), alt(new_rest, rest)
        first, rest = new_first, new_rest
    return first
