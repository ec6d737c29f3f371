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

from .automaton import CompiledAutomaton, horizon_classes, nullable_rules

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
        self._byte_set_cache: dict[tuple[int, int], list[tuple[int, frozenset[int]]]] = {}
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

    def _byte_sets(self, rule: int, dfa_state: int) -> list[tuple[int, frozenset[int]]]:
        """A DFA state's byte groups with the bytes as frozensets (memoised)."""
        key = (rule, dfa_state)
        got = self._byte_set_cache.get(key)
        if got is None:
            got = self._byte_set_cache[key] = [(target, frozenset(bs)) for target, bs in self._groups[rule][dfa_state]]
        return got

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
                # several stacks: split the byte line into cells that go to the same union of
                # closures (set operations on byte groups, not a loop over 256 bytes)
                cells: list[tuple[frozenset[int], frozenset[int]]] = []
                for n in stacks:
                    parent, rule, dfa_state = self._nodes[n]
                    for target, byte_values in self._byte_sets(rule, dfa_state):
                        reached = self._closure(self._node(parent, rule, target))
                        split: list[tuple[frozenset[int], frozenset[int]]] = []
                        for cell, before in cells:
                            both = cell & byte_values
                            if not both:
                                split.append((cell, before))
                                continue
                            split.append((both, before | reached))
                            if len(both) < len(cell):
                                split.append((cell - both, before))
                            byte_values = byte_values - both
                        if byte_values:
                            split.append((byte_values, reached))
                        cells = split
                for cell, reached in cells:
                    row[list(cell)] = self._intern_state(reached)
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


def _steps_per_byte(dfa, nullable: set[int]) -> int | None:
    """At most how many refinement steps (bytes, calls) a frame of `dfa` takes per byte of input:
    1 when every callee reads a byte; 2 when calls of rules that may read nothing (whitespace) never
    follow each other without a byte between; None otherwise (the rule keeps exact states)."""
    may_skip = [any(callee in nullable for callee, _ in calls) for calls in dfa.calls]
    if not any(may_skip):
        return 1
    if any(may_skip[ret] for calls in dfa.calls for callee, ret in calls if callee in nullable):
        return None
    return 2


class HorizonKeys:
    """Keys that are equal for machine states no input of at most `horizon` bytes tells apart.

    A key maps every frame of every stack to (its canonical parent, rule, horizon class of its
    DFA state) (automaton.horizon_classes), refined for as many steps as `horizon` bytes can take:
    a byte is one step, a call one step paid for by the callee's bytes, a call of a rule that may
    read nothing (whitespace) one step paid for by the next byte when such calls never follow each
    other (`_steps_per_byte`). Frames that agree for that many steps agree on every token of at
    most `horizon` bytes. Other rules keep exact states. Token masks are shared by
    equal keys: the states of a long counted string (`maxLength: 4096`) share one mask while more
    than a token's length is left."""

    def __init__(self, machine: PushdownMachine, horizon: int):
        self.machine = machine
        rules = machine.automaton.rules
        nullable = nullable_rules(rules)
        self.classes: list[np.ndarray | None] = []
        for dfa in rules:
            steps = _steps_per_byte(dfa, nullable)
            self.classes.append(None if steps is None else horizon_classes(dfa, steps * horizon + 1))
        self.active = any(c is not None for c in self.classes)
        self._canonical: dict[int, int] = {EMPTY_STACK: EMPTY_STACK}
        self._ids: dict[tuple[int, int, int], int] = {}

    def key(self, state: int):
        """A hashable key for `state` (the state itself when no rule merges anything)."""
        if not self.active:
            return state
        with self.machine._lock:
            return frozenset(self._node(n) for n in self.machine._states[state])

    def _node(self, node: int) -> int:
        path = []
        while node not in self._canonical:  # iterative: stacks of recursive grammars run deep
            path.append(node)
            node = self.machine._nodes[node][0]
        for n in reversed(path):
            parent, rule, dfa_state = self.machine._nodes[n]
            classes = self.classes[rule]
            key = (self._canonical[parent], rule, dfa_state if classes is None else int(classes[dfa_state]))
            self._canonical[n] = self._ids.setdefault(key, len(self._ids) + 1)
        return self._canonical[path[0]] if path else self._canonical[node]
