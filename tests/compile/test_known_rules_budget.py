"""A rule that an earlier compile built is built first (it should be free), but where this
grammar numbers its calls otherwise the cache misses and the build costs what it did: it counts
against the build-ahead budget, so the rules after it are deferred as in a fresh compile."""

from strictgen.compile import automaton
from strictgen.grammar.ir import Grammar, RuleRef, alt, called_body, lit, repeat, seq


def _built(grammar: Grammar, budget: int) -> list[str]:
    return [r.name for r in automaton.compile_automaton(grammar, budget).rules]


def test_a_known_rule_that_misses_the_cache_counts_against_the_budget():
    big = called_body("big", repeat(alt(lit("ab"), lit("c")), 1, 30))  # one object in both grammars (interned)
    other = called_body("other", repeat(lit("xy"), 1, 20))
    later = Grammar({"root": seq(RuleRef("big"), RuleRef("other")), "big": big, "other": other}, "root")
    automaton._rule_dfas.clear()
    fresh = _built(later, 10)
    assert fresh == ["root", "big"]  # big's states use the budget up: other is deferred
    # an earlier grammar builds the same body under another number (a rule sorts before it)
    automaton._rule_dfas.clear()
    earlier = Grammar({"root": seq(RuleRef("a0"), RuleRef("big")), "a0": called_body("a0", lit("q" * 40)), "big": big}, "root")
    assert _built(earlier, None) == ["root", "a0", "big"]
    assert _built(later, 10) == fresh  # big is built first and misses: other still waits
