"""Grammar IR → one byte-level DFA per called rule, with call edges where the grammar recurses.

Rules that are not part of a reference cycle are inlined where they are used, so a grammar without
recursion becomes a single DFA. Rules on a cycle stay rules: their DFAs have *call edges*
(callee, return state) that the pushdown machine (`machine.py`) follows with a stack. Each DFA is
trimmed so that every state can still reach an accepting state: that is what makes "the mask is
never a dead end" hold by construction. Left recursion is refused here with a clear error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from strictgen import deadline
from strictgen.errors import GrammarSyntaxError, GrammarTooLargeError, StrictgenError
from strictgen.grammar.ir import Alt, ByteSet, CharSet, Difference, Expr, Grammar, Intersect, Literal, Repeat, RuleRef, Seq, Spelled, recursive_rules

from .json_spelling import spell_table
from .utf8 import utf8_sequences

MAX_NFA_STATES = 400_000
MAX_DFA_STATES = 200_000
MAX_MINIMIZE_STATES = 50_000
MAX_MINIMIZE_ROUNDS = 48
_CALL_WEIGHTS = np.random.default_rng(54321).integers(1, 2**62, size=3, dtype=np.int64) | 1
_HASH_WEIGHTS = np.random.default_rng(12345).integers(1, 2**62, size=256, dtype=np.int64) | 1


class LeftRecursionError(GrammarSyntaxError):
    """The grammar calls a rule from itself before consuming any byte."""


@dataclass
class RuleDFA:
    """A deterministic automaton over bytes plus call edges. State 0 is the start."""

    name: str
    accepting: list[bool]
    byte_groups: list[list[tuple[int, tuple[int, ...]]]]  # state → [(target, bytes going there)]
    calls: list[list[tuple[int, int]]]  # state → [(callee rule index, return state)]
    refine_rounds: int | None = None  # minimal, and partition refinement tells all states apart in this many rounds

    @property
    def num_states(self) -> int:
        return len(self.accepting)


@dataclass
class CompiledAutomaton:
    """The DFAs of the root and of every recursive rule; rule 0 is the root."""

    rules: list[RuleDFA]


# ---- NFA construction -----------------------------------------------------------------------


class _NFA:
    """Thompson-style NFA: byte-range edges, call edges and epsilon edges."""

    def __init__(self) -> None:
        self.byte_edges: list[list[tuple[int, int, int]]] = []  # (lo, hi, target)
        self.call_edges: list[list[tuple[int, int]]] = []  # (callee, target)
        self.eps: list[list[int]] = []

    def new(self) -> int:
        if not len(self.eps) & 1023:
            deadline.check()
        if len(self.eps) >= MAX_NFA_STATES:
            raise GrammarTooLargeError(f"grammar too large: more than {MAX_NFA_STATES} automaton states")
        self.byte_edges.append([])
        self.call_edges.append([])
        self.eps.append([])
        return len(self.eps) - 1


def _shared_nodes(grammar: Grammar) -> set[int]:
    """ids of composite expressions used in more than one place (the IR may be a DAG)."""
    parents: dict[int, int] = {}
    work: list[Expr] = list(grammar.rules.values())
    while work:
        e = work.pop()
        if isinstance(e, (Seq, Alt, Intersect)):
            children = e.items
        elif isinstance(e, (Repeat, Spelled)):
            children = (e.item,)
        elif isinstance(e, Difference):
            children = (e.base, e.minus)
        else:
            continue
        for child in children:
            seen = parents.get(id(child), 0)
            parents[id(child)] = seen + 1
            if not seen:
                work.append(child)
    return {k for k, n in parents.items() if n > 1}


class _Builder:
    def __init__(self, grammar: Grammar, called: dict[str, int], shared: set[int], regular: dict[int, "_Dense"]):
        self.grammar = grammar
        self.called = called  # rule name → index, for rules kept as calls
        self.nfa = _NFA()
        self._charset_cache: dict[tuple, list] = {}
        self._shared = shared
        self._regular = regular  # id(Intersect/Difference node) → its DFA, shared by the whole compile
        # a shared sub-expression built towards the same end state is built once: its fragment's
        # private entry state is reused, which keeps DAG-shaped IR (e.g. from JSON Schema) linear
        self._fragments: dict[tuple[int, int], int] = {}

    def build(self, expr: Expr, start: int, end: int, inlining: tuple[str, ...] = ()) -> None:
        """Add edges so that paths start → end spell exactly the strings of `expr`."""
        nfa = self.nfa
        if id(expr) in self._shared:
            key = (id(expr), end)
            entry = self._fragments.get(key)
            if entry is None:
                entry = self._fragments[key] = nfa.new()
                self._build(expr, entry, end, inlining)
            nfa.eps[start].append(entry)
            return
        self._build(expr, start, end, inlining)

    def _build(self, expr: Expr, start: int, end: int, inlining: tuple[str, ...]) -> None:
        nfa = self.nfa
        if isinstance(expr, Literal):
            cur = start
            for i, b in enumerate(expr.data):
                nxt = end if i == len(expr.data) - 1 else nfa.new()
                nfa.byte_edges[cur].append((b, b, nxt))
                cur = nxt
            if not expr.data:
                nfa.eps[start].append(end)
        elif isinstance(expr, ByteSet):
            for lo, hi in expr.ranges:
                nfa.byte_edges[start].append((lo, hi, end))
        elif isinstance(expr, CharSet):
            self._build_charset(expr, start, end)
        elif isinstance(expr, Seq):
            if not expr.items:
                nfa.eps[start].append(end)
            cur = start
            for i, item in enumerate(expr.items):
                nxt = end if i == len(expr.items) - 1 else nfa.new()
                self.build(item, cur, nxt, inlining)
                cur = nxt
        elif isinstance(expr, Alt):
            for item in expr.items:
                s = nfa.new()
                nfa.eps[start].append(s)
                self.build(item, s, end, inlining)
        elif isinstance(expr, Repeat):
            self._build_repeat(expr, start, end, inlining)
        elif isinstance(expr, (Intersect, Difference, Spelled)):
            self._embed(self.regular_dfa(expr), start, end)
        elif isinstance(expr, RuleRef):
            if expr.name not in self.grammar.rules:
                raise StrictgenError(f"undefined rule {expr.name!r}")
            if expr.name in self.called:
                nfa.call_edges[start].append((self.called[expr.name], end))
            else:
                if expr.name in inlining:  # cannot happen for non-recursive rules
                    raise StrictgenError(f"rule {expr.name!r} is recursive but was not marked as such")
                self.build(self.grammar.rules[expr.name], start, end, inlining + (expr.name,))
        else:
            raise TypeError(f"not a grammar expression: {expr!r}")

    def regular_dfa(self, expr: Expr) -> "_Dense":
        """A DFA for a regular expression of the IR, Intersect and Difference included (memoised)."""
        got = self._regular.get(id(expr))
        if got is not None:
            return got
        if isinstance(expr, Intersect):
            parts = [self.regular_dfa(item) for item in expr.items]
            got = parts[0]
            for part in parts[1:]:
                got = _product(got, part, lambda a, b: a and b)
        elif isinstance(expr, Difference):
            got = _product(self.regular_dfa(expr.base), self.regular_dfa(expr.minus), lambda a, b: a and not b)
        elif isinstance(expr, Spelled):
            raw = self.regular_dfa(expr.item)
            got = _Dense(*spell_table(raw.rows, raw.accepting, MAX_DFA_STATES))
        else:
            sub = _Builder(self.grammar, {}, self._shared, self._regular)
            start, final = sub.nfa.new(), sub.nfa.new()
            try:
                sub.build(expr, start, final, ())
            except StrictgenError as exc:
                if "recursive" in str(exc):
                    raise StrictgenError("an intersection or difference may only combine regular languages, not recursive rules") from exc
                raise
            got = _dense(_minimize(_determinize(sub.nfa, start, final, "regular")))
        self._regular[id(expr)] = got
        return got

    def _embed(self, table: "_Dense", start: int, end: int) -> None:
        """Copy a dense DFA into the NFA between start and end."""
        nfa = self.nfa
        states = [nfa.new() for _ in range(len(table.accepting))]
        nfa.eps[start].append(states[0])
        for s, row in enumerate(table.rows):
            if table.accepting[s]:
                nfa.eps[states[s]].append(end)
            lo = 0
            for b in range(1, 257):  # runs of equal targets become byte ranges
                if b == 256 or row[b] != row[lo]:
                    if row[lo] >= 0:
                        nfa.byte_edges[states[s]].append((lo, b - 1, states[row[lo]]))
                    lo = b

    def _build_repeat(self, expr: Repeat, start: int, end: int, inlining: tuple[str, ...]) -> None:
        nfa = self.nfa
        cur = start
        for _ in range(expr.min):
            nxt = nfa.new()
            self.build(expr.item, cur, nxt, inlining)
            cur = nxt
        if expr.max is None:
            # the item runs from the loop state back to itself, so that "after k ≥ 1 items" and
            # "before the first" are one DFA state: a true self-loop, which masks exploit
            loop = nfa.new()
            nfa.eps[cur].append(loop)
            self.build(expr.item, loop, loop, inlining)
            nfa.eps[loop].append(end)
        else:
            for _ in range(expr.max - expr.min):
                nxt = nfa.new()
                nfa.eps[cur].append(end)
                self.build(expr.item, cur, nxt, inlining)
                cur = nxt
            nfa.eps[cur].append(end)

    def _build_charset(self, expr: CharSet, start: int, end: int) -> None:
        """UTF-8 sequences for the ranges, sharing states by common leading byte ranges."""
        seqs = self._charset_cache.get(expr.ranges)
        if seqs is None:
            seqs = [s for lo, hi in expr.ranges for s in utf8_sequences(lo, hi)]
            self._charset_cache[expr.ranges] = seqs
        nfa = self.nfa
        # a small trie over byte-range prefixes keeps the NFA compact for big classes
        trie: dict[tuple, int] = {}
        for seq in seqs:
            cur = start
            for i, (lo, hi) in enumerate(seq):
                if i == len(seq) - 1:
                    nfa.byte_edges[cur].append((lo, hi, end))
                else:
                    key = seq[: i + 1]
                    nxt = trie.get(key)
                    if nxt is None:
                        nxt = trie[key] = nfa.new()
                        nfa.byte_edges[cur].append((lo, hi, nxt))
                    cur = nxt


# ---- regular operations: intersection and difference by product construction -----------------


@dataclass
class _Dense:
    """A DFA as a dense table: rows[s][b] = next state or -1; state 0 is the start."""

    rows: list[list[int]]
    accepting: list[bool]


def _dense(dfa: RuleDFA) -> _Dense:
    rows = []
    for groups in dfa.byte_groups:
        row = [-1] * 256
        for target, byte_values in groups:
            for b in byte_values:
                row[b] = target
        rows.append(row)
    return _Dense(rows, list(dfa.accepting))


def _product(a: _Dense, b: _Dense, accept) -> _Dense:
    """Pair construction; a missing transition of `b` means b's dead state (needed for difference)."""
    ta = np.asarray(a.rows, dtype=np.int64)
    tb = np.vstack([np.asarray(b.rows, dtype=np.int64), np.full((1, 256), -1, dtype=np.int64)])
    dead_b = len(b.rows)  # b's explicit dead state, so that `a and not b` keeps running
    tb[tb < 0] = dead_b
    width = dead_b + 1
    ids = {0: 0}  # pair code a * width + b → product state
    pairs = [(0, 0)]
    rows: list[list[int]] = []
    accepting: list[bool] = []
    i = 0
    while i < len(pairs):
        sa, sb = pairs[i]
        i += 1
        if not i & 255:
            deadline.check()
        accepting.append(accept(a.accepting[sa], sb != dead_b and b.accepting[sb]))
        na, nb = ta[sa], tb[sb]
        codes = np.where(na >= 0, na * width + nb, -1)
        row = [-1] * 256
        for code in np.unique(codes).tolist():
            if code < 0:
                continue
            got = ids.get(code)
            if got is None:
                if len(pairs) >= MAX_DFA_STATES:
                    raise GrammarTooLargeError(f"grammar too large: an intersection has more than {MAX_DFA_STATES} states")
                got = ids[code] = len(pairs)
                pairs.append(divmod(code, width))
            for bv in np.flatnonzero(codes == code).tolist():
                row[bv] = got
        rows.append(row)
    return _Dense(rows, accepting)


