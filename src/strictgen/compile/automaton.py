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

from strictgen import regular
from strictgen.errors import GrammarSyntaxError, StrictgenError
from strictgen.grammar.automata import MAX_DFA_STATES, MAX_NFA_STATES, BuildMemo, DfaCache, NFABuilder, shared_nodes
from strictgen.grammar.ir import Grammar, recursive_rules, rule_references

from .lazy_rules import CallIndex, LazyRules

__all__ = ["MAX_DFA_STATES", "MAX_NFA_STATES", "CompiledAutomaton", "LeftRecursionError", "RuleDFA", "compile_automaton", "horizon_classes", "nullable_rules", "recursive_rules"]

MAX_MINIMIZE_STATES = 50_000  # horizon classes are looked for in rule DFAs up to this size


class LeftRecursionError(GrammarSyntaxError):
    """The grammar calls a rule from itself before consuming any byte."""


@dataclass(eq=False)
class RuleDFA:
    """A deterministic automaton over bytes plus call edges (a core `regular.DFA`). State 0 is the start."""

    name: str
    dfa: regular.DFA

    @property
    def num_states(self) -> int:
        return self.dfa.num_states

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
    """The DFAs of the root and of every recursive rule; rule 0 is the root. `lazy`: how to build
    the rules numbered from len(rules) on, the members of families met (None: there are none)."""

    rules: list[RuleDFA]
    lazy: LazyRules | None = None


# ---- rule sets ----------------------------------------------------------------------------------


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


def _flags(rules: set[int], count: int) -> bytes:
    return bytes(r in rules for r in range(count))


def _productive_rules(dfas: list[regular.DFA], lazy: int = 0) -> set[int]:
    """Rules that derive at least one finite string (the `lazy` rules numbered after `dfas`,
    members of families, are by construction)."""
    found: set[int] = set()
    changed = True
    while changed:
        changed = False
        flags = _flags(found, len(dfas)) + b"\x01" * lazy
        for r, dfa in enumerate(dfas):
            if r not in found and dfa.can_finish(flags):
                found.add(r)
                changed = True
    return found


def nullable_rules(rules: list[RuleDFA]) -> set[int]:
    """The rules that can finish without reading a byte (through calls of such rules)."""
    return _rules_where(rules, _finishes_without_bytes)


def _finishes_without_bytes(rule: RuleDFA, nullable: set[int]) -> bool:
    dfa = rule.dfa
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


def horizon_classes(rule: RuleDFA, horizon: int) -> np.ndarray | None:
    """Classes of the states that no input of at most `horizon` steps (bytes or calls) tells
    apart, or None when that is just every state on its own.

    A minimised DFA still keeps the states of a long counter apart (`maxLength: 4096` counts to
    4096), yet two of them with more than `horizon` steps left agree on everything a token can
    see: token masks can then be shared between them (see machine.HorizonKeys). Moore's rounds
    from the partition (accepting, callees): after r rounds, states are apart exactly when some
    input of at most r steps tells them apart."""
    n = rule.num_states
    if n <= horizon + 1 or n > MAX_MINIMIZE_STATES:
        return None  # a minimal DFA of n states is told apart within n - 1 rounds
    raw, _ = regular.refine(rule.dfa, horizon)
    classes = np.frombuffer(raw, dtype=np.int32).astype(np.int64)
    return None if int(classes.max()) + 1 == n else classes


def _check_left_recursion(rules: list[RuleDFA]) -> None:
    """Refuse grammars where a rule can call itself before consuming a byte (the stack would grow forever)."""
    nullable = nullable_rules(rules)
    left_calls: list[set[int]] = []
    for rule in rules:
        dfa = rule.dfa
        calls: set[int] = set()
        seen, work = {0}, [0]
        while work:
            s = work.pop()
            for callee, t in dfa.calls(s):
                if callee >= len(rules):
                    continue  # a rule built at run time: families read a byte before any call
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
    """Build trimmed, minimal DFAs for the root and the recursive rules of `grammar`."""
    if grammar.root not in grammar.rules:
        raise StrictgenError(f"the grammar has no root rule {grammar.root!r}")
    recursive = recursive_rules(grammar)
    names = [grammar.root] + sorted(n for n in recursive if n != grammar.root)
    called = CallIndex({n: i for i, n in enumerate(names) if n in recursive}, len(names))  # numbers Lazy nodes too
    shared = shared_nodes(grammar.rules.values())
    memo = BuildMemo()  # pieces built once for all the rules
    raw: list[regular.DFA] = []
    for name in names:
        key, keep = _rule_key(grammar, name, called) if name != grammar.root else (None, None)
        got = None if key is None else _rule_dfas.get_kept(key)
        if got is not None and len(got[1]) == len(keep) and all(a is b for a, b in zip(got[1], keep)):
            raw.append(got[0])
            continue
        builder = NFABuilder(grammar.rules, called, shared, memo)
        start, final = builder.new(), builder.new()
        builder.build(grammar.rules[name], start, final)
        dfa = regular.determinize(builder.nfa, start, final, MAX_DFA_STATES, f"grammar too large: more than {MAX_DFA_STATES} DFA states in rule {name!r}")
        if key is not None and not called.lazy:  # run-time rules are numbered as met: nothing kept once one is
            _rule_dfas.put(key, dfa, keep)
        raw.append(dfa)
    productive = _productive_rules(raw, len(called.lazy))
    if 0 not in productive:
        raise EmptyLanguageError("the grammar accepts no string at all")
    flags = _flags(productive, len(raw))
    rules = [RuleDFA(name, regular.minimal(dfa, flags + b"\x01" * len(called.lazy))) for name, dfa in zip(names, raw)]
    _check_left_recursion(rules)
    return CompiledAutomaton(rules, LazyRules(grammar.rules, called, flags) if called.lazy else None)


# Rules that recur across grammars as the same objects (a schema grammar's whitespace and
# any-value rules, a format's or an enum's rule: json_schema builds them once per process) keep
# their determinised automata here, by the identity of the bodies they are built from and the
# call numbers they use (a DFA's call edges name callees by number).
_rule_dfas = DfaCache(256)


def _rule_key(grammar: Grammar, name: str, called) -> tuple[tuple | None, tuple | None]:
    """(key, the bodies it stands for) of rule `name`'s automaton: its body, the bodies of the
    rules it inlines (they are part of it) and the numbers of the rules it calls. The bodies are
    kept with the automaton, so an id in a key is never another object's."""
    rules = grammar.rules
    reach, work = {name}, [name]
    calls = []
    while work:
        for ref in rule_references(rules[work.pop()]):
            if ref in called:
                calls.append((ref, called[ref]))
            elif ref not in reach and ref in rules:
                reach.add(ref)
                work.append(ref)
    inlined = sorted(reach)
    keep = tuple(rules[r] for r in inlined)
    return (tuple(inlined), tuple(id(b) for b in keep), tuple(sorted(set(calls)))), keep


class EmptyLanguageError(StrictgenError):
    """The grammar's root derives no string at all."""
