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

from strictgen import deadline, regular
from strictgen.errors import CompileTimeoutError, GrammarTooLargeError, StrictgenError
from strictgen.lru import BoundedLRU
from strictgen.regular.utf8 import utf8_sequences

from .ir import Alt, ByteSet, CharSet, Difference, Expr, Intersect, Lazy, Literal, Repeat, RuleRef, Seq, Spelled, children
from .ir_keys import ContentKeys
from .json_spelling import spell_table

MAX_NFA_STATES = 400_000
MAX_DFA_STATES = 200_000
MAX_SEARCH_STATES = 200_000  # product states an emptiness or membership question may visit


def shared_nodes(rules) -> set[int]:
    """ids of composite expressions used in more than one place (the IR may be a DAG). Not inside
    the pieces whose automata an earlier compile kept (`_pieces`): the builder embeds those whole,
    so what they share inside never matters (sharing only saves building)."""
    seen: set[int] = set()
    shared: set[int] = set()
    work: list[Expr] = list(rules)
    while work:
        e = work.pop()
        if _pieces.get_same(e) is not None:
            continue
        for child in children(e):
            if id(child) in seen:
                shared.add(id(child))
            else:
                seen.add(id(child))
                work.append(child)
    return shared


class BuildMemo:
    """What the builders of one compile share, by node id: minimal DFAs (of intersections,
    differences and spelled strings), the DFAs of call-free pieces that are embedded rather than
    built again (determinised, not minimised), the pieces whose DFA would outgrow their NFA,
    templates and call-freedom (these two hold for one `called` map: builders of sub-automata,
    which call nothing, get `sub`), and the UTF-8 sequences of character classes, by their ranges."""

    def __init__(self, dfas: dict[int, regular.DFA] | None = None, too_big: set[int] | None = None, charsets: dict[tuple, list] | None = None,
                 rule_free: dict[int, bool] | None = None, keys: ContentKeys | None = None, embedded: dict[int, regular.DFA] | None = None):
        self.dfas: dict[int, regular.DFA] = {} if dfas is None else dfas
        self.embedded: dict[int, regular.DFA] = {} if embedded is None else embedded  # pieces' DFAs as embedded: not minimised
        self.too_big: set[int] = set() if too_big is None else too_big
        self.templates: dict[tuple, tuple[regular.NFA, int, int] | None] = {}
        self.call_free: dict[int, bool] = {}
        self.rule_free: dict[int, bool] = {} if rule_free is None else rule_free  # see NFABuilder._rule_free
        self.keys = ContentKeys() if keys is None else keys  # content keys of rule-free pieces (the shared cache's)
        self.charsets: dict[tuple, list] = {} if charsets is None else charsets  # UTF-8 sequences of a CharSet's ranges
        self.embedding: set[int] = set()  # pieces whose DFA is being made (a rule met inside itself)
        self._sub: BuildMemo | None = None
        self._is_sub = False

    @property
    def sub(self) -> BuildMemo:
        """The memo of builders that call nothing (its own `sub`; no reference cycle, so a
        compile's memos are freed by reference counting, not by the cyclic collector)."""
        if self._is_sub:
            return self
        if self._sub is None:
            self._sub = BuildMemo(self.dfas, self.too_big, self.charsets, self.rule_free, self.keys, self.embedded)
            self._sub._is_sub = True
        return self._sub


