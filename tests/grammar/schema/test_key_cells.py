"""StringLanguages.key_cells: which combinations of key patterns some key matches exactly. Each
pattern is lowered once and asked in every cell; the answers must be those of the cell written
as an expression (the intersection of the patterns inside, minus those outside) and asked whole,
and every key's own combination must be among them (hypothesis, over patterns that overlap in
many ways, lookaheads included); past `limit` cells the answer is None."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.grammar.ir import difference, intersect
from strictgen.grammar.schema.patterns import pattern_language
from strictgen.grammar.schema.strings import ANY_STRING, StringLanguages

POOL = ["^a", "b$", "^[0-9]+$", "x", "^(?!ab)", "^.{2}$", "^ab", "[é]", "^$", "^(a|b)*$", "zz+", "^[^a]"]
KEYS = ["", "a", "b", "ab", "ba", "abx", "x", "12", "é", "éb", "zzz", "aab", "bb", "q", "7"]


def expression_cells(patterns: list[str]) -> list[int]:
    """The reference: every mask whose cell, written as one expression, is not empty."""
    out = []
    for mask in range(1 << len(patterns)):
        cell = ANY_STRING
        for i, p in enumerate(patterns):
            lang = pattern_language(p)
            cell = intersect(cell, lang) if mask >> i & 1 else difference(cell, lang)
        if not StringLanguages.raw_is_empty(cell):
            out.append(mask)
    return out


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(POOL), min_size=1, max_size=6, unique=True))
def test_cells_are_the_nonempty_combinations(patterns):
    got = StringLanguages().key_cells(patterns, 64)
    assert got == expression_cells(patterns)
    for key in KEYS:  # ECMA and Python agree on these patterns and keys
        mask = sum(1 << i for i, p in enumerate(patterns) if re.search(p, key))
        assert mask in got, (key, mask)


def test_more_cells_than_the_limit_is_none():
    patterns = ["^a", "b$", "x", "^.{2}$"]
    assert len(expression_cells(patterns)) > 4
    assert StringLanguages().key_cells(patterns, 4) is None
    assert StringLanguages().key_cells(patterns, 64) == expression_cells(patterns)


def test_answers_are_kept_per_pattern_list():
    strings = StringLanguages()
    first = strings.key_cells(["^a", "x"], 8)
    assert strings.key_cells(["^a", "x"], 8) is first
