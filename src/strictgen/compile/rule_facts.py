"""What a compile must know of every rule before the machine runs: which rules derive a string
(productive), which may read nothing (nullable) and which rules each may call before reading a
byte (its left calls, to refuse left recursion).

The rules built at compile time answer from their DFAs. The rules whose DFAs are deferred to the
first time the machine enters them (automaton.py) answer from their IR, which for these questions
is exact: a product (∩, −) is the one node whose emptiness the IR does not show, and it is built
(memoised for the rule's later build) only where the answer depends on it. Sets of rules are by
rule index.
"""

from __future__ import annotations

from typing import Callable

from strictgen import regular
from strictgen.errors import GrammarSyntaxError
from strictgen.grammar.ir import Alt, ByteSet, CharSet, Difference, Expr, Intersect, Lazy, Literal, Repeat, RuleRef, Seq, Spelled, cyclic_rules

SURROGATES = (0xD800, 0xDFFF)
# a rule DFA with fewer states is asked whether it can finish by its walk, cheaper there than
# reading its arrays (bench compiles, us a question: walk 1.0-2.6, arrays 1.4-3.6; from 256
# states on, walk 17.6, arrays 5.9)
WALKED_STATES = 256


class IrFold:
    """A yes/no question about IR expressions that folds the same way through the IR's structure:
    a Seq needs every item, an Alt one, a Repeat its item unless it may repeat zero times, a
    Spelled string its item (every string has its raw spelling), and a reference asks the set
    `given` for a rule kept as a call, the rule's body for an inlined one. Subclasses answer the
    rest (`leaf`: bytes, characters, literals, products).

    The IR is a DAG: answers are remembered by node, so each node is walked once per set of
    rules. The sets only grow and the questions are monotone in them: a true answer stays true,
    a false one holds until a rule some false answer found missing joins the set (the rules
    found missing are remembered; their joining starts a new generation of false answers). Asked
    callees first, a rule joins before any rule that calls it asks for it, so false answers
    outlive the set's growth: holding them only while the set kept its size re-walked a
    grammar's shared IR after every rule found (allany9: 3,000 rules, 28 ms of nullable rules).
    One frame per level of the IR (`ask` calls itself, as the builder does: no generator frames)."""

    def __init__(self, rules: dict[str, Expr], called: dict):
        self.rules = rules
        self.called = called
        self._yes: set[int] = set()  # node ids known to answer yes
        self._no: dict[int, int] = {}  # node id -> the generation it answered no in
        self._generation = 0
        self._missing: set[int] = set()  # called rules found missing from the set in this generation
        self._given: set[int] | None = None  # the set asked about, and its size when last seen
        self._size = 0

    def _grown(self, given: set[int]) -> None:
        """`given` is not the set last seen, or has grown: a new generation if it now holds a rule
        some false answer found missing (or it is another set)."""
        if given is not self._given or not self._missing.isdisjoint(given):
            self._generation += 1
            self._missing = set()
        self._given, self._size = given, len(given)

    def ask(self, e: Expr, given: set[int]) -> bool:
        if id(e) in self._yes:
            return True
        if len(given) != self._size or given is not self._given:
            self._grown(given)
        if self._no.get(id(e)) == self._generation:
            return False
        t = type(e)
        if t is Seq:
            got = True
            for x in e.items:
                if not self.ask(x, given):
                    got = False
                    break
        elif t is Alt:
            got = False
            for x in e.items:
                if self.ask(x, given):
                    got = True
                    break
        elif t is Repeat:
            got = e.min == 0 or self.ask(e.item, given)
        elif t is Spelled:
            got = self.ask(e.item, given)
        elif t is RuleRef:
            if e.name in self.called:
                got = self.called[e.name] in given
                if not got:
                    self._missing.add(self.called[e.name])
            else:
                got = self.ask(self.rules[e.name], given)
        else:
            got = self.leaf(e, given)
        if got:
            self._yes.add(id(e))
        else:
            self._no[id(e)] = self._generation
        return got

    def leaf(self, e: Expr, given: set[int]) -> bool:
        raise NotImplementedError


