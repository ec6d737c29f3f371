"""Shortest derivations per frame: the shortest completion of a pushdown machine state without
searching its states.

A breadth-first search over machine states (runtime/budget.py) meets a new state for every stack
the input can make, and a small recursive grammar puts exponentially many stacks within a few
bytes (issue 34's finding A: `root ::= r3 "abcdefghijklmnop" | "(" root ")"` with
`r3 ::= .* | "{" root "}"`). Stacks are chains of frames (rule, DFA state), and a completion of a
stack finishes its frames one after the other, top first: each frame runs its rule's DFA to an
accepting state (bytes, and calls that each read a whole member of the callee), then pops. So the
shortest completion of a stack is the sum of a per-frame quantity that depends on the grammar
only, computed once per machine:

* `length[f]`: the fewest bytes that take frame f to an accepting state of its rule, a call
  counting the callee's own fewest bytes (`length` of its start frame). It is one generalised
  Dijkstra (Knuth's, for a grammar) over all frames at once: a frame is final when popped with
  the least tentative length, and a call edge is relaxed once both its callee's start and its
  return frame are final (both are at most the caller's length).
* `text(f)`: the lexicographically smallest of those shortest strings. A shortest completion of
  a chain of frames is made of each frame's shortest strings, of fixed lengths, so the smallest
  is the concatenation of each frame's smallest; and for one frame, the smallest over its edges
  whose length adds up (a byte and the target's text, or the callee's text and the return
  frame's text). Calls of a callee that reads nothing, and calls whose return frame is already
  accepting, tie a frame to another of the same length (an alias), possibly in cycles: a frame's
  text is the smallest own candidate over the frames its aliases reach.

A state's completion is then the smallest (length, text) over its stacks: exactly the
lexicographically smallest shortest completion the breadth-first search finds, so the choice
stays consistent (the completion one byte further along is its own tail: budget.py's guard
relies on it). This needs every rule's DFA: the rules a compile deferred are built for it
(`machine.all_rules()`); a grammar with families (one rule per set of keys seen, more than can
be built) keeps budget.py's search.
"""

from __future__ import annotations

import heapq
import threading

import numpy as np

from strictgen.compile.automaton import RuleDFA
from strictgen.compile.machine import EMPTY_STACK, PushdownMachine
from strictgen.errors import StrictgenError

__all__ = ["ShortestDerivations", "UNREACHABLE"]

UNREACHABLE = np.iinfo(np.int64).max  # the length of a frame that cannot reach an accepting state


