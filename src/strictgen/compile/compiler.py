"""GrammarCompiler: every front end behind one object bound to a vocabulary, with a content cache."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Callable, Hashable

from strictgen.deadline import compile_deadline
from strictgen.grammar.ir import Grammar, literal_trie

from .compiled import CompiledGrammar
from .guards import collector_paused, user_errors

__all__ = ["GrammarCompiler", "user_errors"]

if TYPE_CHECKING:
    from strictgen.tokenizer.info import TokenizerInfo


class GrammarCompiler:
    """Compiles formats for one vocabulary; equal requests return the same CompiledGrammar."""

    def __init__(self, tokenizer_info: "TokenizerInfo", cache_size: int = 128, compile_timeout: float | None = 30.0, defer_rules: bool = True):
        """`compile_timeout`: seconds one compile may take before it fails with GrammarTooLargeError
        (None: no limit). `defer_rules`: a grammar whose rules kept as calls (subschemas used in
        several places, recursive rules) pass a budget (automaton.EAGER_STATES) builds the rest
        the first time generation enters them, not in the compile: the compile, on the first
        token's path, pays for a share, and rules a document never visits cost nothing; the first
        mask inside such a rule pays for its build instead. False builds every rule ahead (even
        masks, slower compiles of big schemas)."""
        self.tokenizer_info = tokenizer_info
        self.defer_rules = defer_rules
        self.cache_size = cache_size
        self.compile_timeout = compile_timeout
        self._cache: OrderedDict[Hashable, CompiledGrammar] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[Hashable, threading.Event] = {}  # keys being compiled now
        # a server's hooks: the semaphore bounds concurrent cold compiles (cache hits never wait on it);
        # the observer gets (format kind, seconds, cache hit) for every compile asked for
        self.compile_slots: threading.Semaphore | None = None
        self.on_compile: Callable[[str, float, bool], None] | None = None

    def _cached(self, key: Hashable, source: str, build: Callable[[], Grammar], finish: Callable[[CompiledGrammar], None] | None = None) -> CompiledGrammar:
        """The cached grammar for `key`, or compile it once (`finish` completes it before others can
        see it): threads asking for a key being compiled wait for that compile rather than repeat it
        (if it fails, the next one tries)."""
        t0 = time.perf_counter()
        while True:
            with self._lock:
                got = self._cache.get(key)
                if got is not None:
                    self._cache.move_to_end(key)
                    break
                pending = self._pending.get(key)
                if pending is None:
                    pending = self._pending[key] = threading.Event()
                    break
            pending.wait()
        if got is not None:
            self._observed(str(key[0]), t0, True)
            return got
        try:
            compiled = self._build(str(key[0]), lambda: CompiledGrammar(build(), self.tokenizer_info, source, self.defer_rules))
            compiled.source_grammar = build  # the IR is not kept (compiled.py): export builds it again
            if finish is not None:
                finish(compiled)
            with self._lock:
                self._cache[key] = compiled
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        finally:
            with self._lock:
                del self._pending[key]
            pending.set()
        return compiled

    def compile_grammar(self, gbnf_text: str, root: str = "root") -> CompiledGrammar:
        """A grammar in llama.cpp's GBNF dialect."""
        from strictgen.grammar.gbnf import parse_gbnf

        return self._cached(("gbnf", gbnf_text, root), "gbnf", lambda: parse_gbnf(gbnf_text, root))

    def compile_lark(self, lark_text: str, start: str = "start") -> CompiledGrammar:
        """A Lark grammar (+ llguidance's `%json` and special tokens); see strictgen.grammar.lark."""
        from strictgen.grammar.lark import parse_lark

        return self._cached(("lark", lark_text, start), "lark", lambda: parse_lark(lark_text, start))

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
        # a trie of shared prefixes, not a union of literals: 100,000 choices compile in linear time
        return self._cached(("choice", options), "choice", lambda: Grammar({"root": literal_trie(options)}))

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
        formats: str = "assert",
        numbers: str = "any",
        documents=None,
    ) -> CompiledGrammar:
        """JSON documents valid under `schema` (a dict, a bool, JSON text or a pydantic model class).

        strict=True raises SchemaError for any keyword that cannot be enforced exactly; with
        strict=False those keywords are dropped and listed as (keyword, JSON pointer) pairs in the
        result's `unenforced` attribute. numbers="any" (the default, as a validator needs) accepts
        every JSON spelling of a number; numbers="canonical" (what the generation entry points use)
        only json.dumps's, so `type: integer` gives `25`, never `25.0`. formats="assert" (default)
        enforces `format` values; formats="annotate" ignores them, as JSON Schema 2020-12 does by default.
        documents: the other documents `$ref` may point to (a mapping of URI -> schema, or a
        referencing.Registry); a reference to any other URI is refused, never fetched. See
        strictgen.grammar.json_schema for what is produced."""
        import hashlib

        from strictgen.grammar.json_schema import json_schema_grammar, schema_cache_text
        from strictgen.grammar.json_value import JsonStyle
        from strictgen.grammar.schema.documents import SchemaDocuments

        style = JsonStyle(whitespace, max_indent, numbers)
        with user_errors("json_schema"):
            text = schema_cache_text(schema)
            docs = SchemaDocuments.of(documents)
            docs_key = hashlib.sha256(docs.cache_text().encode("utf-8", "surrogatepass")).hexdigest() if docs else ""
        found: dict = {}

        def build() -> Grammar:
            grammar, unenforced = json_schema_grammar(
                text, strict=strict, any_order=any_order, style=style, formats=formats, documents=docs
            )
            found["unenforced"] = unenforced
            return grammar

        key = ("json_schema", text, bool(strict), bool(any_order), style, formats, docs_key)
        return self._cached(key, "json_schema", build, lambda c: setattr(c, "unenforced", found.get("unenforced", [])))

    def compile_structural_tag(self, tag, *, whitespace: str = "flexible", max_indent: int = 20) -> CompiledGrammar:
        """A structural tag as vLLM and xgrammar accept it (`{"type": "structural_tag", "format": {...}}`,
        the older `structures`/`triggers` form, or a bare format); see strictgen.grammar.structural_tag."""
        import json

        from strictgen.grammar.json_value import JsonStyle
        from strictgen.grammar.structural_tag import structural_tag_grammar

        style = JsonStyle(whitespace, max_indent)
        try:
            text = tag if isinstance(tag, str) else json.dumps(tag)  # key order matters (property order)
        except (TypeError, ValueError) as exc:
            from strictgen.grammar.structural_tag import StructuralTagError

            raise StructuralTagError(f"the structural tag is not JSON data: {exc}") from exc
        return self._cached(("structural_tag", text, style), "structural_tag", lambda: structural_tag_grammar(tag, style))

    def compile_ir(self, grammar: Grammar, source: str = "ir") -> CompiledGrammar:
        """A grammar already in the IR (not cached: IR objects are built by callers)."""
        compiled = self._build(source, lambda: CompiledGrammar(grammar, self.tokenizer_info, source, self.defer_rules))
        compiled.source_grammar = lambda: grammar
        return compiled

    def _build(self, kind: str, make: Callable[[], CompiledGrammar]) -> CompiledGrammar:
        """A cold compile: waits for a compile slot (outside the deadline), then runs under the deadline."""
        slots = self.compile_slots
        if slots is not None:
            slots.acquire()
        try:
            t0 = time.perf_counter()
            with compile_deadline(self.compile_timeout), user_errors(kind), collector_paused():
                compiled = make()
            self._observed(kind, t0, False)
            return compiled
        finally:
            if slots is not None:
                slots.release()

    def _observed(self, kind: str, t0: float, hit: bool) -> None:
        if self.on_compile is not None:
            self.on_compile(kind, time.perf_counter() - t0, hit)