# ---- determinisation ----------------------------------------------------------------------------


def _determinize(nfa: _NFA, start: int, final: int, name: str) -> RuleDFA:
    closure_cache: dict[int, frozenset[int]] = {}

    def closure1(s: int) -> frozenset[int]:
        got = closure_cache.get(s)
        if got is None:
            seen = {s}
            work = [s]
            while work:
                for t in nfa.eps[work.pop()]:
                    if t not in seen:
                        seen.add(t)
                        work.append(t)
            got = closure_cache[s] = frozenset(seen)
        return got

    def closure(states) -> frozenset[int]:
        out: set[int] = set()
        for s in states:
            out |= closure1(s)
        return frozenset(out)

    ids: dict[frozenset[int], int] = {}
    subsets: list[frozenset[int]] = []

    def intern(subset: frozenset[int]) -> int:
        got = ids.get(subset)
        if got is None:
            if len(subsets) >= MAX_DFA_STATES:
                raise GrammarTooLargeError(f"grammar too large: more than {MAX_DFA_STATES} DFA states in rule {name!r}")
            got = ids[subset] = len(subsets)
            subsets.append(subset)
        return got

    intern(closure1(start))
    target_ids: dict[frozenset[int], int] = {}  # NFA targets of one byte interval → DFA state

    def goto(targets: frozenset[int]) -> int:
        got = target_ids.get(targets)
        if got is None:
            got = target_ids[targets] = intern(closure(targets))
        return got

    accepting: list[bool] = []
    byte_groups: list[list[tuple[int, tuple[int, ...]]]] = []
    calls: list[list[tuple[int, int]]] = []
    i = 0
    while i < len(subsets):
        subset = subsets[i]
        i += 1
        if not i & 255:
            deadline.check()
        accepting.append(final in subset)
        groups: dict[int, list[int]] = {}
        # sweep the byte line once: edges open at lo and close after hi; each elementary interval
        # between consecutive boundaries goes to the closure of the edges open over it
        events: dict[int, list[tuple[int, int]]] = {}
        for s in subset:
            for lo, hi, t in nfa.byte_edges[s]:
                events.setdefault(lo, []).append((t, 1))
                events.setdefault(hi + 1, []).append((t, -1))
        if events:
            active: dict[int, int] = {}
            points = sorted(events)
            for a, b in zip(points, points[1:]):
                for t, d in events[a]:
                    n = active.get(t, 0) + d
                    if n:
                        active[t] = n
                    else:
                        del active[t]
                if active:
                    groups.setdefault(goto(frozenset(active)), []).extend(range(a, b))
        byte_groups.append([(t, tuple(bs)) for t, bs in groups.items()])
        call_targets: dict[int, set[int]] = {}
        for s in subset:
            for callee, t in nfa.call_edges[s]:
                call_targets.setdefault(callee, set()).add(t)
        calls.append([(callee, intern(closure(ts))) for callee, ts in sorted(call_targets.items())])
    return RuleDFA(name, accepting, byte_groups, calls)


