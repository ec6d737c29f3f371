"""Shortest completions: how little output still finishes a valid document from a grammar state.

This is what makes output truncation-safe. With a max_tokens budget, a token is only taken when
the document can still be closed in the tokens left after it; a budget below the shortest valid
document is refused before generating.

From a machine state the *completion* is the lexicographically smallest among the shortest byte
strings that lead to an accepting state. That choice is consistent: the completion of the state
one byte further along it is its own tail. Its cost in tokens is the length of its greedy
longest-match tokenization, and greedy matching is deterministic from left to right, so after
taking the first token of that tokenization the cost drops by exactly one. Hence, starting within
budget, the first completion token always stays within budget, and the guard never leads into a
dead end.

Two ways find it, and give the same answer. Shortest derivations per frame
(runtime/derivations.py: computed once per grammar, then a sum over each stack of the state)
answer whatever the stacks, but need every rule's automaton. A breadth-first search over the
machine's states (bytes tried in increasing order) builds only the rules it meets, but deep
recursion can put very many states within a few bytes (issue 34's finding A), so it is bounded
in states and seconds. A quick search comes first; when it gives up, frames take over (the rules
a compile deferred built for them), except in grammars with families (more rules than can be
built), which keep the search within its bounds.

Only the machine's public methods are used (`start`, `accepting`, `compute_row`, `step_bytes`,
`stacks`, `node`, `all_rules`). Completions are cached per machine (machine states are shared by
every matcher of a grammar) in bounded maps: a grammar's machine lives as long as the compiler's
cache keeps it, and its states grow with every document it sees.
"""

from __future__ import annotations

import threading
import time
import weakref

import numpy as np

from strictgen.compile.machine import DEAD, PushdownMachine
from strictgen.errors import BudgetError, StrictgenError
from strictgen.lru import BoundedLRU

from .derivations import ShortestDerivations

# breadth-first search stops after expanding this many states (deeply nested free-form JSON can
# make the set of states within a few bytes very large); beyond it the state counts as unknown
MAX_EXPANDED = 200_000
# ... and after this many seconds: states are not all equally dear (a row may build a rule), and a
# small recursive grammar can put exponentially many stacks within a few bytes (issue 34's fuzz
# finding A); a request must get a clear error in bounded time, never minutes of a server's CPU
MAX_SECONDS = 2.0
# completions kept per machine: entries and their bytes (a completion of a deeply nested state is
# as long as its stack is deep); rows' successor lists kept for the search
COMPLETIONS_KEPT = 65_536
COMPLETION_BYTES_KEPT = 16 << 20
SUCCESSORS_KEPT = 16_384
# the quick search tried first (past it: frames, every rule built)
QUICK_EXPANDED = 4_096
QUICK_SECONDS = 0.05


class CompletionSearchTooLarge(StrictgenError):
    """The breadth-first search for a shortest completion (grammars with rules built at run time)
    exceeded MAX_EXPANDED states or MAX_SECONDS."""


class ShortestCompletions:
    """Shortest completions (bytes) of one machine's states, memoised; thread-safe.

    `by_frames` True: through shortest derivations per frame; False: by the breadth-first search
    (within `max_expanded` states and `max_seconds`). Default: a quick search first (where the
    answer is near it costs well under a millisecond, and builds only the rules it meets: a
    compile's deferral keeps its gain), and from the first state it cannot answer, frames (the
    rules a compile deferred built for them), or the search where the grammar has families. Every
    way gives the same completion, so they mix freely."""

    def __init__(self, machine: PushdownMachine, max_expanded: int = MAX_EXPANDED, max_seconds: float = MAX_SECONDS,
                 by_frames: bool | None = None):
        self.machine = machine
        self.max_expanded = max_expanded
        self.max_seconds = max_seconds
        self._by_frames = by_frames  # None: the quick search until it gives up
        self.derivations: ShortestDerivations | None = None  # set on first use where frames serve
        self._memo: BoundedLRU[bytes] = BoundedLRU(COMPLETIONS_KEPT, COMPLETION_BYTES_KEPT, len)
        self._succ: BoundedLRU[tuple[list[int], list[int]]] = BoundedLRU(SUCCESSORS_KEPT)  # rows never change once computed
        self._lock = threading.Lock()

    def completion(self, state: int) -> bytes:
        """The lexicographically smallest shortest byte string from `state` to an accepting state."""
        got = self._memo.peek(state)
        if got is not None:
            return got
        if state == DEAD:
            raise StrictgenError("the dead state has no completion")
        with self._lock:
            if self._by_frames is None:
                try:
                    return self._search(state, min(QUICK_EXPANDED, self.max_expanded), min(QUICK_SECONDS, self.max_seconds))
                except CompletionSearchTooLarge:
                    self._by_frames = self._frames_serve()
            if self._by_frames and self.derivations is None:
                self.derivations = self._derivations()
            if self.derivations is None:
                return self._search(state, self.max_expanded, self.max_seconds)
        got = self.derivations.completion(state)
        self._memo.put(state, got)
        return got

    def _frames_serve(self) -> bool:
        """Whether every rule can be built (the deferred ones now, under the compile's limits)."""
        try:
            return self.machine.all_rules() is not None
        except StrictgenError:  # a deferred rule past its limits: the search may not need it
            return False

    def _derivations(self) -> ShortestDerivations:
        rules = self.machine.all_rules()
        if rules is None:
            raise StrictgenError("shortest derivations need every rule built, and this grammar has families")
        return ShortestDerivations(self.machine, rules)

    def _successors(self, state: int) -> tuple[list[int], list[int]]:
        """(smallest byte, next state) for each distinct live successor, in increasing byte order."""
        got = self._succ.peek(state)
        if got is None:
            row = self.machine.compute_row(state)
            values, first = np.unique(row, return_index=True)
            keep = values != DEAD
            values, first = values[keep], first[keep]
            order = np.argsort(first)
            got = (first[order].tolist(), values[order].tolist())
            self._succ.put(state, got)
        return got

    def _search(self, start: int, max_expanded: int, max_seconds: float) -> bytes:
        memo = self._memo
        got = memo.get(start)
        if got is not None:
            return got
        accepting = self.machine.accepting
        if accepting[start]:
            memo.put(start, b"")
            return b""
        # parent links: state → (previous state, byte); levels are lists in lexicographic path order
        parent: dict[int, tuple[int, int]] = {start: (-1, -1)}
        level = [start]
        depth = 0
        best: tuple[int, bytes] | None = None  # (total length, completion)
        expanded = 0
        deadline = time.perf_counter() + max_seconds

        def path_to(state: int) -> bytes:
            out = bytearray()
            while state != start:
                prev, b = parent[state]
                out.append(b)
                state = prev
            return bytes(reversed(out))

        while level and (best is None or depth + 1 <= best[0]):
            nxt_level: list[int] = []
            for s in level:
                expanded += 1
                if expanded > max_expanded:
                    raise CompletionSearchTooLarge(f"shortest completion: more than {max_expanded} grammar states within reach")
                if time.perf_counter() > deadline:  # every state: one row of a state with many stacks can take long
                    raise CompletionSearchTooLarge(
                        f"shortest completion: not found within {max_seconds:g} s ({expanded} grammar states expanded)"
                    )
                byte_values, states = self._successors(s)
                for b, t in zip(byte_values, states):
                    if t in parent:
                        continue
                    parent[t] = (s, b)
                    known = memo.peek(t)
                    if known is None and accepting[t]:
                        known = b""
                    if known is not None:
                        cand = (depth + 1 + len(known), path_to(t) + known)
                        if best is None or cand < best:
                            best = cand
                        continue  # a known tail: no need to look past it
                    nxt_level.append(t)
            level = nxt_level
            depth += 1
        if best is None:
            raise StrictgenError("no completion from this grammar state (the grammar has a dead end)")
        completion = best[1]
        # every state along the completion gets its tail (consistent by the lexicographic choice)
        state = start
        for i in range(len(completion)):
            if state not in memo:
                memo.put(state, completion[i:])
            state = self.machine.step_bytes(state, completion[i : i + 1])
        if state not in memo:
            memo.put(state, b"")
        return completion


