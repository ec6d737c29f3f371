"""Grammar IR → one byte-level DFA per called rule, with call edges where the grammar recurses.

Rules that are not part of a reference cycle are inlined where they are used, so a grammar without
recursion becomes a single DFA. Rules on a cycle stay rules: their DFAs have *call edges*
(callee, return state) that the pushdown machine (`machine.py`) follows with a stack. Each DFA is
trimmed so that every state can still reach an accepting state: that is what makes "the mask is
never a dead end" hold by construction. Left recursion is refused here with a clear error.

The automaton work (subset construction, trimming, minimisation, products of intersections) is
the regular-language core's (`strictgen.regular`, in C); the IR → NFA lowering is the grammar
layer's (`grammar.automata`). This module decides which rules stay calls and checks recursion.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from strictgen import deadline, regular
from strictgen.errors import StrictgenError
from strictgen.grammar.automata import MAX_DFA_STATES, MAX_NFA_STATES, DfaCache, NFABuilder, shared_nodes
from strictgen.grammar.build_memo import BuildMemo
from strictgen.grammar.ir import Grammar, post_order_and_cycles, recursive_rules, rule_references
from strictgen.grammar.lowering import ProgramTooLong
from strictgen.grammar.schema.unique import UNIQUE_MARK
from strictgen.lru import BoundedLRU

from . import rule_facts
from .lazy_rules import CallIndex, LazyRules
from .rule_facts import LeftRecursionError

__all__ = ["MAX_DFA_STATES", "MAX_NFA_STATES", "CompiledAutomaton", "LeftRecursionError", "RuleDFA", "apart_within", "compile_automaton", "horizon_classes", "minimal_rule", "nullable_rules", "recursive_rules"]

MAX_MINIMIZE_STATES = 50_000  # horizon classes are looked for in rule DFAs up to this size
# Determinised states of called rules a compile builds ahead (after the root and what it must),
# in the order the root reaches them; the rest are built when the machine first enters them.
# About one big rule's worth (BIG_RULE, 4,000 NFA states): a compile that needs no more than this
# builds everything (its masks stay even); a big schema's compile stops here. Measured over the
# bench (/work/notes s10): 0 halves the tail's compile but doubles the first-pass fill mean; 20,000
# keeps the fills and the tail alike; 4,000 keeps compile p50 and most fills, and halves p99.
EAGER_STATES = 4_000
# A rule built ahead is lowered first; one whose NFA has more states than this is not determinised
# then (its NFA is kept for its first entry) and ends the building ahead, unless the machine's
# start enters it (its set-up would build it at once: clang-format's 31,000-state rule). The
# budget above is checked before a rule, so one rule could overshoot it many times over
# (maskbench-dev's o74598: an 81,000-state rule, two fifths of its compile, built after 800
# states were spent; o48661's 33,000, o3626's 40,000). 16,000 (4 x EAGER_STATES) defers 3 of the
# bench's rules built ahead (NFAs of 18,700-44,800 states) and keeps the next (13,600: kb_220's
# 7,400-state rule).
AHEAD_NFA_STATES = 4 * EAGER_STATES
# Such a rule's NFA cost its whole Python walk and C lowering at compile time (o74598's: a
# 74,500-op program, ~26 ms of walk and 18 ms of lowering). A rule whose program passes this many
# ops is left before its walk ends (lowering.ProgramTooLong), and lowered at its first entry.
# Programs of big rules hold 0.4-0.6 ops per NFA state (up to 3 in small ones: allany9's
# byte classes), so past 2 x AHEAD_NFA_STATES ops a rule is beyond the states' bound or near it.
AHEAD_PROGRAM_OPS = 2 * AHEAD_NFA_STATES


@dataclass(eq=False)
class RuleDFA:
    """A deterministic automaton over bytes plus call edges (a core `regular.DFA`). State 0 is the start."""

    name: str
    dfa: regular.DFA
    splits: regular.Splits | None = None  # regular.minimal_with_splits's history of classes (None: unknown)

    @property
    def num_states(self) -> int:
        return self.dfa.num_states

    @property
    def last_split(self) -> int:
        """The last of Moore's rounds that split a class (from `splits`, which must be known)."""
        return self.splits.last

    @cached_property
    def accepting(self) -> list[bool]:
        return [bool(a) for a in self.dfa.accepting()]

    @cached_property
    def calls(self) -> list[list[tuple[int, int]]]:
        """state → [(callee rule index, return state)], sorted by callee."""
        start, callee, ret = (np.frombuffer(a, dtype=np.int32).tolist() for a in self.dfa.call_arrays())
        pairs = list(zip(callee, ret))
        return [pairs[start[s] : start[s + 1]] for s in range(self.num_states)]

    @property
    def byte_groups(self) -> list[list[tuple[int, bytes]]]:
        """state → [(target, the bytes going there)] (for tests and inspection)."""
        return [self.dfa.groups(s) for s in range(self.num_states)]