# ---- trimming and checks --------------------------------------------------------------------------


def _rules_where(rules: list[RuleDFA], holds) -> set[int]:
    """The least set of rules closed under `holds(dfa, rules found so far)` (a fixed point)."""
    found: set[int] = set()
    changed = True
    while changed:
        changed = False
        for r, dfa in enumerate(rules):
            if r not in found and holds(dfa, found):
                found.add(r)
                changed = True
    return found


def _productive_rules(rules: list[RuleDFA]) -> set[int]:
    """Rules that derive at least one finite string."""
    return _rules_where(rules, lambda dfa, productive: _can_finish(dfa, productive)[0])


def nullable_rules(rules: list[RuleDFA]) -> set[int]:
    """The rules that can finish without reading a byte (through calls of such rules)."""
    return _rules_where(rules, _finishes_without_bytes)


def _finishes_without_bytes(dfa: RuleDFA, nullable: set[int]) -> bool:
    seen, work = {0}, [0]
    while work:
        s = work.pop()
        if dfa.accepting[s]:
            return True
        for callee, ret in dfa.calls[s]:
            if callee in nullable and ret not in seen:
                seen.add(ret)
                work.append(ret)
    return False


def _can_finish(dfa: RuleDFA, productive: set[int]) -> list[bool]:
    """For each state: can it reach acceptance through bytes and calls to productive rules?"""
    preds: list[list[int]] = [[] for _ in range(dfa.num_states)]
    for s in range(dfa.num_states):
        for t, _ in dfa.byte_groups[s]:
            preds[t].append(s)
        for callee, t in dfa.calls[s]:
            if callee in productive:
                preds[t].append(s)
    ok = list(dfa.accepting)
    work = [s for s, a in enumerate(ok) if a]
    while work:
        for p in preds[work.pop()]:
            if not ok[p]:
                ok[p] = True
                work.append(p)
    return ok