class Nonempty(IrFold):
    """Does an expression derive a string, given the called rules that do? `product_nonempty`
    decides an Intersect or Difference (by building its DFA)."""

    def __init__(self, rules: dict[str, Expr], called: dict, product_nonempty: Callable[[Expr], bool]):
        super().__init__(rules, called)
        self.product_nonempty = product_nonempty
        self._products: dict[int, bool] = {}  # by node: a product's answer does not depend on the rules

    def leaf(self, e: Expr, given: set[int]) -> bool:
        t = type(e)
        if t is Literal or t is Lazy:
            return True  # a family hands out live keys only
        if t is ByteSet:
            return bool(e.ranges)
        if t is CharSet:
            return any(lo < SURROGATES[0] or hi > SURROGATES[1] for lo, hi in e.ranges)
        if t is Intersect or t is Difference:
            got = self._products.get(id(e))
            if got is None:
                got = self._products[id(e)] = self.product_nonempty(e)
            return got
        raise TypeError(f"not a grammar expression: {e!r}")


class Nullable(IrFold):
    """Does an expression derive the empty string, given the called rules that do?"""

    def leaf(self, e: Expr, given: set[int]) -> bool:
        t = type(e)
        if t is Literal:
            return not e.data
        if t is Intersect:
            for x in e.items:
                if not self.ask(x, given):
                    return False
            return True
        if t is Difference:
            return self.ask(e.base, given) and not self.ask(e.minus, given)
        return False  # a byte, a character, a family member (reads a byte first)


class IrFacts:
    """Nonemptiness, nullability and left calls of IR expressions, with rules kept as calls
    answered by the sets given (inlined rules are looked through): `nonempty(e, productive)`,
    `nullable(e, nullable)` (the two folds' questions) and `left_calls`."""

    def __init__(self, rules: dict[str, Expr], called: dict, product_nonempty: Callable[[Expr], bool]):
        self.rules = rules
        self.called = called
        self.nonempty = Nonempty(rules, called, product_nonempty).ask
        self.nullable = Nullable(rules, called).ask

    def left_calls(self, e: Expr, out: set[int], nullable: set[int], productive: set[int], seen: set[int]) -> None:
        """Add to `out` the called rules `e` may call before reading a byte, on a path that can
        finish (so exactly what the trimmed DFA's calls before its first byte would be). `seen`:
        the nodes this walk has been through (what they add is in `out` already)."""
        if id(e) in seen:
            return
        seen.add(id(e))
        t = type(e)
        if t is Seq:
            if _reads_a_byte_first(e) or not self.nonempty(e, productive):
                return
            for x in e.items:
                self.left_calls(x, out, nullable, productive, seen)
                if not self.nullable(x, nullable):
                    return
        elif t is Alt:
            for x in e.items:
                if not _reads_a_byte_first(x) and self.nonempty(x, productive):
                    self.left_calls(x, out, nullable, productive, seen)
        elif t is Repeat:
            if e.max != 0 and self.nonempty(e.item, productive):
                self.left_calls(e.item, out, nullable, productive, seen)
        elif t is RuleRef:
            if e.name not in self.called:
                self.left_calls(self.rules[e.name], out, nullable, productive, seen)
            elif self.called[e.name] in productive:
                out.add(self.called[e.name])
        # leaves, products and spelled strings call nothing; family members read a byte first


def _reads_a_byte_first(e: Expr) -> bool:
    """Does `e` read a byte before anything else, so that it calls no rule before one: a byte, a
    character, a family member, a non-empty literal, or a sequence that starts with one of these?
    (A multipleOf's thousands of digit-then-rule alternatives are answered here at a glance.)"""
    t = type(e)
    if t is Seq:
        if not e.items:
            return False
        e = e.items[0]
        t = type(e)
    return t is ByteSet or t is CharSet or t is Lazy or (t is Literal and bool(e.data))


def least_fixpoint(candidates, holds: Callable[[int, set[int]], bool]) -> set[int]:
    """The least set of `candidates` closed under `holds(r, found)`, a question monotone in the
    set found so far (the same set object throughout, which the IR folds' memo keys on): asked
    in the order of `candidates`, again while the set grows. A rule that answered no is asked
    again only once the set has grown since (it cannot answer otherwise before), so with callees
    listed first one pass settles all but cycles, and the next asks only the rules before the
    last one found (asking every rule twice was most of the nullable rules' time)."""
    found: set[int] = set()
    asked_at: dict[int, int] = {}  # a rule's last no: the size of the set it was asked with
    changed = True
    while changed:
        changed = False
        for r in candidates:
            if r in found or asked_at.get(r) == len(found):
                continue
            if holds(r, found):
                found.add(r)
                changed = True
            else:
                asked_at[r] = len(found)
    return found


