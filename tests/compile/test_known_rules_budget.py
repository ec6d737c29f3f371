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


def test_a_known_rule_found_in_the_cache_counts_where_the_order_reaches_it():
    """Found in the cache, a rule an earlier compile built is built first, and free; its states
    count at its place in the order, as in a fresh compile, so the rules built after it are the
    fresh compile's (it does not leave budget for rules a fresh compile defers)."""
    big = called_body("m_big", repeat(alt(lit("ab"), lit("c")), 1, 30))  # one object in both grammars (interned)
    rules = {"root": seq(RuleRef("a_small"), RuleRef("m_big"), RuleRef("z_next")), "m_big": big,
             "a_small": called_body("a_small", lit("a" * 5)), "z_next": called_body("z_next", repeat(lit("xy"), 1, 20))}
    automaton._rule_dfas.clear()
    fresh = _built(Grammar(dict(rules), "root"), 20)
    assert fresh == ["root", "a_small", "m_big"]  # m_big uses the budget up: z_next waits
    again = _built(Grammar(dict(rules), "root"), 20)  # m_big is found (a_small too), and built first
    assert again[0] == "root" and sorted(again) == sorted(fresh)
