"""A rule that an earlier compile built is built first (it should be free), but where this
grammar numbers the rules it calls otherwise the cache misses and the build costs what it did: it
counts against the build-ahead budget, so the rules after it are deferred as in a fresh compile."""

from strictgen.compile import automaton
from strictgen.grammar.ir import Grammar, RuleRef, alt, called_body, lit, opt, repeat, seq


def _built(grammar: Grammar, budget: int) -> list[str]:
    return [r.name for r in automaton.compile_automaton(grammar, budget).rules]


def _leaf() -> dict:
    return {"leaf": seq(lit("z"), opt(RuleRef("leaf")))}  # a recursive rule that "big" calls


def test_a_known_rule_that_misses_the_cache_counts_against_the_budget():
    body = seq(repeat(alt(lit("ab"), lit("c")), 1, 30), RuleRef("leaf"))
    big = called_body("big", body)  # one object in both grammars (interned)
    other = called_body("other", repeat(lit("xy"), 1, 20))
    later = Grammar({"root": seq(RuleRef("big"), RuleRef("other")), "big": big, "other": other, **_leaf()}, "root")
    automaton._rule_dfas.clear()
    fresh = _built(later, 10)
    assert fresh == ["root", "big"]  # big's states use the budget up: other is deferred
    # an earlier grammar builds the same body, calling "leaf" under another number (2, not 3)
    automaton._rule_dfas.clear()
    earlier = Grammar({"root": RuleRef("big"), "big": big, **_leaf()}, "root")
    assert _built(earlier, None) == ["root", "big", "leaf"]
    assert _built(later, 10) == fresh  # big is built first and misses: other still waits
