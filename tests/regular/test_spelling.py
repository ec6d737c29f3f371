"""The core's JSON spellings (`regular.json_spellings`, C) against the Python reference
(reference_spelling.py) on random string languages: the same language of spelled bodies, with
every spelling and with printable ASCII raw only, by the fewest byte classes, and the same
refusal past a state budget."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictgen import regular
from strictgen.grammar import json_spelling
from strictgen.grammar.automata import regular_dfa
from strictgen.grammar.ir import alt, charset, difference, lit, repeat, seq

from .reference_spelling import spell as reference_spell

# code point ranges that cross every case: controls, '"', '\\', '/', ASCII, 2-, 3- and 4-byte UTF-8,
# the surrogate gap's edges and whole 1024-blocks above U+10000
EDGES = [0x00, 0x08, 0x1F, 0x20, 0x22, 0x2F, 0x41, 0x5C, 0x7E, 0x7F, 0xE9, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x103FF, 0x10400, 0x1F600, 0x10FFFF]


@st.composite
def languages(draw, depth=2):
    kind = draw(st.sampled_from(["set", "lit", "seq", "rep", "alt", "minus"] if depth else ["set", "lit"]))
    if kind == "set":
        ranges = []
        for _ in range(draw(st.integers(1, 3))):
            a, b = sorted(draw(st.sampled_from(EDGES)) for _ in range(2))
            ranges.append((a, b))
        return charset(ranges)
    if kind == "lit":
        return lit(draw(st.text(alphabet='a"\\/\n\x7fé€😀', min_size=1, max_size=3)))
    if kind == "seq":
        return seq(draw(languages(depth - 1)), draw(languages(depth - 1)))
    if kind == "rep":
        lo = draw(st.integers(0, 2))
        return repeat(draw(languages(depth - 1)), lo, lo + draw(st.integers(0, 2)))
    if kind == "alt":
        return alt(draw(languages(depth - 1)), draw(languages(depth - 1)))
    return difference(draw(languages(depth - 1)), draw(languages(depth - 1)))


def same_language(a: regular.DFA, b: regular.DFA) -> bool:
    return not regular.minimal(regular.product(a, b, True)).can_finish() and not regular.minimal(regular.product(b, a, True)).can_finish()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(languages(), st.booleans())
def test_core_spells_what_the_reference_spells(expr, all_spellings):
    raw = regular_dfa(expr)
    table, accepting = raw.table256(), raw.accepting()
    got = regular.json_spellings(table, accepting, 200_000, all_spellings)
    rows = np.frombuffer(table, dtype=np.int32).reshape(-1, 256).tolist()
    want = reference_spell(rows, [bool(x) for x in accepting], 200_000, all_spellings)
    assert got is not None and want is not None
    assert same_language(regular.minimal(got), regular.minimal(regular.from_table(*want)))
    # the result comes by byte class, as few as its columns allow (as `dense` would find them)
    assert got.num_classes == regular.dense(got.table256(), got.accepting()).num_classes
    # read by the raw DFA's own classes (`compact()`, as `json_spelling.spell` hands it), the same DFA
    compact, classmap = raw.compact()
    by_class = regular.json_spellings(compact, accepting, 200_000, all_spellings, classmap)
    assert (by_class.table256(), by_class.accepting(), by_class.num_classes) == (got.table256(), got.accepting(), got.num_classes)


@pytest.mark.parametrize("expr", [
    charset([(0x10000, 0x10FFFF)]),  # every high surrogate whole, one target
    charset([(0x10400, 0x1F600)]),  # whole blocks, then part of one
    charset([(0x10001, 0x107FF)]),  # part of a block, then a whole one
    charset([(0x103FF, 0x10400)]),  # the last low of one block and the first of the next
    alt(seq(charset([(0x10000, 0x107FF)]), lit("a")), seq(charset([(0x10800, 0x10FFFF)]), lit("b"))),  # whole blocks, two targets
    alt(seq(charset([(0x10000, 0x105FF)]), lit("a")), seq(charset([(0x10600, 0x10FFFF)]), lit("b"))),  # targets change mid-block
])
def test_supplementary_blocks_spell_as_the_reference(expr):
    """Whole 1,024-blocks of supplementary characters (the core gives them one low-surrogate
    signature at once) next to partial ones: the same language as the reference, both modes."""
    raw = regular_dfa(expr)
    table, accepting = raw.table256(), raw.accepting()
    rows = np.frombuffer(table, dtype=np.int32).reshape(-1, 256).tolist()
    for all_spellings in (True, False):
        got = regular.json_spellings(table, accepting, 200_000, all_spellings)
        want = reference_spell(rows, [bool(x) for x in accepting], 200_000, all_spellings)
        assert same_language(regular.minimal(got), regular.minimal(regular.from_table(*want)))


def test_budget_is_refused_by_both():
    raw = regular_dfa(repeat(charset([(0, 0x10FFFF)]), 0, 40))
    table, accepting = raw.table256(), raw.accepting()
    rows = np.frombuffer(table, dtype=np.int32).reshape(-1, 256).tolist()
    assert regular.json_spellings(table, accepting, 60, True) is None
    assert reference_spell(rows, [bool(x) for x in accepting], 60, True) is None
    assert regular.json_spellings(table, accepting, 100_000, True) is not None


def test_plain_ascii_language_is_its_own_spelling():
    raw = regular_dfa(repeat(charset([(0x41, 0x5A)]), 1, 3))
    table, accepting = raw.table256(), raw.accepting()
    got = regular.json_spellings(table, accepting, 1000, False)
    assert (got.table256(), got.accepting()) == (table, accepting)
    got = regular.json_spellings(*raw.compact()[:1], accepting, 1000, False, raw.compact()[1])
    assert (got.table256(), got.accepting()) == (table, accepting)


@pytest.mark.parametrize("classmap, table", [
    (bytes(256), b"\x00" * 8),  # a table of 2 entries for 1 class and 1 state
    (bytes(255) + b"\x01", (5).to_bytes(4, "little", signed=True) * 2),  # a target past the states
])
def test_malformed_tables_are_refused(classmap, table):
    with pytest.raises(ValueError):
        regular.json_spellings(table, b"\x01", 1000, True, classmap)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(languages())
def test_every_spelling_is_minimal_as_built(expr):
    """With every spelling, the spelled DFA of a minimal raw DFA is minimal without minimising
    (json_spelling's docstring proves it; `spell` relies on it): `regular.minimal` finds no state
    to merge or trim and the same language."""
    raw = regular_dfa(expr)
    got = regular.json_spellings(raw.table256(), raw.accepting(), 200_000, True)
    smallest = regular.minimal(got)
    assert got.num_states == smallest.num_states
    assert same_language(got, smallest)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(languages(), st.booleans())
def test_spell_gives_the_minimal_dfa_in_either_mode(expr, every_spelling):
    """`json_spelling.spell` hands back a minimal DFA whichever mode it picks (printable ASCII
    raw only, forced here by a SPELL_ALL_STATES below every size, is minimised: there a raw state
    can equal an escape state)."""
    raw = regular_dfa(expr)
    with pytest.MonkeyPatch.context() as patch:
        if not every_spelling:
            patch.setattr(json_spelling, "SPELL_ALL_STATES", -1)
        got = json_spelling.spell(raw, 200_000)
    want = regular.json_spellings(raw.table256(), raw.accepting(), 200_000, every_spelling)
    assert got.num_states == regular.minimal(got).num_states
    assert same_language(got, regular.minimal(want))


def columns_by_definition(dfa: regular.DFA) -> tuple[bytes, bytes]:
    """table_columns written out: every byte's 256-wide column, classes numbered as bytes first
    meet a new column."""
    table = np.frombuffer(dfa.table256(), dtype=np.int32).reshape(dfa.num_states, 256)
    found: dict[bytes, int] = {}
    classmap = bytes(found.setdefault(table[:, b].tobytes(), len(found)) for b in range(256))
    return b"".join(found), classmap


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(languages(), st.integers(0, 255))
def test_table_columns_are_the_distinct_columns_by_first_byte(expr, split_at):
    """The spellings' cache key (`regular.table_columns`, C) is the definition's, also for a DFA
    whose classes are not the fewest (one class split in two at `split_at`, numbered last) or
    not numbered by first byte: equal tables, equal keys."""
    raw = regular_dfa(expr)
    assert regular.table_columns(raw) == columns_by_definition(raw)
    table, classmap = raw.compact()
    k = raw.num_classes
    split = bytes(k if b >= split_at and c == classmap[split_at] else c for b, c in enumerate(classmap))
    rows = np.frombuffer(table, dtype=np.int32).reshape(-1, k)
    wide = np.concatenate([rows, rows[:, [classmap[split_at]]]], axis=1)
    twin = regular.from_classes(wide.tobytes(), raw.accepting(), split)
    assert twin.table256() == raw.table256()
    assert regular.table_columns(twin) == regular.table_columns(raw)
