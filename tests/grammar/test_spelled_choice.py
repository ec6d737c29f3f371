"""json_escapes.spelled_choice (an enum's strings, kept for the process) and the formats built once
a process: the cached expression is the one built afresh, the same object for the same set of
strings in any order, and its language is exactly the quoted spellings of the strings (hypothesis:
ASCII, characters JSON must escape, multi-byte and astral characters)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.grammar.automata import regular_dfa
from strictgen.grammar.ir import lit, literal_trie, seq
from strictgen.grammar.json_escapes import json_escaped, spelled_choice, spelled_string
from strictgen.grammar.string_formats import format_value_expr

TEXTS = st.text(st.sampled_from(list('ab"\\/\n\x00\x1féß日😀 ~')), max_size=6)
SETS = st.lists(TEXTS, min_size=1, max_size=5)


@settings(max_examples=100, deadline=None)
@given(SETS, st.randoms(use_true_random=False))
def test_spelled_choice_is_the_fresh_trie_and_one_object(strings, rnd):
    fresh = seq(lit('"'), json_escaped(literal_trie(strings), "all"), lit('"'))
    got = spelled_choice(strings)
    assert got == fresh
    shuffled = list(strings) * 2
    rnd.shuffle(shuffled)
    assert spelled_choice(shuffled) is got


@settings(max_examples=60, deadline=None)
@given(SETS, TEXTS, st.booleans())
def test_spelled_choice_accepts_exactly_the_strings(strings, other, ensure_ascii):
    dfa = regular_dfa(spelled_choice(strings))

    def accepts(text: str) -> bool:
        state = dfa.step(0, json.dumps(text, ensure_ascii=ensure_ascii).encode())
        return state >= 0 and dfa.is_accepting(state)

    assert all(accepts(s) for s in strings)
    assert accepts(other) == (other in strings)


def test_spelled_string_is_kept():
    assert spelled_string("name") is spelled_string("name")


def test_date_time_shares_the_date_and_time_formats():
    """date-time is date, T or t, time: the parts are the formats' own objects (built once)."""
    date_time = format_value_expr("date-time")
    assert date_time.items[0] is format_value_expr("date")
    assert date_time.items[-1] is format_value_expr("time")
