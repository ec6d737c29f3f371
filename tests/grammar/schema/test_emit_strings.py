"""schema.emit_strings (emit_string): a conjunction of string atoms emits exactly the JSON
strings whose value satisfies every atom (judged by str_holds, i.e. jsonschema for patterns and
formats), in every JSON spelling of the value (raw UTF-8, \\u escapes, surrogate pairs, `\\/`);
the string-language service (schema.strings) decides the same membership, and its `is_empty` is
never wrong when True and finds a member otherwise; long length bounds count code points; the same atoms give the same,
stably named rule in every grammar."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings

from strictgen.grammar.automata import Language
from strictgen.grammar.ir import NOTHING, lit
from strictgen.grammar.schema.emit_strings import LONG_STRING, emit_string, spelled
from strictgen.grammar.schema.strings import string_language
from strictgen.grammar.schema.ir import AmongStrings, Format, Length, Matches, NotAll

from .oracle import WORDS, atoms, emitter, language_of, str_holds

FEW = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


def spellings(s: str) -> list[str]:
    """JSON texts of the string `s`: raw UTF-8, every non-ASCII character escaped, every character escaped."""
    every = '"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else json.dumps(c)[1:-1] for c in s) + '"'
    return [json.dumps(s, ensure_ascii=False), json.dumps(s), every]


@FEW
@given(atoms)
def test_the_emitted_strings_are_those_satisfying_the_atoms(a):
    em = emitter(True)
    expr = emit_string(em, a)
    accepts = language_of(em, expr)
    for s in WORDS:
        holds = str_holds(a, s)
        assert em.strings.member(a, s) == holds, (a, s)
        for text in spellings(s):
            assert accepts(text) == holds, (a, text)
    if em.strings.is_empty(a):
        assert expr == NOTHING or not any(str_holds(a, s) for s in WORDS)
    else:
        member = Language(string_language(a)).shortest()
        if not any(type(x) is AmongStrings for x in a):
            assert member is not None and str_holds(a, member.decode("utf-8")), (a, member)


@pytest.mark.parametrize(
    "name,good,bad",
    [
        ("date", ["2020-02-29", "1999-12-31"], ["2020-13-01", "2020-1-1", "x"]),
        ("ipv4", ["192.168.0.1", "0.0.0.0"], ["256.1.1.1", "1.2.3", "a.b.c.d"]),
        ("uuid", ["12345678-1234-1234-1234-123456789abc"], ["1234", "12345678-1234-1234-1234-123456789abz"]),
    ],
)
def test_formats_match_the_jsonschema_format_checker(name, good, bad):
    a = (Format(name),)
    em = emitter(True)
    accepts = language_of(em, emit_string(em, a))
    for s in good + bad:
        assert str_holds(a, s) == (s in good), f"test error: {s!r}"
        assert accepts(json.dumps(s)) == (s in good), s
        assert em.strings.member(a, s) == (s in good), s


def test_long_length_bounds_count_code_points():
    a = (Length(LONG_STRING + 2, LONG_STRING + 5),)
    em = emitter(True)
    accepts = language_of(em, emit_string(em, a))
    for n, ok in [(LONG_STRING + 1, False), (LONG_STRING + 2, True), (LONG_STRING + 5, True), (LONG_STRING + 6, False)]:
        for ch in ["a", "é", "😀"]:  # 1, 2 and 4 UTF-8 bytes; the emoji is a surrogate pair in \\u form
            for text in spellings(ch * n):
                assert accepts(text) == ok, (n, ch, text[:20])


def test_solidus_and_short_escapes_are_spellings_too():
    em = emitter(True)
    a = (AmongStrings(frozenset(["a/b\n"])),)
    accepts = language_of(em, emit_string(em, (Matches("^a/b"), Length(0, 4))))
    assert accepts('"a/b"') and accepts('"a\\/b"') and accepts('"a\\u002fb"') and not accepts('"a\\\\b"')
    accepts = language_of(em, emit_string(em, a))
    assert accepts('"a/b\\n"') and accepts('"a\\/b\\u000a"') and not accepts('"a/b"')


def test_the_same_atoms_give_the_same_rule_name_in_every_grammar():
    a = (Matches("^x+$"), Length(1, 3))
    one, two = emitter(True), emitter({"type": "string"})
    r1, r2 = emit_string(one, a), emit_string(two, a)
    assert r1 == r2 and one.rules[r1.name] is two.rules[r2.name]
    assert emit_string(one, (Matches("^y+$"),)) != r1


def test_string_enums_keep_only_the_values_the_other_atoms_allow():
    em = emitter(True)
    a = (AmongStrings(frozenset(["a", "ab", "abc", "b"])), Matches("^a"), NotAll((Length(3, None),)))
    accepts = language_of(em, emit_string(em, a))
    assert [s for s in ["a", "ab", "abc", "b"] if accepts(json.dumps(s))] == ["a", "ab"]
    assert emit_string(em, (AmongStrings(frozenset(["b"])), Matches("^a"))) == NOTHING


def test_spelled_rewrites_a_literal_into_all_its_spellings():
    accepts = Language(spelled(lit("é/"))).accepts
    for text in ["é/", "\\u00e9/", "\\u00E9\\/", "é\\u002F"]:
        assert accepts(text.encode()), text
    assert not accepts(b"e/")


def test_string_rule_names_are_the_same_in_every_process():
    """A string rule is named from its atoms; an `enum` inside them is a frozenset whose repr()
    follows the process's string hashing, so the name (and the grammar text, and every key built
    from it) once changed with PYTHONHASHSEED. Two processes with different seeds must agree."""
    import os
    import subprocess
    import sys

    code = (
        "from strictgen.grammar.json_schema import json_schema_grammar\n"
        "schema = {'type': 'string', 'pattern': '^a', 'not': {'enum': ['ab', 'ac', 'ad', 'ae', 'af', 'ag']}}\n"
        "print(sorted(k for k in json_schema_grammar(schema)[0].rules if k.startswith('str_')))\n"
    )
    names = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
        assert "str_" in out
        names.add(out)
    assert len(names) == 1, names
