"""A rule's IR as the flat program that the regular core's C lowering (`regular.lower`) builds an
NFA from without the GIL (issues 28/29: rule builds were two thirds Python, and held the GIL).

`Program` walks the IR as `NFABuilder._build` does and takes the same decisions in the same order
(kept pieces and embedded DFAs, calls, shared nodes, templates), asking the builder for each;
it writes, in pre-order, int32 ops that leave only the NFA's states and edges to C, which makes
them as the Python builder would, state by state (regular/_lower.c lists the ops).

`write_c` is that walk in C (`_program.c`, issue 29: the Python walk was ~20% of the bench's compile
time): the same ops in the same order, the builder asked the same questions; `Program` stays
the reference the tests compare it with.
"""

from __future__ import annotations

import array
from typing import TYPE_CHECKING

from strictgen import regular
from strictgen.errors import GrammarTooLargeError
from strictgen.regular.utf8 import utf8_sequences

from . import _ir_walks, _program
from .ir import Alt, ByteSet, CharSet, Difference, Expr, Intersect, Lazy, Literal, Repeat, RuleRef, Seq, Spelled
from .ir_keys import REFERENCE_KINDS

if TYPE_CHECKING:
    from .automata import NFABuilder

LIT, BYTES, EDGES, SEQ, ALT, REPEAT, CALL, EMBED, SHARED, TEMPLATE = range(1, 11)

COMPOSITE = (Seq, Alt, Repeat, RuleRef)  # what costs a walk to build; the rest is a few edges
_COMPOSITE_TYPES = frozenset(COMPOSITE)
MAX_COPIES = 2**31 - 1  # a repeat's bounds are int32 cells of the program (the C lowering reads them so)


class Unlowerable(Exception):
    """What the C lowering would not build as the Python builder does (a rule met inside itself,
    an undefined rule, an unknown node): the Python builder builds it, or says why not."""