class NFABuilder:
    """Adds IR expressions to one core NFA. `called` maps the rules kept as calls to their index
    (they become call edges); other rule references are inlined.

    What is built again and again (a shared piece towards another end, an inlined rule, the item
    of a counted repeat) costs Python one walk, not one a use: a piece that calls no rule becomes
    its DFA, embedded by the core at each use, when that DFA is no bigger than its NFA;
    any other piece is built once into an NFA of its own, a template, that the core splices in."""

    def __init__(self, rules: dict[str, Expr], called: dict[str, int], shared: set[int], memo: BuildMemo | None = None):
        self.rules = rules
        self.called = called
        self.nfa = regular.NFA()
        self._shared = shared
        self._memo = BuildMemo() if memo is None else memo
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

    def _news(self, n: int) -> int:
        """n new states at once; the first one's number."""
        first = self.nfa.add_states(n)
        self._grown(first)
        return first

    def _grown(self, before: int) -> None:
        """The deadline and size checks, as `new` makes them: each time the states pass a
        multiple of 1024 (a check at every piece was a tenth of building)."""
        if self.nfa.num_states >> 10 != before >> 10:
            self._check_size()

    def build(self, expr: Expr, start: int, end: int) -> None:
        """Add edges so that paths start → end spell exactly the strings of `expr`."""
        if id(expr) in self._shared:
            key = (id(expr), end)
            entry = self._fragments.get(key)
            if entry is None:
                entry = self._fragments[key] = self.new()
                if not self._embed(expr, entry, end):
                    self._build(expr, entry, end)
            self.nfa.add_eps(start, entry)
            return
        self._build(expr, start, end)

    def _build(self, expr: Expr, start: int, end: int) -> None:
        nfa = self.nfa
        kept = _pieces.get_same(expr)
        if kept is not None:  # a piece an earlier compile determinised: embedded, not walked again
            before = nfa.num_states
            nfa.embed(kept, start, end)
            self._grown(before)
            return
        if isinstance(expr, Literal):
            before = nfa.num_states
            nfa.add_literal(start, expr.data, end)
            self._grown(before)
        elif isinstance(expr, ByteSet):
            for lo, hi in expr.ranges:
                nfa.add_range(start, lo, hi, end)
        elif isinstance(expr, CharSet):
            self._build_charset(expr, start, end)
        elif isinstance(expr, Seq):
            items = expr.items
            if not items:
                nfa.add_eps(start, end)
                return
            last = len(items) - 1
            first = self._news(last)
            cur = start
            shared = self._shared
            for i, item in enumerate(items):
                nxt = end if i == last else first + i
                (self.build if id(item) in shared else self._build)(item, cur, nxt)  # build() only to share
                cur = nxt
        elif isinstance(expr, Alt):
            first = self._news(len(expr.items))
            shared = self._shared
            for i, item in enumerate(expr.items):
                nfa.add_eps(start, first + i)
                (self.build if id(item) in shared else self._build)(item, first + i, end)
        elif isinstance(expr, Repeat):
            self._build_repeat(expr, start, end)
        elif isinstance(expr, (Intersect, Difference, Spelled)):
            dfa = self.regular_dfa(expr)
            before = nfa.num_states
            nfa.embed(dfa, start, end)
            self._grown(before)
        elif isinstance(expr, RuleRef):
            if expr.name not in self.rules:
                raise StrictgenError(f"undefined rule {expr.name!r}")
            if expr.name in self.called:
                nfa.add_call(start, self.called[expr.name], end)
            else:
                self._copy(("rule", expr.name), self.rules[expr.name], start, end)
        elif isinstance(expr, Lazy):  # a rule built at run time: always a call (`called` numbers it)
            nfa.add_call(start, self.called[expr], end)
        else:
            raise TypeError(f"not a grammar expression: {expr!r}")

    def _copy(self, key: tuple, expr: Expr, start: int, end: int) -> None:
        """`expr` between start and end, spliced from its template (built on first use). A rule
        met again while its own template is being built is on a reference cycle."""
        if not isinstance(expr, _COMPOSITE):
            self._build(expr, start, end)  # a few edges: cheaper built than spliced
            return
        templates = self._memo.templates
        if key not in templates and self._embed(expr, start, end):
            return
        got = templates.get(key)
        if got is None:
            if key in templates:  # None: being built
                raise _RecursiveRule(key[1])
            templates[key] = None
            try:
                sub = NFABuilder(self.rules, self.called, self._shared, self._memo)
                s, f = sub.new(), sub.new()
                sub._build(expr, s, f)  # not build(): expr itself is what is being templated
            except BaseException:
                del templates[key]
                raise
            got = templates[key] = (sub.nfa, s, f)
        before = self.nfa.num_states
        self.nfa.splice(got[0], got[1], got[2], start, end)
        self._grown(before)

    def _embed(self, expr: Expr, start: int, end: int) -> bool:
        """Embed the DFA of a composite piece that calls no rule, when it is no bigger than the
        NFA it stands for (else False: build it)."""
        if not isinstance(expr, _COMPOSITE):
            return False
        memo = self._memo
        dfa = memo.dfas.get(id(expr)) or memo.embedded.get(id(expr))
        if dfa is None:
            if id(expr) in memo.too_big or id(expr) in memo.embedding:
                return False
            dfa = _pieces.get_same(expr)
            if dfa is None:
                if not self._calls_nothing(expr):
                    return False
                memo.embedding.add(id(expr))
                try:
                    nfa, s, f = self.sub_nfa(expr)
                    dfa = regular.determinize(nfa, s, f, max(64, nfa.num_states), "bigger than its NFA")
                except CompileTimeoutError:
                    raise
                except GrammarTooLargeError:
                    memo.too_big.add(id(expr))
                    return False
                finally:
                    memo.embedding.discard(id(expr))
                if self._rule_free(expr):
                    _pieces.put_same(expr, dfa)
            # not minimised: the automaton it is embedded in is minimised as a whole, and
            # minimising every piece first cost more (15% of det + min) than it saved there
            memo.embedded[id(expr)] = dfa
        before = self.nfa.num_states
        self.nfa.embed(dfa, start, end)
        self._grown(before)
        return True

    def _check_size(self) -> None:
        deadline.check()
        if self.nfa.num_states > MAX_NFA_STATES:
            raise GrammarTooLargeError(f"grammar too large: more than {MAX_NFA_STATES} automaton states")

    def _calls_nothing(self, expr: Expr) -> bool:
        """Does `expr`, with the rules it inlines, reach no call edge? (Remembered by node for
        this `called`; composite nodes only.)"""
        if not self.called:
            return True
        got = self._memo.call_free.get(id(expr))
        return self._free_of_calls(expr, self._memo.call_free) if got is None else got

    def _free_of_calls(self, x: Expr, memo: dict[int, bool]) -> bool:
        """`_calls_nothing` of a node not in `memo` yet; stops at the first call found. Recursive
        per IR level, like the builder that asks it (which bounds the depth an expression may have)."""
        t = type(x)
        if t is RuleRef:
            if x.name in self.called:
                memo[id(x)] = False
                return False
            body = self.rules.get(x.name)
            parts = () if body is None else (body,)
        elif t is Lazy:
            memo[id(x)] = False
            return False
        else:
            parts = children(x)
            if not parts:
                return True  # a leaf reads bytes only
        free = True
        for part in parts:
            got = memo.get(id(part))
            if not (self._free_of_calls(part, memo) if got is None else got):
                free = False
                break
        memo[id(x)] = free
        return free

    def _rule_free(self, expr: Expr) -> bool:
        """Does `expr` refer to no rule and call nothing at run time, so that its language is its
        value alone (the key of the cache shared by compiles)? Remembered by node for the compile."""
        memo = self._memo.rule_free
        got = memo.get(id(expr))
        if got is None:
            got = memo[id(expr)] = _refers_to_no_rule(expr, memo)
        return got

    def regular_dfa(self, expr: Expr) -> regular.DFA:
        """The minimal DFA of a regular expression of the IR, Intersect and Difference included
        (memoised by node for the whole compile)."""
        got = self._memo.dfas.get(id(expr)) or _minimal_pieces.get_same(expr)
        if got is not None:
            self._memo.dfas[id(expr)] = got
            return got
        if isinstance(expr, (Intersect, Difference)):
            key = self._memo.keys.key(expr) if self._rule_free(expr) else None
            got = None if key is None else _products.get(key)
            if got is None:
                got = self._product_dfa(expr)
                if key is not None:
                    _products.put(key, got)
        elif isinstance(expr, Spelled):  # every JSON spelling of the item's strings, on its minimal DFA
            got = spelled_dfa(self.regular_dfa(expr.item))
        else:
            nfa, start, final = self.sub_nfa(expr)
            got = regular.minimal(regular.determinize(nfa, start, final, MAX_DFA_STATES, _PRODUCT_TOO_LARGE))
        self._memo.dfas[id(expr)] = got
        if self._rule_free(expr):
            _minimal_pieces.put_same(expr, got)
        return got

    def _product_dfa(self, expr: Intersect | Difference) -> regular.DFA:
        if isinstance(expr, Intersect):
            got = self.regular_dfa(expr.items[0])
            for item in expr.items[1:]:
                got = regular.minimal(regular.product(got, self.regular_dfa(item), False, MAX_DFA_STATES, _PRODUCT_TOO_LARGE))
            return got
        return regular.minimal(regular.product(self.regular_dfa(expr.base), self.regular_dfa(expr.minus), True, MAX_DFA_STATES, _PRODUCT_TOO_LARGE))

    def sub_nfa(self, expr: Expr) -> tuple[regular.NFA, int, int]:
        """A fresh NFA of `expr` alone (rule references inlined; recursive ones refused)."""
        sub = NFABuilder(self.rules, {}, self._shared, self._memo.sub)
        start, final = sub.new(), sub.new()
        try:
            sub._build(expr, start, final)  # not build(): a shared expr would ask for its own DFA
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
        seqs = self._memo.charsets.get(expr.ranges)
        if seqs is None:
            seqs = [s for lo, hi in expr.ranges for s in utf8_sequences(lo, hi)]
            self._memo.charsets[expr.ranges] = seqs
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