def productive_rules(built: list[regular.DFA | None], bodies: list[Expr | None], facts: IrFacts, lazy: int, order: list[int]) -> set[int]:
    """The rules that derive at least one finite string: rule r answers from `built[r]`'s DFA
    (determinised, not trimmed yet) when it has one, else from `bodies[r]`'s IR (the `lazy`
    family members after them are productive by construction). `order` lists callees before
    callers, so one pass settles all but cycles."""
    flags = bytearray(len(built)) + b"\x01" * lazy  # found, as the DFAs' can_finish reads it (kept in step)

    def productive(r: int, found: set[int]) -> bool:
        rule = built[r]
        ok = finishes_with_calls(rule, flags) if rule is not None else facts.nonempty(bodies[r], found)
        if ok:
            flags[r] = 1
        return ok

    return least_fixpoint(order, productive)


def finishes_with_calls(dfa: regular.DFA, flags: bytearray) -> bool:
    """`dfa.can_finish(flags)`: can the determinised `dfa`'s start reach acceptance by bytes and
    calls of the rules flagged productive? Where every callee is flagged (nearly every rule, asked
    callees first), without walking it: determinising makes only states the start reaches (by
    bytes and calls), so with every call usable some state accepts exactly when the start can
    finish. The walk that otherwise answers goes through most of the table, since a rule mostly
    accepts at its end; small rules are still walked (WALKED_STATES)."""
    if dfa.num_states < WALKED_STATES:
        return dfa.can_finish(flags)
    callees = callees_of(dfa)
    if callees and (max(callees) >= len(flags) or not all(flags[c] for c in callees)):
        return dfa.can_finish(flags)
    return 1 in dfa.accepting()


def callees_of(dfa: regular.DFA) -> set[int]:
    """The rules `dfa` calls, by index. A rule calls a few rules, if many times: a set read off its
    call array, not numpy (~10 us a question in numpy calls)."""
    return set(memoryview(dfa.call_arrays()[1]).cast("i")) if dfa.has_calls else set()


def nullable_rules(built: list[regular.DFA | None], bodies: list[Expr | None], facts: IrFacts, productive: set[int], order=None) -> set[int]:
    """The productive rules that can finish without reading a byte (built ones from their
    trimmed DFAs). With `order` listing callees before callers, one pass settles all but cycles."""

    def nullable(r: int, found: set[int]) -> bool:
        rule = built[r]
        return finishes_without_bytes(rule, found) if rule is not None else facts.nullable(bodies[r], found)

    return least_fixpoint([r for r in (range(len(built)) if order is None else order) if r in productive], nullable)


def finishes_without_bytes(dfa: regular.DFA, nullable: set[int]) -> bool:
    seen, work = {0}, [0]
    while work:
        s = work.pop()
        if dfa.is_accepting(s):
            return True
        for callee, ret in dfa.calls(s):
            if callee in nullable and ret not in seen:
                seen.add(ret)
                work.append(ret)
    return False


class LeftRecursionError(GrammarSyntaxError):
    """The grammar calls a rule from itself before consuming any byte."""


def check_left_recursion(names: list[str], built: list[regular.DFA | None], bodies: list[Expr | None], facts: IrFacts, productive: set[int],
                         order=None) -> set[int]:
    """Refuse grammars where a rule can call itself before consuming a byte (the stack would grow
    forever); the nullable rules, found on the way (`order`: callees first, as for
    `nullable_rules`), are returned."""
    nullable = nullable_rules(built, bodies, facts, productive, order)
    left: list[set[int]] = []
    for r, dfa in enumerate(built):
        calls: set[int] = set()
        if dfa is None:
            if r in productive:
                facts.left_calls(bodies[r], calls, nullable, productive, set())
        else:
            seen, work = {0}, [0]
            while work:
                s = work.pop()
                for callee, t in dfa.calls(s):
                    if callee >= len(built):
                        continue  # a family member: families read a byte before any call
                    calls.add(callee)
                    if callee in nullable and t not in seen:
                        seen.add(t)
                        work.append(t)
        left.append(calls)
    # the rules on a cycle of the left-call graph (one pass, Tarjan's), the first of them named;
    # most grammars have no left call at all (a JSON value reads a byte before any call)
    recursive = cyclic_rules(dict(enumerate(left))) if any(left) else set()
    if recursive:
        r = min(recursive)
        raise LeftRecursionError(
            f"rule {names[r]!r} is left-recursive (it can call itself before consuming input); "
            "rewrite it with repetition, e.g. `expr ::= term (\"+\" term)*`"
        )
    return nullable
