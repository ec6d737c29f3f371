"""The states of a pattern's minimal DFA under a length bound, counted without building the product
(length_product.product_states, _length_classes.c): the count equals the regular core's own minimal
product, stops once it passes its limit, and a pattern proven too big skips the product."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen.grammar.schema.emit_strings as emit_strings
from strictgen.grammar.automata import dfa_size, regular_dfa
from strictgen.grammar.ir import ByteSet, intersect, repeat
from strictgen.grammar.schema.ir import Length, Matches
from strictgen.grammar.schema.length_product import product_exceeds, product_states
from strictgen.grammar.schema.strings import ANY_CHAR, string_language

ATOMS = ["a", "b", "é", "€", "😀", "[a-c]", "[^a]", ".", "\\s", "\\S", "[é€😀]", "[\\u0800-\\uffff]", "(?:ab|a)"]
LOTS = 10**6  # a limit no test pattern reaches: the count runs to the end


@st.composite
def patterns(draw) -> str:
    """Small regexes over 1- to 4-byte characters, with stars, options and alternatives."""
    def piece() -> str:
        atom = draw(st.sampled_from(ATOMS))
        return atom + draw(st.sampled_from(["", "", "*", "+", "?", "{1,3}"]))

    branches = ["".join(piece() for _ in range(draw(st.integers(1, 3)))) for _ in range(draw(st.integers(1, 2)))]
    return "^(?:" + "|".join(branches) + ")$"


def _minimal_product(pattern: str, lo: int, hi: int) -> int:
    rest = string_language((Matches(pattern),))
    return dfa_size(intersect(rest, repeat(ANY_CHAR, lo, hi))) or 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(), st.integers(0, 6), st.integers(0, 10))
def test_the_count_is_the_minimal_products(pattern, lo, extra):
    hi = lo + extra
    dfa = regular_dfa(string_language((Matches(pattern),)))
    assert product_states(dfa, lo, hi, LOTS) == _minimal_product(pattern, lo, hi), pattern


def test_the_count_stops_past_its_limit():
    dfa = regular_dfa(string_language((Matches("^.*$"),)))
    assert product_states(dfa, 0, 100, LOTS) == _minimal_product("^.*$", 0, 100) == 1001  # 10 per character
    assert not product_exceeds(dfa, 0, 100, 1001)
    assert product_exceeds(dfa, 0, 100, 1000)
    words = regular_dfa(string_language((Matches("^(?:\\S+\\s+){0,49}\\S+$"),)))
    got = product_states(words, 0, 500, 20_000)
    assert 20_000 < got <= 20_000 + words.num_states  # one layer's names past the limit, not the whole product


def test_no_count_where_it_does_not_apply():
    dfa = regular_dfa(string_language((Matches("^a+$"),)))
    assert product_states(dfa, 60, None, LOTS) is None  # no upper bound: the product is not acyclic
    raw = regular_dfa(repeat(ByteSet(((0x80, 0xBF),)), 1, None))  # bytes that are not whole characters
    assert product_states(raw, 0, 100, LOTS) is None
    assert not product_exceeds(raw, 0, 100, 10)


def test_a_product_proven_too_big_is_not_built(monkeypatch):
    atoms = (Length(0, 500), Matches("^(?:\\S+\\s+){0,49}\\S+$"))
    emit_strings._raw_states(atoms[1:])  # the pattern's own DFA: built either way

    def no_product(expr):
        raise AssertionError("the product was built")

    monkeypatch.setattr(emit_strings, "dfa_size", no_product)
    assert not emit_strings._length_product_small(atoms, atoms[0])


def test_huge_bounds_end_quickly():
    """maxLength 2**31 is common in real schemas: the listing and the naming stop at their caps."""
    letters = regular_dfa(string_language((Matches("^a*$"),)))
    assert 1000 < product_states(letters, 0, 2**31, 1000) <= 1001  # the layers repeat at once; a new name each
    assert product_states(letters, 0, 10**18, 1000) is None  # out of range: nothing to prove with
    pairs = regular_dfa(string_language((Matches("^(?:ab)*$"),)))
    assert product_states(pairs, 0, 2**31, 1000) is None  # layers alternate: the listing stops at its cap
    short = regular_dfa(string_language((Matches("^[ab]{1,3}$"),)))
    assert product_states(short, 0, 2**31, 1000) is None  # names repeat (3 characters at most): unproven