class DfaCache:
    """A thread-safe LRU map from keys to immutable DFAs, shared by compiles. Bounded in entries
    and in table cells (states x byte classes), so a few huge automata cannot hold memory. A
    value may carry what its key's ids stand for (`put(key, dfa, keep)`; `get_kept` returns it)."""

    def __init__(self, entries: int, cells: int = 1 << 24):
        self.entries, self.cells = entries, cells
        self._map: BoundedLRU[tuple] = BoundedLRU(entries, cells, lambda entry: entry[0].num_states * entry[0].num_classes)
        self._lock = threading.Lock()  # over a put and the kept ids it changes
        self._kept_ids: frozenset[int] | None = None
        self._offered: set[int] = set()  # put_same: ids offered once

    def get(self, key) -> regular.DFA | None:
        got = self.get_kept(key)
        return None if got is None else got[0]

    def get_kept(self, key) -> tuple | None:
        """(dfa, keep) for `key`, or None."""
        return self._map.get(key)

    def kept_ids(self) -> frozenset[int]:
        """The ids of every object the entries' `keep`s hold (recomputed only after a change)."""
        with self._lock:
            if self._kept_ids is None:
                self._kept_ids = frozenset(id(x) for _, keep in self._map.values() for x in keep or ())
            return self._kept_ids

    def get_same(self, node) -> regular.DFA | None:
        """The automaton put for this very object (`put_same`), or None. Without the lock or the
        move to the recent end, for lookups on every node of a walk (the entry found is held, so
        it stays valid): entries age as if unread, and an evicted piece is built and kept again."""
        got = self._map.peek(id(node))
        return got[0] if got is not None and got[1][0] is node else None

    def put_same(self, node, dfa: regular.DFA) -> None:
        """Keep `dfa` for the object `node` (held, so that its id stays its own), from the second
        time it is offered: a piece of one compile only is never held (held IR is heap that every
        full collection walks). The ids offered once are plain ints, never objects."""
        with self._lock:
            if id(node) not in self._offered:
                if len(self._offered) >= 8 * self.entries:
                    self._offered.clear()
                self._offered.add(id(node))
                return
        self.put(id(node), dfa, (node,))

    def __len__(self) -> int:
        return len(self._map)

    def clear(self) -> None:
        """Drop every entry (what is built next is kept again as it comes)."""
        with self._lock:
            self._map.clear()
            self._offered.clear()
            self._kept_ids = None

    def put(self, key, dfa: regular.DFA, keep=None) -> None:
        if dfa.num_states * dfa.num_classes > self.cells // 8:
            return  # one automaton would crowd out the rest
        with self._lock:
            self._map.put(key, (dfa, keep))
            self._kept_ids = None


