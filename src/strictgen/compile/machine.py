"""The pushdown machine, determinised lazily into one table of states × bytes.

A *stack* is a chain of frames (rule, DFA state), interned as an integer node id; node 0 is the
empty stack (the root rule has finished). A machine *state* is the set of stacks that the input so
far can have led to, each expanded (calls pushed, finished rules popped) until its top frame waits
for a byte. States are interned as integers too; state 0 is dead. Rows of the transition table
(state × 256 bytes → state) are computed on first use and then shared by every matcher of the
grammar, which makes the machine a deterministic automaton wherever the input has gone before.

The rows are a cache: they grow inside C calls that hold the GIL (the GIL is the lock), in chunks
that never move, and a row is written before the state's entry that points to it, so the trie walk
reads them without the GIL and matchers on different threads never need to coordinate.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from strictgen import deadline
from strictgen.errors import StrictgenError
from strictgen.grammar.schema.emit_objects import DISTINCT_MARK
from strictgen.grammar.schema.unique import UNIQUE_MARK

from . import _machine
from .automaton import CompiledAutomaton, RuleDFA, apart_within, horizon_classes, nullable_rules
from .guards import collector_paused, user_errors
from .lazy_rules import ResolvingCore
from .rule_facts import callees_of

DEAD = 0
EMPTY_STACK = 0
IDENTITY_MARKS = (UNIQUE_MARK, DISTINCT_MARK)  # rules whose frames run-time trackers read (tracked_rules.py)


def keeps_identity(name: str) -> bool:
    """Whether the frames of rule `name` must stay its own: the C machine pushes, for a call's
    return, the first frame with the same future (`_futures.c`: what stops 2**k stacks in grammars
    where two rules close the same bracket), which may belong to another rule; the trackers of
    uniqueItems and distinct names read the rule of each frame, so theirs are never merged."""
    return any(mark in name for mark in IDENTITY_MARKS)


class _Accepting:
    """`machine.accepting[state]`: whether the root may have finished in `state`."""

    def __init__(self, core):
        self._core = core

    def __getitem__(self, state: int) -> bool:
        return self._core.is_accepting(state)


class PushdownMachine:
    """The machine of one compiled grammar. Determinisation runs in C (`_pushdown.c`: the same
    algorithm in flat arrays, since computing rows in Python was half of the first-pass mask
    time); this class hands it the rule DFAs as arrays and reads rows back as numpy."""

    def __init__(self, automaton: CompiledAutomaton, merge_frames: bool = True):
        self.automaton = automaton
        self.merge_frames = merge_frames  # False: every frame its own (the reference the tests compare merging with)
        deadline.check()
        keep = bytes(not merge_frames or keeps_identity(rule.name) for rule in automaton.rules)
        # each rule's DFA numbers its table from the rule's first frame (`compact(base)`), which the
        # C machine holds and checks in place: no copy (copying was most of this set-up)
        core = _machine.Machine([rule.dfa for rule in automaton.rules], keep)
        self.added: dict[int, RuleDFA] = {}  # the rules built at run time, by index
        self._failed: dict[int, StrictgenError] = {}  # the rules whose build failed, with the error
        # a grammar with deferred rules or families: built when the machine first needs them (lazy_rules.py)
        self._core = core if automaton.lazy is None else ResolvingCore(core, weakref.WeakMethod(self._add_lazy_rule))
        self.start = self._core.start_state()
        self.accepting = _Accepting(self._core)
        self._raw = core  # what the C trie walk reads (`walk_source`)
        self.step_bytes = self._core.step_bytes

    def walk_source(self) -> tuple:
        """(the C machine, the builder of the lazy rules it asks for or None): the first two
        arguments of the C trie walks (`_walk.c`), which read the rows in place, compute the
        missing ones, and build a rule they meet and go on where they were."""
        return self._raw, None if self.automaton.lazy is None else self._add_lazy_rule

    def _add_lazy_rule(self, index: int) -> None:
        """Build lazy rule `index` and append it to the C machine (once, whichever thread asks)."""
        lazy = self.automaton.lazy
        with lazy.lock:
            if index in self.added:
                return
            if index in self._failed:  # a rule that cannot be built fails at once the next time, not after its time limit again
                raise self._failed[index]
            core = self._core._core
            try:
                with deadline.compile_deadline(lazy.timeout), user_errors("grammar"), collector_paused():  # as at compile time
                    rule = RuleDFA(*lazy.dfa(index))
            except StrictgenError as exc:
                self._failed[index] = exc
                raise
            core.add_rule(index, rule.dfa, not self.merge_frames or keeps_identity(rule.name))
            self.added[index] = rule

    def all_rules(self) -> list[RuleDFA] | None:
        """Every rule's automaton by index, the rules the compile deferred built now (under the
        compile's limits, as when a document reaches them); None where the grammar has families,
        whose members cannot all be built. For analyses of the whole grammar (runtime/derivations.py)."""
        rules = list(self.automaton.rules)
        lazy = self.automaton.lazy
        if lazy is None:
            return rules
        deferred = range(len(rules), len(lazy.names))
        for index in deferred:
            self._add_lazy_rule(index)
        return None if lazy.calls.lazy else rules + [self.added[i] for i in deferred]

    @property
    def tables(self) -> tuple[bytes, bytes]:
        """(index, rows) as raw int32 bytes, copies of what is computed now: each state's row
        number (-1 while not computed) and the rows, 256 next states each."""
        return self._core.tables

    @property
    def num_states(self) -> int:
        return self._core.num_states

    def stacks(self, state: int) -> tuple[int, ...]:
        """The sorted stacks (node ids; EMPTY_STACK when the root may have finished) of `state`."""
        return self._core.stacks(state)

    def sub_state(self, state: int, keep) -> int:
        """The state of those stacks of `state` whose flag in `keep` (one per stack of `stacks`)
        is true, interned; DEAD if none. The matcher drops the parses a uniqueItems repeat rules
        out this way (compile/unique_items.py)."""
        return self._core.sub_state(state, bytes(bool(k) for k in keep))

    def node(self, node: int) -> tuple[int, int, int]:
        """(parent node, rule, DFA state) of a stack other than EMPTY_STACK."""
        return self._core.node(node)

    def utf8_target(self, state: int) -> int | None:
        """The one state every valid multi-byte UTF-8 character leads to from `state`, or None
        (string bodies loop on every character; a key's first character enters one). Remembered
        by the machine, and found by stepping only lead and continuation bytes: no row computed."""
        return self._core.utf8_target(state)

    def utf8_chain(self, chain: list[int]) -> int:
        """How many places j in a row, from the first, every multi-byte character steps chain[j]
        to chain[j + 1]: `utf8_target` of a counter's places (`chain`) in one call, which a
        counted string's first mask asks of up to ~36 places (a Python call each was ~220 us)."""
        return self._core.utf8_chain(chain)

    def widest(self, state: int, limit: int) -> list[tuple[int, int]]:
        """The live targets of `state`'s row as (target, number of bytes), most bytes first."""
        return self._core.widest(state, limit)

    def group(self, state: int, target: int) -> bytes:
        """The bytes leading from `state` to `target` (a string body's loop bytes: group(t, t))."""
        return self._core.group(state, target)

    def chain(self, state: int, loop: bytes, limit: int) -> list[int] | None:
        """The states that the bytes of `loop` step along together from `state` (a `maxLength`
        counter), at most `limit` steps, until all are dead; None if they part ways first. Only
        the loop bytes are stepped: no row is computed (the walks compute those they visit)."""
        return self._core.chain(state, loop, limit)

    def compute_row(self, state: int) -> np.ndarray:
        """The transition row of `state` (computed once): 256 next states, read-only."""
        return np.frombuffer(self._core.row(state), dtype=np.int32)

    # step_bytes(state, data): the state after `data`, or DEAD (the C method, set in __init__)

    def step(self, state: int, byte: int) -> int:
        return self._core.step_bytes(state, bytes((byte,)))

    def forced_bytes(self, state: int, limit: int = 4096) -> bytes:
        """Bytes the grammar forces from `state`, up to the spelling of characters: while it
        cannot end here and exactly one byte continues, or only the spelling of the next
        character is open (raw or escaped, to the same state; forced.py) and it is taken raw."""
        from .forced import forced_text

        return forced_text(self, state, limit)

    def build_rule(self, index: int) -> None:
        """Build deferred rule `index` now, exactly as the first walk entering it would (once, under
        the grammar's lock and the compile's limits; a failure is kept and raised again to the
        walk that enters it): what builds rules ahead of the fills (runtime/prefetch.py) calls."""
        self._add_lazy_rule(index)


def _steps_per_byte(rule, nullable: set[int]) -> int | None:
    """At most how many refinement steps (bytes, calls) a frame of `rule` takes per byte of input:
    1 when every callee reads a byte; 2 when calls of rules that may read nothing (whitespace) never
    follow each other without a byte between; None otherwise (the rule keeps exact states)."""
    # the rules that get here are the few with long counters, whose call edges run to thousands
    # (as Python lists they cost ~140 us a rule); the callees they may skip (rule_facts.callees_of)
    # are few (none for half of them: done), so each is compared in numpy instead of np.isin
    # (~115 us a rule with it, the bench's 11 rules)
    skipping = callees_of(rule.dfa) & nullable
    if not skipping:
        return 1
    start, callee, ret = (np.frombuffer(a, dtype=np.int32) for a in rule.dfa.call_arrays())
    skips = np.flatnonzero(np.logical_or.reduce([callee == c for c in skipping]))
    may_skip = np.zeros(rule.num_states, dtype=bool)  # states with a call that may read nothing
    may_skip[np.searchsorted(start, skips, side="right") - 1] = True
    return None if may_skip[ret[skips]].any() else 2


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
        self.horizon = horizon
        automaton = machine.automaton
        self._nullable = nullable_rules(automaton.rules) if automaton.nullable is None else automaton.nullable
        # static rules built at run time get classes once built; families' members keep exact states
        self._static = len(automaton.rules) if automaton.lazy is None else len(automaton.lazy.names)
        self.classes: dict[int, np.ndarray | None] = {}
        self.active = False
        self._add(enumerate(automaton.rules))
        self._added = 0
        self._lock = threading.Lock()  # two fills of the grammar find a new rule's classes once
        self._canonical: dict[int, int] = {EMPTY_STACK: EMPTY_STACK}
        self._ids: dict[tuple[int, int, int], int] = {}

    def sync(self) -> None:
        """Find the classes of the rules built since the last call (a rule is built before any
        state has its frames, so keys made before stay right)."""
        added = self.machine.added
        if len(added) == self._added:
            return
        with self._lock:
            done = self._added
            if len(added) != done:
                self._add([(r, added[r]) for r in list(added)[done:]])
                self._added = len(added)

    def _add(self, rules) -> None:
        for r, dfa in rules:
            if r < self._static:
                # the fewest steps `horizon` bytes take is horizon + 1: a rule apart within those
                # needs no classes, whatever its steps per byte (most rules; reading the call
                # edges for the steps cost more than the rest of this)
                steps = None if apart_within(dfa, self.horizon + 1) else _steps_per_byte(dfa, self._nullable)
                self.classes[r] = got = None if steps is None else horizon_classes(dfa, steps * self.horizon + 1)
                self.active = self.active or got is not None

    def key(self, state: int):
        """A hashable key for `state` (the state itself when no rule merges anything).

        Called on every mask miss, so the common cases cost no Python call: no rule built since
        (most grammars merge nothing: 90% of DeepSeek's first-pass keys), and every stack keyed
        before (one C-level dict read per stack)."""
        if len(self.machine.added) != self._added:
            self.sync()
        if not self.active:
            return state
        stacks = self.machine.stacks(state)
        try:
            return frozenset(map(self._canonical.__getitem__, stacks))
        except KeyError:
            return frozenset(self._node(n) for n in stacks)

    def _node(self, node: int) -> int:
        """The canonical id of stack `node`, its ancestors keyed first (iterative: stacks of
        recursive grammars run deep; each node read once from the machine)."""
        canonical, node_of = self._canonical, self.machine.node
        path = []
        while node not in canonical:
            parent, rule, dfa_state = node_of(node)
            path.append((node, rule, dfa_state))
            node = parent
        got = canonical[node]
        for n, rule, dfa_state in reversed(path):
            classes = self.classes.get(rule)
            got = self._ids.setdefault((got, rule, dfa_state if classes is None else int(classes[dfa_state])), len(self._ids) + 1)
            canonical[n] = got
        return got