class ShortestDerivations:
    """`length` and `text` of every frame of a machine's grammar, all of whose rules are built;
    thread-safe, computed on first use."""

    def __init__(self, machine: PushdownMachine, rules: list[RuleDFA]):
        """`rules`: every rule of the machine's grammar by index (`machine.all_rules()`)."""
        self.machine = machine
        sizes = np.array([r.num_states for r in rules], dtype=np.int64)
        self.base = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self._rules = rules
        self._lock = threading.Lock()
        self._length: np.ndarray | None = None
        self._texts: dict[int, bytes] = {}  # bounded by the grammar's frames, never by the input

    # -- the graph ------------------------------------------------------------------------------

    def _edges(self) -> None:
        """Byte edges (source, smallest byte, target) once per (source, target), in frame and
        byte order; call edges (source, callee's start frame, return frame); accepting frames."""
        src, byte, dst, call_src, call_start, call_ret, accepting = [], [], [], [], [], [], []
        for r, rule in enumerate(self._rules):
            b = int(self.base[r])
            k = rule.dfa.num_classes
            compact, classmap = rule.dfa.compact(b)
            table = np.frombuffer(compact, dtype=np.int32).reshape(-1, k)
            classes = np.frombuffer(classmap, dtype=np.uint8)
            first_byte = np.full(k, 256, dtype=np.int64)
            np.minimum.at(first_byte, classes.astype(np.int64), np.arange(256, dtype=np.int64))
            s, c = np.nonzero(table >= 0)
            t, by = table[s, c].astype(np.int64), first_byte[c]
            order = np.lexsort((by, t, s))  # per (source, target) its smallest byte first
            s, t, by = s[order], t[order], by[order]
            keep = np.ones(len(s), dtype=bool)
            keep[1:] = (s[1:] != s[:-1]) | (t[1:] != t[:-1])
            s, t, by = s[keep], t[keep], by[keep]
            order = np.lexsort((by, s))
            src.append(s[order] + b)
            byte.append(by[order])
            dst.append(t[order])
            starts, callee, ret = (np.frombuffer(a, dtype=np.int32).astype(np.int64) for a in rule.dfa.call_arrays())
            call_src.append(np.repeat(np.arange(rule.num_states, dtype=np.int64), np.diff(starts)) + b)
            call_start.append(self.base[callee])
            call_ret.append(ret + b)
            accepting.append(np.flatnonzero(np.frombuffer(rule.dfa.accepting(), dtype=np.uint8)) + b)
        n = int(self.base[-1]) + self._rules[-1].num_states
        self.num_frames = n
        self.src, self.byte, self.dst = (np.concatenate(x).astype(np.int64) for x in (src, byte, dst))
        self.call_src, self.call_start, self.call_ret = (np.concatenate(x).astype(np.int64) for x in (call_src, call_start, call_ret))
        self.accepting = np.concatenate(accepting).astype(np.int64)
        self.out_start = np.searchsorted(self.src, np.arange(n + 1))  # forward byte edges by source
        self.call_out = np.searchsorted(self.call_src, np.arange(n + 1))  # call edges by source (in frame order)

    def _lengths(self) -> np.ndarray:
        """Knuth's generalised Dijkstra over every frame (see the module docstring), level by
        level as lengths are whole numbers (Dial's buckets), each level's frames at once in numpy:
        their byte predecessors get one more, and a call whose callee start and return frame are
        both final gives its source their sum (the same level again where one part reads nothing)."""
        self._edges()
        n = self.num_frames
        by_target = np.argsort(self.dst, kind="stable")
        pred = self.src[by_target]
        into = np.searchsorted(self.dst[by_target], np.arange(n + 1))
        length = np.full(n, UNREACHABLE, dtype=np.int64)
        final = np.zeros(n, dtype=bool)
        buckets: dict[int, list[np.ndarray]] = {0: [self.accepting]}
        length[self.accepting] = 0
        levels = [0]
        calls_done = np.zeros(len(self.call_src), dtype=bool)
        while levels:
            v = heapq.heappop(levels)
            while v in buckets:  # zero-length calls may put more frames on this level
                cur = np.unique(np.concatenate(buckets.pop(v)))
                cur = cur[(length[cur] == v) & ~final[cur]]
                if not len(cur):
                    continue
                final[cur] = True
                lo, counts = into[cur], into[cur + 1] - into[cur]
                total = int(counts.sum())
                if total:
                    idx = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(lo, counts)
                    self._relax(length, final, buckets, levels, pred[idx], v + 1)
                ready = ~calls_done & final[self.call_start] & final[self.call_ret]
                if ready.any():
                    calls_done |= ready
                    values = length[self.call_start[ready]] + length[self.call_ret[ready]]
                    for value in np.unique(values).tolist():
                        self._relax(length, final, buckets, levels, self.call_src[ready][values == value], value)
        return length

    @staticmethod
    def _relax(length: np.ndarray, final: np.ndarray, buckets: dict, levels: list, frames: np.ndarray, value: int) -> None:
        frames = frames[~final[frames] & (length[frames] > value)]
        if len(frames):
            length[frames] = value
            if value not in buckets:
                buckets[value] = []
                heapq.heappush(levels, value)
            buckets[value].append(frames)

    @property
    def length(self) -> np.ndarray:
        """Per frame, the fewest bytes to an accepting state of its rule (UNREACHABLE: none)."""
        if self._length is None:
            with self._lock:
                if self._length is None:
                    self._length = self._lengths()
        return self._length

    # -- the smallest strings ------------------------------------------------------------------

    def _links(self, f: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[int]]:
        """Frame f's edges whose length adds up to f's: bytes (smallest byte, target), calls of
        two non-empty parts (callee's start frame, return frame), and aliases (the frame of the
        same length that a call with one empty part leaves: its text is the call's text)."""
        length = self.length
        d = int(length[f])
        steps: list[tuple[int, int]] = []
        calls: list[tuple[int, int]] = []
        aliases: list[int] = []
        for j in range(int(self.out_start[f]), int(self.out_start[f + 1])):
            t = int(self.dst[j])
            if length[t] != UNREACHABLE and length[t] + 1 == d:
                steps.append((int(self.byte[j]), t))
        for j in range(int(self.call_out[f]), int(self.call_out[f + 1])):
            start, ret = int(self.call_start[j]), int(self.call_ret[j])
            a, b = length[start], length[ret]
            if a == UNREACHABLE or b == UNREACHABLE or a + b != d:
                continue
            if a == 0:
                aliases.append(ret)
            elif b == 0:
                aliases.append(start)
            else:
                calls.append((start, ret))
        return steps, calls, aliases

    def text(self, frame: int) -> bytes:
        """The lexicographically smallest shortest string from `frame` to an accepting state of
        its rule (frames are numbered rule by rule: `base[rule] + DFA state`)."""
        got = self._texts.get(frame)
        if got is not None:
            return got
        if self.length[frame] == UNREACHABLE:
            raise StrictgenError("no completion from this grammar state (the grammar has a dead end)")
        with self._lock:
            self._fill(frame)
        return self._texts[frame]

    def _fill(self, frame: int) -> None:
        """Texts of `frame` and of every frame its shortest strings go through, level by level
        (shorter first: a frame's own candidates read shorter frames only, its aliases equal ones)."""
        texts, length = self._texts, self.length
        links: dict[int, tuple[list, list, list]] = {}
        todo = [frame]
        while todo:
            f = todo.pop()
            if f in links or f in texts:
                continue
            if length[f] == 0:
                texts[f] = b""
                continue
            links[f] = steps, calls, aliases = self._links(f)
            todo.extend(t for _, t in steps)
            todo.extend(x for call in calls for x in call)
            todo.extend(aliases)
        levels: dict[int, list[int]] = {}
        for f in links:
            levels.setdefault(int(length[f]), []).append(f)
        for d in sorted(levels):
            level = levels[d]
            own: dict[int, bytes] = {}
            for f in level:
                steps, calls, _ = links[f]
                cands = [bytes((b,)) + texts[t] for b, t in steps] + [texts[a] + texts[b] for a, b in calls]
                if cands:
                    own[f] = min(cands)
            for f in level:
                texts[f] = self._smallest_through_aliases(f, own, links)

    def _smallest_through_aliases(self, f: int, own: dict[int, bytes], links: dict) -> bytes:
        """The smallest own candidate over the frames f's aliases reach (f included); a frame
        whose text an earlier fill made stands for itself and what its aliases reach."""
        smallest: bytes | None = None
        seen, stack = {f}, [f]
        while stack:
            g = stack.pop()
            cand = own.get(g) if g in links else self._texts[g]
            if cand is not None and (smallest is None or cand < smallest):
                smallest = cand
            for h in links[g][2] if g in links else ():
                if h not in seen:
                    seen.add(h)
                    stack.append(h)
        if smallest is None:  # a length is only ever reached through some bytes
            raise StrictgenError("shortest derivations: a frame of positive length without a candidate")
        return smallest

    # -- machine states ---------------------------------------------------------------------------

    def completion(self, state: int) -> bytes:
        """The lexicographically smallest shortest byte string from machine `state` to an
        accepting state: the smallest over the state's stacks of their frames' texts, top first."""
        machine = self.machine
        stacks = machine.stacks(state)
        if EMPTY_STACK in stacks:
            return b""
        length, base = self.length, self.base
        total: dict[int, int] = {EMPTY_STACK: 0}
        frames: dict[int, tuple[int, int]] = {}  # node -> (frame, parent)

        def total_of(node: int) -> int:
            path = []
            while node not in total:  # iterative: stacks of recursive grammars run deep
                parent, rule, dfa_state = machine.node(node)
                frames[node] = (int(base[rule]) + dfa_state, parent)
                path.append(node)
                node = parent
            for n in reversed(path):
                f, parent = frames[n]
                total[n] = UNREACHABLE if length[f] == UNREACHABLE or total[parent] == UNREACHABLE else int(length[f]) + total[parent]
            return total[path[0]] if path else total[node]

        sums = [total_of(node) for node in stacks]
        shortest = min(sums)
        if shortest == UNREACHABLE:
            raise StrictgenError("no completion from this grammar state (the grammar has a dead end)")
        best = None
        for node, s in zip(stacks, sums):
            if s != shortest:
                continue
            parts = []
            while node != EMPTY_STACK:
                f, node = frames[node]
                parts.append(self.text(f))
            cand = b"".join(parts)
            if best is None or cand < best:
                best = cand
        return best  # type: ignore[return-value]
