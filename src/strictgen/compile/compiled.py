"""CompiledGrammar: a grammar's pushdown machine bound to one vocabulary's token masks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from strictgen.grammar.ir import Grammar

from . import automaton
from .machine import PushdownMachine
from .special_tokens import bind_special_tokens, text_tokens_with_stand_in_byte
from .token_mask import TokenMasker
from .distinct_names import DistinctNames
from .tracked_rules import Trackers
from .unique_items import UniqueItems

if TYPE_CHECKING:
    from strictgen.tokenizer.info import TokenizerInfo


def marker_tokens(markers, info: "TokenizerInfo") -> dict[int, bytes]:
    """The special tokens (not EOS) whose text lies inside one of the grammar's `markers`, with
    that text: `<|python_tag|>` where the vocabulary has it as one token. Empty without markers."""
    texts = [m.encode("utf-8") for m in markers if m]
    if not texts:
        return {}
    eos = set(info.eos_token_ids)
    out = {}
    for i in info.special_token_ids:
        if i in eos or i >= len(info.all_token_bytes):
            continue
        data = info.token_bytes(i)
        if data and any(data in t for t in texts):
            out[i] = data
    return out


class CompiledGrammar:
    """Immutable to its users; the machine and mask caches inside grow lazily and are thread-safe."""

    def __init__(self, grammar: Grammar, tokenizer_info: "TokenizerInfo", source: str = "", defer_rules: bool = True):
        # the grammar IR is not kept: a cached grammar holds its automata, not the ~10^4 IR objects
        # its compile made, which every full collection of a server's heap would walk again
        has_captures = bool(grammar.captures)
        grammar, stand_ins = bind_special_tokens(grammar, tokenizer_info)
        self._bind(automaton.compile_automaton(grammar, automaton.EAGER_STATES if defer_rules else None),  # GrammarCompiler's defer_rules
                   tokenizer_info, source, tuple(grammar.markers), stand_ins)
        self.has_captures = has_captures  # matchers keep the bytes they accept (runtime/captures.py)

    @classmethod
    def from_automaton(cls, compiled: automaton.CompiledAutomaton, tokenizer_info: "TokenizerInfo", source: str, markers: tuple[str, ...]) -> "CompiledGrammar":
        """A grammar from rule automata built before (disk_cache.py), without its IR (and so without
        special-token references: the disk cache keeps no grammar that has them)."""
        out = cls.__new__(cls)
        out._bind(compiled, tokenizer_info, source, markers, {})
        return out

    def _bind(self, compiled: automaton.CompiledAutomaton, tokenizer_info: "TokenizerInfo", source: str, markers: tuple[str, ...],
              stand_ins: dict) -> None:
        self.tokenizer_info = tokenizer_info
        self.source = source
        self.has_special_tokens = bool(stand_ins)  # text never spells them: jump-forward stops before one
        self.automaton = compiled
        self.machine = PushdownMachine(self.automaton)
        self.markers = markers  # the format's fixed texts that special tokens may stand for
        self.marker_tokens = {**marker_tokens(markers, tokenizer_info), **stand_ins}
        self.masker = TokenMasker(self.machine, tokenizer_info.trie, tokenizer_info.vocab_size, tokenizer_info.eos_token_ids,
                                  markers=self.marker_tokens,
                                  blocked=text_tokens_with_stand_in_byte(tokenizer_info) if stand_ins else None)
        self._tracker: object = None
        self.masks_stored = 0  # how many masks the disk cache stored or loaded for it last (disk_cache.store_masks_later)
        self.has_captures = False  # the disk cache keeps no grammar with captures
        self.source_grammar: "Callable[[], Grammar] | None" = None  # rebuilds the IR for export (set by GrammarCompiler)

    def to_gbnf(self) -> str:
        """The grammar as GBNF text (llama.cpp, Ollama); comments mark what GBNF cannot state exactly."""
        return self.export("gbnf").text

    def to_lark(self) -> str:
        """The grammar as Lark text (llguidance, xgrammar); comments mark what Lark cannot state exactly."""
        return self.export("lark").text

    def export(self, target: str):
        """grammar.export.Exported: the text, and the list of what it states inexactly."""
        from strictgen.errors import StrictgenError
        from strictgen.grammar.export import export_grammar

        if self.source_grammar is None:
            raise StrictgenError("this grammar was not compiled by a GrammarCompiler: it has no source to export")
        return export_grammar(self.source_grammar(), target)

    @property
    def tracker(self):
        """What its matchers follow beside the machine (tracked_rules.py): the grammar's
        uniqueItems arrays (unique_items.py), its objects whose names must be distinct
        (distinct_names.py), both, or None when it has neither. Found on first use: the
        vocabulary scan it needs is paid only by grammars that have such rules."""
        if self._tracker is None:
            unique, distinct = UniqueItems.of(self), DistinctNames.of(self)
            both = Trackers(self, unique, distinct) if unique and distinct else None
            self._tracker = both or unique or distinct or False
        return self._tracker or None

    @property
    def unique_items(self):
        """The uniqueItems part of `tracker` (None when the grammar has no unique arrays)."""
        t = self.tracker
        return t.first if isinstance(t, Trackers) else t if isinstance(t, UniqueItems) else None

    def __repr__(self) -> str:
        rules = len(self.automaton.rules)
        states = sum(r.num_states for r in self.automaton.rules)
        return f"CompiledGrammar({self.source or 'grammar'}, rules={rules}, dfa_states={states})"
