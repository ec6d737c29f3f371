"""Grammar IR → automata of the regular-language core (`strictgen.regular`), and the questions the
front ends ask about a regular language: is it empty, is a string in it, how big is its DFA.

`NFABuilder` is the one IR → NFA lowering: `compile/automaton.py` builds every rule with it (rules
kept as calls become call edges), and the front ends use it through `Language` for emptiness and
membership. It builds through the C lowering (`lowering.write_c` writes the rule as a flat
program, in C; `regular.lower` makes the NFA from it without the GIL), and in Python where that would
not give the same NFA. Intersections and differences are regular operations: inside a larger expression
they become minimal DFAs (products in the core) embedded in the NFA; at the top of a question
(`Language`) they stay separate operands that the core searches together lazily, so deciding
that a oneOf's string branches are disjoint never builds a whole product automaton.
"""

from __future__ import annotations


from strictgen import deadline, regular
from strictgen.errors import CompileTimeoutError, GrammarTooLargeError, StrictgenError

from . import _ir_walks
from .dfa_cache import DfaCache
from .ir import Alt, ByteSet, CharSet, Difference, Expr, Intersect, Lazy, Literal, Repeat, RuleRef, Seq, Spelled
from .build_memo import BuildMemo
from .ir_keys import REFERENCE_KINDS, WALKED_KINDS
from .json_spelling import spell
from .lowering import COMPOSITE, MAX_COPIES, LoweringMemo, Unlowerable, charset_ops, write_c

MAX_NFA_STATES = 400_000
MAX_DFA_STATES = 200_000
MAX_SEARCH_STATES = 200_000  # product states an emptiness or membership question may visit
_COMPOSITE_KINDS = WALKED_KINDS  # the node types _ir_walks.c walks into, in its order


def shared_nodes(rules) -> set[int]:
    """ids of composite expressions used in more than one place (the IR may be a DAG). Not inside
    the pieces whose automata an earlier compile kept (`_pieces`), nor inside the intersections,
    differences and spelled strings whose minimal automata it kept (`_minimal_pieces`): the
    builder embeds those whole, so what they share inside never matters (sharing only saves
    building). A date-time format's spelled string is ~12,000 nodes, half of the nodes of the
    bench's compiles: walked into, it was ~1 ms of each compile that spells one. A walk of every
    other node of every rule, in C (`_ir_walks.c`): in Python it was ~0.4 µs a node, 5% of the
    bench's compile time."""
    return _ir_walks.shared(list(rules), _COMPOSITE_KINDS, _pieces.same_lookup(), _minimal_pieces.same_lookup())