@dataclass
class CompiledAutomaton:
    """The DFAs of the root and of the recursive rules built at compile time; rule 0 is the root.
    `lazy`: how to build the rules numbered from len(rules) on, the deferred rules and then the
    members of families met (None: there are none)."""

    rules: list[RuleDFA]
    lazy: LazyRules | None = None
    nullable: set[int] | None = None  # the static rules (built or deferred) that may read nothing


def nullable_rules(rules: list[RuleDFA]) -> set[int]:
    """The rules (all built) that can finish without reading a byte (through calls of such rules)."""
    dfas = [r.dfa for r in rules]
    return rule_facts.nullable_rules(dfas, [None] * len(dfas), None, set(range(len(dfas))))


def horizon_classes(rule: RuleDFA, horizon: int) -> np.ndarray | None:
    """Classes of the states that no input of at most `horizon` steps (bytes or calls) tells
    apart, or None when that is just every state on its own.

    A minimised DFA still keeps the states of a long counter apart (`maxLength: 4096` counts to
    4096), yet two of them with more than `horizon` steps left agree on everything a token can
    see: token masks can then be shared between them (see machine.HorizonKeys). Moore's rounds
    from the partition (accepting, callees): after r rounds, states are apart exactly when some
    input of at most r steps tells them apart. A rule minimised by those rounds (`splits`) has
    them all already; most rules are told apart well within a token's horizon and cost nothing
    here (a refinement of their own took 5% of the bench's first-pass CPU)."""
    n = rule.num_states
    if n > MAX_MINIMIZE_STATES or apart_within(rule, horizon):
        return None
    if rule.splits is None:
        raw, _ = regular.refine(rule.dfa, horizon)
        classes = np.frombuffer(raw, dtype=np.int32).astype(np.int64)
        return None if int(classes.max()) + 1 == n else classes
    born, parent = (np.frombuffer(a, dtype=np.int32) for a in (rule.splits.born, rule.splits.parent))
    classes = np.arange(n, dtype=np.int64)  # each state's class after `horizon` rounds: its first ancestor split off by then
    late = born[classes] > horizon
    while late.any():
        classes[late] = parent[classes[late]]
        late = born[classes] > horizon
    return classes


def apart_within(rule: RuleDFA, horizon: int) -> bool:
    """Whether every state of the minimal `rule` is known, without refining, to be told apart from
    every other by some input of at most `horizon` steps: a minimal DFA of n states is told apart
    within n - 1 rounds, and a rule minimised by Moore's rounds knows the last round that split
    anything. True for most rules (then their horizon classes are every state alone); False also
    where only a refinement would tell."""
    if rule.num_states <= horizon + 1:
        return True
    return rule.splits is not None and rule.last_split <= horizon