class GreedyTokenizer:
    """Greedy longest-match tokenization over a vocabulary's non-special tokens."""

    def __init__(self, token_bytes: list[bytes], is_special: np.ndarray):
        self._ids: dict[bytes, int] = {}
        for i, tb in enumerate(token_bytes):
            if tb and not is_special[i] and tb not in self._ids:
                self._ids[tb] = i
        self._max_len = max((len(tb) for tb in self._ids), default=1)

    def encode(self, data: bytes) -> list[int]:
        """Token ids spelling `data`; raises StrictgenError if some byte has no token."""
        out = []
        pos = 0
        n = len(data)
        ids = self._ids
        while pos < n:
            for length in range(min(self._max_len, n - pos), 0, -1):
                tid = ids.get(data[pos : pos + length])
                if tid is not None:
                    out.append(tid)
                    pos += length
                    break
            else:
                raise StrictgenError(f"byte {data[pos]:#04x} has no token in this vocabulary")
        return out


_greedy_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_completions_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


def greedy_tokenizer(info) -> GreedyTokenizer:
    """The (cached) greedy longest-match tokenizer of a TokenizerInfo."""
    with _cache_lock:
        got = _greedy_cache.get(info)
        if got is None:
            got = _greedy_cache[info] = GreedyTokenizer(info.all_token_bytes, info.is_special)
        return got


def _completions_for(machine: PushdownMachine) -> ShortestCompletions:
    with _cache_lock:
        got = _completions_cache.get(machine)
        if got is None:
            got = _completions_cache[machine] = ShortestCompletions(machine)
        return got


class TokenBudget:
    """Token costs of finishing a document from a grammar's states, for one compiled grammar."""

    def __init__(self, compiled):
        self.machine = compiled.machine
        self.completions = _completions_for(self.machine)
        self.tokenizer = greedy_tokenizer(compiled.tokenizer_info)
        self._token_bytes = compiled.tokenizer_info.all_token_bytes
        self._cost: dict[int, list[int]] = {}

    def completion_tokens(self, state: int) -> list[int]:
        """The greedy tokenization of the shortest completion from `state` (cached)."""
        got = self._cost.get(state)
        if got is None:
            got = self._cost[state] = self.tokenizer.encode(self.completions.completion(state))
        return got

    def tokens_needed(self, state: int) -> int:
        """Tokens that always suffice to finish a valid document from `state` (0 where it can end)."""
        return len(self.completion_tokens(state))

    def fits(self, state: int, token_id: int, remaining: int) -> bool:
        """Whether taking `token_id` at `state` leaves a finish within `remaining - 1` more tokens."""
        nxt = self.machine.step_bytes(state, self._token_bytes[token_id])
        return nxt != DEAD and self.tokens_needed(nxt) <= remaining - 1

    def minimum_tokens(self) -> int:
        """Tokens of the shortest valid document (what a max_tokens budget must at least be)."""
        return self.tokens_needed(self.machine.start)

    def check(self, max_tokens: int, state: int | None = None) -> None:
        """Raise BudgetError when `max_tokens` cannot finish a document from `state` (default: start)."""
        state = self.machine.start if state is None else state
        need = self.tokens_needed(state)
        if max_tokens < need:
            text = self.completions.completion(state).decode("utf-8", "replace")
            raise BudgetError(max_tokens, need, text)