def _trim(dfa: RuleDFA, productive: set[int]) -> RuleDFA:
    """Drop states that cannot finish and renumber; start stays 0."""
    ok = _can_finish(dfa, productive)
    reach = [False] * dfa.num_states
    reach[0] = True
    order = [0]
    for s in order:
        nexts = [t for t, _ in dfa.byte_groups[s]] + [t for c, t in dfa.calls[s] if c in productive]
        for t in nexts:
            if ok[t] and not reach[t]:
                reach[t] = True
                order.append(t)
    new_id = {s: i for i, s in enumerate(order)}
    return RuleDFA(
        dfa.name,
        [dfa.accepting[s] for s in order],
        [[(new_id[t], bs) for t, bs in dfa.byte_groups[s] if t in new_id] for s in order],
        [[(c, new_id[t]) for c, t in dfa.calls[s] if c in productive and t in new_id] for s in order],
    )


def _distinct_columns(table: np.ndarray) -> np.ndarray:
    """The table without repeated byte columns: bytes that every state treats alike (all UTF-8
    continuation bytes, say) need only one. Columns are grouped by a hash and the grouping is
    verified, so it is exact; `np.unique(axis=1)` does the same by sorting whole columns, slowly."""
    n = table.shape[0]
    weights = np.random.default_rng(n).integers(1, 2**62, size=n, dtype=np.int64) | 1
    h = (table * weights[:, None]).sum(axis=0)  # wraps: a hash, not a number
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    reduced = table[:, first]
    if not np.array_equal(reduced[:, inverse.reshape(-1)], table):  # a hash collision: sort columns
        return np.unique(table, axis=1)
    return reduced


