"""The pushdown machine, determinised lazily into one table of states × bytes.

A *stack* is a chain of frames (rule, DFA state), interned as an integer node id; node 0 is the
empty stack (the root rule has finished). A machine *state* is the set of stacks that the input so
far can have led to, each expanded (calls pushed, finished rules popped) until its top frame waits
for a byte. States are interned as integers too; state 0 is dead. Rows of the transition table
(state × 256 bytes → state) are computed on first use and then shared by every matcher of the
grammar, which makes the machine a deterministic automaton wherever the input has gone before.

The table is a cache: growing it is guarded by a lock, and readers see either the old or the new
array, both valid, so matchers on different threads never need to coordinate.
"""

from __future__ import annotations

import threading

import numpy as np

from .automaton import CompiledAutomaton

DEAD = 0
UNKNOWN = -1
EMPTY_STACK = 0


class PushdownMachine:
    def __init__(self, automaton: CompiledAutomaton):
        self.automaton = automaton
        rules = automaton.rules
        self._accepting = [dfa.accepting for dfa in rules]
        self._groups = [dfa.byte_groups for dfa in rules]
        self._calls = [dfa.calls for dfa in rules]
        # a frame whose state is accepting and has no way forward pops at once: calls returning
        # there push directly on the parent (tail calls), so right recursion keeps stacks flat
        self._final_only = [
            [acc and not g and not c for acc, g, c in zip(dfa.accepting, dfa.byte_groups, dfa.calls)]
            for dfa in rules
        ]
        self._lock = threading.RLock()
        self._nodes: list[tuple[int, int, int]] = [(-1, -1, -1)]  # id → (parent, rule, state)
        self._node_ids: dict[tuple[int, int, int], int] = {}
        self._closures: dict[int, frozenset[int]] = {}
        self._state_ids: dict[tuple[int, ...], int] = {(): DEAD}
        self._states: list[tuple[int, ...]] = [()]
        self.accepting: list[bool] = [False]
        self.rows = np.full((64, 256), UNKNOWN, dtype=np.int32)
        self.rows[DEAD] = DEAD
        self.start = self._intern_state(self._closure(self._node(EMPTY_STACK, 0, 0)))

    # ---- stacks ----

    def _node(self, parent: int, rule: int, state: int) -> int:
        key = (parent, rule, state)
        got = self._node_ids.get(key)
        if got is None:
            got = self._node_ids[key] = len(self._nodes)
            self._nodes.append(key)
        return got

    def _closure(self, node: int) -> frozenset[int]:
        """The stacks reachable from `node` without consuming a byte whose top waits for a byte
        (plus EMPTY_STACK when the root can finish)."""
        got = self._closures.get(node)
        if got is not None:
            return got
        result: set[int] = set()
        seen = {node}
        work = [node]
        while work:
            n = work.pop()
            if n == EMPTY_STACK:
                result.add(EMPTY_STACK)
                continue
            parent, rule, state = self._nodes[n]
            nexts = []
            if self._groups[rule][state]:
                result.add(n)
            for callee, ret in self._calls[rule][state]:
                below = parent if self._final_only[rule][ret] else self._node(parent, rule, ret)
                nexts.append(self._node(below, callee, 0))
            if self._accepting[rule][state]:
                nexts.append(parent)
            for m in nexts:
                if m not in seen:
                    seen.add(m)
                    work.append(m)
        got = self._closures[node] = frozenset(result)
        return got

    # ---- states ----

    def _intern_state(self, stacks) -> int:
        key = tuple(sorted(stacks))
        got = self._state_ids.get(key)
        if got is None:
            got = self._state_ids[key] = len(self._states)
            self._states.append(key)
            self.accepting.append(EMPTY_STACK in key)
            if got >= len(self.rows):
                grown = np.full((2 * len(self.rows), 256), UNKNOWN, dtype=np.int32)
                grown[: len(self.rows)] = self.rows
                self.rows = grown
        return got

    @property
    def num_states(self) -> int:
        return len(self._states)

    def compute_row(self, state: int) -> np.ndarray:
        """Fill (once) and return the transition row of `state`."""
        with self._lock:
            rows = self.rows
            if rows[state, 0] != UNKNOWN:
                return rows[state]
            stacks = [n for n in self._states[state] if n != EMPTY_STACK]
            row = np.zeros(256, dtype=np.int32)
            if len(stacks) == 1:
                # one stack (the common case): each byte group goes to one state, no unions needed
                parent, rule, dfa_state = self._nodes[stacks[0]]
                for target, byte_values in self._groups[rule][dfa_state]:
                    row[list(byte_values)] = self._intern_state(self._closure(self._node(parent, rule, target)))
            else:
                per_byte: list[frozenset[int] | None] = [None] * 256
                for n in stacks:
                    parent, rule, dfa_state = self._nodes[n]
                    for target, byte_values in self._groups[rule][dfa_state]:
                        reached = self._closure(self._node(parent, rule, target))
                        for b in byte_values:
                            cur = per_byte[b]
                            per_byte[b] = reached if cur is None else cur | reached
                ids: dict[frozenset[int], int] = {}
                for b, reached in enumerate(per_byte):
                    if reached:
                        got = ids.get(reached)
                        if got is None:
                            got = ids[reached] = self._intern_state(reached)
                        row[b] = got
            rows = self.rows  # interning may have grown the table
            rows[state] = row
            return rows[state]

    def table_after(self, state: int) -> np.ndarray:
        """The whole table once `state`'s row is in it (the C trie walk's callback)."""
        self.compute_row(state)
        return self.rows

    def step(self, state: int, byte: int) -> int:
        nxt = int(self.rows[state, byte])
        if nxt == UNKNOWN:
            nxt = int(self.compute_row(state)[byte])
        return nxt

    def step_bytes(self, state: int, data: bytes) -> int:
        """The state after `data`, or DEAD."""
        for b in data:
            state = self.step(state, b)
            if state == DEAD:
                return DEAD
        return state

    def step_many(self, states: np.ndarray, byte_values: np.ndarray) -> np.ndarray:
        """Vectorised step for parallel arrays of states and bytes."""
        rows = self.rows
        nxt = rows[states, byte_values]
        unknown = nxt == UNKNOWN
        if unknown.any():
            for s in np.unique(states[unknown]):
                self.compute_row(int(s))
            nxt = self.rows[states, byte_values]
        return nxt

    def forced_bytes(self, state: int, limit: int = 4096) -> bytes:
        """Bytes the grammar forces from `state`: while it cannot end here and exactly one byte continues."""
        out = bytearray()
        while len(out) < limit and not self.accepting[state]:
            row = self.rows[state]
            if row[0] == UNKNOWN:
                row = self.compute_row(state)
            live = np.flatnonzero(row)
            if len(live) != 1:
                break
            out.append(int(live[0]))
            state = int(row[live[0]])
        return bytes(out)
