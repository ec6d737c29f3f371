"""The Lark front end against the `lark` package, the reference parser of what a grammar accepts.

Lark reads a grammar here with its Earley parser and `lexer="dynamic_complete"`: a terminal may
match any string of its regexp, which is the reading our front end gives every grammar
(strictgen.grammar.lark). Random members drawn from our IR must be accepted by lark and by our
matcher, and random mutations of them must get the same verdict from both."""

from __future__ import annotations

import random

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.errors import GrammarSyntaxError
from strictgen.grammar.lark import parse_lark

from ..helpers import allowed_ids, mutated
from .lark_sample import derive

GRAMMARS = {
    "arithmetic": r"""
        ?start: sum
        ?sum: product | sum "+" product -> add | sum "-" product
        ?product: atom | product "*" atom | product "/" atom
        ?atom: NUMBER | "-" atom | NAME | "(" sum ")"
        NAME: /[a-z_]\w*/
        %import common.NUMBER
        %import common.WS_INLINE
        %ignore WS_INLINE
    """,
    "json": r"""
        ?start: value
        ?value: object | array | string | SIGNED_NUMBER -> number | "true" | "false" | "null"
        array  : "[" [value ("," value)*] "]"
        object : "{" [pair ("," pair)*] "}"
        pair   : string ":" value
        string : ESCAPED_STRING
        %import common.ESCAPED_STRING
        %import common.SIGNED_NUMBER
        %import common.WS
        %ignore WS
    """,
    "keywords": r"""
        start: ("select"i | "from"i) WORD ("," WORD)* ";"?
        WORD: /\w+/
        %ignore " "
    """,
    "classes": r"""
        start: item+
        item: DATE | HEX | /[^\s\d,]{2,3}/ | SPACE
        DATE: /\d{4}-\d\d-\d\d/
        HEX: "0x" HEXDIGIT ~ 2..4
        SPACE: /\s/ | ","
        %import common.HEXDIGIT
    """,
    "ranges_and_repeats": r"""
        start: a ~ 1..3 b? c c+
        a: "a".."c" | "é"
        b: ["x" "y"] "z"
        c: /[0-9]/ | C_COMMENT
        %import common.C_COMMENT
    """,
    "dot_and_flags": r"""
        start: LINE ("|" LINE)*
        LINE: /a.b/s | /x # comment
              [yz]+ /x | /ß/i
    """,
}


def lark_parser(text: str) -> lark.Lark:
    return lark.Lark(text, parser="earley", lexer="dynamic_complete")


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


@pytest.fixture(scope="module")
def compiler(qwen):
    return sg.GrammarCompiler(qwen)


def ours(compiled, text: str) -> bool:
    m = sg.GrammarMatcher(compiled)
    return m.accept_string(text) and m.can_end()


