"""Every dialect's structured-output request → one CompiledGrammar (or None: unconstrained).

OpenAI `response_format`, vLLM `guided_*` / `structured_outputs`, llama.cpp `grammar` / `json_schema`,
Ollama `format`, and tool calls all end up here, so a schema the compiler refuses gives the same
400 whatever dialect asked for it. Tool-call and reasoning grammars are built in the IR: the JSON
Schema front end gives each tool's arguments grammar, and this module wraps them in `<tool_call>`
tags, alternatives over the tools, free text before them, and an optional `<think>` block.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from strictgen.compile.compiled import CompiledGrammar
from strictgen.compile.compiler import GrammarCompiler
from strictgen.errors import SchemaError, StrictgenError
from strictgen.grammar.ir import Expr, Grammar, RuleRef, alt, charset, difference, lit, opt, repeat, seq
from strictgen.grammar.json_schema import json_schema_grammar, schema_cache_text
from strictgen.grammar.json_value import JsonStyle

TOOL_OPEN = "<tool_call>"
TOOL_CLOSE = "</tool_call>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
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


def _any_text() -> Expr:
    return repeat(charset(((0, 0x10FFFF),)))


def _without(marker: str) -> Expr:
    """Any text that does not contain `marker` (regular, so the automaton needs no lookahead)."""
    anything = _any_text()
    return difference(anything, seq(anything, lit(marker), anything))


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
            return build()
        except StrictgenError as exc:
            raise RequestError(str(exc), param, code=type(exc).__name__) from exc
        except (RecursionError, TypeError, KeyError, ValueError) as exc:  # a schema shape the front end trips over
            raise RequestError(f"cannot compile this format: {type(exc).__name__}: {exc}", param) from exc

    # ---- tool calls and reasoning ----

    def tool_calls(self, tools: list[Tool], *, mode: str, parallel: bool, reasoning: bool, name: str | None = None) -> CompiledGrammar:
        """The grammar of an answer under `tool_choice`: mode "auto" (free text, then optionally calls),
        "required" (one or more calls) or "named" (exactly one call of `name`)."""
        key = json.dumps(
            {"tools": [[t.name, schema_cache_text(t.parameters)] for t in tools], "mode": mode, "parallel": parallel, "reasoning": reasoning, "name": name},
            sort_keys=True,
        )
        with self._lock:
            got = self._ir_cache.get(key)
        if got is not None:
            return got
        chosen = [t for t in tools if name is None or t.name == name]
        rules: dict[str, Expr] = {}
        alts = []
        for i, tool in enumerate(chosen):
            args_ref = self._embed_schema(tool.parameters, f"t{i}_", rules, param=f"tools[{tools.index(tool)}].function.parameters")
            alts.append(seq(lit('{"name": ' + json.dumps(tool.name, ensure_ascii=False) + ', "arguments": '), args_ref, lit("}")))
        call = seq(lit(TOOL_OPEN + "\n"), alt(*alts), lit("\n" + TOOL_CLOSE))
        rules["sg_call"] = call
        calls = seq(RuleRef("sg_call"), repeat(seq(lit("\n"), RuleRef("sg_call")))) if parallel else RuleRef("sg_call")
        if mode == "auto":
            body = seq(_without(TOOL_OPEN), opt(calls))
        else:
            body = calls
        if reasoning:
            body = seq(opt(seq(lit(THINK_OPEN), _without(THINK_CLOSE), lit(THINK_CLOSE), repeat(charset(((10, 10), (32, 32)))))), body)
        rules["sg_root"] = body
        compiled = self._wrap(lambda: self.compiler.compile_ir(Grammar(rules, "sg_root"), source="tool_calls"), "tools")
        with self._lock:
            self._ir_cache[key] = compiled
        return compiled

    def after_reasoning(self, inner: CompiledGrammar | None, source: Any, kind: str) -> CompiledGrammar | None:
        """`inner`'s format preceded by an optional `<think>…</think>` block (reasoning models)."""
        if inner is None or kind != "json_schema":
            return inner  # regex / GBNF / choice formats are applied as given
        key = "think:" + schema_cache_text(source)
        with self._lock:
            got = self._ir_cache.get(key)
        if got is not None:
            return got
        rules: dict[str, Expr] = {}
        ref = self._embed_schema(source, "r_", rules, param="response_format")
        rules["sg_root"] = seq(opt(seq(lit(THINK_OPEN), _without(THINK_CLOSE), lit(THINK_CLOSE), lit("\n"))), ref)
        compiled = self._wrap(lambda: self.compiler.compile_ir(Grammar(rules, "sg_root"), source="reasoning"), "response_format")
        with self._lock:
            self._ir_cache[key] = compiled
        return compiled

    def _embed_schema(self, schema: Any, prefix: str, rules: dict[str, Expr], param: str) -> Expr:
        """Add the rules of `schema`'s grammar to `rules` (renamed under `prefix`); a reference to its root."""
        if not isinstance(schema, (dict, bool)):
            raise RequestError("parameters must be a JSON Schema object", param)
        try:
            grammar, _ = json_schema_grammar(schema_cache_text(schema), strict=True, any_order=False, style=JsonStyle(STYLE, 20, NUMBERS))
        except StrictgenError as exc:
            raise RequestError(str(exc), param, code=type(exc).__name__) from exc
        except (RecursionError, TypeError, KeyError, ValueError) as exc:
            raise RequestError(f"cannot compile this schema: {exc}", param) from exc
        names = {n: prefix + n for n in grammar.rules}
        for n, body in grammar.rules.items():
            rules[names[n]] = _rename(body, names)
        return RuleRef(names[grammar.root])


def _rename(expr: Expr, names: dict[str, str]) -> Expr:
    """`expr` with rule references renamed (IR nodes are frozen dataclasses)."""
    if isinstance(expr, RuleRef):
        return RuleRef(names.get(expr.name, expr.name))
    fields = getattr(expr, "__dataclass_fields__", {})
    changes = {}
    for f in fields:
        v = getattr(expr, f)
        if isinstance(v, Expr):
            changes[f] = _rename(v, names)
        elif isinstance(v, tuple) and v and isinstance(v[0], Expr):
            changes[f] = tuple(_rename(x, names) for x in v)
    return type(expr)(**{f: changes.get(f, getattr(expr, f)) for f in fields}) if changes else expr


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
