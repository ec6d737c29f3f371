"""GrammarCompiler: every front end behind one object bound to a vocabulary, with a content cache."""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Callable, Hashable

from strictgen.deadline import compile_deadline
from strictgen.lru import BoundedLRU
from strictgen.grammar.ir import Grammar, literal_trie

from .compiled import CompiledGrammar
from .disk_cache import DEFAULT_MAX_BYTES, DiskCache
from .guards import collector_paused, user_errors

__all__ = ["GrammarCompiler", "user_errors"]

if TYPE_CHECKING:
    from typing import Mapping

    from strictgen.grammar.format_spec import FormatKind, FormatSpec
    from strictgen.tokenizer.info import TokenizerInfo


class GrammarCompiler:
    """Compiles formats for one vocabulary; equal requests return the same CompiledGrammar."""

    def __init__(self, tokenizer_info: "TokenizerInfo", cache_size: int = 128, compile_timeout: float | None = 30.0, defer_rules: bool = True,
                 cache_dir: str | os.PathLike | None = None, cache_max_bytes: int = DEFAULT_MAX_BYTES):
        """`compile_timeout`: seconds one compile may take before it fails with GrammarTooLargeError
        (None: no limit). `defer_rules`: a grammar whose rules kept as calls (subschemas used in
        several places, recursive rules) pass a budget (automaton.EAGER_STATES) builds the rest
        the first time generation enters them, not in the compile: the compile, on the first
        token's path, pays for a share, and rules a document never visits cost nothing; the first
        mask inside such a rule pays for its build instead. False builds every rule ahead (even
        masks, slower compiles of big schemas). `cache_dir`: a directory (shared by processes)
        where compiled grammars persist across restarts, at most `cache_max_bytes`, least
        recently used removed first (disk_cache.py)."""
        self.tokenizer_info = tokenizer_info
        self.defer_rules = defer_rules
        self.cache_size = cache_size
        self.compile_timeout = compile_timeout
        self._cache: BoundedLRU[CompiledGrammar] = BoundedLRU(cache_size)
        self._lock = threading.Lock()  # over the cache lookup and _pending together
        self._pending: dict[Hashable, threading.Event] = {}  # keys being compiled now
        self.disk_cache: DiskCache | None = None
        if cache_dir is not None:
            self.use_disk_cache(cache_dir, cache_max_bytes)
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
                    break
                pending = self._pending.get(key)
                if pending is None:
                    pending = self._pending[key] = threading.Event()
                    break
            pending.wait()
        if got is not None:
            self._observed(str(key[0]), t0, True)
            if self.disk_cache is not None and self._keeps(got):
                self.disk_cache.store_masks_later(key, got)  # the masks it has computed since, as they grow
            return got
        try:
            compiled = self._from_disk(key, t0)
            if compiled is None:
                cpu = time.thread_time()  # the compile's own CPU time: other threads' work does not count
                compiled = self._build(str(key[0]), lambda: CompiledGrammar(build(), self.tokenizer_info, source, self.defer_rules))
                if finish is not None:
                    finish(compiled)
                if self.disk_cache is not None and self._keeps(compiled):
                    self.disk_cache.store_later(key, compiled, time.thread_time() - cpu)
            compiled.source_grammar = build  # the IR is not kept (compiled.py): export builds it again
            with self._lock:
                self._cache.put(key, compiled)
        finally:
            with self._lock:
                del self._pending[key]
            pending.set()
        return compiled

    @staticmethod
    def _keeps(compiled: CompiledGrammar) -> bool:
        """Whether the disk cache may keep `compiled`: special-token references and captures live
        in the IR, which the file lacks."""
        return not compiled.has_special_tokens and not compiled.has_captures

    def save_masks(self) -> int:
        """Store the masks of every grammar in the memory cache to the disk cache now, and wait for
        its background writes (a server's shutdown; cache hits store masks as they grow); how
        many grammars had masks to store."""
        if self.disk_cache is None:
            return 0
        with self._lock:
            grammars = [(key, self._cache.peek(key)) for key in self._cache.keys()]
        self.disk_cache.flush()  # the grammars' own writes first: one found "not kept" gets no masks
        stored = sum(self.disk_cache.store_masks(key, g) for key, g in grammars if g is not None and self._keeps(g))
        self.disk_cache.flush()
        return stored

    def use_disk_cache(self, cache_dir: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        """Keep compiled grammars in `cache_dir` from now on (a server's --cache-dir), and the
        vocabulary's tables: loaded from there if stored, else built now and stored."""
        self.disk_cache = DiskCache(cache_dir, self.tokenizer_info, max_bytes)
        self.disk_cache.vocabulary_tables()

    def _from_disk(self, key: Hashable, t0: float) -> CompiledGrammar | None:
        """The grammar `key` from the disk cache (observed as a hit), or None."""
        if self.disk_cache is None:
            return None
        with collector_paused():
            compiled = self.disk_cache.load(key)  # never raises: a bad file is a miss
            if compiled is not None:
                self.disk_cache.load_masks(key, compiled)  # looked up as its masker misses
        if compiled is not None:
            self._observed(str(key[0]), t0, True)
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

        from strictgen.grammar.json_schema import json_schema_grammar, loaded_schema
        from strictgen.grammar.json_value import JsonStyle
        from strictgen.grammar.schema.documents import SchemaDocuments

        style = JsonStyle(whitespace, max_indent, numbers)
        with user_errors("json_schema"):
            loaded = loaded_schema(schema)  # (read once: the grammar is built from it, not from its text again)
            text = loaded.text
            docs = SchemaDocuments.of(documents)
            docs_key = hashlib.sha256(docs.cache_text().encode("utf-8", "surrogatepass")).hexdigest() if docs else ""
        found: dict = {}

        def build() -> Grammar:
            grammar, unenforced = json_schema_grammar(
                loaded, strict=strict, any_order=any_order, style=style, formats=formats, documents=docs
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

    def compile_format(self, spec: "FormatSpec", kinds: "Mapping[str, FormatKind] | None" = None) -> CompiledGrammar:
        """A format request (strictgen.grammar.format_spec): the one path from what a caller asked
        for to a grammar, cached by the spec's content. `kinds`: the table of kinds (a caller's
        own rows added to FORMAT_KINDS)."""
        from strictgen.grammar.format_spec import FORMAT_KINDS, prepare

        with user_errors(str(spec.kind)):
            key, build = prepare(spec, FORMAT_KINDS if kinds is None else kinds)
        return self._cached(key, str(spec.kind), build)

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
