"""Rules built at run time: a compile's deferred rules (automaton.py) and the members of a
grammar's `LazyFamily`s (grammar/ir.py).

A family stands for more rules than could be built ahead: an object whose properties may come in
any order needs one rule per set of keys already seen (2**n of them), yet one document visits at
most n + 1 of those sets. The automaton compiler numbers each `Lazy` node it meets after the
static rules and emits a call edge to it; the C machine (`_machine.c`) knows such a callee only
once `add_rule` has appended its frames, and until then any closure that would push it fails with
`NeedRule(index)`. `ResolvingCore` answers that by building the rule (its body from the family,
lowered like any rule, minimised, trimmed) and running the call again. Nothing else changes: the
machine's states, rows and token masks are those of the grammar with every member built, so
masks stay exact and trimmed (a family only hands out keys whose rule can still finish; a
deferred rule is trimmed with the productive rules the compile found) and grammars whose rules
were all built at compile time never meet any of this.
"""

from __future__ import annotations

import threading
from typing import Callable

from strictgen import regular
from strictgen.errors import GrammarTooLargeError
from strictgen.grammar.automata import MAX_DFA_STATES, NFABuilder, shared_nodes
from strictgen.grammar.build_memo import BuildMemo
from strictgen.grammar.ir import Expr, Lazy, lazy_body

from ._machine import NeedRule

MAX_LAZY_RULES = 100_000  # members of families one compiled grammar may build


class CallIndex(dict):
    """The automaton builder's `called` map (rule name -> index) that also numbers the `Lazy`
    nodes it meets, after the static rules, in the order met (`lazy`)."""

    def __init__(self, static: dict[str, int], first_lazy: int):
        super().__init__(static)
        self.first_lazy = first_lazy
        self.lazy: list[Lazy] = []

    def __missing__(self, key):
        if not isinstance(key, Lazy):
            raise KeyError(key)
        if len(self.lazy) >= MAX_LAZY_RULES:
            raise GrammarTooLargeError(f"grammar too large: more than {MAX_LAZY_RULES} rules built at run time")
        index = self[key] = self.first_lazy + len(self.lazy)
        self.lazy.append(key)
        return index


class LazyRules:
    """What building a rule at run time needs from the compile: the grammar's rules, the call
    numbering (shared, so the same member always gets the same index), which static rules are
    productive, their names (the deferred ones are numbered after those built), `build(name)`,
    the compile's own builder of a static rule's automaton (its memo of pieces with it), and the
    compile's time limit."""

    def __init__(self, rules: dict[str, Expr], calls: CallIndex, productive: bytes, names: list[str], build: Callable[[str], regular.DFA],
                 timeout: float | None = None):
        self.rules = rules
        self.timeout = timeout  # the compile's time limit, which each build at run time gets too
        self.calls = calls
        self.productive = productive
        self.names = names
        self._build = build
        self.lock = threading.Lock()

    def dfa(self, index: int) -> tuple[str, regular.DFA, regular.Splits | None]:
        """(name, the minimal, trimmed DFA, the history of its classes: `regular.minimal_with_splits`)
        of run-time rule `index`, a RuleDFA's fields (callers hold `lock`)."""
        if index < len(self.names):  # a deferred static rule
            name, dfa = self.names[index], self._build(self.names[index])
        else:
            node = self.calls.lazy[index - self.calls.first_lazy]
            body = lazy_body(node)
            builder = NFABuilder(self.rules, self.calls, shared_nodes([body]), BuildMemo())
            start, final = builder.new(), builder.new()
            builder.build(body, start, final)
            name = f"lazy{index}"
            dfa = regular.determinize(builder.nfa, start, final, MAX_DFA_STATES, f"grammar too large: more than {MAX_DFA_STATES} DFA states in a rule built at run time")
        # members of families are productive by construction (a family hands out live keys only)
        return (name, *regular.minimal_with_splits(dfa, self.productive + b"\x01" * len(self.calls.lazy)))


def resolving_call(fn, args: tuple, add):
    """fn(*args), run again after `add(r)` has built each rule r it fails for (NeedRule)."""
    while True:
        try:
            return fn(*args)
        except NeedRule as need:
            add(need.args[0])


class ResolvingCore:
    """The C machine of a grammar with lazy rules: a method that fails with NeedRule(r) gets rule
    r built (`add()(r)`: a weak method of the machine, which holds this core) and runs again.
    Attributes pass through; methods are wrapped once."""

    def __init__(self, core, add):
        self._core = core
        self._add = add

    def __getattr__(self, name: str):
        attr = getattr(self._core, name)
        if not callable(attr):
            return attr  # tables, num_states...: read fresh each time
        weak = self._add

        def add(index: int) -> None:
            weak()(index)

        def resolving(*args):
            return resolving_call(attr, args, add)

        resolving.__name__ = name
        setattr(self, name, resolving)
        return resolving
