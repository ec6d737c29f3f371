"""What the string path keeps for the process: json_escapes.spelled_choice (an enum's strings) is
the expression built afresh, around the same kept body for the same strings in any order, and its
language is exactly the quoted spellings of the strings (hypothesis: ASCII, characters JSON must
escape, multi-byte and astral characters); the date and time formats are built once, and the
time format's leap-second table, written with the node classes, is the expression seq/alt build;
one character's `\\u` escapes, written out, are every case of its UTF-16 code units' hex digits."""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.grammar.automata import regular_dfa
from strictgen.grammar.ir import MAX_TRIE_NESTING, Seq, alt, chars, lit, literal_trie, opt, repeat, seq
from strictgen.grammar.json_escapes import SHORT_ESCAPES, json_escaped, spelled_choice
from strictgen.grammar.string_formats import DIGIT, format_value_expr

TEXTS = st.text(st.sampled_from(list('ab"\\/\n\x00\x1féß日😀 ~')), max_size=6)
SETS = st.lists(TEXTS, min_size=1, max_size=5) | st.lists(st.text("éßab", max_size=5), min_size=1, max_size=12)


@settings(max_examples=100, deadline=None)
@given(SETS, st.randoms(use_true_random=False))
def test_spelled_choice_is_the_fresh_trie_around_one_kept_body(strings, rnd):
    fresh = seq(lit('"'), json_escaped(literal_trie(strings), "all"), lit('"'))
    got = spelled_choice(strings)
    assert got == fresh
    shuffled = list(strings) * 2
    rnd.shuffle(shuffled)
    again = spelled_choice(shuffled)
    assert again == got and again is not got  # a new quoted expression ...
    if type(got) is Seq and len(got.items) == 3:
        assert again.items[1] is got.items[1]  # ... around the kept body


def test_spelled_choice_of_a_trie_too_deep_to_nest():
    """Past MAX_TRIE_NESTING literal_trie gives a flat Alt of the words: spelled the same."""
    words = ["é" * n + "x" for n in range(MAX_TRIE_NESTING + 8)]
    assert spelled_choice(words) == seq(lit('"'), json_escaped(literal_trie(words), "all"), lit('"'))


@settings(max_examples=60, deadline=None)
@given(SETS, TEXTS, st.booleans())
def test_spelled_choice_accepts_exactly_the_strings(strings, other, ensure_ascii):
    dfa = regular_dfa(spelled_choice(strings))

    def accepts(text: str) -> bool:
        state = dfa.step(0, json.dumps(text, ensure_ascii=ensure_ascii).encode())
        return state >= 0 and dfa.is_accepting(state)

    assert all(accepts(s) for s in strings)
    assert accepts(other) == (other in strings)


def test_date_time_shares_the_date_and_time_formats():
    """date-time is date, T or t, time: the parts are the formats' own objects (built once)."""
    date_time = format_value_expr("date-time")
    assert date_time.items[0] is format_value_expr("date")
    assert date_time.items[-1] is format_value_expr("time")


def _leap_seconds_with_seq_and_alt():
    """The leap-second table as `seq` and `alt` build it (the construction string_formats had)."""
    secfrac = opt(seq(lit("."), repeat(DIGIT, 1)))
    table = {}
    for h in range(24):
        for m in range(60):
            local = 60 * h + m
            for sign in "+-":
                off = (local - 1439) % 1440 if sign == "+" else (1439 - local) % 1440
                oh, om = f"{off // 60:02d}", f"{off % 60:02d}"
                table.setdefault((om, oh[1], oh[0]), []).append(seq(lit(f"{h:02d}:{m:02d}:60"), secfrac, lit(sign)))
    then_d1 = {}
    for (om, d2, d1), entries in table.items():
        then_d1.setdefault((om, d2), []).append(seq(alt(*entries), lit(d1)))
    then_d2 = {}
    for (om, d2), items in then_d1.items():
        then_d2.setdefault(om, []).append(seq(alt(*items), lit(d2)))
    return alt(*(seq(alt(*items), lit(":" + om)) for om, items in then_d2.items()))


def test_the_time_format_is_the_seq_and_alt_expression():
    time_format = format_value_expr("time")
    leap = _leap_seconds_with_seq_and_alt()
    assert time_format.items[1:-1] == leap.items
    assert time_format.items[-1] == seq(lit("23:59:60"), opt(seq(lit("."), repeat(DIGIT, 1))), chars("Zz"))


def _u_spellings(cp: int) -> set[bytes]:
    """Every `\\uXXXX` spelling of a scalar value (a surrogate pair above U+FFFF), hex in either case."""
    units = [cp] if cp <= 0xFFFF else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + (cp & 0x3FF)]
    hexes = "".join(f"{u:04x}" for u in units)
    cased = itertools.product(*({d, d.upper()} for d in hexes))
    return {b"\\u" + b"\\u".join(bytes("".join(c[i : i + 4]), "ascii") for i in range(0, len(c), 4)) for c in cased}


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 0x10FFFF).filter(lambda cp: not 0xD800 <= cp <= 0xDFFF))
def test_one_character_in_every_spelling(cp):
    """json_escaped of one character ("all") accepts its raw UTF-8 where JSON allows it, its short
    escape, and its \\u escapes in every case, and nothing of the next character."""
    dfa = regular_dfa(json_escaped(lit(chr(cp)), "all"))

    def accepts(body: bytes) -> bool:
        state = dfa.step(0, body)
        return state >= 0 and dfa.is_accepting(state)

    spellings = _u_spellings(cp)
    if cp >= 0x20 and cp not in (0x22, 0x5C):
        spellings.add(chr(cp).encode())
    if cp in SHORT_ESCAPES:
        spellings.add(b"\\" + SHORT_ESCAPES[cp].encode())
    assert all(accepts(b) for b in spellings)
    other = cp + 1 if cp + 1 <= 0x10FFFF and not 0xD800 <= cp + 1 <= 0xDFFF else 0x41 + (cp == 0x41)
    assert not any(accepts(b) for b in _u_spellings(other))
