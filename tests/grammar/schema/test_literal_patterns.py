"""oneOf's disjointness proofs read a `^text$` pattern as the one string it matches
(schema.patterns.literal_pattern) instead of building its language: that reading must be the
pattern's language, and patterns that are not plain text must be left to the languages."""

from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.grammar.ir import difference, intersect, lit
from strictgen.grammar.schema.patterns import literal_pattern, pattern_language
from strictgen.grammar.schema.strings import StringLanguages

TEXT = st.text(alphabet=st.sampled_from(list("aZ0 -_/é€😀") + list("^$\\.*+?()[]{}|")), max_size=6)


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_a_literal_pattern_matches_exactly_its_text(text):
    pattern = "^" + text + "$"
    got = literal_pattern(pattern)
    if got is None:
        assert any(c in "^$\\.*+?()[]{}|" for c in text)
        return
    assert got == text
    lang = pattern_language(pattern)
    empty = StringLanguages.raw_is_empty
    assert not empty(intersect(lang, lit(text)))
    assert empty(difference(lang, lit(text)))


def test_only_whole_anchored_plain_text_is_literal():
    assert literal_pattern("^Abs$") == "Abs"
    assert literal_pattern("^$") == ""
    for p in ["Abs", "^Abs", "Abs$", "^A.s$", "^a|b$", "^a\\$", "^\ud800$", "$", "^"]:
        assert literal_pattern(p) is None, p


def test_tags_decide_disjointness():
    from strictgen.grammar.schema.algebra import disjoint

    from .oracle import normalizer

    defs = {
        "abs": {"type": "string", "pattern": "^Abs$"},
        "add": {"type": "string", "pattern": "^Add$"},
        "abs3": {"pattern": "^Abs$", "minLength": 3},
        "abs4": {"pattern": "^Abs$", "minLength": 4},
        "a": {"type": "string", "pattern": "^A"},
    }
    norm = normalizer({"$defs": defs})
    f = {k: norm.sub(norm.root_formula, v, "$defs", k) for k, v in defs.items()}
    assert disjoint(norm.formulas, f["abs"], f["add"])
    assert not disjoint(norm.formulas, f["abs"], f["abs3"])
    assert disjoint(norm.formulas, f["abs"], f["abs4"])
    assert not disjoint(norm.formulas, f["add"], f["a"])
