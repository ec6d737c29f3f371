"""FormatSpec → CompiledGrammar for the server: the format table of grammar/format_spec.py plus
the one kind only the server has, tool calls in the model's own call format.

Every dialect's request becomes a FormatSpec (serve/specs.py) and is compiled here, through
`GrammarCompiler.compile_format`, so a schema the compiler refuses gives the same 400 whatever
dialect asked for it, the reasoning block is put in front by the table alone, and every compiled
grammar lives in the compiler's one bounded cache.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Mapping

from strictgen.compile.compiled import CompiledGrammar
from strictgen.compile.compiler import GrammarCompiler
from strictgen.errors import StrictgenError
from strictgen.grammar.format_spec import FORMAT_KINDS, GENERATION_STYLE, FormatError, FormatKind, FormatOptions, FormatSpec
from strictgen.grammar.json_schema import schema_cache_text
from strictgen.grammar.reasoning import THINK, Reasoning

from .errors import RequestError

if TYPE_CHECKING:
    from strictgen.grammar.ir import Grammar

    from .tools.families import CallFormat

STYLE = GENERATION_STYLE  # one line of JSON as json.dumps writes it, canonical numbers


@dataclass(frozen=True)
class Tool:
    name: str
    parameters: dict
    description: str = ""


@dataclass(frozen=True)
class ToolCalls:
    """The value of a "tool_calls" FormatSpec: the answer under `tool_choice` in the call format
    `fmt`: mode "auto" (free text, then optionally calls), "required" (one or more calls) or
    "named" (exactly one call of `name`)."""

    tools: tuple[Tool, ...]
    mode: str
    parallel: bool
    fmt: "CallFormat"
    name: str | None = None


def _check_tools(value: ToolCalls, where: str) -> ToolCalls:
    for i, t in enumerate(value.tools):
        if not isinstance(t.parameters, (dict, bool)):
            raise FormatError("parameters must be a JSON Schema object", f"tools[{i}].function.parameters")
    return value


def _tools_key(value: ToolCalls) -> str:
    tools = [[t.name, schema_cache_text(t.parameters)] for t in value.tools]
    return json.dumps({"tools": tools, "mode": value.mode, "parallel": value.parallel, "name": value.name, "fmt": repr(value.fmt)}, sort_keys=True)


def _tools_grammar(value: ToolCalls, options: FormatOptions) -> "Grammar":
    from .tools.grammar import tool_call_grammar

    chosen = [(t.name, t.parameters) for t in value.tools if value.name is None or t.name == value.name]
    return tool_call_grammar(value.fmt, chosen, mode=value.mode, parallel=value.parallel, reasoning=options.reasoning)


# the server's table: the shared one plus tool calls (which place the reasoning block themselves)
SERVE_KINDS: Mapping[str, FormatKind] = {**FORMAT_KINDS, "tool_calls": FormatKind(_check_tools, _tools_key, _tools_grammar)}


class GrammarFactory:
    """Compiles format requests for one model's vocabulary; compiled grammars are cached by content
    in the compiler (they are immutable, so requests may share them; matchers are per request).
    `reasoning`: the template's reasoning block, in front of the formats that follow it."""

    def __init__(self, compiler: GrammarCompiler, reasoning: Reasoning | None = None):
        self.compiler = compiler
        self.options = FormatOptions(style=STYLE, reasoning=reasoning)

    def compile(self, spec: FormatSpec | None) -> CompiledGrammar | None:
        """The grammar of `spec` (None: free text); any refusal is a RequestError naming the field."""
        if spec is None:
            return None
        try:
            return self.compiler.compile_format(spec, SERVE_KINDS)
        except StrictgenError as exc:
            param = getattr(exc, "param", None) or spec.origin
            raise RequestError(str(exc), param, code=type(exc).__name__) from exc

    def tool_calls(
        self, tools: list[Tool], *, mode: str, parallel: bool, reasoning: "Reasoning | bool | None", name: str | None = None, fmt: "CallFormat | None" = None
    ) -> CompiledGrammar:
        """The grammar of an answer under `tool_choice` in the call format `fmt` (Hermes by default);
        `reasoning`: the template's reasoning markers (True: `<think>`)."""
        from .tools.families import HERMES

        markers = THINK if reasoning is True else (reasoning or None)
        value = ToolCalls(tuple(tools), mode, parallel, fmt or HERMES, name)
        return self.compile(FormatSpec("tool_calls", value, replace(self.options, reasoning=markers), "tools"))  # type: ignore[return-value]


# compiled (and one mask filled) as the server starts, before it reports ready: a user's first
# request then pays none of the imports a compile makes when first needed (~100 ms: `referencing`
# for $ref, jsonschema to filter an enum by its siblings, string formats)
WARM_UP_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
        "day": {"type": "string", "format": "date"},
        "size": {"$ref": "#/$defs/size"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "bb"], "maxLength": 1}, "maxItems": 2},
    },
    "required": ["name"],
    "$defs": {"size": {"type": "integer", "minimum": 0}},
}


def warm_up(grammars: GrammarFactory) -> CompiledGrammar:
    """Compile WARM_UP_SCHEMA as a request would (the server's options) and fill its first mask."""
    from strictgen.grammar.schema.dialects import import_lazy_modules
    from strictgen.runtime.bitmask import allocate_token_bitmask
    from strictgen.runtime.matcher import GrammarMatcher

    import_lazy_modules()  # what the warm-up schema does not need: a request's first $id or judge
    grammar = grammars.compile(FormatSpec("json_schema", WARM_UP_SCHEMA, grammars.options, "warm-up"))
    assert grammar is not None  # (None only for free text)
    GrammarMatcher(grammar).fill_next_token_bitmask(allocate_token_bitmask(1, grammars.compiler.tokenizer_info.vocab_size), 0)
    return grammar


def tools_from_request(tools: Any, param: str = "tools") -> list[Tool]:
    """OpenAI chat tools ([{"type": "function", "function": {...}}]) or Responses-API function tools."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise RequestError("tools must be a list", param)
    out: list[Tool] = []
    for i, t in enumerate(tools):
        if not isinstance(t, dict) or t.get("type", "function") != "function":
            raise RequestError("only function tools are supported", f"{param}[{i}]")
        fn = t.get("function", t)  # the Responses API puts name/parameters at the top level
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(name, str) or not name:
            raise RequestError("a function tool needs a name", f"{param}[{i}].function.name")
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(params, dict):
            raise RequestError("parameters must be a JSON Schema object", f"{param}[{i}].function.parameters")
        out.append(Tool(name, params, fn.get("description") or ""))
    if len({t.name for t in out}) != len(out):
        raise RequestError("tool names must be unique", param)
    return out


__all__ = ["GrammarFactory", "RequestError", "SERVE_KINDS", "STYLE", "Tool", "ToolCalls", "tools_from_request"]
