"""Grammar IR → automata of the regular-language core (`strictgen.regular`), and the questions the
front ends ask about a regular language: is it empty, is a string in it, how big is its DFA.

`NFABuilder` is the one IR → NFA lowering: `compile/automaton.py` builds every rule with it (rules
kept as calls become call edges), and the front ends use it through `Language` for emptiness and
membership. Intersections and differences are regular operations: inside a larger expression
they become minimal DFAs (products in the core) embedded in the NFA; at the top of a question
(`Language`) they stay separate operands that the core searches together lazily, so deciding
that a oneOf's string branches are disjoint never builds a whole product automaton.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from strictgen import deadline, regular
from strictgen.errors import GrammarTooLargeError, StrictgenError
from strictgen.regular.utf8 import utf8_sequences

from .ir import Alt, ByteSet, CharSet, Difference, Expr, Intersect, Literal, Repeat, RuleRef, Seq, Spelled
from .json_spelling import spell_table

MAX_NFA_STATES = 400_000
MAX_DFA_STATES = 200_000
MAX_SEARCH_STATES = 200_000  # product states an emptiness or membership question may visit


def shared_nodes(rules) -> set[int]:
    """ids of composite expressions used in more than one place (the IR may be a DAG)."""
    parents: dict[int, int] = {}
    work: list[Expr] = list(rules)
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


class NFABuilder:
    """Adds IR expressions to one core NFA. `called` maps the rules kept as calls to their index
    (they become call edges); other rule references are inlined. `regular` memoises the DFAs of
    intersections and differences by node id for a whole compile.

    What is copied many times (an inlined rule, the item of a counted repeat) is built once into
    an NFA of its own, a template, and spliced in by the core at each further use: Python walks
    each such expression once however often it is inlined. `templates` is shared by the builders
    of one compile that have the same `called`."""

    def __init__(
        self,
        rules: dict[str, Expr],
        called: dict[str, int],
        shared: set[int],
        regular_dfas: dict[int, regular.DFA],
        templates: dict[tuple, tuple[regular.NFA, int, int]] | None = None,
    ):
        self.rules = rules
        self.called = called
        self.nfa = regular.NFA()
        self._charset_cache: dict[tuple, list] = {}
        self._shared = shared
        self._regular = regular_dfas
        self._templates = {} if templates is None else templates
        # a shared sub-expression built towards the same end state is built once: its fragment's
        # private entry state is reused, which keeps DAG-shaped IR (e.g. from JSON Schema) linear
        self._fragments: dict[tuple[int, int], int] = {}

    def new(self) -> int:
        s = self.nfa.add_state()
        if not s & 1023:
            deadline.check()
            if s >= MAX_NFA_STATES:
                raise GrammarTooLargeError(f"grammar too large: more than {MAX_NFA_STATES} automaton states")
        return s

    def build(self, expr: Expr, start: int, end: int) -> None:
        """Add edges so that paths start → end spell exactly the strings of `expr`."""
        if id(expr) in self._shared:
            key = (id(expr), end)
            entry = self._fragments.get(key)
            if entry is None:
                entry = self._fragments[key] = self.new()
                self._build(expr, entry, end)
            self.nfa.add_eps(start, entry)
            return
        self._build(expr, start, end)

    def _build(self, expr: Expr, start: int, end: int) -> None:
        nfa = self.nfa
        if isinstance(expr, Literal):
            data = expr.data
            cur = start
            for i, b in enumerate(data):
                nxt = end if i == len(data) - 1 else self.new()
                nfa.add_range(cur, b, b, nxt)
                cur = nxt
            if not data:
                nfa.add_eps(start, end)
        elif isinstance(expr, ByteSet):
            for lo, hi in expr.ranges:
                nfa.add_range(start, lo, hi, end)
        elif isinstance(expr, CharSet):
            self._build_charset(expr, start, end)
        elif isinstance(expr, Seq):
            items = expr.items
            if not items:
                nfa.add_eps(start, end)
            cur = start
            for i, item in enumerate(items):
                nxt = end if i == len(items) - 1 else self.new()
                self.build(item, cur, nxt)
                cur = nxt
        elif isinstance(expr, Alt):
            for item in expr.items:
                s = self.new()
                nfa.add_eps(start, s)
                self.build(item, s, end)
        elif isinstance(expr, Repeat):
            self._build_repeat(expr, start, end)
        elif isinstance(expr, (Intersect, Difference, Spelled)):
            nfa.embed(self.regular_dfa(expr), start, end)
            if nfa.num_states > MAX_NFA_STATES:
                raise GrammarTooLargeError(f"grammar too large: more than {MAX_NFA_STATES} automaton states")
        elif isinstance(expr, RuleRef):
            if expr.name not in self.rules:
                raise StrictgenError(f"undefined rule {expr.name!r}")
            if expr.name in self.called:
                nfa.add_call(start, self.called[expr.name], end)
            else:
                self._copy(("rule", expr.name), self.rules[expr.name], start, end)
        else:
            raise TypeError(f"not a grammar expression: {expr!r}")

    def _copy(self, key: tuple, expr: Expr, start: int, end: int) -> None:
        """`expr` between start and end, spliced from its template (built on first use). A rule
        met again while its own template is being built is on a reference cycle."""
        if not isinstance(expr, _COMPOSITE):
            self._build(expr, start, end)  # a few edges: cheaper built than spliced
            return
        got = self._templates.get(key)
        if got is None:
            if key in self._templates:  # None: being built
                raise _RecursiveRule(key[1])
            self._templates[key] = None
            try:
                sub = NFABuilder(self.rules, self.called, self._shared, self._regular, self._templates)
                sub._charset_cache = self._charset_cache
                s, f = sub.new(), sub.new()
                sub._build(expr, s, f)  # not build(): expr itself is what is being templated
            except BaseException:
                del self._templates[key]
                raise
            got = self._templates[key] = (sub.nfa, s, f)
        self.nfa.splice(got[0], got[1], got[2], start, end)
        deadline.check()
        if self.nfa.num_states > MAX_NFA_STATES:
            raise GrammarTooLargeError(f"grammar too large: more than {MAX_NFA_STATES} automaton states")

    def regular_dfa(self, expr: Expr) -> regular.DFA:
        """The minimal DFA of a regular expression of the IR, Intersect and Difference included
        (memoised by node for the whole compile)."""
        got = self._regular.get(id(expr))
        if got is not None:
            return got
        if isinstance(expr, Intersect):
            got = self.regular_dfa(expr.items[0])
            for item in expr.items[1:]:
                got = regular.minimal(regular.product(got, self.regular_dfa(item), False, MAX_DFA_STATES, _PRODUCT_TOO_LARGE))
        elif isinstance(expr, Difference):
            got = regular.minimal(regular.product(self.regular_dfa(expr.base), self.regular_dfa(expr.minus), True, MAX_DFA_STATES, _PRODUCT_TOO_LARGE))
        elif isinstance(expr, Spelled):  # every JSON spelling of the item's strings, on its minimal DFA
            got = spelled_dfa(self.regular_dfa(expr.item))
        else:
            nfa, start, final = self.sub_nfa(expr)
            got = regular.minimal(regular.determinize(nfa, start, final, MAX_DFA_STATES, _PRODUCT_TOO_LARGE))
        self._regular[id(expr)] = got
        return got

    def sub_nfa(self, expr: Expr) -> tuple[regular.NFA, int, int]:
        """A fresh NFA of `expr` alone (rule references inlined; recursive ones refused)."""
        sub = NFABuilder(self.rules, {}, self._shared, self._regular)
        start, final = sub.new(), sub.new()
        try:
            sub.build(expr, start, final)
        except _RecursiveRule as exc:
            raise StrictgenError("an intersection or difference may only combine regular languages, not recursive rules") from exc
        return sub.nfa, start, final

    def _build_repeat(self, expr: Repeat, start: int, end: int) -> None:
        nfa = self.nfa
        item = expr.item
        copies = expr.min + (1 if expr.max is None else expr.max - expr.min)
        key = ("item", id(item))

        def one(s: int, t: int) -> None:
            if copies > 1:
                self._copy(key, item, s, t)
            else:
                self.build(item, s, t)

        cur = start
        for _ in range(expr.min):
            nxt = self.new()
            one(cur, nxt)
            cur = nxt
        if expr.max is None:
            # the item runs from the loop state back to itself, so that "after k ≥ 1 items" and
            # "before the first" are one DFA state: a true self-loop, which masks exploit
            loop = self.new()
            nfa.add_eps(cur, loop)
            one(loop, loop)
            nfa.add_eps(loop, end)
        else:
            for _ in range(expr.max - expr.min):
                nxt = self.new()
                nfa.add_eps(cur, end)
                one(cur, nxt)
                cur = nxt
            nfa.add_eps(cur, end)

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
            last = len(seq) - 1
            for i, (lo, hi) in enumerate(seq):
                if i == last:
                    nfa.add_range(cur, lo, hi, end)
                else:
                    key = seq[: i + 1]
                    nxt = trie.get(key)
                    if nxt is None:
                        nxt = trie[key] = self.new()
                        nfa.add_range(cur, lo, hi, nxt)
                    cur = nxt


_COMPOSITE = (Seq, Alt, Repeat, RuleRef)  # what costs a walk to build; the rest is a few edges


class _RecursiveRule(StrictgenError):
    """A rule reference met again while it is being inlined: the rule is on a reference cycle."""

    def __init__(self, name: str):
        super().__init__(f"rule {name!r} is recursive but was not marked as such")


_PRODUCT_TOO_LARGE = f"grammar too large: an intersection has more than {MAX_DFA_STATES} states"

# Spelled languages recur across schemas (the same enum, pattern, format or length bound): their
# minimal DFAs are kept by content, the raw minimal DFA's table, so a new compiler does not spell
# them again (spelling is the costliest step of a string's automaton). Bounded; DFAs are immutable.
SPELLED_CACHE_SIZE = 512
_spelled: OrderedDict[tuple[bytes, bytes], regular.DFA] = OrderedDict()
_spelled_lock = threading.Lock()


def spelled_dfa(raw: regular.DFA) -> regular.DFA:
    """The minimal DFA of every JSON spelling of the strings of `raw` (a minimal raw-UTF-8 DFA)."""
    key = (raw.table256(), raw.accepting())
    with _spelled_lock:
        got = _spelled.get(key)
        if got is not None:
            _spelled.move_to_end(key)
            return got
    got = regular.minimal(regular.dense(*spell_table(key[0], key[1], MAX_DFA_STATES)))
    with _spelled_lock:
        _spelled[key] = got
        while len(_spelled) > SPELLED_CACHE_SIZE:
            _spelled.popitem(last=False)
    return got


class Language:
    """A regular language of the IR, asked about without building its whole DFA: the operands
    of a top-level intersection (and the subtracted side of a difference) are searched together
    by the core, each determinised only as far as the question needs."""

    def __init__(self, expr: Expr, rules: dict[str, Expr] | None = None):
        self._builder = NFABuilder(rules or {}, {}, shared_nodes([expr]), {})
        self.operands: list[tuple[regular.Lazy, bool]] = []
        self._add(expr, True)

    def _add(self, expr: Expr, positive: bool) -> None:
        if positive and isinstance(expr, Intersect):
            for item in expr.items:
                self._add(item, True)
        elif positive and isinstance(expr, Difference):
            self._add(expr.base, True)
            self._add(expr.minus, False)
        else:
            nfa, start, final = self._builder.sub_nfa(expr)
            self.operands.append((regular.lazy(nfa, start, final, MAX_DFA_STATES, _PRODUCT_TOO_LARGE), positive))

    def shortest(self) -> bytes | None:
        """A shortest member (bytes), or None when the language is empty."""
        return regular.find_member(self.operands, MAX_SEARCH_STATES)

    def is_empty(self) -> bool:
        return self.shortest() is None

    def accepts(self, data: bytes) -> bool:
        return all(lz.accepts(data) == positive for lz, positive in self.operands)


def regular_dfa(expr: Expr) -> regular.DFA:
    """The minimal, trimmed DFA of a regular expression without rule references (an empty
    language gives one dead state: `dfa.can_finish()` is False)."""
    return NFABuilder({}, {}, shared_nodes([expr]), {}).regular_dfa(expr)


def dfa_size(expr: Expr) -> int | None:
    """States of the minimal DFA of a regular expression, or None when its language is empty."""
    dfa = regular_dfa(expr)
    return dfa.num_states if dfa.can_finish() else None