def charset_ops(ranges: tuple[tuple[int, int], ...]) -> list[int]:
    """A character class as an EDGES op: its UTF-8 sequences as a small trie over byte-range
    prefixes (compact NFAs for big classes), states numbered as made (0 the start, 1 the end)."""
    trie: dict[tuple, int] = {}
    edges: list[int] = []
    for seq in (s for lo, hi in ranges for s in utf8_sequences(lo, hi)):
        cur = 0
        last = len(seq) - 1
        for i, (lo, hi) in enumerate(seq):
            if i == last:
                edges += (cur, lo, hi, 1)
            else:
                nxt = trie.get(seq[: i + 1])
                if nxt is None:
                    nxt = trie[seq[: i + 1]] = 2 + len(trie)
                    edges += (cur, lo, hi, nxt)
                cur = nxt
    return [EDGES, len(trie), len(edges) // 4, *edges]


class LoweringMemo:
    """What the programs of one compile's rules share (one per `BuildMemo`, that is per `called`
    map): the DFAs their EMBED ops name, the ids of shared nodes and templates, and each template
    written whole once, copied into the next rule's program instead of walked again (as the Python
    builder splices into a later rule a template it built for an earlier one)."""

    def __init__(self):
        self.dfas: list[regular.DFA] = []
        self.dfa_index: dict[int, int] = {}
        self.fragment_ids: dict[int, int] = {}  # shared node id -> its SHARED id
        self.template_ids: dict[tuple, int] = {}
        self.segments: dict[tuple, bytes] = {}  # a template's whole TEMPLATE op, its program inline (native int32s)
        self.shared_index = None  # the C writer's index of the builder's shared set (`_program.c`), made once


def write_literal(ops: array.array, data: bytes) -> None:
    """Write the LIT op of `data` (its length, then its bytes as ints)."""
    ops.extend((LIT, len(data)))
    ops.extend(data)


class ProgramTooLong(Exception):
    """The program passed the ops its writer allowed (`Program(builder, max_ops)`): a rule built
    ahead of need is then left for its first entry before the rest of its walk and its lowering
    are paid for (compile/automaton.py)."""


class Program:
    """One rule's program: `ops` (int32) over the compile's `memo` (its DFAs and template ids).
    `build(expr)` writes what `NFABuilder._build_shared` builds, `build_here(expr)` what its
    `_build` builds (a shared node not shared at the top). With `max_ops`, writing raises
    ProgramTooLong once the ops pass it (checked at each sequence and alternative, which make the
    most of any big program: not exact, a little more may be written first)."""

    def __init__(self, builder: NFABuilder, max_ops: int | None = None):
        self.builder = builder
        self._max_ops = MAX_COPIES if max_ops is None else max_ops  # int32 cells: never passed unless asked
        self.memo: LoweringMemo = builder.lowering_memo
        self.ops = array.array("i")
        self._fragments: dict[int, int] = {}  # shared node id -> offset of its program here
        self._templates: dict[tuple, int | None] = {}  # key -> offset of its program here; None: being written
        self._open: list[list] = []  # the templates being written: [offset, self-contained so far]
        self._shared = builder.shared_ids  # ids of the nodes used in more than one place
        self._kept = builder.kept_lookup()  # id -> (dfa, (node,)) of pieces an earlier compile kept: asked at every composite node

    def _ref(self, op: int, ident: int, at: int) -> None:
        """A reference to the program at `at`, written earlier: a template being written that
        began after it is not self-contained (its copy elsewhere would point nowhere)."""
        self._not_contained(at)
        self.ops.extend((op, ident, at - len(self.ops), 0))

    def _not_contained(self, at: int) -> None:
        """Mark the templates being written that began after `at` as not self-contained: they
        were opened in order of offset, so they are the last ones (most references meet none)."""
        for t in reversed(self._open):
            if t[0] <= at:
                return
            t[1] = False

    def build(self, expr: Expr) -> None:
        i = id(expr)
        at = self._fragments.get(i)
        if at is not None:
            self._ref(SHARED, self.memo.fragment_ids[i], at)
        elif i in self._shared:
            ids = self.memo.fragment_ids
            head = len(self.ops)
            at = self._fragments[i] = head + 4
            self.ops.extend((SHARED, ids.setdefault(i, len(ids)), 4, 0))
            dfa = self.builder.embedded_dfa(expr)
            if dfa is not None:
                self._embed(dfa)
            else:
                self.build_here(expr)
            self.ops[head + 3] = len(self.ops) - at
        else:
            self.build_here(expr)

    def _embed(self, dfa: regular.DFA) -> None:
        memo = self.memo
        index = memo.dfa_index.get(id(dfa))
        if index is None:
            index = memo.dfa_index[id(dfa)] = len(memo.dfas)
            memo.dfas.append(dfa)  # held by the memo: its id stays its own
        self.ops.extend((EMBED, index))

    def build_here(self, expr: Expr) -> None:
        ops, builder, t = self.ops, self.builder, type(expr)
        if t is Literal:
            write_literal(ops, expr.data)
            return
        if t in _COMPOSITE_TYPES:
            kept = self._kept(id(expr))
            if kept is not None and kept[1][0] is expr:
                self._embed(kept[0])
                return
        if t is Seq or t is Alt:
            if len(ops) > self._max_ops:
                raise ProgramTooLong(len(ops))
            ops.extend((SEQ if t is Seq else ALT, len(expr.items)))
            shared, fragments, memo, open_ = self._shared, self._fragments, self.memo, self._open
            for item in expr.items:
                i = id(item)
                if i in shared:
                    at = fragments.get(i)
                    if at is None:  # its first use in this program: written whole
                        self.build(item)
                    else:  # most shared items (~5 in 6 on the bench): a reference, written here (`_ref`)
                        if open_ and open_[-1][0] > at:
                            self._not_contained(at)
                        ops.extend((SHARED, memo.fragment_ids[i], at - len(ops), 0))
                elif type(item) is Literal:  # most items: written here, without a call of build_here
                    write_literal(ops, item.data)
                else:
                    self.build_here(item)
        elif t is ByteSet:
            ops.extend((BYTES, len(expr.ranges)))
            for lo, hi in expr.ranges:
                ops.extend((lo, hi))
        elif t is CharSet:
            ops.extend(builder.charset_ops(expr))
        elif t is Repeat:
            head = len(ops)
            if max(expr.min, expr.max or 0) > MAX_COPIES:  # the program's int32 cells hold no such count (nor could an automaton the copies)
                raise GrammarTooLargeError(f"grammar too large: a repeat of {max(expr.min, expr.max or 0)} copies (more than {MAX_COPIES})")
            ops.extend((REPEAT, expr.min, -1 if expr.max is None else expr.max, 0))
            copies = expr.min + (1 if expr.max is None else expr.max - expr.min)
            if copies > 1:
                self._copy(("item", id(expr.item)), expr.item)
            elif copies:  # none: nothing built, nothing asked
                self.build(expr.item)
            ops[head + 3] = len(ops) - head - 4
        elif t is Intersect or t is Difference or t is Spelled:
            self._embed(builder.regular_dfa(expr))
        elif t is RuleRef:
            if expr.name not in builder.rules:
                raise Unlowerable(expr.name)
            if expr.name in builder.called:
                ops.extend((CALL, builder.called[expr.name]))
            else:
                self._copy(("rule", expr.name), builder.rules[expr.name])
        elif t is Lazy:
            ops.extend((CALL, builder.called[expr]))
        else:
            raise Unlowerable(t.__name__)

    def _copy(self, key: tuple, expr: Expr) -> None:
        """What `NFABuilder._copy` builds: an embedded DFA, or a template (written once a compile,
        built once a rule by C, spliced in at each use)."""
        if not isinstance(expr, COMPOSITE):
            self.build_here(expr)
            return
        segment = self.memo.segments.get(key)
        if segment is not None:  # a template an earlier rule wrote whole
            self.ops.frombytes(segment)
            return
        if not self.builder.templated(key):
            dfa = self.builder.embedded_dfa(expr)
            if dfa is not None:
                self._embed(dfa)
                return
        ids = self.memo.template_ids
        at = self._templates.get(key, -1)
        if at is None:  # met inside itself: the Python builder says so
            raise Unlowerable(key)
        if at >= 0:
            self._ref(TEMPLATE, ids[key], at)
            return
        head = len(self.ops)
        self._templates[key] = None
        self._open.append(opened := [head, True])
        self.ops.extend((TEMPLATE, ids.setdefault(key, len(ids)), 4, 0))
        self.build_here(expr)
        self.ops[head + 3] = len(self.ops) - head - 4
        self._open.pop()
        self._templates[key] = head + 4
        if opened[1]:
            self.memo.segments[key] = self.ops[head:].tobytes()


_program.setup((Literal, ByteSet, CharSet, Seq, Alt, Repeat, RuleRef, Lazy, Intersect, Difference, Spelled), (Unlowerable, ProgramTooLong, GrammarTooLargeError),
               _ir_walks.call_free, REFERENCE_KINDS)  # the walk of NFABuilder._calls_nothing, which the writer makes itself


# The C writer, `write_c(builder, builder.lowering_memo, expr, shared, max_ops)`: the ops (native
# int32s) that `Program(builder, max_ops)` writes for `expr` (its `build` when `shared`, else
# `build_here`), written by C with the same questions to the builder, the same entries left in its
# lowering memo and the same errors raised. NFABuilder._lowered calls it with no Python frame
# around it: a rule inlined in a rule is lowered inside its builder's question (embedded_dfa →
# sub_nfa → _lowered), once a level, and every Python frame a level costs counts against the
# interpreter's recursion limit (a 150-rule Lark chain).
write_c = _program.write
