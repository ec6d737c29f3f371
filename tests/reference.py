"""A slow, obviously-correct reference recognizer for grammar IR, used by the tests to judge the engine.

How it works, in three steps that can each be checked by reading:

1. `_CFGBuilder` translates the IR into a plain context-free grammar whose terminals are single
   bytes drawn from a set (`Term`) and whose nonterminals are ints:
     Literal      -> its bytes, one `Term` each
     ByteSet      -> one `Term`
     CharSet      -> a fresh nonterminal with one production per UTF-8 byte-range sequence
                     (see `utf8_sequences`)
     Seq          -> concatenation of the translations
     Alt          -> a fresh nonterminal with one production per alternative (Alt(()) has none)
     Repeat       -> counted chains of fresh nonterminals:  R_k -> item R_(k-1) | R_0 -> ""
                     for the `min` required copies, O_k -> "" | item O_(k-1) for the optional
                     ones, or STAR -> "" | item STAR when `max` is None
     RuleRef      -> the rule's nonterminal
2. Non-productive nonterminals (those deriving no finite byte string) are computed by fixpoint and
   every production that mentions one is dropped. After that, every remaining symbol derives some
   string, so every Earley item is extendable to a full sentence.
3. An Earley recognizer over bytes, with the Aycock-Horspool treatment of nullable nonterminals
   (when predicting a nullable nonterminal, also step over it at once). By Earley's correct-prefix
   property plus step 2, an input is a viable prefix iff its chart set can still scan a byte or it
   is already accepted.

Chart states are immutable and cache their successors, so many strings sharing a prefix (e.g. a
vocabulary of tokens appended to one prefix) only parse the shared prefix once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from strictgen.grammar.ir import Alt, ByteSet, CharSet, Expr, Grammar, Literal, Repeat, RuleRef, Seq

__all__ = ["ReferenceRecognizer", "Term", "utf8_sequences", "ChartState"]

MAX_CODEPOINT = 0x10FFFF


# ---- UTF-8: code point range -> byte-range sequences ------------------------------------------


def utf8_sequences(lo: int, hi: int) -> list[tuple[tuple[int, int], ...]]:
    """Split the code points lo..hi (inclusive, surrogates excluded) into byte-range sequences.

    Each returned sequence `((a1, b1), (a2, b2), ...)` matches exactly the byte strings
    `x1 x2 ...` with `a_i <= x_i <= b_i`, and the union of these sets is exactly the set of UTF-8
    encodings of the code points in lo..hi. The sequences are disjoint and sorted.

    The classic algorithm: split at the encoding-length boundaries and around the surrogates, so
    that every piece has one encoded length; then split further until, at every byte position, the
    bytes of the piece form one contiguous range (i.e. until `lo` and `hi` agree on all higher bits
    whenever the lower 6*i bits are not full 00..0 to 11..1 spans).
    """
    lo, hi = max(lo, 0), min(hi, MAX_CODEPOINT)
    out: list[tuple[tuple[int, int], ...]] = []
    stack = [(lo, hi)]
    while stack:
        lo, hi = stack.pop()
        if lo > hi:
            continue
        # Drop the surrogates, which have no UTF-8 encoding.
        if lo <= 0xDFFF and hi >= 0xD800:
            stack.append((0xE000, hi))
            stack.append((lo, 0xD7FF))
            continue
        # One encoded length per piece.
        split = False
        for boundary in (0x7F, 0x7FF, 0xFFFF):
            if lo <= boundary < hi:
                stack.append((boundary + 1, hi))
                stack.append((lo, boundary))
                split = True
                break
        if split:
            continue
        # Make every byte position a contiguous range. For i continuation bytes at the bottom,
        # the low 6*i bits are "free" only if lo has them all 0 and hi has them all 1.
        n = len(chr(lo).encode("utf-8"))
        for i in range(1, n):
            mask = (1 << (6 * i)) - 1
            if lo & ~mask != hi & ~mask:
                if lo & mask != 0:
                    stack.append(((lo | mask) + 1, hi))
                    stack.append((lo, lo | mask))
                    split = True
                    break
                if hi & mask != mask:
                    stack.append((hi & ~mask, hi))
                    stack.append((lo, (hi & ~mask) - 1))
                    split = True
                    break
        if split:
            continue
        a = chr(lo).encode("utf-8")
        b = chr(hi).encode("utf-8")
        out.append(tuple(zip(a, b)))
    return out


# ---- the plain CFG ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """A terminal: one byte within the given inclusive ranges."""

    ranges: tuple[tuple[int, int], ...]
    members: frozenset[int] = field(init=False, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        members = set()
        for lo, hi in self.ranges:
            members.update(range(max(lo, 0), min(hi, 255) + 1))
        object.__setattr__(self, "members", frozenset(members))


# Symbols: nonterminals are ints, terminals are `Term` instances.


class _CFGBuilder:
    def __init__(self, grammar: Grammar) -> None:
        self.grammar = grammar
        self.prods: dict[int, list[tuple]] = {}
        self.rule_nt: dict[str, int] = {}
        for name in grammar.rules:
            self.rule_nt[name] = self.fresh()
        for name, expr in grammar.rules.items():
            self.prods[self.rule_nt[name]].append(self.translate(expr))

    def fresh(self) -> int:
        nt = len(self.prods)
        self.prods[nt] = []
        return nt

    def translate(self, expr: Expr) -> tuple:
        """The symbol string that derives exactly the language of `expr`."""
        if isinstance(expr, Literal):
            return tuple(Term(((b, b),)) for b in expr.data)
        if isinstance(expr, ByteSet):
            return (Term(tuple(expr.ranges)),)
        if isinstance(expr, CharSet):
            nt = self.fresh()
            for lo, hi in expr.ranges:
                for byte_ranges in utf8_sequences(lo, hi):
                    self.prods[nt].append(tuple(Term((r,)) for r in byte_ranges))
            return (nt,)
        if isinstance(expr, Seq):
            out: tuple = ()
            for item in expr.items:
                out += self.translate(item)
            return out
        if isinstance(expr, Alt):
            nt = self.fresh()
            for item in expr.items:
                self.prods[nt].append(self.translate(item))
            return (nt,)
        if isinstance(expr, Repeat):
            item = self.translate(expr.item)
            lo = max(expr.min, 0)
            if expr.max is not None and expr.max < lo:
                return (self.fresh(),)  # no productions: matches nothing
            # `lo` required copies: REQ_0 -> "" ; REQ_k -> item REQ_(k-1)
            required = self.fresh()
            self.prods[required].append(())
            for _ in range(lo):
                nxt = self.fresh()
                self.prods[nxt].append(item + (required,))
                required = nxt
            if expr.max is None:
                # STAR -> "" | item STAR
                star = self.fresh()
                self.prods[star].append(())
                self.prods[star].append(item + (star,))
                return (required, star)
            # `max - lo` optional copies: OPT_0 -> "" ; OPT_k -> "" | item OPT_(k-1)
            optional = self.fresh()
            self.prods[optional].append(())
            for _ in range(expr.max - lo):
                nxt = self.fresh()
                self.prods[nxt].append(())
                self.prods[nxt].append(item + (optional,))
                optional = nxt
            return (required, optional)
        if isinstance(expr, RuleRef):
            if expr.name not in self.rule_nt:
                raise ValueError(f"reference to undefined rule {expr.name!r}")
            return (self.rule_nt[expr.name],)
        raise TypeError(f"unknown grammar expression {expr!r}")


def _productive(prods: dict[int, list[tuple]]) -> set[int]:
    """Nonterminals that derive at least one finite byte string (least fixpoint)."""

    def sym_ok(sym, done: set[int]) -> bool:
        return bool(sym.members) if isinstance(sym, Term) else sym in done

    done: set[int] = set()
    changed = True
    while changed:
        changed = False
        for nt, alts in prods.items():
            if nt not in done and any(all(sym_ok(s, done) for s in rhs) for rhs in alts):
                done.add(nt)
                changed = True
    return done


def _nullable(prods: dict[int, list[tuple]]) -> set[int]:
    """Nonterminals that derive the empty string (least fixpoint)."""
    done: set[int] = set()
    changed = True
    while changed:
        changed = False
        for nt, alts in prods.items():
            if nt not in done and any(
                all(not isinstance(s, Term) and s in done for s in rhs) for rhs in alts
            ):
                done.add(nt)
                changed = True
    return done


# ---- Earley ----------------------------------------------------------------------------------


class _EarleySet:
    """One Earley set: items (production, dot, origin), indexed for completion and scanning."""

    __slots__ = ("items", "waiting", "scans")

    def __init__(self) -> None:
        self.items: set[tuple[int, int, int]] = set()
        self.waiting: dict[int, list[tuple[int, int, int]]] = {}  # nonterminal -> items before it
        self.scans: list[tuple[Term, tuple[int, int, int]]] = []  # (terminal, item before it)


class ChartState:
    """Opaque: the Earley chart after some input. Immutable; caches successor states."""

    __slots__ = ("sets", "_next")

    def __init__(self, sets: tuple[_EarleySet, ...]) -> None:
        self.sets = sets
        self._next: dict[int, ChartState | None] = {}

    def __len__(self) -> int:  # number of bytes consumed
        return len(self.sets) - 1


class ReferenceRecognizer:
    """Earley recognizer for a `Grammar`, over bytes. See the module docstring."""

    def __init__(self, grammar: Grammar) -> None:
        if grammar.root not in grammar.rules:
            raise ValueError(f"root rule {grammar.root!r} is not defined")
        builder = _CFGBuilder(grammar)
        productive = _productive(builder.prods)
        # Keep only productions whose every symbol is productive.
        prods: dict[int, list[tuple]] = {
            nt: [
                rhs
                for rhs in alts
                if all(
                    (bool(s.members) if isinstance(s, Term) else s in productive) for s in rhs
                )
            ]
            for nt, alts in builder.prods.items()
        }
        self.nullable = _nullable(prods)
        # Production table: index -> (lhs, rhs); production 0 is START -> root (if productive).
        self.start = -1
        self.productions: list[tuple[int, tuple]] = []
        self.by_lhs: dict[int, list[int]] = {nt: [] for nt in prods}
        root = builder.rule_nt[grammar.root]
        self.root_productive = root in productive
        if self.root_productive:
            self.productions.append((self.start, (root,)))
        for nt, alts in prods.items():
            for rhs in alts:
                self.by_lhs[nt].append(len(self.productions))
                self.productions.append((nt, rhs))
        first = _EarleySet()
        if self.root_productive:
            self._close((), first, [(0, 0, 0)])
        self.initial = ChartState((first,))

    # -- the Earley core --

    def _close(self, earlier: tuple[_EarleySet, ...], cur: _EarleySet, kernel) -> None:
        """Fill `cur` (set number len(earlier)) from its kernel by prediction and completion."""
        j = len(earlier)
        work = []

        def add(item):
            if item not in cur.items:
                cur.items.add(item)
                work.append(item)

        for item in kernel:
            add(item)
        while work:
            item = work.pop()
            p, dot, origin = item
            lhs, rhs = self.productions[p]
            if dot == len(rhs):
                # Complete: advance every item of set `origin` that was waiting for `lhs`.
                # (For origin == j the list may still grow; items added later are advanced over
                # `lhs` by the nullable rule below, since lhs then derived "" and is nullable.)
                source = cur if origin == j else earlier[origin]
                for q, d, o in list(source.waiting.get(lhs, ())):
                    add((q, d + 1, o))
                continue
            sym = rhs[dot]
            if isinstance(sym, Term):
                cur.scans.append((sym, item))
                continue
            cur.waiting.setdefault(sym, []).append(item)
            for q in self.by_lhs[sym]:  # predict
                add((q, 0, j))
            if sym in self.nullable:  # Aycock-Horspool: step over a nullable nonterminal now
                add((p, dot + 1, origin))

    # -- incremental API --

    def advance(self, state: ChartState | None, byte: int) -> ChartState | None:
        """The chart after also consuming `byte`, or None when no sentence has that prefix."""
        if state is None:
            return None
        if byte in state._next:
            return state._next[byte]
        kernel = [(p, d + 1, o) for term, (p, d, o) in state.sets[-1].scans if byte in term.members]
        result = None
        if kernel:
            new = _EarleySet()
            self._close(state.sets, new, kernel)
            result = ChartState(state.sets + (new,))
        state._next[byte] = result
        return result

    def state_after(self, data: bytes) -> ChartState | None:
        """The chart after consuming `data` from the start, or None once it is not viable."""
        state: ChartState | None = self.initial
        for byte in data:
            state = self.advance(state, byte)
            if state is None:
                return None
        return state

    def state_accepts(self, state: ChartState | None) -> bool:
        """Whether the consumed input is a complete sentence."""
        return (
            state is not None
            and self.root_productive
            and (0, 1, 0) in state.sets[-1].items
        )

    def state_viable(self, state: ChartState | None) -> bool:
        """Whether the consumed input is a prefix of some sentence."""
        return state is not None and (bool(state.sets[-1].scans) or self.state_accepts(state))

    def state_allowed_bytes(self, state: ChartState | None) -> set[int]:
        """The bytes b for which consumed input + b is still a viable prefix."""
        out: set[int] = set()
        if state is not None:
            for term, _ in state.sets[-1].scans:
                out |= term.members
        return out

    # -- convenience --

    def accepts(self, data: bytes) -> bool:
        return self.state_accepts(self.state_after(data))

    def is_viable_prefix(self, data: bytes) -> bool:
        return self.state_viable(self.state_after(data))

    def allowed_next_bytes(self, data: bytes) -> set[int]:
        return self.state_allowed_bytes(self.state_after(data))
