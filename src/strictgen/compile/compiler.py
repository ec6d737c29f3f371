"""GrammarCompiler: every front end behind one object bound to a vocabulary, with a content cache."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Callable, Hashable

from strictgen.deadline import compile_deadline
from strictgen.grammar.ir import Grammar, alt, lit

from .compiled import CompiledGrammar

if TYPE_CHECKING:
    from strictgen.tokenizer.info import TokenizerInfo


class GrammarCompiler:
    """Compiles formats for one vocabulary; equal requests return the same CompiledGrammar."""

    def __init__(self, tokenizer_info: "TokenizerInfo", cache_size: int = 128, compile_timeout: float | None = 30.0):
        """`compile_timeout`: seconds one compile may take before it fails with GrammarTooLargeError
        (None: no limit)."""
        self.tokenizer_info = tokenizer_info
        self.cache_size = cache_size
        self.compile_timeout = compile_timeout
        self._cache: OrderedDict[Hashable, CompiledGrammar] = OrderedDict()
        self._lock = threading.Lock()

    def _cached(self, key: Hashable, source: str, build: Callable[[], Grammar]) -> CompiledGrammar:
        with self._lock:
            got = self._cache.get(key)
            if got is not None:
                self._cache.move_to_end(key)
                return got
        with compile_deadline(self.compile_timeout):
            compiled = CompiledGrammar(build(), self.tokenizer_info, source)
        with self._lock:
            self._cache[key] = compiled
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return compiled

    def compile_grammar(self, gbnf_text: str, root: str = "root") -> CompiledGrammar:
        """A grammar in llama.cpp's GBNF dialect."""
        from strictgen.grammar.gbnf import parse_gbnf

        return self._cached(("gbnf", gbnf_text, root), "gbnf", lambda: parse_gbnf(gbnf_text, root))

    def compile_regex(self, pattern: str) -> CompiledGrammar:
        """Strings that fully match `pattern` (JSON Schema's ECMA-262 regex dialect)."""
        from strictgen.grammar.regex import parse_regex

        return self._cached(("regex", pattern), f"regex {pattern!r}", lambda: Grammar({"root": parse_regex(pattern)}))

    def compile_choice(self, choices: list[str]) -> CompiledGrammar:
        """Exactly one of the given strings."""
        options = tuple(str(c) for c in choices)
        if not options:
            from strictgen.errors import StrictgenError

            raise StrictgenError("compile_choice needs at least one choice")
        return self._cached(("choice", options), "choice", lambda: Grammar({"root": alt(*(lit(c) for c in options))}))

    def compile_json(self, whitespace: str = "flexible", max_indent: int = 20, numbers: str = "any") -> CompiledGrammar:
        """Any JSON value (json_object mode); numbers="canonical" as in compile_json_schema."""
        from strictgen.grammar.json_value import JsonStyle, json_value_grammar

        style = JsonStyle(whitespace, max_indent, numbers)
        return self._cached(("json", style), "json", lambda: json_value_grammar(style))

    def compile_json_schema(
        self,
        schema,
        *,
        strict: bool = True,
        any_order: bool = False,
        whitespace: str = "flexible",
        max_indent: int = 20,
        numbers: str = "any",
    ) -> CompiledGrammar:
        """JSON documents valid under `schema` (a dict, a bool, JSON text or a pydantic model class).

        strict=True raises SchemaError for any keyword that cannot be enforced exactly; with
        strict=False those keywords are dropped and listed as (keyword, JSON pointer) pairs in the
        result's `unenforced` attribute. numbers="any" (the default, as a validator needs) accepts
        every JSON spelling of a number; numbers="canonical" (what the generation entry points use)
        only json.dumps's, so `type: integer` gives `25`, never `25.0`. See
        strictgen.grammar.json_schema for what is produced."""
        from strictgen.grammar.json_schema import json_schema_grammar, schema_cache_text
        from strictgen.grammar.json_value import JsonStyle

        style = JsonStyle(whitespace, max_indent, numbers)
        text = schema_cache_text(schema)
        found: dict = {}

        def build() -> Grammar:
            grammar, unenforced = json_schema_grammar(text, strict=strict, any_order=any_order, style=style)
            found["unenforced"] = unenforced
            return grammar

        key = ("json_schema", text, bool(strict), bool(any_order), style)
        compiled = self._cached(key, "json_schema", build)
        if not hasattr(compiled, "unenforced"):
            compiled.unenforced = found.get("unenforced", [])
        return compiled

    def compile_ir(self, grammar: Grammar, source: str = "ir") -> CompiledGrammar:
        """A grammar already in the IR (not cached: IR objects are built by callers)."""
        return CompiledGrammar(grammar, self.tokenizer_info, source)