class _Refiner:
    """One DFA's transitions in the arrays Moore's partition refinement works on: a byte table
    without repeated columns (n = the implicit dead state) and the call edges grouped by state."""

    def __init__(self, dfa: RuleDFA):
        n = self.n = dfa.num_states
        table = np.full((n, 256), n, dtype=np.int64)
        for s_, groups in enumerate(dfa.byte_groups):
            for target, byte_values in groups:
                table[s_, list(byte_values)] = target
        self.table = _distinct_columns(table)
        self.weights = _HASH_WEIGHTS[: self.table.shape[1]]
        self.call_keys = [tuple(calls) for calls in dfa.calls]
        self.call_state = np.array([s_ for s_ in range(n) for _ in self.call_keys[s_]], dtype=np.int64)
        self.call_callee = np.array([c for s_ in range(n) for c, _ in self.call_keys[s_]], dtype=np.int64)
        self.call_return = np.array([r for s_ in range(n) for _, r in self.call_keys[s_]], dtype=np.int64)
        self.group_start = np.flatnonzero(np.diff(self.call_state, prepend=-1)) if len(self.call_state) else self.call_state
        # the initial partition: accepting flag and which rules are called from the state
        first: dict[tuple, int] = {}
        classes = np.zeros(n + 1, dtype=np.int64)
        for s_ in range(n):
            classes[s_] = first.setdefault((dfa.accepting[s_], tuple(c for c, _ in self.call_keys[s_])), len(first))
        classes[n] = len(first)
        self.initial = classes

    def refine(self, classes: np.ndarray) -> np.ndarray:
        """One round: states stay together when their class, their targets' classes and their
        calls' return classes agree (compared by a wrapping 64-bit hash; callers verify)."""
        n = self.n
        sig = (classes[self.table] * self.weights).sum(axis=1) + classes[:n] * np.int64(0x9E3779B97F4A7C15 - 2**64)
        if len(self.call_state):
            per_call = (self.call_callee + 1) * _CALL_WEIGHTS[0] + classes[self.call_return] * _CALL_WEIGHTS[1]
            per_call ^= per_call >> 29  # mix, so that sums of different call lists rarely agree
            sig[self.call_state[self.group_start]] ^= np.add.reduceat(per_call * _CALL_WEIGHTS[2], self.group_start)
        _, new = np.unique(sig, return_inverse=True)
        new = new.reshape(-1)
        return np.append(new, int(new.max()) + 1)

    def settle(self, rounds: int, verify: bool) -> tuple[np.ndarray | None, int | None]:
        """Refine from the initial partition for at most `rounds` rounds: (the classes, the round
        after which they stopped changing, or None if they never did). With `verify`, every round
        is checked (`agrees`) and a hash collision gives (None, None)."""
        classes = self.initial
        count = int(classes.max()) + 1
        for done in range(1, rounds + 1):
            deadline.check()
            refined = self.refine(classes)
            if verify and not self.agrees(refined, classes):
                return None, None
            classes = refined
            if int(classes.max()) + 1 == count:
                return classes, done
            count = int(classes.max()) + 1
        return classes, None

    def agrees(self, classes: np.ndarray, before: np.ndarray) -> bool:
        """Do states of one class in `classes` have equal `before` classes, targets' `before`
        classes and calls (in order, with `before` classes of their returns)? False on a hash
        collision. Vectorised: it runs once per refinement round."""
        n = self.n
        _, first, inverse = np.unique(classes[:n], return_index=True, return_inverse=True)
        reps = first[inverse.reshape(-1)]  # each state's class representative
        mapped = before[self.table]
        if not (mapped == mapped[reps]).all() or not (before[:n] == before[reps]).all():
            return False
        if not len(self.call_state):
            return True
        count = np.bincount(self.call_state, minlength=n)
        if not (count == count[reps]).all():
            return False
        start = np.cumsum(count) - count  # each state's first call edge
        edge = np.arange(len(self.call_state))
        partner = start[reps[self.call_state]] + (edge - start[self.call_state])
        return bool(
            (self.call_callee == self.call_callee[partner]).all()
            and (before[self.call_return] == before[self.call_return[partner]]).all()
        )


