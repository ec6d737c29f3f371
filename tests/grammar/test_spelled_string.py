"""json_escapes.spelled_string (and json_escaped on a literal) build the Seq without `seq`'s loops
where it is a Seq of escape choices: the expression must be the one `seq` writes, for any text
(hypothesis: ASCII, characters JSON must escape, multi-byte and astral characters)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.grammar.ir import lit, seq
from strictgen.grammar.json_escapes import json_escaped, spelled_string, spelled_text

TEXTS = st.text(st.sampled_from(list('ab"\\/\n\x00\x1féß日😀 ~')), max_size=12) | st.text(max_size=8)


@settings(max_examples=200, deadline=None)
@given(TEXTS)
def test_spelled_string_is_the_quoted_seq(text):
    assert spelled_string(text) == seq(lit('"'), spelled_text(text), lit('"'))


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.sampled_from(["all", "standard", "required"]))
def test_a_literal_is_spelled_as_the_seq_of_its_characters(text, escapes):
    """json_escaped builds a literal's Seq of escape choices at once where `seq` would return it
    unchanged: the same expression as `seq` over the characters' own spellings, every policy."""
    assert json_escaped(lit(text), escapes) == seq(*(json_escaped(lit(c), escapes) for c in text))
