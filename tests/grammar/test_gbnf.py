"""Tests of the GBNF front end (`strictgen.grammar.gbnf.parse_gbnf`)."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictgen.grammar.gbnf import MAX_NESTING, parse_gbnf
from strictgen.errors import GrammarSyntaxError
from strictgen.grammar.ir import (
    EMPTY,
    NOTHING,
    Alt,
    ByteSet,
    CharSet,
    Grammar,
    Literal,
    Repeat,
    RuleRef,
    Seq,
)

from tests.grammar.ir_to_regex import RecursionInGrammar, grammar_to_regex, utf8_sequences
from tests.reference import ReferenceRecognizer


ANY_RANGES = ((0, 0xD7FF), (0xE000, 0x10FFFF))


def accepts(text: str, data: bytes) -> bool:
    return grammar_to_regex(parse_gbnf(text)).fullmatch(data) is not None


# ---- llama.cpp sample grammars --------------------------------------------------------------

ARITHMETIC = r"""
root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
"""

JSON = r"""
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
"""

CHESS = r"""
# Specifies chess moves as a list in algebraic notation, using PGN conventions

# Force first move to "1. ", then any 1-2 digit number after, relying on model to follow the pattern
root    ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
move    ::= (pawn | nonpawn | castle) [+#]?

# piece type, optional file/rank, optional capture, dest file & rank
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]

# any file, optional capture, dest file & rank, optional promotion
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBKQR])?

castle  ::= "O-O" "-O"?
"""

LIST = r"""
root ::= item+

# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
"""

BALANCED = r"""
root ::= pair*
pair ::= "(" pair* ")" | "[" pair* "]"
"""

CHINESE = 'root ::= "姓名：" [一-龥]+ "\\n"'


def test_arithmetic_structure():
    g = parse_gbnf(ARITHMETIC)
    assert g.root == "root"
    assert list(g.rules) == ["root", "expr", "term", "ident", "num", "ws"]
    ops = ByteSet(((ord("*"), ord("+")), (ord("-"), ord("-")), (ord("/"), ord("/"))))
    assert g.rules["expr"] == Seq((RuleRef("term"), Repeat(Seq((ops, RuleRef("term"))), 0, None)))
    assert g.rules["root"] == Repeat(
        Seq((RuleRef("expr"), Literal(b"="), RuleRef("ws"), RuleRef("term"), Literal(b"\n"))), 1, None
    )
    assert g.rules["term"] == Alt(
        (
            RuleRef("ident"),
            RuleRef("num"),
            Seq((Literal(b"("), RuleRef("ws"), RuleRef("expr"), Literal(b")"), RuleRef("ws"))),
        )
    )
    assert g.rules["ident"] == Seq(
        (
            ByteSet(((97, 122),)),
            Repeat(ByteSet(((48, 57), (95, 95), (97, 122))), 0, None),
            RuleRef("ws"),
        )
    )
    assert g.rules["ws"] == Repeat(ByteSet(((9, 10), (32, 32))), 0, None)


def test_json_structure():
    g = parse_gbnf(JSON)
    assert list(g.rules) == ["root", "value", "object", "array", "string", "number", "ws"]
    assert g.rules["root"] == RuleRef("object")
    assert g.rules["ws"] == Alt(
        (EMPTY, Literal(b" "), Seq((Literal(b"\n"), Repeat(ByteSet(((9, 9), (32, 32))), 0, 20))))
    )
    # the multi-line object rule: "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
    member = (RuleRef("string"), Literal(b":"), RuleRef("ws"), RuleRef("value"))
    more = Repeat(Seq((Literal(b","), RuleRef("ws")) + member), 0, None)
    assert g.rules["object"] == Seq(
        (Literal(b"{"), RuleRef("ws"), Repeat(Seq(member + (more,)), 0, 1), Literal(b"}"), RuleRef("ws"))
    )
    string = g.rules["string"]
    assert isinstance(string, Seq) and string.items[0] == Literal(b'"')
    body = string.items[1]
    assert isinstance(body, Repeat) and (body.min, body.max) == (0, None)
    plain, escape = body.item.items
    # [^"\\\x7F\x00-\x1F]: every scalar value but controls, DEL, '"' and '\'
    assert plain == CharSet(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E), (0x80, 0xD7FF), (0xE000, 0x10FFFF)))
    assert escape.items[0] == Literal(b"\\")
    assert escape.items[1].items[0] == ByteSet(tuple((ord(c), ord(c)) for c in sorted('"\\bfnrt')))
    assert escape.items[1].items[1] == Seq((Literal(b"u"), Repeat(ByteSet(((48, 57), (65, 70), (97, 102))), 4, 4)))


def test_chess_list_balanced_chinese_structure():
    chess = parse_gbnf(CHESS)
    assert list(chess.rules) == ["root", "move", "nonpawn", "pawn", "castle"]
    assert chess.rules["castle"] == Seq((Literal(b"O-O"), Repeat(Literal(b"-O"), 0, 1)))
    assert chess.rules["move"] == Seq(
        (
            Alt((RuleRef("pawn"), RuleRef("nonpawn"), RuleRef("castle"))),
            Repeat(ByteSet(((ord("#"), ord("#")), (ord("+"), ord("+")))), 0, 1),
        )
    )
    lst = parse_gbnf(LIST)
    item_class = lst.rules["item"].items[1].item
    assert item_class == CharSet(
        ((0, 9), (0xE, 0x84), (0x86, 0x2027), (0x202A, 0xD7FF), (0xE000, 0x10FFFF))
    )
    bal = parse_gbnf(BALANCED)
    assert bal.rules["pair"] == Alt(
        (
            Seq((Literal(b"("), Repeat(RuleRef("pair"), 0, None), Literal(b")"))),
            Seq((Literal(b"["), Repeat(RuleRef("pair"), 0, None), Literal(b"]"))),
        )
    )
    zh = parse_gbnf(CHINESE)
    assert zh == Grammar(
        {
            "root": Seq(
                (
                    Literal("姓名：".encode()),
                    Repeat(CharSet(((ord("一"), ord("龥")),)), 1, None),
                    Literal(b"\n"),
                )
            )
        },
        "root",
    )


def test_samples_language_non_recursive():
    assert accepts(CHESS, b"1. e4 e5\n2. Nf3 Nc6\n")
    assert accepts(CHESS, b"1. O-O-O exd8=Q+\n10. Qxh7# a1\n")
    assert not accepts(CHESS, b"1. e4 e5\n")  # needs at least one more numbered line
    assert not accepts(CHESS, b"1. e9 e5\n2. a3 a4\n")
    assert accepts(LIST, "- one\n- двa ✓\n".encode())
    assert not accepts(LIST, b"- a\rb\n")
    assert not accepts(LIST, "- a\u2028b\n".encode())
    assert not accepts(LIST, b"")
    assert accepts(CHINESE, "姓名：张三\n".encode())
    assert not accepts(CHINESE, "姓名：Bob\n".encode())
    assert not accepts(CHINESE, "姓名：\n".encode())
    with pytest.raises(RecursionInGrammar):
        grammar_to_regex(parse_gbnf(BALANCED))


def test_sample_from_brief():
    text = 'root ::= "a" [0-9]{2,3} ("x" | "y")?'
    g = parse_gbnf(text)
    assert g.rules["root"] == Seq(
        (
            Literal(b"a"),
            Repeat(ByteSet(((48, 57),)), 2, 3),
            Repeat(Alt((Literal(b"x"), Literal(b"y"))), 0, 1),
        )
    )
    for good in (b"a12", b"a123x", b"a12y", b"a999"):
        assert accepts(text, good), good
    for bad in (b"a1", b"a1234", b"a12xy", b"a12z", b"12x", b""):
        assert not accepts(text, bad), bad


@pytest.mark.parametrize(
    ("text", "good", "bad"),
    [
        (ARITHMETIC, [b"1+2=x\n", b"(a *b1)=3\n", b"x=y\nz=1\n"], [b"1+=2\n", b"1=2", b"(1=2\n"]),
        (
            JSON,
            [b'{"a": [1, 2.5e3, "x\\n", true, null, {}]}', b"{}", b'{"k":"\\u00e9\xc3\xa9"}'],
            [b'{"a":}', b"[1]", b'{"a": 01}', b'{"a": "\x01"}', b'{"a": "\\x"}'],
        ),
        (BALANCED, [b"", b"()", b"([])()", b"[[()]]"], [b"(", b"(]", b"())"]),
    ],
)
def test_samples_language_recursive(text, good, bad):
    rec = ReferenceRecognizer(parse_gbnf(text))
    for data in good:
        assert rec.accepts(data), data
    for data in bad:
        assert not rec.accepts(data), data


# ---- lexical details ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        (r'"\n\r\t"', b"\n\r\t"),
        (r'"\\ \" \' \[ \]"', b"\\ \" ' [ ]"),
        (r'"\x41\x7f"', b"A\x7f"),
        (r'"\x80\xff"', "\u0080\u00ff".encode()),  # \xHH is a code point, as in llama.cpp
        (r'"\u00e9\u4E2D"', "é中".encode()),
        (r'"\U0001F600"', "😀".encode()),
        ('"é中😀"', "é中😀".encode()),
        ('"#not a comment"', b"#not a comment"),
        ('"\t"', b"\t"),
        ('"\\x00"', b"\x00"),
    ],
)
def test_string_literals(literal, expected):
    assert parse_gbnf(f"root ::= {literal}").rules["root"] == Literal(expected)


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        ("[a]", ByteSet(((97, 97),))),
        ("[a-cx]", ByteSet(((97, 99), (120, 120)))),
        ("[-a]", ByteSet(((45, 45), (97, 97)))),
        ("[a-]", ByteSet(((45, 45), (97, 97)))),
        ("[a-c-e]", ByteSet(((45, 45), (97, 99), (101, 101)))),
        ("[\\-\\^]", ByteSet(((45, 45), (94, 94)))),
        ("[a^]", ByteSet(((94, 94), (97, 97)))),
        ('["]', ByteSet(((34, 34),))),
        ("[\\]\\[\\\\]", ByteSet(((91, 93),))),
        ("[\\x00-\\x7f]", ByteSet(((0, 127),))),
        ("[\\x00-\\x80]", CharSet(((0, 128),))),
        ("[é]", CharSet(((0xE9, 0xE9),))),
        ("[a-zé]", CharSet(((97, 122), (0xE9, 0xE9)))),
        ("[\\u0000-\\uFFFF]", CharSet(((0, 0xD7FF), (0xE000, 0xFFFF)))),
        ("[^a]", CharSet(((0, 96), (98, 0xD7FF), (0xE000, 0x10FFFF)))),
        ("[^\\x00-\\U0010FFFF]", NOTHING),
        ("[^\\x80-\\U0010FFFF]", ByteSet(((0, 127),))),
        ("[#]", ByteSet(((35, 35),))),
        ("[ ]", ByteSet(((32, 32),))),
    ],
)
def test_char_classes(cls, expected):
    assert parse_gbnf(f"root ::= {cls}").rules["root"] == expected


def test_any_char():
    assert parse_gbnf("root ::= .").rules["root"] == CharSet(ANY_RANGES)
    text = "root ::= . . ."
    assert accepts(text, "a\n😀".encode())
    assert not accepts(text, b"ab")
    assert not accepts(text, b"ab\xff")


def test_postfix_operators():
    def body(expr: str):
        return parse_gbnf(f"root ::= {expr}").rules["root"]

    a = Literal(b"a")
    assert body('"a"*') == Repeat(a, 0, None)
    assert body('"a"+') == Repeat(a, 1, None)
    assert body('"a"?') == Repeat(a, 0, 1)
    assert body('"a"{3}') == Repeat(a, 3, 3)
    assert body('"a"{2,}') == Repeat(a, 2, None)
    assert body('"a"{2,5}') == Repeat(a, 2, 5)
    assert body('"a"{,5}') == Repeat(a, 0, 5)
    assert body('"a"{ 2 , 5 }') == Repeat(a, 2, 5)
    assert body('"a"{1}') == a
    assert body('"a"{0}') == EMPTY
    assert body('"a" *') == Repeat(a, 0, None)
    assert body('"a"*?') == Repeat(Repeat(a, 0, None), 0, 1)
    assert body('"ab"*') == Repeat(Literal(b"ab"), 0, None)
    assert body('"a" "b"*') == Seq((a, Repeat(Literal(b"b"), 0, None)))
    assert body('("a" "b")*') == Repeat(Literal(b"ab"), 0, None)
    assert body('()*') == EMPTY
    assert body('()') == EMPTY
    assert body('"a" | ') == Alt((a, EMPTY))


def test_layout_multiline_comments_and_order():
    text = (
        "# leading comment\n"
        "\n"
        "root ::= a # trailing comment\n"
        "   b\n"
        "  | c\n"
        "  |\n"
        "  (\n"
        "    a # comment inside a group\n"
        "    | b\n"
        "  )\n"
        "\n"
        "a ::=\n"
        '  "A"\n'
        "b::=\"B\"\n"
        'c    ::= "C" # no newline at the end'
    )
    g = parse_gbnf(text)
    assert list(g.rules) == ["root", "a", "b", "c"]
    assert g.rules["root"] == Alt(
        (Seq((RuleRef("a"), RuleRef("b"))), RuleRef("c"), RuleRef("a"), RuleRef("b"))
    )  # the nested group's alternatives are flattened into the rule's
    assert g.rules["a"] == Literal(b"A")
    assert accepts(text, b"AB")
    assert accepts(text, b"C")
    assert accepts(text, b"A")
    assert not accepts(text, b"BA")


def test_line_endings_bom_empty_rules_names():
    crlf = 'root ::= x\r\n  y\r\nx ::= "1"\r\ny ::= "2"\r\n'
    assert parse_gbnf(crlf).rules["root"] == Seq((RuleRef("x"), RuleRef("y")))
    cr = 'root ::= x\ry ::= "2"\rx ::= "1" y'
    assert parse_gbnf(cr).rules["x"] == Seq((Literal(b"1"), RuleRef("y")))
    assert parse_gbnf('\ufeffroot ::= "a"').rules["root"] == Literal(b"a")
    assert parse_gbnf("root ::=").rules["root"] == EMPTY
    assert parse_gbnf("root ::=\nother ::= \"x\"").rules["root"] == EMPTY
    names = parse_gbnf('root ::= a-b_c 0x-9\na-b_c ::= "1"\n0x-9 ::= "2"')
    assert names.rules["root"] == Seq((RuleRef("a-b_c"), RuleRef("0x-9")))
    assert parse_gbnf('start ::= "s"', root="start").root == "start"
    # a recursive rule parses fine (left recursion is another layer's business)
    assert parse_gbnf('root ::= root "a" | "b"').rules["root"] == Alt(
        (Seq((RuleRef("root"), Literal(b"a"))), Literal(b"b"))
    )


def test_deep_but_allowed_nesting_and_big_grammars():
    depth = MAX_NESTING - 1
    g = parse_gbnf("root ::= " + "(" * depth + '"a"' + ")" * depth)
    assert g.rules["root"] == Literal(b"a")
    g = parse_gbnf("root ::= " + "(" * 200 + '"a"*' + ")*" * 200)
    assert isinstance(g.rules["root"], Repeat)
    rules = "\n".join(f'r{i} ::= r{i + 1} "x" | "y"' for i in range(3000))
    g = parse_gbnf("root ::= r0\n" + rules + '\nr3000 ::= "z"')
    assert len(g.rules) == 3002
    long_alt = "root ::= " + " | ".join(f'"{i}"' for i in range(300))
    assert len(parse_gbnf(long_alt).rules["root"].items) == 300


# ---- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [
        ('root ::= "a" x', 1, 14, "undefined rule 'x'"),
        ('root ::= "a"\n\nfoo ::= root\n   | bar', 4, 6, "undefined rule 'bar'"),
        ('foo ::= "a"', 1, 1, "missing root rule 'root'"),
        ("", 1, 1, "missing root rule 'root'"),
        ("# only a comment\n", 1, 1, "missing root rule 'root'"),
        ('root ::= "a"\nx ::= "b"\nroot ::= "c"', 3, 1, "'root' is already defined on line 1"),
        ('root ::= "abc', 1, 10, "unterminated string"),
        ('root ::= "abc\n"', 1, 10, "unterminated string"),
        ('root ::= "abc\\', 1, 10, "unterminated string"),
        ('root ::= "a"\n  x ::= [abc', 2, 9, "unterminated character class"),
        ("root ::= [a-", 1, 10, "unterminated character class"),
        ("root ::= [^", 1, 10, "unterminated character class"),
        ('root ::= "\\q"', 1, 11, "unknown escape '\\q'"),
        ('root ::= "ab\\x4"', 1, 13, "2 hex digits"),
        ("root ::= [\\u12G4]", 1, 11, "4 hex digits"),
        ('root ::= "\\U00110000"', 1, 11, "past U+10FFFF"),
        ('root ::= "\\uD800"', 1, 11, "surrogate"),
        ("root ::= [\\uDFFF-\\uE000]", 1, 11, "surrogate"),
        ('root ::= "\ud800"', 1, 11, "surrogate"),
        ('root ::= "a"{3,2}', 1, 13, "max < min"),
        ('root ::= "a"{}', 1, 14, "expected a number"),
        ('root ::= "a"{,}', 1, 15, "expected a number"),
        ('root ::= "a"{x}', 1, 14, "expected a number"),
        ('root ::= "a"{2 3}', 1, 16, "expected ',' or '}'"),
        ('root ::= "a"{2,3', 1, 17, "expected '}'"),
        ('root ::= "a"{2,3 x', 1, 18, "expected '}'"),
        ('root ::= "a"{99999999999999999999}', 1, 14, "larger than"),
        ("root ::= []", 1, 10, "empty character class"),
        ("root ::= [^]", 1, 10, "empty character class"),
        ("root ::= [z-a]", 1, 11, "reversed range"),
        ("root ::= [ab\\x7f-\\x01]", 1, 13, "reversed range"),
        ('root = "a"', 1, 6, "expected '::='"),
        ("root", 1, 5, "expected '::='"),
        ('root\n::= "a"', 1, 5, "expected '::='"),
        ('root ::= "a"\n"b" ::= "c"', 2, 5, "must start on a new line"),
        ('root ::= "a" b ::= "c"', 1, 16, "must start on a new line"),
        ('::= "a"', 1, 1, "expected a rule name"),
        ('"a" ::= "a"', 1, 1, "expected a rule name"),
        ('root ::= "a" @', 1, 14, "unexpected character '@'"),
        ('root ::= "a"\n  é', 2, 3, "unexpected character 'é'"),
        ('root ::= "a" }', 1, 14, "unexpected character '}'"),
        ('root ::= "a" ]', 1, 14, "unexpected character ']'"),
        ("root ::= \"a\" 'b'", 1, 14, "unexpected character"),
        ('root ::= "a")', 1, 13, "unmatched ')'"),
        ('root ::= ("a"', 1, 10, "'(' was never closed"),
        ('root ::= ("a" | (\n "b")\nx ::= "c"', 1, 10, "'(' was never closed"),
        ("root ::= *", 1, 10, "nothing to repeat"),
        ('root ::= "a" | +', 1, 16, "nothing to repeat"),
        ('root ::= (?"a")', 1, 11, "nothing to repeat"),
        ("root ::= {2}", 1, 10, "nothing to repeat"),
        ("root ::= <[12x]>", 1, 12, "expected a token id"),
        ('root ::= "a" < b', 1, 14, "expected a special token"),
        ('root ::= !<[1]>', 1, 10, "not supported"),
        ("root ::= " + "(" * (MAX_NESTING + 5), 1, 10 + MAX_NESTING, "nested deeper"),
        ('root ::= "a"' + "*" * (MAX_NESTING + 5), 1, 13 + MAX_NESTING, "nested deeper"),
        ('x ::= "a"\r\nroot ::= y', 2, 10, "undefined"),
        ('x ::= "a"\rroot ::= "b" @', 2, 14, "unexpected character"),
        ('root ::= "a"\t@', 1, 14, "unexpected character"),
    ],
)
def test_errors(text, line, column, fragment):
    with pytest.raises(GrammarSyntaxError) as info:
        parse_gbnf(text)
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    assert fragment in str(err)


def test_error_custom_root_and_type_errors():
    with pytest.raises(GrammarSyntaxError, match="missing root rule 'start'"):
        parse_gbnf('root ::= "a"', root="start")
    with pytest.raises(TypeError):
        parse_gbnf(b'root ::= "a"')  # type: ignore[arg-type]
    assert issubclass(GrammarSyntaxError, ValueError)


def test_huge_nesting_is_an_error_not_a_crash():
    for text in (
        "root ::= " + "(" * 100_000,
        "root ::= " + "(" * 100_000 + ")" * 100_000,
        'root ::= "a"' + "?" * 100_000,
        "root ::= " + "(" * 300 + '"a"' + "*" * 300 + ")" * 300,
    ):
        with pytest.raises(GrammarSyntaxError, match="nested deeper"):
            parse_gbnf(text)


# ---- the regex helper itself ----------------------------------------------------------------


def test_utf8_sequences_helper_is_exact():
    for lo, hi in [(0, 0x7F), (0x70, 0x900), (0x7FF, 0x800), (0xD000, 0xE100), (0xFFF0, 0x10010),
                   (0x10FF00, 0x10FFFF), (0x3A5, 0x3A5), (0x1000, 0x1FFF)]:  # fmt: skip
        want = {chr(c).encode() for c in range(lo, hi + 1) if not 0xD800 <= c <= 0xDFFF}
        got = set()
        for sequence in utf8_sequences(lo, hi):
            for combo in itertools.product(*(range(a, b + 1) for a, b in sequence)):
                got.add(bytes(combo))
        assert got == want, (hex(lo), hex(hi))
    assert len(utf8_sequences(0, 0x10FFFF)) == 9


# ---- property tests -------------------------------------------------------------------------

FRAGMENTS = [
    "root", "x", "a-b", " ::= ", "::=", ":", "=", '"', '"a"', '"\\', "\\n", "\\x4", "\\u00e9", "\\U0001F600",
    "\\q", "[", "]", "[^", "a-z", "z-a", "-", "^", "(", ")", "|", "*", "+", "?", "{", "}", "{2,3}", "{3,2}",
    ",", "1", "99", ".", "#c", "\n", "\r\n", "\r", " ", "\t", "é", "中", "<", ">", "!", "\\\\", "'", "\x00",
    "\ufeff", "\n root ::= ", "\nx ::= ",
]  # fmt: skip


def _check_error_position(text: str, err: GrammarSyntaxError) -> None:
    lines = re.split(r"\r\n|\r|\n", text)
    assert 1 <= err.line <= len(lines), (err.line, len(lines))
    assert 1 <= err.column <= len(lines[err.line - 1]) + 1


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join))
def test_fuzz_fragments_parse_or_raise_syntax_error(text):
    try:
        grammar = parse_gbnf(text)
    except GrammarSyntaxError as err:
        _check_error_position(text, err)
    else:
        assert grammar.root in grammar.rules


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_fuzz_text_parse_or_raise_syntax_error(text):
    for candidate in (text, "root ::= " + text):
        try:
            parse_gbnf(candidate)
        except GrammarSyntaxError as err:
            _check_error_position(candidate, err)


# Random expressions rendered both as GBNF and as an independent Python (str) regex, plus a
# strategy for strings they match. Each node: (gbnf, python_regex, matching-strings strategy).

_CHARS = ["a", "b", "é", "中", "\n", '"', "\\", "]", "-", "😀"]
_GBNF_ESCAPE = {"\n": "\\n", '"': '\\"', "\\": "\\\\", "]": "\\]", "-": "\\-"}


def _gbnf_char(c: str, style: int) -> str:
    if c in _GBNF_ESCAPE:
        return _GBNF_ESCAPE[c]
    return [c, f"\\x{ord(c):02x}" if ord(c) < 256 else c, f"\\u{ord(c):04X}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"][style]


@st.composite
def _leaf(draw):
    kind = draw(st.sampled_from(["lit", "class", "nclass", "dot"]))
    if kind == "lit":
        s = draw(st.text(alphabet=_CHARS, max_size=3))
        style = draw(st.integers(0, 2))
        return ('"' + "".join(_gbnf_char(c, style) for c in s) + '"', re.escape(s), st.just(s))
    if kind == "dot":
        return (".", "(?s:.)", st.characters(exclude_categories=("Cs",)))
    members = draw(st.lists(st.sampled_from(_CHARS), min_size=1, max_size=4, unique=True))
    style = draw(st.integers(0, 2))
    body = "".join(_gbnf_char(c, style) for c in members)
    py = "".join(re.escape(c) for c in members)
    if kind == "class":
        return (f"[{body}]", f"[{py}]", st.sampled_from(members))
    others = [c for c in "xyz\t" + "".join(_CHARS) if c not in members]
    return (f"[^{body}]", f"[^{py}]", st.sampled_from(others))


_SEPS = [" ", "  ", "\t", "\n  ", " # comment\n "]


def _extend(children):
    def seq(parts):
        sep = " "
        return (sep.join(p[0] for p in parts), "".join(f"(?:{p[1]})" for p in parts),
                st.tuples(*(p[2] for p in parts)).map("".join))  # fmt: skip

    def alt(parts):
        return ("(" + " | ".join(p[0] for p in parts) + ")", "|".join(f"(?:{p[1]})" for p in parts),
                st.one_of(*(p[2] for p in parts)))  # fmt: skip

    def rep(args):
        (g, py, gen), (op, lo, hi) = args
        hi_s = "" if hi is None else str(hi)
        return (f"({g}){op}", f"(?:{py}){{{lo},{hi_s}}}",
                st.lists(gen, min_size=lo, max_size=lo + 2 if hi is None else hi).map("".join))  # fmt: skip

    ops = st.sampled_from([("*", 0, None), ("+", 1, None), ("?", 0, 1), ("{2}", 2, 2), ("{1,}", 1, None),
                           ("{0,2}", 0, 2), ("{,1}", 0, 1)])  # fmt: skip
    return st.one_of(
        st.lists(children, min_size=1, max_size=3).map(seq),
        st.lists(children, min_size=1, max_size=3).map(alt),
        st.tuples(children, ops).map(rep),
    )


_EXPRS = st.recursive(_leaf(), _extend, max_leaves=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_EXPRS, st.data())
def test_random_expressions_match_independent_regex(node, data):
    gbnf, py, gen = node
    sep = data.draw(st.sampled_from(_SEPS))
    text = f"root ::= helper{sep}\n\nhelper ::={sep}{gbnf}\n"
    byte_pattern = grammar_to_regex(parse_gbnf(text))
    py_pattern = re.compile(py)
    sample = data.draw(gen)
    assert py_pattern.fullmatch(sample)
    assert byte_pattern.fullmatch(sample.encode()), (text, sample)
    for s in data.draw(st.lists(st.text(alphabet=_CHARS + ["x"], max_size=5), max_size=8)) + [sample + "a"]:
        assert (py_pattern.fullmatch(s) is None) == (byte_pattern.fullmatch(s.encode()) is None), (text, s)