class NFABuilder:
    """Adds IR expressions to one core NFA. `called` maps the rules kept as calls to their index
    (they become call edges); other rule references are inlined.

    What is built again and again (a shared piece towards another end, an inlined rule, the item
    of a counted repeat) costs Python one walk, not one a use: a piece that calls no rule becomes
    its DFA, embedded by the core at each use, when that DFA is no bigger than its NFA;
    any other piece is built once into an NFA of its own, a template, that the core splices in.

    `build` goes through the C lowering (`regular.lower`) unless `in_c` is False (the Python
    builder alone: the reference the tests compare the lowering with)."""

    def __init__(self, rules: dict[str, Expr], called: dict[str, int], shared: set[int], memo: BuildMemo | None = None, in_c: bool = True):
        self.rules = rules
        self.in_c = in_c
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

    def build(self, expr: Expr, start: int, end: int, max_ops: int | None = None) -> None:
        """Add edges so that paths start → end spell exactly the strings of `expr`: through the
        C lowering where it can (the same NFA, state by state), else here in Python. With
        `max_ops`, raises lowering.ProgramTooLong, nothing built, where its program would pass
        that many ops (a bound on the walk for a caller that would rather not build it then)."""
        if not self._lowered(expr, start, end, True, max_ops):
            self._build_shared(expr, start, end)

    def _lowered(self, expr: Expr, start: int, end: int, shared: bool, max_ops: int | None = None) -> bool:
        """Did the C lowering (`regular.lower`) build `expr` from start to end? C writes the rule as
        a flat program (`lowering.write_c`), asking this builder on the way the decisions only it
        takes (which pieces are embedded DFAs, which rules are calls); C builds the NFA from it
        without the GIL. False where it would not give what the Python builder gives (a rule met
        inside itself, a limit reached): the NFA is then as it was, and the Python builder raises
        what it raises."""
        if not self.in_c:
            return False
        memo = self._memo.lowering
        try:
            ops = write_c(self, memo, expr, shared, MAX_COPIES if max_ops is None else max_ops)  # no frame between (lowering.write_c)
        except Unlowerable:
            return False
        return regular.lower(self.nfa, ops, memo.dfas, len(memo.template_ids), start, end, MAX_NFA_STATES) == 0

    def _build_shared(self, expr: Expr, start: int, end: int) -> None:
        """`build` in Python: a shared node is built once towards each end state."""
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
                (self._build_shared if id(item) in shared else self._build)(item, cur, nxt)  # only to share
                cur = nxt
        elif isinstance(expr, Alt):
            first = self._news(len(expr.items))
            shared = self._shared
            for i, item in enumerate(expr.items):
                nfa.add_eps(start, first + i)
                (self._build_shared if id(item) in shared else self._build)(item, first + i, end)
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
        if not isinstance(expr, COMPOSITE):
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
                sub = NFABuilder(self.rules, self.called, self._shared, self._memo, self.in_c)
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
        dfa = self.embedded_dfa(expr)
        if dfa is None:
            return False
        before = self.nfa.num_states
        self.nfa.embed(dfa, start, end)
        self._grown(before)
        return True

    def embedded_dfa(self, expr: Expr) -> regular.DFA | None:
        """The DFA `_embed` embeds for `expr` (made and remembered on first ask), or None."""
        memo = self._memo
        i = id(expr)
        dfa = memo.dfas.get(i) or memo.embedded.get(i)
        if dfa is None:
            if i in memo.built or i in memo.too_big or i in memo.embedding:  # `built`: asked again by each program that meets it
                return None
            if not isinstance(expr, COMPOSITE):
                return None
            dfa = _pieces.get_same(expr)
            if dfa is None:
                if not self._calls_nothing(expr):
                    memo.built.add(i)
                    return None
                memo.embedding.add(id(expr))
                try:
                    nfa, s, f = self.sub_nfa(expr)
                    dfa = regular.determinize(nfa, s, f, max(64, nfa.num_states), "bigger than its NFA")
                except CompileTimeoutError:
                    raise
                except GrammarTooLargeError:
                    memo.too_big.add(i)
                    return None
                finally:
                    memo.embedding.discard(id(expr))
                if self._rule_free(expr):
                    _pieces.put_same(expr, dfa)
            # not minimised: the automaton it is embedded in is minimised as a whole, and
            # minimising every piece first cost more (15% of det + min) than it saved there
            memo.embedded[id(expr)] = dfa
        return dfa

    def _check_size(self) -> None:
        deadline.check()
        if self.nfa.num_states > MAX_NFA_STATES:
            raise GrammarTooLargeError(f"grammar too large: more than {MAX_NFA_STATES} automaton states")

    def _calls_nothing(self, expr: Expr) -> bool:
        """Does `expr`, with the rules it inlines, reach no call edge? (Remembered by node for
        this `called`, composite nodes and rule references, both ways, as `_refers_to_no_rule`
        does.) In C (`_ir_walks.call_free`): in Python it was ~3% of the bench's rule builds."""
        if not self.called:
            return True
        memo = self._memo.call_free
        got = memo.get(id(expr))
        return _ir_walks.call_free(expr, memo, REFERENCE_KINDS, self.rules, self.called) if got is None else got

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
        if isinstance(expr, _VALUED_KINDS):
            key = (MAX_DFA_STATES, self._memo.keys.key(expr)) if self._rule_free(expr) else None
            got = None if key is None else _valued.get(key)
            if got is None:
                if isinstance(expr, Spelled):  # every JSON spelling of the item's strings, on its minimal DFA
                    got = spelled_dfa(self.regular_dfa(expr.item))
                else:
                    got = self._product_dfa(expr)
                if key is not None:
                    _valued.put(key, got)
        else:
            nfa, start, final = self.sub_nfa(expr)
            got = regular.minimal(regular.determinize(nfa, start, final, MAX_DFA_STATES, _PRODUCT_TOO_LARGE))
        self._memo.dfas[id(expr)] = got
        if self._rule_free(expr):
            _minimal_pieces.put_same(expr, got)
        return got

    def _product_dfa(self, expr: Intersect | Difference) -> regular.DFA:
        if isinstance(expr, Intersect):
            items = expr.items
            keys = self._prefix_keys(items) if self._rule_free(expr) else None
            done, got = 1, None
            for k in range(len(items) - 1, 1, -1) if keys is not None else ():  # the longest product built before
                got = _valued.get(keys[k])
                if got is not None:
                    done = k
                    break
            if got is None:
                got = self.regular_dfa(items[0])
            for k in range(done, len(items)):
                got = regular.minimal(regular.product(got, self.regular_dfa(items[k]), False, MAX_DFA_STATES, _PRODUCT_TOO_LARGE))
                if keys is not None and k + 1 < len(items):  # the whole product is kept by regular_dfa
                    _valued.put(keys[k + 1], got)
            return got
        return regular.minimal(regular.product(self.regular_dfa(expr.base), self.regular_dfa(expr.minus), True, MAX_DFA_STATES, _PRODUCT_TOO_LARGE))

    def _prefix_keys(self, items: tuple[Expr, ...]) -> list | None:
        """Keys of `_valued` for the products of the first k items of an intersection (index k,
        2 <= k < len(items)), or None when there are no such prefixes. Intersections of one
        string's patterns share their first operands (string3's allOf and its anyOf of nots:
        A∩B∩C∩¬A, A∩B∩C∩¬B, ...): the left fold's products of those (16,226 and 17,216 states
        before minimising there) were built again for each, in the front end's questions and the
        compile's alike."""
        if len(items) < 3:
            return None
        key = self._memo.keys.key
        item_keys = tuple(key(item) for item in items[:-1])
        return [None, None] + [(MAX_DFA_STATES, item_keys[:k]) for k in range(2, len(items))]

    def sub_nfa(self, expr: Expr) -> tuple[regular.NFA, int, int]:
        """A fresh NFA of `expr` alone (rule references inlined; recursive ones refused)."""
        sub = NFABuilder(self.rules, {}, self._shared, self._memo.sub, self.in_c)
        start, final = sub.new(), sub.new()
        try:
            if not sub._lowered(expr, start, final, False):  # not shared: a shared expr would ask for its own DFA
                sub._build(expr, start, final)
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
                self._build_shared(item, s, t)

        made = 0  # copies so far

        def counted(s: int, t: int) -> None:
            """One copy after its own new state `t`; the second one measures what each costs (the
            first may have built the template) for `_refuse_early`."""
            nonlocal made
            before = self.nfa.num_states
            one(s, t)
            made += 1
            if made == 2:
                self._refuse_early(self.nfa.num_states - before + 1, copies - 2)

        cur = start
        for _ in range(expr.min):
            nxt = self.new()
            counted(cur, nxt)
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
                counted(cur, nxt)
                cur = nxt
            nfa.add_eps(cur, end)

    def _refuse_early(self, per_copy: int, copies_left: int) -> None:
        """Refuse a counted repeat now when its copies still to come must pass the state limit:
        the size checks made as states grow (every 1,024) would refuse it with this same error
        once they had been built (`Repeat(any character, 0, 32767)` took ~0.2 s to get there)."""
        if self.nfa.num_states + per_copy * copies_left >= MAX_NFA_STATES + 2048:
            raise GrammarTooLargeError(f"grammar too large: more than {MAX_NFA_STATES} automaton states")

    def _build_charset(self, expr: CharSet, start: int, end: int) -> None:
        ops = self.charset_ops(expr)
        first = self._news(ops[1])
        local = (start, end)
        for i in range(3, len(ops), 4):
            s, lo, hi, t = ops[i : i + 4]
            self.nfa.add_range(local[s] if s < 2 else first + s - 2, lo, hi, local[t] if t < 2 else first + t - 2)

    def charset_ops(self, expr: CharSet) -> list[int]:
        """The class's EDGES op (`lowering.charset_ops`), remembered by ranges for the compile."""
        ops = self._memo.charsets.get(expr.ranges)
        if ops is None:
            ops = self._memo.charsets[expr.ranges] = charset_ops(expr.ranges)
        return ops

    # what a lowering Program asks the builder (it takes the decisions `_build` takes)
    @property
    def shared_ids(self) -> set[int]:
        return self._shared

    @property
    def lowering_memo(self) -> LoweringMemo:
        return self._memo.lowering

    def kept_lookup(self):
        """The pieces an earlier compile kept, as a function of id(node) giving an entry
        (dfa, (node,)) or None; the entry is this node's only where it holds that node
        (`DfaCache.same_lookup`: one dict read, asked at every composite node of a walk)."""
        return _pieces.same_lookup()

    @property
    def memo_answers(self) -> tuple:
        """The memo's dicts and sets that settle most answers of `embedded_dfa`, `templated`,
        `regular_dfa` and `charset_ops` (BuildMemo.answers): the C writer reads them live where
        it would ask (a Python call each, ~5,800 a bench pass, cost more than the answers)."""
        return self._memo.answers

    def templated(self, key: tuple) -> bool:
        """Has this builder's compile made the template `key` (`_copy`) in Python?"""
        return key in self._memo.templates