@pytest.mark.parametrize("name", sorted(GRAMMARS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_members_accepted_and_mutations_agree_with_lark(compiler, name, seed):
    text = GRAMMARS[name]
    rng = random.Random(seed)
    grammar = parse_lark(text)
    compiled = compiler.compile_lark(text)
    reference = lark_parser(text)
    member = derive(grammar, rng)
    assert lark_accepts(reference, member), member
    assert ours(compiled, member), member
    alphabet = "".join(sorted(set(text + member) - {"\n"})) + "\n\t"
    for _ in range(4):
        other = mutated(member, alphabet, rng, rng.randint(1, 3))
        assert ours(compiled, other) == lark_accepts(reference, other), other


def test_every_token_of_a_member_is_in_the_mask(compiler, qwen):
    """Token by token (the vocabulary's own spelling), each token is allowed; EOS at the end."""
    from strictgen.runtime.budget import greedy_tokenizer

    compiled = compiler.compile_lark(GRAMMARS["json"])
    m = sg.GrammarMatcher(compiled)
    for t in greedy_tokenizer(qwen).encode(b'{"a": [1, -2.5e3, "x\\"y"], "b": null}'):
        assert t in set(allowed_ids(m).tolist())
        assert m.accept_token(t)
    assert qwen.eos_token_ids[0] in set(allowed_ids(m).tolist())


def test_common_terminals_match_lark(compiler):
    """Every terminal we write for `%import common` has lark's language on tricky strings."""
    names = ["NUMBER", "SIGNED_NUMBER", "ESCAPED_STRING", "CNAME", "WS", "NEWLINE", "C_COMMENT",
             "CPP_COMMENT", "SH_COMMENT", "SQL_COMMENT", "HEXDIGIT", "WORD", "DECIMAL", "SIGNED_FLOAT"]
    probes = ["1", "-1", "+1.5e-3", ".5", "5.", "1e", "e5", '""', '"a\\"b"', '"a"b"', '"\\\\"', '"\\"',
              "_a1", "1a", " \t\n", "\r\n\n", "/* a */", "/* a */ b */", "/**/", "/*/", "// x", "# y",
              "-- z", "f", "G", "abc", "1.5", "+.5E+2"]
    for name in names:
        text = f"start: {name}\n%import common.{name}\n"
        compiled, reference = compiler.compile_lark(text), lark_parser(text)
        for probe in probes:
            assert ours(compiled, probe) == lark_accepts(reference, probe), (name, probe)


def test_embedded_json_schema(compiler):
    text = 'start: "call " %json {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}'
    compiled = compiler.compile_lark(text)
    assert ours(compiled, 'call {"n": 3}')
    assert not ours(compiled, 'call {"n": "3"}')
    assert not ours(compiled, 'call {}')


def test_priorities_and_aliases_change_nothing(compiler):
    plain = compiler.compile_lark('start: a | b\na: "x"+\nb: "y"\n')
    marked = compiler.compile_lark('start: a -> first | b\na.2: "x"+\nb.-1: Y\nY.3: "y"\n')
    for probe in ["x", "xx", "y", "yy", "", "xy"]:
        assert ours(plain, probe) == ours(marked, probe)


@pytest.mark.parametrize(
    "text, message, line, column",
    [
        ('start: "a"\nfoo: bar\n', "undefined rule 'bar'", 2, 6),
        ("start: A\nA: \"a\" B\nB: A\n", "recursive", 2, 1),
        ('start: "a" (\n  "b"\n', "never closed", 1, 12),
        ('start: "abc\n', "unexpected character", 1, 8),
        ("start: /a(/\n", "invalid regular expression", 1, 10),
        ("start: /^a/\n", "anchor", 1, 9),
        ("start: /(?=a)a/\n", "lookahead", 1, 9),
        ("start: /a/l\n", "flag 'l'", 1, 8),
        ('start: A\nA: a\na: "x"\n', "terminals may only use terminals", 2, 4),
        ('%import common.NOPE\nstart: "a"\n', "common has no terminal 'NOPE'", 1, 16),
        ('%import other.X\nstart: "a"\n', "only '%import common'", 1, 1),
        ('start[lazy]: "a"\n', "rule attributes", 1, 6),
        ('start: x{a}\nx: "a"\n', "templates are not supported", 1, 9),
        ('%declare X\nstart: "a"\n', "%declare is not supported", 1, 1),
        ('start: "a"\nstart: "b"\n', "already defined on line 1", 2, 1),
        ('root: "a"\n', "missing start rule", 1, 1),
        ('start: "a" ~ 3..2\n', "max < min", 1, 12),
        ("start: <[^5]>\n", "negated token set", 1, 8),
    ],
)
def test_errors_name_line_and_column(text, message, line, column):
    with pytest.raises(GrammarSyntaxError) as info:
        parse_lark(text)
    assert message in str(info.value)
    assert (info.value.line, info.value.column) == (line, column), str(info.value)


def test_lark_also_refuses_our_syntax_errors():
    """The malformed grammars above that are Lark syntax errors are errors for lark too."""
    for text in ['start: "a"\nfoo: bar\n', 'start: "a" (\n  "b"\n', "start: /a(/\n"]:
        with pytest.raises(Exception):  # lark raises its GrammarError, or re.error for a bad regexp
            lark_parser(text)


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(GRAMMARS)), seed=st.integers(0, 2**32 - 1), edits=st.integers(1, 6))
def test_malformed_grammars_raise_only_syntax_errors(name, seed, edits):
    """Random edits of real grammars (brackets, quotes, slashes, directives): a GrammarSyntaxError
    or a grammar, never another exception."""
    rng = random.Random(seed)
    text = mutated(GRAMMARS[name], '()[]{}"/\\|:*+?~.%<>-!_aZ0 \n', rng, edits)
    try:
        parse_lark(text)
    except GrammarSyntaxError:
        pass


@pytest.mark.parametrize("text", ["start: %json []", 'start: %json {"type": "nope"}', "start: %json {", "start: /\\N{NO SUCH}/",
                                  "start: /[a-/", "start: <[]>", "start: <|x|> | %json {\"minimum\": \"a\"}"])
def test_odd_inputs_are_syntax_errors(text):
    with pytest.raises(GrammarSyntaxError):
        parse_lark(text)


def test_comments_both_ways_as_lark(compiler):
    text = 'start: "a" # a comment\n  | "b" // another\n# a line\n'
    reference, compiled = lark_parser(text), compiler.compile_lark(text)
    for probe in ["a", "b", "#", "a # a comment", "//"]:
        assert ours(compiled, probe) == lark_accepts(reference, probe), probe