def compile_automaton(grammar: Grammar, build_ahead: int | None = EAGER_STATES) -> CompiledAutomaton:
    """Build trimmed, minimal DFAs for the root and the recursive rules of `grammar`.

    The root, the rules that unique arrays name and the rules an earlier compile built (kept:
    free now) are built now; then other rules kept as calls, nearest the root first, until their
    determinised states pass `build_ahead` (None: all of them), the kept ones counted where that
    order reaches them, as a fresh compile counts them. The rest are built the first time
    the machine enters them (lazy_rules.py), so a schema's hundred object rules cost the compile,
    which is on the first token's path, only a share, and rules a document never visits cost
    nothing. What the compile must know of those rules (productive, nullable, left calls) comes
    from their IR (rule_facts.py), which is exact for those questions."""
    defer = build_ahead is not None
    if grammar.root not in grammar.rules:
        raise StrictgenError(f"the grammar has no root rule {grammar.root!r}")
    recursive = recursive_rules(grammar)
    reach = {n: _reach(grammar, n, recursive) for n in [grammar.root, *recursive]}
    calls = {n: got[1] for n, got in reach.items()}
    order = _reached_first(grammar.root, calls)
    known = _rule_dfas.kept_ids() if defer else frozenset()
    # built first: what unique arrays read (their rules' names) and what a compile before built
    first = [n for n in order if UNIQUE_MARK in n or id(grammar.rules[n]) in known]
    names = [grammar.root] + first + [n for n in order if n not in first]
    called = CallIndex({n: i for i, n in enumerate(names) if n in recursive}, len(names))  # numbers Lazy nodes too
    shared = shared_nodes(grammar.rules.values())
    memo = BuildMemo()  # pieces built once for all the rules, deferred ones too
    lowered: dict[str, _Lowered] = {}  # rules lowered ahead but too big to determinise then: their NFAs

    def build(name: str, max_nfa: int | None = None, reused: set[int] | None = None) -> regular.DFA | _Lowered | None:
        """Rule `name`'s automaton (`_rule_dfa`): for the compile, and for LazyRules at a rule's first entry."""
        return _rule_dfa(grammar, name, called, shared, memo, reach[name], lowered.pop(name, None), max_nfa, reused)

    reused: set[int] = set()  # ids of the DFAs built above that came from the cache of rule automata
    built: list[regular.DFA | None] = [build(n, reused=reused) for n in names[: 1 + len(first)]]
    at_start = _called_at_start(built)
    # a rule built first because an earlier compile built it counts where the order reaches it, as
    # in a fresh compile (so those built after it are the fresh compile's), or at once if it was
    # not found in the cache after all (another grammar numbered its callees otherwise): its
    # build cost what it always cost
    known = [(n, d) for n, d in zip(names[1:], built[1:]) if UNIQUE_MARK not in n]
    spent = sum(d.num_states for _, d in known if id(d) not in reused)
    place = {n: i for i, n in enumerate(order)}
    found = sorted((place[n], d.num_states) for n, d in known if id(d) in reused)[::-1]  # the nearest last
    for name in names[len(built):]:  # then others, in the order the root reaches them, while the budget lasts
        while found and found[-1][0] < place[name]:
            spent += found.pop()[1]
        if defer and spent >= build_ahead:
            break
        index = len(built)  # a rule the machine's start enters is built now however big (its set-up would build it)
        dfa = build(name, AHEAD_NFA_STATES if defer and index not in at_start else None, reused)
        if dfa is None or isinstance(dfa, _Lowered):  # too big to build now: it and the rules after it wait (those built are a prefix of names)
            if dfa is not None:
                lowered[name] = dfa
            break
        built.append(dfa)
        spent += dfa.num_states
        if index in at_start:
            at_start = _called_at_start(built)
    built += [None] * (len(names) - len(built))
    bodies = [None if dfa is not None else grammar.rules[n] for n, dfa in zip(names, built)]
    facts = rule_facts.IrFacts(grammar.rules, called, lambda e: NFABuilder(grammar.rules, called, shared, memo).regular_dfa(e).can_finish())
    callees_first = _callees_first(names, calls, called)
    productive = rule_facts.productive_rules(built, bodies, facts, len(called.lazy), callees_first)
    if 0 not in productive:
        raise EmptyLanguageError("the grammar accepts no string at all")
    flags = bytes(r in productive for r in range(len(names)))
    productive_flags = flags + b"\x01" * len(called.lazy)
    rules = [RuleDFA(name, *minimal_rule(dfa, productive_flags, id(dfa) in reused)) for name, dfa in zip(names, built) if dfa is not None]
    trimmed = [r.dfa for r in rules] + [None] * (len(names) - len(rules))
    nullable = rule_facts.check_left_recursion(names, trimmed, bodies, facts, productive, callees_first)
    lazy = LazyRules(grammar.rules, called, flags, names, build, deadline.current_limit()) if len(rules) < len(names) or called.lazy else None
    return CompiledAutomaton(rules, lazy, nullable)


@dataclass(frozen=True)
class _Lowered:
    """A rule's NFA (from `start` to `final`), lowered but not determinised yet."""

    nfa: regular.NFA
    start: int
    final: int


