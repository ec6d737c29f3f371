"""GrammarMatcher: one generation's position in a compiled grammar.

The state is a single integer of the grammar's shared machine, so a matcher is tiny: history for
rollback is a list of integers, and two matchers never share anything mutable of their own.
What a batch fill reads of a matcher (its state, whether it ended, its grammar's store of masks)
lives in its C base (`_mask_store.RowState`), written as the matcher moves, so that a warm batch
fill reads every row in C with no Python call per row (runtime/batch.py).
"""

from __future__ import annotations

import numpy as np

from strictgen.compile import _mask_store
from strictgen.compile.compiled import CompiledGrammar
from strictgen.compile.machine import DEAD
from strictgen.compile.special_tokens import STAND_IN
from strictgen.compile.tracked_rules import VETO
from strictgen.errors import StrictgenError

from . import captures, drafts

# a bitmask's own dtype, numpy's one instance of it: a fill asks identity first (free) and equality
# only for another instance (metadata, a byte order spelled "=", unpickled: equal, and as good);
# a non-native int32 is not equal (~17 ns a fill saved by not asking equality first)
_INT32 = np.dtype(np.int32)
_MISSED = _mask_store.MISSED  # fill_row's code for a plain row whose state's mask is not stored yet


def complete_utf8_prefix(data: bytes) -> str:
    """The longest prefix of `data` that is whole UTF-8 text ("" if it starts mid-character)."""
    for cut in range(len(data), max(-1, len(data) - 4), -1):
        try:
            return data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return ""