# Intersections and differences of rule-free languages (a pattern under a length bound, a format
# minus an enum) recur across schemas and within one: a front end sizes a product before it
# emits it. Their minimal DFAs are kept by the expression's value (ir_keys: IR nodes are
# immutable). Products only: other pieces cost less to build than to key (measured: keying every
# rule-free piece cost 0.13 s over the bench's 79 schemas and saved 0.18 s of building).
_products = DfaCache(512)


def _refers_to_no_rule(expr: Expr, known: dict[int, bool]) -> bool:
    """Is `expr` free of rule references and run-time calls (its language its value alone)?
    `known`: answers by composite node id so far, both ways: a node whose walk finds a reference
    is known False with every node on the way to it, so the pieces around a reference, asked one
    after another as they are embedded, are not walked again. Iterative (an explicit stack), so
    it adds no Python frames to the builder's recursion that asks it."""
    if type(expr) is RuleRef or type(expr) is Lazy:
        return False
    got = known.get(id(expr))
    if got is not None:
        return got
    stack = [(expr, iter(children(expr)))]
    while stack:
        node, parts = stack[-1]
        for part in parts:
            t = type(part)
            if t is RuleRef or t is Lazy or known.get(id(part)) is False:
                for above, _ in stack:
                    known[id(above)] = False
                return False
            if id(part) not in known:
                sub = children(part)
                if sub:  # a composite not asked yet (leaves read bytes only)
                    stack.append((part, iter(sub)))
                    break
        else:
            known[id(node)] = True
            stack.pop()
    return True