def _rule_dfa(grammar: Grammar, name: str, called: CallIndex, shared: set[int], memo: BuildMemo, reach: tuple[list[str], set[str]],
              lowered: _Lowered | None = None, max_nfa: int | None = None, reused: set[int] | None = None) -> regular.DFA | _Lowered | None:
    """Rule `name`'s determinised automaton (from the cache shared by compiles when its key is
    there: not for the root, not once the grammar has met a family); `reach`: its `_reach`;
    `lowered`: its NFA, lowered before. With `max_nfa`, a rule whose NFA has more states is
    returned lowered only (`_Lowered`), for the caller to determinise later or never, and one
    whose program passes AHEAD_PROGRAM_OPS ops is not even lowered (None). The id of an automaton
    found in the cache goes into `reused`, when given."""
    bodies, keep = _rule_bodies(grammar, reach) if name != grammar.root else (None, None)
    got = None if bodies is None else _cached_rule(bodies, keep, called)
    if got is not None:
        if reused is not None:
            reused.add(id(got))
        return got
    if lowered is None:
        builder = NFABuilder(grammar.rules, called, shared, memo)
        start, final = builder.new(), builder.new()
        try:
            builder.build(grammar.rules[name], start, final, None if max_nfa is None else AHEAD_PROGRAM_OPS)
        except ProgramTooLong:
            return None
        lowered = _Lowered(builder.nfa, start, final)
        if max_nfa is not None and lowered.nfa.num_states > max_nfa:
            return lowered
    dfa = regular.determinize(lowered.nfa, lowered.start, lowered.final, MAX_DFA_STATES, f"grammar too large: more than {MAX_DFA_STATES} DFA states in rule {name!r}")
    if bodies is not None and not called.lazy:  # run-time rules are numbered as met: nothing kept once one is
        _keep_rule(bodies, keep, reach[1], called, dfa)
    return dfa


def _called_at_start(built: list[regular.DFA]) -> set[int]:
    """The rules the machine enters before reading a byte, as far as the rules built so far tell:
    those the root's start state calls, and the calls of their start states in turn."""
    found: set[int] = set()
    work = [0]
    while work:
        for callee, _ in built[work.pop()].calls(0):
            if callee not in found:
                found.add(callee)
                if callee < len(built):
                    work.append(callee)
    return found


def _reached_first(root: str, calls: dict[str, set[str]]) -> list[str]:
    """The rules kept as calls, breadth-first from the root's calls (the rules a document meets
    soonest come first), then those the root never reaches; sorted within each step."""
    order, seen, frontier = [], {root}, [root]
    while frontier:
        step = sorted({c for r in frontier for c in calls[r]} - seen)
        seen.update(step)
        order += step
        frontier = step
    return order + sorted(set(calls) - seen)


def _callees_first(names: list[str], calls: dict[str, set[str]], called: CallIndex) -> list[int]:
    """The rules' indices, each after the rules it calls (but on cycles): `post_order`'s order, from
    the graph walk in C that also finds the cycles (post_order's walk in Python was 1.4 ms of the
    bench's 79 compiles, this 0.9: most of what is left is making the graph)."""
    return post_order_and_cycles({i: [called[c] for c in calls[n]] for i, n in enumerate(names)})[0]


# Rules that recur across grammars as the same objects (a schema grammar's whitespace and
# any-value rules, a format's or an enum's rule: json_schema builds them once per process) keep
# their determinised automata here, by the identity of the bodies they are built from and the
# numbers of the rules they call (a DFA's call edges name callees by number); only of those its
# edges name, so that a shared rule found at another place in another grammar still hits.
_rule_dfas = DfaCache(256)
# (inlined rule names, ids of their bodies) -> the names of the rules their automaton calls: what
# a lookup of `_rule_dfas` needs to form its key (`_cached_rule`). Names only, no bodies: held IR
# is heap that every full collection walks (the bodies are held once, by `_rule_dfas`' entry, and
# a reused id finds an entry whose bodies are not these, which `_cached_rule` turns away).
_callees_used: BoundedLRU[tuple] = BoundedLRU(256)


