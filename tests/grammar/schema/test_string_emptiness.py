"""StringLanguages.is_empty tells a conjunction holding atoms and their negation empty without
its language: on random conjunctions of atoms and negations, its answer is the language's."""

from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.grammar.automata import Language
from strictgen.grammar.schema.ir import AmongStrings, Format, Length, Matches, NotAll
from strictgen.grammar.schema.strings import StringLanguages, string_language

POOL = [Matches("^a"), Matches("b$"), Length(1, 3), Format("date"), AmongStrings(frozenset({"a", "ab", "2020-01-01"}))]
atom_sets = st.lists(st.sampled_from(POOL), min_size=1, max_size=3, unique=True).map(tuple)


@settings(max_examples=80, deadline=None)
@given(atom_sets, st.lists(atom_sets, max_size=2))
def test_emptiness_is_the_languages(atoms, negated):
    conj = atoms + tuple(NotAll(n) for n in negated)
    assert StringLanguages().is_empty(conj) == Language(string_language(conj)).is_empty()


def test_an_atom_and_its_negation_need_no_language(monkeypatch):
    def no_language(self, atoms):
        raise AssertionError("built a language")

    monkeypatch.setattr(StringLanguages, "language", no_language)
    conj = (Length(2, None), Format("date-time"), NotAll((Format("date-time"), Length(2, None))))
    assert StringLanguages().is_empty(conj)
