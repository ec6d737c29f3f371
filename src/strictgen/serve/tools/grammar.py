"""A call format and the request's tools → the grammar of the answer, through structural tags.

Each tool's call is a structural-tag `sequence` (the format's literals, the name, the arguments
under the tool's JSON Schema); the calls, their separator, the section and the free text before
them are put together in the IR: `required` / named is exactly the call syntax, `auto` is text
without the format's trigger that may then open the calls (the lazy grammar), and the reasoning
block, when the template has one, comes first and is free.
"""

from __future__ import annotations

from strictgen.grammar.ir import Expr, Grammar, RuleRef, alt, lit, opt, repeat, seq
from strictgen.grammar.json_value import JsonStyle
from strictgen.grammar.regex import parse_regex
from strictgen.grammar.structural_tag import FormatBuilder, text_without

from . import gemma
from .families import CallFormat
from .raw import raw_string
from .reasoning import Reasoning, reasoning_prefix

# JSON is one line as json.dumps writes it (what templates render with tojson; `fmt.json_layout`):
# every separator is forced, so jump-forward saves forward passes

def _kv_value(fmt: CallFormat, schema, builder: FormatBuilder, path: str) -> Expr:
    """A parameter's value: a string raw up to the block's closing (string enums as their
    options), where the format writes strings raw; everything else JSON under its schema."""
    if fmt.kv_raw and isinstance(schema, dict) and schema.get("type") == "string":
        options = schema.get("enum", [schema["const"]] if "const" in schema else None)
        if isinstance(options, list) and options and all(isinstance(o, str) for o in options):
            return alt(*(lit(o) for o in options))
        return raw_string(schema, fmt.kv[2])
    return builder.build({"type": "json_schema", "json_schema": schema}, path, ())


def _kv_arguments(fmt: CallFormat, parameters: dict, builder: FormatBuilder, path: str) -> Expr:
    """Per-parameter blocks (`fmt.kv`): schema order, required ones present."""
    open_, mid, close = fmt.kv
    required = set(parameters.get("required") or ())
    blocks = []
    for key, sub in (parameters.get("properties") or {}).items():
        block = seq(lit(f"{open_}{key}{mid}"), _kv_value(fmt, sub, builder, f"{path}/properties/{key}"), lit(close))
        blocks.append(block if key in required else opt(block))
    return seq(*blocks) if blocks else lit("")


def call_expr(fmt: CallFormat, name: str, parameters: dict, builder: FormatBuilder, path: str) -> Expr:
    """One call of `name` in `fmt`: the format's literals, the name, the arguments under `parameters`."""
    parts: list[Expr] = []
    for p in fmt.pieces():
        if p == "@NAME@":
            parts.append(lit(name))
        elif p == "@ARGS@":
            parts.append(builder.build({"type": "json_schema", "json_schema": parameters}, path, ()))
        elif p == "@KV@":
            parts.append(_kv_arguments(fmt, parameters, builder, path))
        elif p == "@GEMMA@":
            parts.append(gemma.arguments_grammar(parameters, builder, path))
        elif p == "@INDEX@":
            parts.append(parse_regex("[0-9]{1,3}"))
        elif p == "@ID@":
            parts.append(parse_regex("[A-Za-z0-9]{9}"))
        else:
            parts.append(lit(p))
    return seq(*parts)


def tool_call_grammar(fmt: CallFormat, tools: list[tuple[str, dict]], *, mode: str, parallel: bool, reasoning: Reasoning | None) -> Grammar:
    """The answer's grammar under tool_choice `mode` ("auto", "required", "named": `tools` holds
    the one named tool). Raises SchemaError / StructuralTagError for a schema that cannot be compiled."""
    builder = FormatBuilder(JsonStyle(fmt.json_layout, 20))
    calls = [call_expr(fmt, name, params, builder, f"/tools/{i}") for i, (name, params) in enumerate(tools)]
    builder.rules["sg_call"] = alt(*calls)
    one = RuleRef("sg_call")
    many = seq(one, repeat(seq(lit(fmt.sep), one))) if parallel and fmt.parallel and mode != "named" else one
    section = seq(lit(fmt.section_open), many, lit(fmt.section_close))
    if mode == "auto":
        free = text_without(fmt.trigger)
        body: Expr = seq(free, opt(section))
        if fmt.content_prefix:
            body = alt(seq(lit(fmt.content_prefix), text_without(fmt.trigger)), section)
    else:
        body = section
    rules = dict(builder.rules)
    rules["sg_root"] = reasoning_prefix(reasoning, body)
    markers = fmt.markers() + ((reasoning.open, reasoning.close) if reasoning is not None else ())
    return Grammar(rules, "sg_root", markers=markers)