# The trimmed, minimal DFAs of the rule automata found in the cache above (a schema grammar's
# any-value and whitespace rules: every compile that calls them minimised them again, ~85 µs of a
# median bench schema's 1.6-2.4 ms), by the automaton's identity and what trimming reads of the
# rules' productive flags. Bounded in the cells of the tables an entry holds. Entries are read
# without aging them (few are put: a rule reused across compiles, each once per flags of its
# callees). A rule DFA of fewer than SMALL_RULE states costs less to minimise than to look up
# (the JSON whitespace rule's 23 states: 4 us, the lookup 6).
SMALL_RULE = 64
_minimal = BoundedLRU(256, 1 << 22, lambda entry: entry[1].num_states * entry[1].num_classes + (entry[0].num_states * entry[0].num_classes if entry[0] is not entry[1] else 0))


def minimal_rule(dfa: regular.DFA, productive: bytes, reused: bool = False) -> tuple[regular.DFA, regular.Splits | None]:
    """`regular.minimal_with_splits(dfa, productive)`; with `reused` (`dfa` came from the cache of
    rule automata, so compiles share it) kept, and read again by a later compile that minimises
    this very DFA under the same flags for the rules it calls (all that trimming reads of them; a
    callee past `productive` is unproductive, as the core reads it). DFAs never change: the same
    objects are what a fresh minimisation would give."""
    if not reused or dfa.num_states < SMALL_RULE:
        return regular.minimal_with_splits(dfa, productive)
    callees = sorted(rule_facts.callees_of(dfa))
    key = (id(dfa), bytes(productive[c] if c < len(productive) else 0 for c in callees))
    got = _minimal.peek(key)  # the entry holds `dfa`: its id is that DFA's while the entry lives
    if got is not None:
        return got[1], got[2]
    minimal, splits = regular.minimal_with_splits(dfa, productive)
    _minimal.put(key, (dfa, minimal, splits))
    return minimal, splits


def _rule_bodies(grammar: Grammar, reach: tuple[list[str], set[str]]) -> tuple[tuple, tuple]:
    """(the key of what a rule's automaton is built from, the bodies it stands for), from its
    `_reach`: its body and the bodies of the rules it inlines (they are part of it), by identity.
    The bodies are kept with the automaton, so an id in a key is never another object's."""
    inlined = reach[0]
    keep = tuple(grammar.rules[r] for r in inlined)
    return (tuple(inlined), tuple(id(b) for b in keep)), keep


def _cached_rule(bodies: tuple, keep: tuple, called) -> regular.DFA | None:
    """The automaton of the rule built from `bodies` (`_rule_bodies`) kept by an earlier build,
    when the rules it calls have the same numbers in `called` as they had there (its call edges
    name them by number), or None."""
    used = _callees_used.peek(bodies)
    if used is None or any(c not in called for c in used):
        return None
    found = _rule_dfas.get_kept((*bodies, tuple((c, called[c]) for c in used)))
    if found is None or len(found[1]) != len(keep) or not all(a is b for a, b in zip(found[1], keep)):
        return None
    return found[0]


def _keep_rule(bodies: tuple, keep: tuple, calls: set[str], called, dfa: regular.DFA) -> None:
    """Keep `dfa`, the automaton of the rule built from `bodies`, keyed by the numbers of the
    rules its call edges name. Only those: a rule it refers to without ever calling it (the
    unproductive self-reference of `ir.called_body`, which makes a shared body a rule kept as a
    call) leaves no edge, so its number, which moves with the rule's place in the grammar, does
    not change the automaton and is not part of the key."""
    numbers = rule_facts.callees_of(dfa)
    used = tuple(sorted(c for c in calls if called[c] in numbers))
    _callees_used.put(bodies, used)
    _rule_dfas.put((*bodies, tuple((c, called[c]) for c in used)), dfa, keep)


def _reach(grammar: Grammar, name: str, called) -> tuple[list[str], set[str]]:
    """(the rules `name` inlines, itself included, sorted; the rules kept as calls (`called`) it
    refers to)."""
    rules = grammar.rules
    reach, work = {name}, [name]
    calls: set[str] = set()
    while work:
        for ref in rule_references(rules[work.pop()]):
            if ref in called:
                calls.add(ref)
            elif ref not in reach and ref in rules:
                reach.add(ref)
                work.append(ref)
    return sorted(reach), calls


class EmptyLanguageError(StrictgenError):
    """The grammar's root derives no string at all."""