def horizon_classes(dfa: RuleDFA, horizon: int) -> np.ndarray | None:
    """Classes of the states that no input of at most `horizon` steps (bytes or calls) tells
    apart, or None when that is just every state on its own (or the check met a hash collision).

    A minimised DFA still keeps the states of a long counter apart (`maxLength: 4096` counts to
    4096), yet two of them with more than `horizon` steps left agree on everything a token can
    see: token masks can then be shared between them (see machine.HorizonKeys)."""
    n = dfa.num_states
    if n <= horizon + 1 or n > MAX_MINIMIZE_STATES or (dfa.refine_rounds is not None and dfa.refine_rounds <= horizon):
        return None  # refinement tells every state apart within the horizon: nothing to merge
    classes, _ = _Refiner(dfa).settle(horizon, verify=True)
    return None if classes is None or int(classes.max()) == n else classes[:n]


def _minimize(dfa: RuleDFA) -> RuleDFA:
    """Merge states with the same future (Moore's partition refinement, vectorised with row hashes).

    Fewer states means fewer masks to compute, and a state whose body loops on itself (inside a
    string, say) becomes a real self-loop, which the mask computation exploits."""
    n = dfa.num_states
    if n <= 1 or n > MAX_MINIMIZE_STATES:
        return dfa
    refiner = _Refiner(dfa)
    classes, rounds = refiner.settle(MAX_MINIMIZE_ROUNDS, verify=False)
    if rounds is None:
        return dfa  # long chains refine slowly; an unminimised DFA is still exact
    if not refiner.agrees(classes, classes):  # the row hash could in principle collide
        return dfa
    # renumber so that the start state's class is 0, in order of first appearance
    order: dict[int, int] = {}
    for s_ in [0] + list(range(n)):
        order.setdefault(int(classes[s_]), len(order))
    rep: dict[int, int] = {}
    for s_ in range(n):
        rep.setdefault(order[int(classes[s_])], s_)
    new_id = [order[int(classes[s_])] for s_ in range(n)]
    return RuleDFA(
        dfa.name,
        [dfa.accepting[rep[c]] for c in range(len(rep))],
        [[(new_id[t], bs) for t, bs in dfa.byte_groups[rep[c]]] for c in range(len(rep))],
        [[(callee, new_id[t]) for callee, t in dfa.calls[rep[c]]] for c in range(len(rep))],
        rounds,
    )