class GrammarMatcher(_mask_store.RowState):
    def __init__(self, compiled: CompiledGrammar):
        self.compiled = compiled
        self._machine = compiled.machine
        self._masker = compiled.masker
        info = compiled.tokenizer_info
        self._token_bytes = info.all_token_bytes
        self._is_special = info.is_special
        self._markers = compiled.marker_tokens  # special tokens that stand for their text (or a stand-in) here
        self._stand_ins = compiled.has_special_tokens  # text may not hold a stand-in's byte 0xFF
        self._eos = frozenset(info.eos_token_ids)
        self._vocab_size = info.vocab_size
        self._unique = compiled.tracker  # uniqueItems arrays and distinct-name objects followed here (None: none)
        self._draft_source: tuple | None = None  # what the C draft walk reads (drafts.walk_source), on the first draft
        self._row_store = self._masker.store if self._unique is None else None  # a tracker filters the rows: never copied as they are
        if compiled.has_captures:  # only these matchers keep the bytes they accept, for captures()
            self._advance = self._advance_keeping_text
        self.reset()

    # ---- state ----

    def reset(self) -> None:
        self._history: list[int] = [self._machine.start]
        self._state = self._machine.start  # _history[-1], where the batch fill reads it (RowState)
        self._tracks: list = [None]  # with unique arrays: the Track after each step (unique_items.py)
        self._terminated = False
        self._texts: list[bytes] = []  # the bytes of each accepted step (grammars with captures only; EOS adds none)

    @property
    def state(self) -> int:
        """The machine state (an integer shared by every matcher of the grammar)."""
        return self._history[-1]

    def is_terminated(self) -> bool:
        """True once an EOS token was accepted where the grammar can end."""
        return self._terminated

    def can_end(self) -> bool:
        """True where the grammar can end here (EOS would be accepted)."""
        return not self._terminated and self._machine.accepting[self.state]

    # ---- advancing ----

    def accept_token(self, token_id: int) -> bool:
        """Advance by one token; False (and state unchanged) if the token is not allowed now."""
        if self._terminated or not 0 <= token_id < self._vocab_size:
            return False
        if token_id in self._eos:
            if not self._machine.accepting[self.state]:
                return False
            self._history.append(self.state)
            if self._unique is not None:
                self._tracks.append(self._tracks[-1])
            self._terminated = True
            return True
        if self._is_special[token_id]:
            data = self._markers.get(token_id)
            return data is not None and self._advance(data)
        return self._advance_text(self._token_bytes[token_id])

    def accept_string(self, text: str | bytes) -> bool:
        """Advance by a whole string (one rollback step); False (and unchanged) if it is not allowed."""
        if self._terminated:
            return False
        return self._advance_text(text.encode("utf-8") if isinstance(text, str) else bytes(text))

    def _advance_text(self, data: bytes) -> bool:
        if self._stand_ins and STAND_IN in data:
            return False  # text cannot spell a special token the grammar names
        return self._advance(data)

    def _advance(self, data: bytes) -> bool:
        nxt = self._machine.step_bytes(self.state, data)
        if nxt == DEAD:
            return False
        if self._unique is not None:
            got = self._unique.advance(self._tracks[-1], self.state, data)
            if got is VETO:
                return False
            track, pruned = got  # pruned: the state without the parses a repeated item ruled out
            self._tracks.append(track)
            nxt = nxt if pruned is None else pruned
        self._history.append(nxt)
        self._state = nxt
        return True

    def _advance_keeping_text(self, data: bytes) -> bool:
        if not GrammarMatcher._advance(self, data):
            return False
        self._texts.append(data)
        return True

    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last `num_tokens` accepted tokens (or strings)."""
        if num_tokens < 0 or num_tokens >= len(self._history):
            raise StrictgenError(f"cannot roll back {num_tokens} tokens: only {len(self._history) - 1} were accepted")
        if num_tokens:
            del self._texts[len(self._texts) - (num_tokens - self._terminated):]
            del self._history[-num_tokens:]
            self._state = self._history[-1]
            if self._unique is not None:
                del self._tracks[-num_tokens:]
            self._terminated = False

    def captures(self) -> list[tuple[str, str]]:
        """(name, text) of each named capture of the accepted text, in the order they close
        (runtime/captures.py); before the text must end (EOS accepted or the only token allowed),
        only those that closed before the last byte."""
        if not self.compiled.has_captures:
            return []
        ended = self._terminated or (self.can_end() and np.array_equal(self.next_token_mask(), self._masker.eos_only))
        return captures.captures(self.compiled, b"".join(self._texts), ended)

    # ---- masks ----

    def next_token_mask(self) -> np.ndarray:
        """The packed int32 mask row for the next token (shared and read-only)."""
        if self._terminated:
            return self._masker.eos_only
        row = self._masker.mask(self.state)
        return row if self._unique is None else self._tracked(row)

    def plain_row(self) -> tuple | None:
        """(the grammar's TokenMasker, the state) when the state's cached machine mask is this
        matcher's next mask as it is, else None (a terminated matcher allows EOS only; a tracker
        filters the row): the rows that draft fills copy in C straight from the masker's store.
        (A batch fill reads the same facts from the matcher's RowState fields, in C.)"""
        return None if self._terminated or self._unique is not None else (self._masker, self._history[-1])

    def text_step(self, state: int, token_id: int) -> int | None:
        """The state after token `token_id` from `state` (DEAD if refused; drafts.ENDED for an EOS
        the grammar accepts there: it ends the draft), the matcher not moving; None where only
        `accept_token` can tell (a special token, a tracker). What a draft walk asks where its C
        step stops (a row not computed yet, an EOS with no row to read)."""
        if not 0 <= token_id < self._vocab_size:
            return DEAD
        if self._unique is not None:
            return None
        if token_id in self._eos:
            return drafts.ENDED if self._machine.accepting[state] else DEAD
        if self._is_special[token_id]:
            return None
        data = self._token_bytes[token_id]
        return DEAD if self._stand_ins and STAND_IN in data else self._machine.step_bytes(state, data)

    def _tracked(self, row: np.ndarray) -> np.ndarray:
        """The machine's mask `row` for this state, without the tokens that would repeat an
        earlier item or name (the tracker's part)."""
        return self._unique.mask(row, self._tracks[-1], self.state)

    def fill_next_token_bitmask(self, bitmask, index: int = 0) -> bool:
        """Write the next-token mask into row `index` of `bitmask` (numpy or CPU torch int32).

        Returns True when some token is disallowed (the mask needs applying)."""
        target = bitmask if isinstance(bitmask, np.ndarray) else bitmask.numpy()
        row = None
        if target.ndim == 2 and (target.dtype is _INT32 or target.dtype == _INT32):  # a stored mask: copied in one C call (~0.5 us of ~1.4 a hit)
            code = _mask_store.fill_row(self, target, index)
            if code == _MISSED:  # a plain row not computed yet: computed into the store, then copied as a hit is
                row = self._masker.mask(self._state)  # (~1 us a first-time fill less than the copy below and its "needs apply")
                code = _mask_store.fill_row(self, target, index)
            if code <= 1:
                return code == 1
        if row is None:  # (a row computed above but not stored is written as it is)
            row = self.next_token_mask()
        if target.ndim == 1:
            target[: len(row)] = row
        else:
            target[index, : len(row)] = row
        if row[0] != -1:  # the first word settles it almost always
            return True
        store = self._row_store  # the row is the store's as it is: its put found the answer once
        got = None if store is None or self._terminated else store.needs_apply(self._state)
        return bool((row != -1).any()) if got is None else got

    def find_jump_forward_string(self) -> str:
        """The longest text the grammar forces next ("" if none); the matcher does not advance."""
        if self._terminated:
            return ""
        return complete_utf8_prefix(self.find_jump_forward_bytes())

    def find_jump_forward_bytes(self) -> bytes:
        """Like find_jump_forward_string, as raw bytes (may end inside a UTF-8 character)."""
        if self._terminated:
            return b""
        forced = self._machine.forced_bytes(self.state)
        return forced.split(bytes((STAND_IN,)), 1)[0] if self._stand_ins else forced  # a special token is the model's

    # ---- speculative decoding (drafts.py): the matcher does not move ----

    def draft_source(self) -> tuple:
        """(the C machine, the vocabulary as the C draft walk reads it), made on the first draft
        call: a speculative decoder asks a matcher for drafts at every step."""
        if self._draft_source is None:
            self._draft_source = drafts.walk_source(self.compiled)
        return self._draft_source

    def validate_tokens(self, tokens) -> int:
        """How many leading tokens of a draft the grammar accepts from here."""
        return drafts.validate_tokens(self, tokens)

    def fill_draft_bitmasks(self, draft, bitmask, start_row: int = 0) -> int:
        """Rows start_row + k := the mask after draft[:k], up to the first refused token; returns the rows written."""
        return drafts.fill_draft_bitmasks(self, draft, bitmask, start_row)

    def fill_draft_tree_bitmasks(self, tokens, first_child, next_sibling, bitmask, start_row: int = 0, time_budget: float | None = None) -> int:
        """A draft tree's masks (SGLang's layout, node 0 the root); returns the nodes given a mask."""
        return drafts.fill_draft_tree_bitmasks(self, tokens, first_child, next_sibling, bitmask, start_row, time_budget)

    def forced_draft_tokens(self) -> list[int]:
        """The text the grammar forces next, as tokens: a free draft."""
        return drafts.forced_draft_tokens(self)
