"""The JSON spellings of a string language (`Spelled`, grammar/json_spelling.py): a body is accepted
exactly when it decodes to a member, whatever the spelling, and never as a lone surrogate."""

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.compile.automaton import compile_automaton
from strictgen.compile.machine import DEAD, PushdownMachine
from strictgen.grammar.ir import Grammar, Spelled, charset, difference, intersect, lit, repeat, seq
from tests.helpers import respell_strings

ALPHABET = "a/\"\\\n\té€😀\x7f"
LANGS = {
    "short": repeat(charset([(0x20, 0x7E)]), 0, 2),
    "mixed": seq(repeat(charset([(ord("a"), ord("z")), (0xE9, 0xE9)])), lit("😀")),
    "minus": difference(repeat(charset([(0, 0x10FFFF)]), 1, 2), lit("a")),
    "both": intersect(repeat(charset([(0, 0x10FFFF)]), 0, 3), seq(repeat(charset([(0, 0x10FFFF)])), charset([(0x0A, 0x0A), (0x22, 0x22), (0x1F600, 0x1F600)]))),
}
MEMBER = {
    "short": lambda s: len(s) <= 2 and all(0x20 <= ord(c) <= 0x7E for c in s),
    "mixed": lambda s: s.endswith("😀") and all(c.islower() and c.isascii() or c == "é" for c in s[:-1]),
    "minus": lambda s: 1 <= len(s) <= 2 and s != "a",
    "both": lambda s: len(s) <= 3 and s[-1:] in ("\n", '"', "😀"),
}
MACHINES = {name: PushdownMachine(compile_automaton(Grammar({"root": seq(lit('"'), Spelled(e), lit('"'))}))) for name, e in LANGS.items()}


def accepts(m, text: str) -> bool:
    s = m.step_bytes(m.start, text.encode("utf-8"))
    return s != DEAD and bool(m.accepting[s])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=4), st.integers(0, 2**32))
def test_every_spelling_exactly_when_member(value, seed):
    rnd = random.Random(seed)
    texts = [json.dumps(value), json.dumps(value, ensure_ascii=False), respell_strings(json.dumps(value), rnd)]
    for name, m in MACHINES.items():
        want = MEMBER[name](value)
        for text in texts:
            assert accepts(m, text) == want, (name, text)


def test_lone_surrogates_and_bad_escapes_are_rejected():
    m = MACHINES["minus"]
    for text in ['"\\ud83d"', '"\\ude00"', '"\\ud83d\\u0041"', '"\\x41"', '"\\u12"', '"\\U0041"']:
        assert not accepts(m, text), text
    assert accepts(m, '"\\ud83d\\ude00"') and accepts(m, '"\\u0062"') and not accepts(m, '"\\u0061"')


def test_spelled_languages_are_kept_by_content():
    """Two compiles of equal string languages share one spelled DFA (the cache is keyed by the raw
    minimal DFA's table, not by IR identity), and the shared one spells what a fresh one does."""
    from strictgen.grammar import automata

    from strictgen import regular

    lang = lambda: repeat(charset([(ord("a"), ord("z")), (0xE9, 0xE9)]), 1, 3)  # noqa: E731
    a = automata.regular_dfa(lang())
    b = regular.minimal(regular.dense(a.table256(), a.accepting()))  # the same table, another object
    assert a is not b and automata.spelled_dfa(a) is automata.spelled_dfa(b)
    machine = PushdownMachine(compile_automaton(Grammar({"root": seq(lit('"'), Spelled(lang()), lit('"'))})))
    for body, ok in (("\\u00e9a", True), ("\\u00E9", True), ("\\u0041", False), ("abcd", False), ("\\/", False)):
        assert accepts(machine, '"' + body + '"') == ok, body


def test_spelled_cache_key_stands_for_the_table():
    """The spelled cache's key (automata.table_key) is equal for equal 256-wide tables built
    with other byte classes, and differs when one transition or one accepting flag differs."""
    from strictgen import regular
    from strictgen.grammar import automata

    base = automata.regular_dfa(repeat(charset([(ord("a"), ord("z"))]), 1, 3))
    table, accepting = bytearray(base.table256()), base.accepting()
    same = regular.minimal(regular.dense(bytes(table), accepting))
    assert same.num_classes != base.num_classes  # other byte classes, the same table
    assert automata.table_key(same) == automata.table_key(base)
    table[4 * ord("q") : 4 * ord("q") + 4] = (-1).to_bytes(4, "little", signed=True)  # state 0 no longer reads "q"
    other = regular.minimal(regular.dense(bytes(table), accepting))
    assert automata.table_key(other) != automata.table_key(base)
    longer = automata.regular_dfa(repeat(charset([(ord("a"), ord("z"))]), 0, 3))  # accepts the empty string too
    assert automata.table_key(longer) != automata.table_key(base)
    assert automata.spelled_dfa(other) is not automata.spelled_dfa(base)