def _check_left_recursion(rules: list[RuleDFA]) -> None:
    """Refuse grammars where a rule can call itself before consuming a byte (the stack would grow forever)."""
    nullable = nullable_rules(rules)
    left_calls: list[set[int]] = []
    for dfa in rules:
        calls: set[int] = set()
        seen, work = {0}, [0]
        while work:
            s = work.pop()
            for callee, t in dfa.calls[s]:
                calls.add(callee)
                if callee in nullable and t not in seen:
                    seen.add(t)
                    work.append(t)
        left_calls.append(calls)
    for r in range(len(rules)):  # a cycle in the left-call graph through r?
        seen, work = set(), list(left_calls[r])
        while work:
            c = work.pop()
            if c == r:
                raise LeftRecursionError(
                    f"rule {rules[r].name!r} is left-recursive (it can call itself before consuming input); "
                    "rewrite it with repetition, e.g. `expr ::= term (\"+\" term)*`"
                )
            if c not in seen:
                seen.add(c)
                work.extend(left_calls[c])


def compile_automaton(grammar: Grammar) -> CompiledAutomaton:
    """Build trimmed DFAs for the root and the recursive rules of `grammar`."""
    if grammar.root not in grammar.rules:
        raise StrictgenError(f"the grammar has no root rule {grammar.root!r}")
    recursive = recursive_rules(grammar)
    names = [grammar.root] + sorted(n for n in recursive if n != grammar.root)
    called = {n: i for i, n in enumerate(names) if n in recursive}
    shared = _shared_nodes(grammar)
    regular: dict[int, _Dense] = {}
    raw: list[RuleDFA] = []
    for name in names:
        builder = _Builder(grammar, called, shared, regular)
        start, final = builder.nfa.new(), builder.nfa.new()
        builder.build(grammar.rules[name], start, final, (name,))
        raw.append(_determinize(builder.nfa, start, final, name))
    productive = _productive_rules(raw)
    if 0 not in productive:
        raise StrictgenError("the grammar accepts no string at all")
    rules = [_minimize(_trim(dfa, productive)) if i in productive else RuleDFA(dfa.name, [False], [[]], [[]]) for i, dfa in enumerate(raw)]
    _check_left_recursion(rules)
    return CompiledAutomaton(rules)