class _RecursiveRule(StrictgenError):
    """A rule reference met again while it is being inlined: the rule is on a reference cycle."""

    def __init__(self, name: str):
        super().__init__(f"rule {name!r} is recursive but was not marked as such")


_PRODUCT_TOO_LARGE = f"grammar too large: an intersection has more than {MAX_DFA_STATES} states"

# Intersections, differences and spelled strings of rule-free languages (a pattern under a length
# bound, a format minus an enum, the same enum or pattern spelled again) recur across schemas and
# within one: a front end sizes a product before it emits it, and each compile makes its own
# objects. Their minimal DFAs are kept by the expression's value (ir_keys: IR nodes are
# immutable), looked up before anything is built: a hit skips the operands' or the item's
# lowering, determinising, minimising and table key. Keyed with the state limit, so that a
# smaller limit builds again (and refuses what it must). These kinds only: other pieces cost less
# to build than to key (measured: keying every rule-free piece cost 0.13 s over the bench's 79
# schemas and saved 0.18 s of building).
_VALUED_KINDS = (Intersect, Difference, Spelled)
_valued = DfaCache(1024)


def _refers_to_no_rule(expr: Expr, known: dict[int, bool]) -> bool:
    """Is `expr` free of rule references and run-time calls (its language its value alone)?
    `known`: answers by composite node id so far, both ways: a node whose walk finds a reference
    is known False with every node on the way to it, so the pieces around a reference, asked one
    after another as they are embedded, are not walked again. In C (`_ir_walks.c`, a walk with
    its own stack, so no Python frames are added to the builder's recursion that asks it): in
    Python it was ~1 µs a node, 1.5% of the bench's first-pass fill CPU."""
    return _ir_walks.rule_free(expr, known, REFERENCE_KINDS)


