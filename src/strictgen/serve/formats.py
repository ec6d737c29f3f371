"""Every dialect's structured-output request → one CompiledGrammar (or None: unconstrained).

OpenAI `response_format`, vLLM `guided_*` / `structured_outputs`, llama.cpp `grammar` / `json_schema`,
Ollama `format`, and tool calls all end up here, so a schema the compiler refuses gives the same
400 whatever dialect asked for it. Tool-call grammars come from serve/tools/grammar.py in the
model's own call format; reasoning blocks come first and are free.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from strictgen.compile.compiled import CompiledGrammar
from strictgen.compile.compiler import GrammarCompiler, user_errors
from strictgen.deadline import compile_deadline
from strictgen.errors import SchemaError, StrictgenError
from strictgen.grammar.ir import Expr, Grammar
from strictgen.grammar.json_schema import schema_cache_text
from strictgen.grammar.json_value import JsonStyle
from strictgen.grammar.structural_tag import embed_schema

from .tools.reasoning import THINK, Reasoning, reasoning_prefix

if TYPE_CHECKING:
    from .tools.families import CallFormat

# one line of JSON as json.dumps writes it: every separator is forced, so jump-forward saves passes
STYLE = "spaced"
NUMBERS = "canonical"  # generated numbers as json.dumps writes them (integers without ".0")


class RequestError(StrictgenError):
    """A request the server refuses with HTTP 400 (`param` names the offending field)."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.param = param
        self.code = code


@dataclass(frozen=True)
class Tool:
    name: str
    parameters: dict
    description: str = ""


class GrammarFactory:
    """Compiles request formats for one model's vocabulary; compiled grammars are cached by content
    (they are immutable, so requests may share them; matchers are per request)."""

    def __init__(self, compiler: GrammarCompiler):
        self.compiler = compiler
        self._ir_cache: dict[str, CompiledGrammar] = {}
        self._lock = threading.Lock()

    # ---- single formats ----

    def json_schema(self, schema: Any, *, strict: bool = True, param: str = "response_format") -> CompiledGrammar:
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as exc:
                raise RequestError(f"the schema is not valid JSON: {exc}", param) from exc
        if not isinstance(schema, (dict, bool)):
            raise RequestError(f"a JSON Schema must be an object or a boolean, not {type(schema).__name__}", param)
        return self._wrap(lambda: self.compiler.compile_json_schema(schema, strict=strict, whitespace=STYLE, numbers=NUMBERS), param)

    def json_any(self) -> CompiledGrammar:
        return self.compiler.compile_json(whitespace=STYLE, numbers=NUMBERS)

    def regex(self, pattern: Any, param: str) -> CompiledGrammar:
        if not isinstance(pattern, str):
            raise RequestError("a regex must be a string", param)
        return self._wrap(lambda: self.compiler.compile_regex(pattern), param)

    def gbnf(self, text: Any, param: str) -> CompiledGrammar:
        if not isinstance(text, str):
            raise RequestError("a grammar must be a string (GBNF)", param)
        return self._wrap(lambda: self.compiler.compile_grammar(text), param)

    def choice(self, options: Any, param: str) -> CompiledGrammar:
        if not isinstance(options, list) or not options or not all(isinstance(o, str) for o in options):
            raise RequestError("a choice must be a non-empty list of strings", param)
        return self._wrap(lambda: self.compiler.compile_choice(options), param)

    @staticmethod
    def _wrap(build, param: str) -> CompiledGrammar:
        try:
            with user_errors("request"):  # a schema shape the front end trips over: no Python text
                return build()
        except StrictgenError as exc:
            raise RequestError(str(exc), param, code=type(exc).__name__) from exc

    # ---- tool calls and reasoning ----

    def tool_calls(
        self, tools: list[Tool], *, mode: str, parallel: bool, reasoning: "Reasoning | bool | None", name: str | None = None, fmt: "CallFormat | None" = None
    ) -> CompiledGrammar:
        """The grammar of an answer under `tool_choice` in the call format `fmt` (Hermes by default):
        mode "auto" (free text, then optionally calls), "required" (one or more calls) or "named"
        (exactly one call of `name`). `reasoning`: the template's reasoning markers (True: `<think>`)."""
        from .tools.families import HERMES
        from .tools.grammar import tool_call_grammar

        fmt = fmt or HERMES
        markers = THINK if reasoning is True else (reasoning or None)
        key = json.dumps(
            {"tools": [[t.name, schema_cache_text(t.parameters)] for t in tools], "mode": mode, "parallel": parallel, "reasoning": repr(markers), "name": name, "fmt": repr(fmt)},
            sort_keys=True,
        )
        with self._lock:
            got = self._ir_cache.get(key)
        if got is not None:
            return got
        chosen = [(t.name, t.parameters) for t in tools if name is None or t.name == name]
        for t in tools:
            if not isinstance(t.parameters, (dict, bool)):
                raise RequestError("parameters must be a JSON Schema object", f"tools[{tools.index(t)}].function.parameters")
        grammar = self._wrap(lambda: self._limited(lambda: tool_call_grammar(fmt, chosen, mode=mode, parallel=parallel, reasoning=markers)), "tools")
        compiled = self._wrap(lambda: self.compiler.compile_ir(grammar, source="tool_calls"), "tools")
        with self._lock:
            self._ir_cache[key] = compiled
        return compiled

    def after_reasoning(self, inner: CompiledGrammar | None, source: Any, kind: str, reasoning: "Reasoning | bool | None" = True) -> CompiledGrammar | None:
        """`inner`'s format preceded by the template's reasoning block (reasoning models)."""
        markers = THINK if reasoning is True else (reasoning or None)
        if inner is None or kind != "json_schema" or markers is None:
            return inner  # regex / GBNF / choice formats are applied as given
        key = "think:" + repr(markers) + schema_cache_text(source)
        with self._lock:
            got = self._ir_cache.get(key)
        if got is not None:
            return got
        rules: dict[str, Expr] = {}
        ref = self._embed_schema(source, "r_", rules, param="response_format")
        rules["sg_root"] = reasoning_prefix(markers, ref)
        grammar = Grammar(rules, "sg_root", markers=(markers.open, markers.close))
        compiled = self._wrap(lambda: self.compiler.compile_ir(grammar, source="reasoning"), "response_format")
        with self._lock:
            self._ir_cache[key] = compiled
        return compiled

    def structural_tag(self, tag: Any, param: str) -> CompiledGrammar:
        """A vLLM / xgrammar structural tag (`{"type": "structural_tag", "format": {...}}`)."""
        return self._wrap(lambda: self.compiler.compile_structural_tag(tag, whitespace=STYLE), param)

    def _embed_schema(self, schema: Any, prefix: str, rules: dict[str, Expr], param: str) -> Expr:
        """Add the rules of `schema`'s grammar to `rules` (renamed under `prefix`); a reference to its root."""
        if not isinstance(schema, (dict, bool)):
            raise RequestError("parameters must be a JSON Schema object", param)
        return self._wrap(lambda: self._limited(lambda: embed_schema(schema, prefix, rules, JsonStyle(STYLE, 20, NUMBERS))), param)

    def _limited(self, build):
        """`build()` under the compiler's time limit (one limit for all the tools together: an
        enclosing one stays in force), Python errors turned into clear ones."""
        with compile_deadline(self.compiler.compile_timeout), user_errors("json_schema"):
            return build()


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


__all__ = ["GrammarFactory", "RequestError", "SchemaError", "Tool", "tools_from_request"]
