"""schema.unique_strings: StringCounter counts, on a string language's DFA, the strings a text so
far can still become (what uniqueItems over strings that can run out refuses by); checked against
brute-force enumeration of small finite languages. escape_ranges: the code points an unfinished
JSON escape can still spell; the atoms' JSON form round-trips."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from strictgen.grammar.schema.ir import AmongStrings, Format, Length, Matches, NotAll
from strictgen.grammar.schema.unique_strings import StringCounter, atoms_from_json, atoms_to_json, escape_ranges

ALPHABET = "abé"


def finite(pattern: str, max_len: int) -> set[str]:
    """Every string over ALPHABET of at most max_len characters that fully matches `pattern`."""
    return {"".join(p) for n in range(max_len + 1) for p in itertools.product(ALPHABET, repeat=n) if re.fullmatch(pattern, "".join(p))}


@pytest.mark.parametrize(
    "atoms,pattern,max_len",
    [
        ([Length(0, 2), Matches("^[abé]*$")], "[abé]{0,2}", 2),
        ([Matches("^(a|bé|ab)$")], "a|bé|ab", 2),
        ([Length(1, 3), Matches("^a[bé]*$")], "a[bé]{0,2}", 3),
        ([Matches("^[ab]{2}$"), NotAll((AmongStrings(frozenset({"ab"})),))], "(?!ab$)[ab]{2}", 2),
    ],
)
def test_counts_from_every_prefix_equal_the_strings_left(atoms, pattern, max_len):
    language = finite(pattern, max_len)
    counter = StringCounter.of([atoms_to_json(tuple(atoms))], [])
    assert counter.total() == len(language)
    prefixes = {w[:i] for w in language for i in range(len(w) + 1)}
    for prefix in prefixes:
        state = counter.walk(prefix.encode("utf-8"))
        assert state >= 0
        longer = [w for w in language if w.startswith(prefix) and len(w) > len(prefix)]
        assert counter.count(state, cap=10**6) == len(longer), prefix  # count() is of what follows
        assert counter.accepting[state] == (prefix in language)
        # first characters restricted to a code point range: 'é' alone
        only_e = [w for w in longer if w[len(prefix)] == "é"]
        assert counter.count(state, 0xE9, 0xE9, cap=10**6) == len(only_e), prefix
    for word in language:
        assert counter.accepts(word)
    assert not counter.accepts("x")


def test_enum_strings_count_beside_a_language():
    counter = StringCounter.of([], ["ab", "abc", "é"])
    assert counter.total() == 3
    state = counter.walk(b"ab")
    assert counter.accepting[state] and counter.count(state, cap=100) == 1  # "ab" itself, then "abc"


def test_infinite_languages_count_as_none():
    counter = StringCounter.of([atoms_to_json((Matches("^a+$"),))], [])
    assert counter.total() is None
    assert counter.count(counter.walk(b"a"), cap=100) is None


def test_escape_ranges_are_the_code_points_an_unfinished_escape_can_spell():
    everything = escape_ranges("\\u")
    assert any(lo <= 0x41 <= hi for lo, hi in everything) and any(lo <= 0xFFFF <= hi for lo, hi in everything)
    for tail, inside, outside in [("\\u00", 0xE9, 0x100), ("\\u00e", 0xE9, 0xF0), ("\\u0", 0xFFF, 0x1000)]:
        ranges = escape_ranges(tail)
        assert any(lo <= inside <= hi for lo, hi in ranges), tail
        assert not any(lo <= outside <= hi for lo, hi in ranges), tail
    # a high surrogate spells the 1,024 characters above U+FFFF it starts, with its low half to come
    assert escape_ranges("\\ud83d") == [(0x1F400, 0x1F7FF)]
    assert escape_ranges("\\ud83d\\ude") == [(0x1F600, 0x1F6FF)]


def test_atoms_json_round_trips():
    atoms = (Length(1, 5), Matches("^a"), Format("date"), AmongStrings(frozenset({"x", "y"})), NotAll((Length(0, 2), AmongStrings(frozenset({"q"})))))
    assert atoms_from_json(json.loads(json.dumps(atoms_to_json(atoms)))) == atoms
