"""CompiledGrammar: a grammar's pushdown machine bound to one vocabulary's token masks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from strictgen.grammar.ir import Grammar

from .automaton import compile_automaton
from .machine import PushdownMachine
from .token_mask import TokenMasker

if TYPE_CHECKING:
    from strictgen.tokenizer.info import TokenizerInfo


class CompiledGrammar:
    """Immutable to its users; the machine and mask caches inside grow lazily and are thread-safe."""

    def __init__(self, grammar: Grammar, tokenizer_info: "TokenizerInfo", source: str = ""):
        self.grammar = grammar
        self.tokenizer_info = tokenizer_info
        self.source = source
        self.automaton = compile_automaton(grammar)
        self.machine = PushdownMachine(self.automaton)
        self.masker = TokenMasker(self.machine, tokenizer_info.trie, tokenizer_info.vocab_size, tokenizer_info.eos_token_ids)

    def __repr__(self) -> str:
        rules = len(self.automaton.rules)
        states = sum(r.num_states for r in self.automaton.rules)
        return f"CompiledGrammar({self.source or 'grammar'}, rules={rules}, dfa_states={states})"
