"""One request's grammar, in the shape the engines' grammar objects take.

vLLM's `StructuredOutputGrammar` (accept_tokens / validate_tokens / rollback / fill_bitmask /
is_terminated / reset) and SGLang's `BaseGrammarObject` (accept_token / rollback / fill_vocab_mask /
jump-forward / copy) ask the same few things of a matcher; this class answers them once, so the
vLLM logits processor, the SGLang backend and a future vLLM structured-output backend share it.
"""

from __future__ import annotations

from typing import Sequence

from strictgen.compile.compiled import CompiledGrammar
from strictgen.runtime.matcher import GrammarMatcher


class RequestGrammar:
    def __init__(self, compiled: CompiledGrammar):
        self.compiled = compiled
        self.matcher = GrammarMatcher(compiled)
        self.num_processed_tokens = 0

    def accept_tokens(self, tokens: Sequence[int]) -> bool:
        """Advance over all of `tokens`, or (returning False) over none of them."""
        for n, tok in enumerate(tokens):
            if not self.matcher.accept_token(int(tok)):
                if n:
                    self.matcher.rollback(n)
                return False
        self.num_processed_tokens += len(tokens)
        return True

    def validate_tokens(self, tokens: Sequence[int]) -> list[int]:
        """The longest prefix of `tokens` the grammar accepts from here; the state does not move."""
        return [int(t) for t in tokens[: self.matcher.validate_tokens(tokens)]]

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)
        self.num_processed_tokens -= num_tokens

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def captures(self) -> list[tuple[str, str]]:
        """The grammar's named captures of the output so far (GrammarMatcher.captures): neither
        engine's grammar interface carries them, so a caller reads them off the request's grammar."""
        return self.matcher.captures()

    def fill_bitmask(self, bitmask, index: int) -> None:
        self.matcher.fill_next_token_bitmask(bitmask, index)

    def reset(self) -> None:
        self.matcher.reset()
        self.num_processed_tokens = 0

    def copy(self) -> RequestGrammar:
        """A fresh request on the same compiled grammar (shares the caches, not the state)."""
        return RequestGrammar(self.compiled)

    def jump_forward_string(self) -> str:
        return self.matcher.find_jump_forward_string()

    def retokenize(self, old_ids: Sequence[int], new_ids: Sequence[int]) -> bool:
        """The output was re-tokenized from `old_ids` (all accepted) to `new_ids` (after a
        jump-forward): roll back past the common prefix and accept the rest. False, with the state
        unchanged, if the new tail does not follow the grammar."""
        common = 0
        for a, b in zip(old_ids, new_ids):
            if a != b:
                break
            common += 1
        undo = len(old_ids) - common
        if undo:
            self.rollback(undo)
        if self.accept_tokens(new_ids[common:]):
            return True
        if undo and not self.accept_tokens(old_ids[common:]):  # put the old tail back
            raise AssertionError("could not restore tokens the grammar had accepted")
        return False