# Rule-free pieces recur across compiles as the same objects: the front end's cached pieces
# (spelled strings and characters, enums, numbers, formats; json_escapes, schema.emit_strings)
# are the same objects in every compile of a style. Their automata are kept by that identity
# (the piece held with its automaton, so an id is never another object's), which costs a lookup,
# not the content keys whose hashing cost more than the building it saved: `_pieces` holds the
# determinised automata of embedded pieces, `_minimal_pieces` the minimal ones of `regular_dfa`.
_pieces = DfaCache(4096, 1 << 22)  # at most 16 MiB of tables
_minimal_pieces = DfaCache(2048, 1 << 22)


# Spelled languages recur across schemas (the same enum, pattern, format or length bound): their
# minimal DFAs are kept by content, the raw minimal DFA's table, so a new compiler does not spell
# them again (spelling is the costliest step of a string's automaton). Bounded; DFAs are immutable.
SPELLED_CACHE_SIZE = 512
_spelled = DfaCache(SPELLED_CACHE_SIZE)


def spelled_dfa(raw: regular.DFA) -> regular.DFA:
    """The minimal DFA of every JSON spelling of the strings of `raw` (a minimal raw-UTF-8 DFA)."""
    key = (raw.table256(), raw.accepting())
    got = _spelled.get(key)
    if got is None:
        got = regular.minimal(regular.dense(*spell_table(key[0], key[1], MAX_DFA_STATES)))
        _spelled.put(key, got)
    return got


class Language:
    """A regular language of the IR, asked about without building its whole DFA: the operands
    of a top-level intersection (and the subtracted side of a difference) are searched together
    by the core, each determinised only as far as the question needs."""

    def __init__(self, expr: Expr, rules: dict[str, Expr] | None = None):
        self._builder = NFABuilder(rules or {}, {}, shared_nodes([expr]))
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
    return NFABuilder({}, {}, shared_nodes([expr])).regular_dfa(expr)


def dfa_size(expr: Expr) -> int | None:
    """States of the minimal DFA of a regular expression, or None when its language is empty."""
    dfa = regular_dfa(expr)
    return dfa.num_states if dfa.can_finish() else None
