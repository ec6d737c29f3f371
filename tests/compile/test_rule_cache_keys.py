"""The cache of rule automata (compile/automaton.py) keys a rule by the identity of the bodies it
is built from and by the numbers of the rules its automaton calls: only those its call edges name.
A shared rule kept as a call (`ir.called_body`: an unproductive reference to itself) is found
again wherever another grammar places it, and what is found is exactly what a build there gives."""

from strictgen import regular
from strictgen.compile import automaton
from strictgen.grammar.ir import Grammar, RuleRef, alt, called_body, lit, opt, repeat, seq


def _grammars(shared):
    """`shared` as rule 2 (after a0) in one grammar, as rule 1 in the other."""
    a0 = called_body("a0", lit("q" * 5))
    ahead = Grammar({"root": seq(RuleRef("a0"), RuleRef("shared")), "a0": a0, "shared": shared}, "root")
    alone = Grammar({"root": seq(lit("<"), RuleRef("shared")), "shared": shared}, "root")
    return ahead, alone


def _rule(compiled, name):
    return next(r for r in compiled.rules if r.name == name)


def _same(a: regular.DFA, b: regular.DFA) -> bool:
    return a.compact() == b.compact() and a.accepting() == b.accepting() and a.call_arrays() == b.call_arrays()


def test_a_shared_rule_is_found_at_another_place_in_another_grammar(monkeypatch):
    shared = called_body("shared", repeat(alt(lit("ab"), lit("c")), 1, 12))
    ahead, alone = _grammars(shared)
    automaton._rule_dfas.clear()
    determinised = []
    real = regular.determinize

    def counting(*args, **kwargs):
        if "'shared'" in str(args[4:] or kwargs):  # the rule's own build (pieces are determinised too)
            determinised.append(args[0].num_states)
        return real(*args, **kwargs)

    monkeypatch.setattr(automaton.regular, "determinize", counting)
    first = automaton.compile_automaton(ahead, None)
    assert len(determinised) == 1
    determinised.clear()
    second = automaton.compile_automaton(alone, None)
    assert not determinised  # "shared" (rule 1 here, 2 there) is found
    assert _same(_rule(second, "shared").dfa, _rule(first, "shared").dfa)
    automaton._rule_dfas.clear()
    fresh = automaton.compile_automaton(alone, None)  # built here, the cache emptied: the same automaton
    assert _same(_rule(fresh, "shared").dfa, _rule(second, "shared").dfa)


def test_a_rule_whose_callee_moves_is_built_again_and_calls_it_where_it_is():
    leaf = {"leaf": seq(lit("z"), opt(RuleRef("leaf")))}
    shared = called_body("shared", seq(repeat(lit("ab"), 1, 5), RuleRef("leaf")))
    a0 = called_body("a0", lit("q"))
    ahead = Grammar({"root": seq(RuleRef("a0"), RuleRef("shared")), "a0": a0, "shared": shared, **leaf}, "root")
    alone = Grammar({"root": RuleRef("shared"), "shared": shared, **leaf}, "root")
    automaton._rule_dfas.clear()
    first = automaton.compile_automaton(ahead, None)
    second = automaton.compile_automaton(alone, None)
    names = [r.name for r in second.rules]
    called_there = {c for s in range(_rule(first, "shared").num_states) for c, _ in _rule(first, "shared").calls[s]}
    called_here = {c for s in range(_rule(second, "shared").num_states) for c, _ in _rule(second, "shared").calls[s]}
    assert called_there == {[r.name for r in first.rules].index("leaf")} and called_here == {names.index("leaf")}
    assert called_there != called_here
