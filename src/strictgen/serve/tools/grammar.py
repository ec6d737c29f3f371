"""A call format and the request's tools → the grammar of the answer, through structural tags.

Each tool's call is a structural-tag `sequence` (the format's literals, the name, the arguments
under the tool's JSON Schema); the calls, their separator, the section and the free text before
them are put together in the IR: `required` / named is exactly the call syntax, `auto` is text
without the format's trigger that may then open the calls (the lazy grammar), and the reasoning
block, when the template has one, comes first and is free.
"""

from __future__ import annotations

from strictgen.grammar.ir import NOTHING, Alt, Expr, Grammar, Literal, RuleRef, Seq, alt, lit, opt, repeat, seq
from strictgen.grammar.json_value import JsonStyle
from strictgen.grammar.regex import parse_regex
from strictgen.grammar.structural_tag import FormatBuilder, text_without

from . import gemma
from .families import XML_PARAM_CLOSE, XML_PARAM_OPEN, CallFormat
from .reasoning import Reasoning, reasoning_prefix

# one line of JSON as json.dumps writes it (what templates render with tojson): every separator
# is forced, so jump-forward saves forward passes
STYLE = JsonStyle("spaced", 20)


def _xml_value(schema) -> dict:
    """A Qwen3-Coder parameter value: strings raw (length bounds and string enums kept; `pattern`
    and `format` are not enforced on raw text), everything else JSON under its schema."""
    if not (isinstance(schema, dict) and schema.get("type") == "string"):
        return {"type": "json_schema", "json_schema": schema}
    options = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if isinstance(options, list) and options and all(isinstance(o, str) for o in options):
        return {"type": "or", "elements": [{"type": "const_string", "value": o} for o in options]}
    if "minLength" in schema or "maxLength" in schema:
        return {"type": "regex", "pattern": f"[\\s\\S]{{{int(schema.get('minLength', 0))},{schema.get('maxLength', '')}}}"}
    return {"type": "any_text"}


def _xml_arguments(parameters: dict) -> list[dict]:
    """Qwen3-Coder parameter blocks as a structural tag: schema order, required ones present,
    strings as raw text up to the closing tag, other values as JSON under their schema."""
    props = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    elements: list[dict] = []
    for key, sub in props.items():
        value = _xml_value(sub)
        block: dict = {"type": "tag", "begin": f"{XML_PARAM_OPEN}{key}>\n", "content": value, "end": XML_PARAM_CLOSE}
        elements.append(block if key in required else {"type": "or", "elements": [block, {"type": "const_string", "value": ""}]})
    return elements or [{"type": "const_string", "value": ""}]


def call_expr(fmt: CallFormat, name: str, parameters: dict, builder: FormatBuilder, path: str) -> Expr:
    """One call of `name` in `fmt`: the format's literals, the name, the arguments under `parameters`."""
    parts: list[Expr] = []
    for p in fmt.pieces():
        if p == "@NAME@":
            parts.append(lit(name))
        elif p == "@ARGS@":
            parts.append(builder.build({"type": "json_schema", "json_schema": parameters}, path, ()))
        elif p == "@XML@":
            parts.append(builder.build({"type": "sequence", "elements": _xml_arguments(parameters)}, path, ()))
        elif p == "@GEMMA@":
            parts.append(gemma.arguments_grammar(parameters, builder, path))
        elif p == "@INDEX@":
            parts.append(parse_regex("[0-9]{1,3}"))
        elif p == "@ID@":
            parts.append(parse_regex("[A-Za-z0-9]{9}"))
        else:
            parts.append(lit(p))
    return seq(*parts)


def after_text(expr: Expr, text: str, rules: dict[str, Expr]) -> Expr:
    """What `expr` still matches once `text` was written (the prompt already holds it: Functionary
    v3.2's prompt ends in the `>>>` that opens every reply). Handles the literal-led shapes the call
    grammars have; ValueError for anything else."""
    if not text:
        return expr
    if isinstance(expr, RuleRef):
        return after_text(rules[expr.name], text, rules)
    if isinstance(expr, Literal):
        data, want = expr.data, text.encode()
        if data.startswith(want):
            return lit(data[len(want) :])
        return NOTHING
    if isinstance(expr, Alt):
        return alt(*(after_text(e, text, rules) for e in expr.items))
    if isinstance(expr, Seq) and expr.items:
        head, rest = expr.items[0], seq(*expr.items[1:])
        if isinstance(head, Literal):
            want = text.encode()
            if head.data.startswith(want) or not want.startswith(head.data):
                return seq(after_text(head, text, rules), rest)
            return after_text(rest, want[len(head.data) :].decode(), rules)
        if isinstance(head, (Alt, RuleRef)):
            options = rules[head.name] if isinstance(head, RuleRef) else head
            options = options.items if isinstance(options, Alt) else (options,)
            return alt(*(after_text(seq(o, rest), text, rules) for o in options))
    raise ValueError(f"cannot start this grammar after {text!r}")


def tool_call_grammar(fmt: CallFormat, tools: list[tuple[str, dict]], *, mode: str, parallel: bool, reasoning: Reasoning | None) -> Grammar:
    """The answer's grammar under tool_choice `mode` ("auto", "required", "named": `tools` holds
    the one named tool). Raises SchemaError / StructuralTagError for a schema that cannot be compiled."""
    builder = FormatBuilder(STYLE)
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
    rules["sg_root"] = after_text(reasoning_prefix(reasoning, body), fmt.prompt_tail, rules)
    markers = fmt.markers() + ((reasoning.open, reasoning.close) if reasoning is not None else ())
    return Grammar(rules, "sg_root", markers=markers)