# Rule-free pieces recur across compiles as the same objects: the front end's cached pieces
# (spelled strings and characters, enums, numbers, formats; json_escapes, schema.emit_strings)
# are the same objects in every compile of a style. Their automata are kept by that identity
# (the piece held with its automaton, so an id is never another object's), which costs a lookup,
# not the content keys whose hashing cost more than the building it saved: `_pieces` holds the
# determinised automata of embedded pieces, `_minimal_pieces` the minimal ones of `regular_dfa`.
_pieces = DfaCache(4096, 1 << 22)  # at most 16 MiB of tables
_minimal_pieces = DfaCache(2048, 1 << 22)


# Spelled languages recur across schemas (the same enum, pattern, format or length bound): their
# minimal DFAs are kept by content, the raw minimal DFA's table by byte class (which fixes the
# 256-wide table, at a fraction of its size to make, hash and compare: a date-time's 256-wide key
# was 11 MB), so a new compiler does not spell them again (spelling is the costliest step of a
# string's automaton). Bounded; DFAs are immutable.
SPELLED_CACHE_SIZE = 512
_spelled = DfaCache(SPELLED_CACHE_SIZE)


def forget_kept_automata() -> None:
    """Drop the automata kept across compiles (pieces, products, spellings): what is built next
    is built from its IR, as a first compile builds it (tests that compare builders ask this)."""
    for cache in (_pieces, _minimal_pieces, _valued, _spelled):
        cache.clear()


def spelled_dfa(raw: regular.DFA) -> regular.DFA:
    """The minimal DFA of every JSON spelling of the strings of `raw` (a minimal raw-UTF-8 DFA)."""
    key = table_key(raw)
    got = _spelled.get((MAX_DFA_STATES, key))  # the limit in the key: a smaller one spells again
    if got is None:
        got = spell(raw, MAX_DFA_STATES)  # minimal
        _spelled.put((MAX_DFA_STATES, key), got)
    return got


def table_key(dfa: regular.DFA) -> tuple[bytes, bytes, bytes]:
    """(columns, classmap, accepting) that stand for the 256-wide table and acceptance of a DFA
    without calls, whatever byte classes it was built with: bytes whose columns are equal share a
    class, numbered as bytes first meet them, so equal tables give equal keys (regular.table_columns,
    in C: slicing and hashing the columns here was a fifth of a spelled string's cost)."""
    return (*regular.table_columns(dfa), dfa.accepting())


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
