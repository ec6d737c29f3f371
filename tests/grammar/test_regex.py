"""Tests of the regex front end (strictgen.grammar.regex).

Oracles: Python's `re` (which agrees with ECMA-262 on the subset used here once `\\d \\w` use
re.ASCII and `.`/`\\s`/`$` are spelled out in the Python version of a pattern), hand-written
expectations for ECMA-specific behaviour, and the JSON Schema patterns of the maskbench dev set.
Membership in the produced IR is decided by the independent interpreter in `ir_match.py`.
"""

from __future__ import annotations

import collections
import json
import os
import random
import re
import select
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

try:
    from . import ir_match
except ImportError:  # tests/grammar is not a package
    import ir_match

from strictgen.errors import RegexError
from strictgen.grammar.ir import NOTHING, Alt, CharSet, Literal, Repeat, Seq
from strictgen.grammar.regex import MAX_NESTING, parse_regex, parse_regex_search
from tests.helpers import mutated

fullmatch_ir = ir_match.matches

# Characters on which ECMA and Python (with re.ASCII) disagree for `.`, `\s` and `$`.
ECMA_SPACE_EXTRA = (
    "\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
DOT_DIFF = "\r\u2028\u2029"
PY_DOT = "[^\\n\\r\\u2028\\u2029]"
PY_SPACE_BODY = "\\t\\n\\v\\f\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"


# ---- table tests against Python re ------------------------------------------------------------

SAMPLES = [
    "", "a", "b", "ab", "abc", "aaa", "abab", "ba", "a-b", "A", "Z9_", "0", "42", "123", "1234",
    "12345", "x{", "a.b", "a/b", "a\\b", "_", "-", " ", "\t", "a b", "中", "中文", "中文字", "😀",
    "😀😀", "a😀", "é", "ü", "2024-01-31", "1999-12-01", "abc-123", "user@example.com", "{}", "[]",
    "()", "a|b", "*", "?", "+", "^", "$", "\x00", "\x7f", "\U0010ffff", "日本語テキスト", "😀中a",
]  # fmt: skip

PATTERNS_VS_PYTHON = [
    "abc", "a|b", "ab|cd|", "a*", "a+", "a?", "a{2}", "a{2,}", "a{1,3}", "a{0,0}", "(ab)*", "(?:ab)+",
    "(a|b)*c?", "[abc]+", "[^abc]", "[a-z]+", "[A-Za-z0-9_]+", "[^a-z]*", "\\d+", "\\D", "\\w+",
    "\\W+", "[\\d\\-]+", "[\\w-]+", "[-a]", "[a-]", "[a\\-z]", "\\.", "a\\.b", "a\\/b", "a\\\\b",
    "\\x41", "\\u4e2d", "\\u4e2d\\u6587", "[\\u4e00-\\u9fff]+", "[^\\u4e00-\\u9fff]+", "中+",
    "[中文]+", "😀+", "[😀-🙏]", "[^😀]", "a*?", "a+?", "a??", "a{1,3}?", "(a*)*", "(a|)+b",
    "((a|b)(c|d))*", "[0-9]{4}-[0-9]{2}-[0-9]{2}", "\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])",
    "[^@]+@[^@]+\\.[a-z]{2,}", "x{", "x{a}", "x{1, 2}", "}", "]", "a]", "\\{\\}", "\\[\\]",
    "\\(\\)", "\\|", "\\*\\?\\+", "\\^\\$", "[.]", "[*+?]", "[\\]]", "[\\[]", "[\\\\]", "[$^]",
    "[a^]", "[\\^a]", "\\t", "\\n?", "\\0", "[\\b]", "(?:)", "()", "a||b", "(|a)", "[a-c-e]",
    "\\d\\d?", "((((a))))", "(a{2}){2}", "(a{0,2}){2,3}", "(?:a|b|c){3}",
    "^abc$", "^a*$", "^$", "^", "$", "^[a-z_]+$", ".", ".*", ".+", "a.c", "^.{1,3}$", "\\s", "\\S+",
]  # fmt: skip


def python_version(pattern: str) -> str:
    """The same ECMA pattern for Python: only `.`, `\\s` and `$` differ on the table's patterns."""
    out = []
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            esc = pattern[i : i + 2]
            if esc == "\\s":
                out.append(PY_SPACE_BODY if in_class else f"[{PY_SPACE_BODY}]")
            elif esc == "\\S":
                assert not in_class
                out.append(f"[^{PY_SPACE_BODY}]")
            else:
                out.append(esc)
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        elif c == "." and not in_class:
            c = PY_DOT
        elif c == "$" and not in_class:
            c = "\\Z"  # Python's `$` also matches before a final newline
        out.append(c)
        i += 1
    return "".join(out)


@pytest.mark.parametrize("pattern", PATTERNS_VS_PYTHON)
def test_fullmatch_table_vs_python(pattern):
    expr = parse_regex(pattern)
    compiled = re.compile(python_version(pattern), re.ASCII)
    extra = ["\r", "\n", "a\n", "\u2028", "\u00a0", "\ufeff", " \t", "\x0b\x0c"]
    for text in SAMPLES + extra:
        assert fullmatch_ir(expr, text) == bool(compiled.fullmatch(text)), (pattern, text)


@pytest.mark.parametrize("pattern", PATTERNS_VS_PYTHON)
def test_search_table_vs_python(pattern):
    expr = parse_regex_search(pattern)
    compiled = re.compile(python_version(pattern), re.ASCII)
    for text in SAMPLES + ["xxabcxx", "a\nb", "中😀abc中"]:
        assert fullmatch_ir(expr, text) == bool(compiled.search(text)), (pattern, text)


# ---- ECMA-specific behaviour ------------------------------------------------------------------

ECMA_CASES = [
    # (pattern, members, non-members) under full matching
    (".", ["a", "中", "😀", "\t", "\x00"], ["\n", "\r", "\u2028", "\u2029", "", "ab"]),
    ("\\s", [" ", "\t", "\n", "\r", "\x0b", "\x0c", *ECMA_SPACE_EXTRA], ["a", "\x1c", "\x85", "\u200b", ""]),
    ("\\S", ["a", "\x1c", "\x85", "\u200b", "😀"], [" ", "\u3000", "\ufeff", "\u2028"]),
    ("\\d", list("0123456789"), ["٣", "a", "１"]),
    ("\\w", ["a", "Z", "_", "5"], ["é", "中", "-", "ſ"]),
    ("\\W", ["é", "中", "-", "😀"], ["a", "_"]),
    ("[^a]", ["b", "\n", "😀", "中"], ["a", ""]),
    ("[]", [], ["", "a", "]"]),
    ("[^]", ["a", "\n", "😀"], ["", "ab"]),
    ("a[]b", [], ["ab", "a]b"]),
    ("a{,3}", ["a{,3}"], ["a", "aaa"]),
    ("a{,}", ["a{,}"], ["a"]),
    ("a{x", ["a{x"], []),
    ("{", ["{"], []),
    ("a{1,2", ["a{1,2"], ["a"]),
    ("x{*", ["x", "x{{{"], ["x{*"]),
    ("\\u{1F600}", ["😀"], ["\\u{1F600}"]),
    ("\\u{41}\\u{4E2D}", ["A中"], []),
    ("\\uD83D\\uDE00", ["😀"], [""]),
    ("[\\uD83D\\uDE00-\\uD83D\\uDE4F]", ["😀", "🙏", "😎"], ["🚀", "a"]),
    ("\\uD800", [], ["", "\ud800"]),
    ("a|\\uDC00", ["a"], [""]),
    ("[\\uD800-\\uDFFF]", [], ["a", "😀"]),
    ("[^\\uD800-\\uDFFF]", ["a", "😀", "\ue000"], [""]),
    ("\\cJ\\cj", ["\n\n"], []),
    ("\\v\\f\\0", ["\x0b\x0c\x00"], []),
    ("[\\w-z]", ["a", "-", "z", "_"], ["!"]),
    ("[\\d-\\w]", ["1", "-", "a"], ["!"]),
    ("\\_\\:\\@\\'\\~\\é", ["_:@'~é"], []),
    ("[\\-\\_\\.\\/]+", ["-_./"], []),
    ("(?<name>ab)+", ["abab"], ["aba"]),
    ("(?<$x_1>a)", ["a"], []),
    ("a^b", [], ["ab", "a^b", "b"]),
    ("^a|b$", ["a", "b"], ["ab", ""]),
    ("(^a)+", ["a"], ["aa", ""]),
    ("(a$)*", ["", "a"], ["aa"]),
    ("(^|x)*y", ["y", "xy", "xxy"], ["", "x"]),
    ("a$|b", ["a", "b"], ["a\n"]),
    ("a$", ["a"], ["a\n"]),
    ("(?:a|^){3}b", ["aaab", "aab", "ab", "b"], ["aaaab"]),
    ("\\p{Lu}+", ["ABC", "ÀΣД"], ["a", "1", ""]),
    ("\\p{L}", ["a", "中", "ß"], ["1", "😀", " "]),
    ("\\P{L}", ["1", "😀", " "], ["a", "中"]),
    ("\\p{Nd}+", ["123", "٣", "１"], ["a"]),
    ("[\\p{Han}]", None, None),  # unsupported: must raise
    ("\\p{Letter}\\p{gc=Nd}\\p{General_Category=Zs}", ["a1 ", "中٣\u3000"], ["a1\t"]),
    ("\\p{LC}", ["a", "A", "ǅ"], ["中"]),
    ("\\p{Any}", ["a", "\n", "😀"], [""]),
    ("\\p{ASCII}", ["a", "\x7f"], ["é"]),
    ("[^\\p{ASCII}]", ["é", "😀"], ["a"]),
    ("\\p{Assigned}", ["a"], ["\u0378"]),
]


@pytest.mark.parametrize("pattern,members,non_members", ECMA_CASES)
def test_ecma_specific(pattern, members, non_members):
    if members is None:
        with pytest.raises(RegexError):
            parse_regex(pattern)
        return
    expr = parse_regex(pattern)
    for text in members:
        assert fullmatch_ir(expr, text), (pattern, text)
    for text in non_members:
        assert not fullmatch_ir(expr, text), (pattern, text)


def test_shapes():
    assert parse_regex("abc") == Literal(b"abc")
    assert parse_regex("^abc$") == Literal(b"abc")
    assert parse_regex("a{2,5}") == Repeat(Literal(b"a"), 2, 5)
    assert parse_regex("a{2}?") == Repeat(Literal(b"a"), 2, 2)
    assert parse_regex("[]") == NOTHING
    assert parse_regex("") == Seq(())
    assert parse_regex("[^\\x00-\\x7f]") == CharSet(((0x80, 0xD7FF), (0xE000, 0x10FFFF)))
    assert parse_regex("a^b") == NOTHING


def test_unicode_property_exact():
    rng = random.Random(7)
    expr_lu = parse_regex("\\p{Lu}")
    expr_l = parse_regex("\\p{L}")
    expr_nd = parse_regex("\\p{Nd}")
    for _ in range(3000):
        cp = rng.randint(0, 0x10FFFF) if rng.random() < 0.5 else rng.randint(0, 0x3000)
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        cat = unicodedata.category(ch)
        assert fullmatch_ir(expr_lu, ch) == (cat == "Lu"), hex(cp)
        assert fullmatch_ir(expr_l, ch) == cat.startswith("L"), hex(cp)
        assert fullmatch_ir(expr_nd, ch) == (cat == "Nd"), hex(cp)


# ---- search semantics -------------------------------------------------------------------------

SEARCH_CASES = [
    ("a", ["a", "xa", "ax", "xax", "\na\n"], ["", "b"]),
    ("^a", ["a", "ab", "a\n"], ["ba", "\na"]),
    ("a$", ["a", "ba", "\na"], ["ab", "a\n"]),
    ("^a$", ["a"], ["aa", "a\n", "\na"]),
    ("^a|b$", ["a", "ax", "b", "xb", "ab"], ["xa", "bx", "xax", ""]),
    ("^$|^[A-Z][a-z]*$", ["", "Abc"], ["abc", " Abc", "Abc "]),
    ("(^[^5]*$)|7", ["", "123", "557", "7", "x7x"], ["5", "155"]),
    ("^dev|alpha|beta|rc|RC|stable$", ["devx", "xalphax", "xstable", "rc"], ["xdev", "stablex", "x"]),
    ("", ["", "anything\n"], []),
    ("^", ["", "x"], []),
    ("$", ["", "x"], []),
    ("^$", [""], ["x", "\n"]),
    ("a*", ["", "b"], []),
    ("^.*$", ["", "abc"], ["a\nb", "\r"]),
    ("[0-9]{3}", ["x123y", "1234"], ["12", "1x2x3"]),
    ("a^b", [], ["ab", "a^b", ""]),
    ("(a|^)b", ["b", "ab", "xab", "bx"], ["xb", ""]),
    ("a($|b)", ["a", "xa", "ab", "xabx"], ["ax", ""]),
]


@pytest.mark.parametrize("pattern,members,non_members", SEARCH_CASES)
def test_search_semantics(pattern, members, non_members):
    expr = parse_regex_search(pattern)
    for text in members:
        assert fullmatch_ir(expr, text), (pattern, text)
    for text in non_members:
        assert not fullmatch_ir(expr, text), (pattern, text)


def test_search_nullable_is_everything():
    anything = parse_regex_search("")
    assert parse_regex_search("x*") == anything
    assert parse_regex_search("^a*") == anything
    assert parse_regex_search("b?$") == anything
    assert isinstance(anything, Repeat) and anything.min == 0 and anything.max is None


# ---- errors -----------------------------------------------------------------------------------

ERROR_CASES = [
    ("(", 0, "unbalanced"),
    ("a(b(c", 3, "unbalanced"),
    ("(a))", 3, "unbalanced"),
    (")", 0, "unbalanced"),
    ("*a", 0, "nothing to repeat"),
    ("a|*", 2, "nothing to repeat"),
    ("(+)", 1, "nothing to repeat"),
    ("?", 0, "nothing to repeat"),
    ("{2}", 0, "nothing to repeat"),
    ("a{2}{3}", 4, "nothing to repeat"),
    ("a**", 2, "nothing to repeat"),
    ("a*+", 2, "nothing to repeat"),
    ("a???", 3, "nothing to repeat"),
    ("^*", 1, "nothing to repeat"),
    ("a$+", 2, "nothing to repeat"),
    ("[z-a]", 1, "range"),
    ("ab[c😀-a]", 4, "range"),
    ("[\\x7f-\\x00]", 1, "range"),
    ("a\\", 1, "dangling"),
    ("[a\\", 2, "dangling"),
    ("\\q", 0, "bad escape"),
    ("ab\\A", 2, "bad escape"),
    ("\\Z", 0, "bad escape"),
    ("\\x4", 0, "\\x"),
    ("\\xZZ", 0, "\\x"),
    ("\\u12", 0, "\\u"),
    ("\\u{110000}", 0, "\\u"),
    ("\\u{}", 0, "\\u"),
    ("\\u{12", 0, "\\u"),
    ("\\c1", 0, "\\c"),
    ("\\01", 0, "octal"),
    ("(a)\\1", 3, "backreference"),
    ("[\\1]", 1, "backreference"),
    ("(?<n>a)\\k<n>", 7, "backreference"),
    ("\\k", 0, "bad escape"),
    ("a(?=b)", 1, "lookaround"),
    ("(?!b)", 0, "lookaround"),
    ("x(?<=b)", 1, "lookaround"),
    ("(?<!b)", 0, "lookaround"),
    ("^(?!.*://)(?=.{1,255}$)", 1, "lookaround"),
    ("\\b", 0, "word boundary"),
    ("a\\B", 1, "word boundary"),
    ("[\\B]", 1, "word boundary"),
    ("(?i)abc", 0, "flags"),
    ("a(?m:b)", 1, "flags"),
    ("(?P<n>a)", 0, "Python"),
    ("(?#comment)", 0, "group"),
    ("(?", 0, "group"),
    ("(?<>a)", 3, "group name"),
    ("(?<1a>a)", 3, "group name"),
    ("(?<a", 3, "group name"),
    ("[abc", 0, "unterminated"),
    ("x[", 1, "unterminated"),
    ("[a-", 0, "unterminated"),
    ("a{3,2}", 1, "out of order"),
    ("a{10001}", 1, "limit"),
    ("a{1,10001}", 1, "limit"),
    ("a{99999999999999999999}", 1, "limit"),
    ("a{1," + "9" * 5000 + "}", 1, "limit"),
    ("\\p{Script=Latin}", 0, "property"),
    ("\\p{Han}", 0, "property"),
    ("\\pL", 0, "\\p"),
    ("\\p{L", 0, "\\p"),
]


@pytest.mark.parametrize("pattern,position,message", ERROR_CASES)
def test_errors(pattern, position, message):
    for parse in (parse_regex, parse_regex_search):
        with pytest.raises(RegexError) as info:
            parse(pattern)
        assert info.value.position == position, str(info.value)
        assert message.lower() in str(info.value).lower(), str(info.value)
        assert info.value.pattern == pattern


def test_error_is_value_error():
    with pytest.raises(ValueError):
        parse_regex("(")


def test_nesting_limit():
    ok = "(" * MAX_NESTING + "a|b" + ")" * MAX_NESTING
    assert fullmatch_ir(parse_regex(ok), "b")
    ok2 = "(?:" * MAX_NESTING + "a" + ")*" * MAX_NESTING
    parse_regex(ok2)
    many = "|".join("abcdefghijklmnopqrstu")  # enough branches for the by-hash deduplication
    for deep in [
        "(x|y" * MAX_NESTING + ")" * MAX_NESTING,
        ("(" + many + "|z") * MAX_NESTING + ")" * MAX_NESTING,
    ]:
        expr = parse_regex(deep)
        assert fullmatch_ir(parse_regex_search(deep), "qxaq")
        del expr
    with pytest.raises(RegexError) as info:
        parse_regex("(" * (MAX_NESTING + 1) + "a" + ")" * (MAX_NESTING + 1))
    assert info.value.position == MAX_NESTING
    with pytest.raises(RegexError):
        parse_regex("(" * 100_000)
    with pytest.raises(RegexError):
        parse_regex("[" * 100_000)


def test_large_inputs_do_not_hang():
    long_alt = "|".join(f"w{i}" for i in range(3000))
    assert fullmatch_ir(parse_regex(long_alt), "w2999")
    parse_regex("a" * 100_000)
    parse_regex("(a{10000}){10000}")
    parse_regex("[a-z]" * 2000)
    parse_regex("(?:(^|a|$){20})" * 5)


def test_anchor_repetition_blowup_is_bounded():
    # Anchors in a nested counted repetition either translate or raise a RegexError; no hang.
    for pattern in ["((^|a)b?){10000}", "(((^|$|a){50}){50}){50}", "(^|$)*" * 1000, "(^|a|$)" * 300]:
        try:
            parse_regex(pattern)
        except RegexError as err:
            assert "complex" in str(err)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab()[]{}|*+?^$\\.-,:=!<>PpkuxcdwsbB0123{}", max_size=16))
def test_garbage_only_raises_regex_error(pattern):
    for parse in (parse_regex, parse_regex_search):
        try:
            parse(pattern)
        except RegexError as err:
            assert 0 <= err.position <= len(pattern)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12))
def test_any_text_only_raises_regex_error(pattern):
    try:
        parse_regex(pattern)
    except RegexError:
        pass


def test_non_string_pattern():
    with pytest.raises(RegexError):
        parse_regex(b"abc")  # type: ignore[arg-type]


# ---- property test: generated patterns vs Python re -------------------------------------------

_ORACLE_WORKER = r"""
import json, re, sys, warnings
warnings.simplefilter("ignore")
from hypothesis import strategies as st
for line in sys.stdin:
    job = json.loads(line)
    try:
        compiled = re.compile(job["pattern"], job["flags"])
        if job["kind"] == "match":
            out = [[bool(compiled.fullmatch(t)), bool(compiled.search(t))] for t in job["texts"]]
        else:
            strategy = st.from_regex(compiled, fullmatch=True)
            out = [strategy.example() for _ in range(job["count"])]
    except Exception:
        out = None
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""


class PythonOracle:
    """Python's `re` (and Hypothesis' `from_regex`) run in a worker process, with a time limit.

    Python's backtracking matcher can take exponential time on generated patterns with nested
    quantifiers and cannot be interrupted (`from_regex(..., fullmatch=True)` also filters its output
    with `fullmatch`), so both run in a separate interpreter that is killed, and restarted on the
    next job, when a job takes longer than `timeout` seconds. Each call returns None then.
    """

    def __init__(self, timeout: float = 0.5):
        self.timeout = timeout
        self.process: subprocess.Popen | None = None

    def match(self, pattern: str, texts: list[str], flags: int = re.ASCII):
        """[(fullmatch, search)] per text, or None."""
        result = self._run({"kind": "match", "pattern": pattern, "flags": flags, "texts": texts})
        return None if result is None else [tuple(pair) for pair in result]

    def members(self, pattern: str, count: int, flags: int = re.ASCII):
        """`count` strings from `st.from_regex(pattern, fullmatch=True)`, or None."""
        return self._run({"kind": "members", "pattern": pattern, "flags": flags, "count": count})

    def _run(self, job: dict):
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _ORACLE_WORKER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                bufsize=0,
            )
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write((json.dumps(job) + "\n").encode())
        except BrokenPipeError:
            self.stop()
            return None
        deadline = time.monotonic() + self.timeout * (3 if job["kind"] == "members" else 1)
        reply = b""
        while not reply.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.process.stdout], [], [], left)[0]:
                self.stop()
                return None
            chunk = os.read(self.process.stdout.fileno(), 1 << 16)
            if not chunk:
                self.stop()
                return None
            reply += chunk
        return json.loads(reply)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    stream.close()
        self.process = None


@pytest.fixture(scope="module")
def python_oracle():
    oracle = PythonOracle()
    yield oracle
    oracle.stop()


_LITERALS = [(c, re.escape(c)) for c in ["a", "b", "c", "中", "😀", "-", " ", "~"]]
_ESCAPES = [
    ("\\.", "\\."), ("\\\\", "\\\\"), ("\\/", "/"), ("\\-", "\\-"), ("\\n", "\\n"), ("\\t", "\\t"),
    ("\\x61", "a"), ("\\u4e2d", "中"), ("\\u{1F600}", "😀"), ("\\uD83D\\uDE00", "😀"), ("\\cJ", "\\n"),
    ("\\0", "\\x00"), ("\\d", "\\d"), ("\\w", "\\w"), ("\\D", "\\D"), ("\\W", "\\W"),
    ("\\s", f"[{PY_SPACE_BODY}]"), ("\\S", f"[^{PY_SPACE_BODY}]"), (".", PY_DOT), ("\\*", "\\*"),
]  # fmt: skip
_CLASS_ITEMS = [
    ("a", "a"), ("b", "b"), ("中", "中"), ("😀", "😀"), ("a-c", "a-c"), ("\\u4e00-\\u9fff", "\\u4e00-\\u9fff"),
    ("😀-🙏", "😀-🙏"), ("\\d", "\\d"), ("\\w", "\\w"), ("\\s", PY_SPACE_BODY), ("\\-", "\\-"),
    ("\\]", "\\]"), (".", "."), ("\\b", "\\x08"), ("\\n", "\\n"), ("^", "\\^"), ("$", "$"),
]  # fmt: skip


@st.composite
def _classes(draw):
    items = draw(st.lists(st.sampled_from(_CLASS_ITEMS), min_size=1, max_size=4))
    negate = draw(st.booleans())
    if negate or items[0][0] == "^":
        items = [("\\^", "\\^") if e == "^" else (e, p) for e, p in items]
    hat = "^" if negate else ""
    return "[" + hat + "".join(e for e, _ in items) + "]", "[" + hat + "".join(p for _, p in items) + "]"


_ATOMS = st.one_of(st.sampled_from(_LITERALS), st.sampled_from(_ESCAPES), _classes())
_ANCHORS = st.sampled_from([("^", "^"), ("$", "\\Z")])


def _quantified(inner):
    def build(args):
        (e, p), quant, lazy = args
        ql = quant + ("?" if lazy and quant else "")
        return e + ql, p + ql

    quants = st.sampled_from(["", "", "*", "+", "?", "{2}", "{0,2}", "{1,}", "{1,3}", "{0}"])
    return st.tuples(inner, quants, st.booleans()).map(build)


def _grouped(inner):
    def build(args):
        kind, parts = args
        e = "|".join(x for x, _ in parts)
        p = "|".join(x for _, x in parts)
        opener = {"cap": ("(", "("), "nc": ("(?:", "(?:"), "named": ("(?<g>", "(?:")}[kind]
        return opener[0] + e + ")", opener[1] + p + ")"

    return st.tuples(st.sampled_from(["cap", "nc", "named"]), st.lists(inner, min_size=1, max_size=3)).map(
        build
    )


def _concat(parts):
    return "".join(e for e, _ in parts), "".join(p for _, p in parts)


def _patterns(atoms, anchors=None):
    """(ecma, python) pattern pairs; `anchors`, when given, appear as unquantified elements."""

    def element(inner):
        quantified = _quantified(inner)
        return quantified if anchors is None else st.one_of(quantified, anchors)

    terms = st.recursive(
        atoms,
        lambda inner: _grouped(st.lists(element(inner), max_size=3).map(_concat)),
        max_leaves=6,
    )
    branch = st.lists(element(terms), max_size=4).map(_concat)
    return st.lists(branch, min_size=1, max_size=3).map(
        lambda bs: ("|".join(e for e, _ in bs), "|".join(p for _, p in bs))
    )


_TEXT = st.text(alphabet="abc中😀- ~.\\\n\t_1\x00\r\u2028\u3000A*", max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(_patterns(_ATOMS), st.data())
def test_generated_patterns_vs_python(python_oracle, pair, data):
    ecma, py = pair
    expr = parse_regex(ecma)
    texts = [data.draw(_TEXT, label="text") for _ in range(3)]
    texts += python_oracle.members(py, 2) or []
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    for _ in range(3):
        try:
            texts.append(ir_match.sample(expr, rng, extra=2).decode("utf-8"))
        except ir_match.NoSample:
            pass
    texts += [t + "x" for t in texts] + ["中" + t for t in texts]
    expected = python_oracle.match(py, texts)
    assume(expected is not None)
    search = parse_regex_search(ecma)
    for text, (full, found) in zip(texts, expected):
        assert fullmatch_ir(expr, text) == full, (ecma, py, text)
        assert fullmatch_ir(search, text) == found, (ecma, py, text)


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(_patterns(_ATOMS, _ANCHORS), st.lists(st.text(alphabet="ab\n", max_size=5), min_size=6, max_size=6))
def test_generated_anchor_patterns_vs_python(python_oracle, pair, texts):
    ecma, py = pair
    re.compile(py, re.ASCII)
    expr = parse_regex(ecma)
    search = parse_regex_search(ecma)
    rng = random.Random(len(ecma))
    for _ in range(3):
        try:
            texts.append(ir_match.sample(expr, rng, extra=2).decode("utf-8"))
        except ir_match.NoSample:
            pass
    expected = python_oracle.match(py, texts)
    assume(expected is not None)
    for text, (full, found) in zip(texts, expected):
        assert fullmatch_ir(expr, text) == full, (ecma, py, text)
        assert fullmatch_ir(search, text) == found, (ecma, py, text)


# ---- the test helper itself -------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(_patterns(_ATOMS, _ANCHORS), st.lists(_TEXT, min_size=4, max_size=4))
def test_ir_match_two_routes_agree(python_oracle, pair, texts):
    expr = parse_regex(pair[0])
    expected = python_oracle.match(ir_match.to_python_regex(expr), texts, flags=0)
    assume(expected is not None)
    for text, (full, _) in zip(texts, expected):
        assert ir_match.matches(expr, text) == full, (pair, text)
        assert ir_match.matches(expr, text.encode("utf-8")) == ir_match.matches(expr, text)


def test_ir_match_basics():
    a = Literal(b"a")
    assert ir_match.matches(Repeat(a, 2, 3), "aaa")
    assert not ir_match.matches(Repeat(a, 2, 3), "aaaa")
    assert not ir_match.matches(Repeat(a, 2, 3), "a")
    assert ir_match.matches(Repeat(Alt((a, Seq(()))), 5, 5), "aa")
    assert ir_match.matches(Repeat(Repeat(a, 0, None), 3, None), "")
    assert not ir_match.matches(Alt(()), "")
    assert ir_match.matches(CharSet(((0x4E00, 0x9FFF),)), "中")
    assert not ir_match.matches(CharSet(((0x4E00, 0x9FFF),)), "中".encode()[:2])
    assert not ir_match.matches(CharSet(((0, 0x10FFFF),)), b"\xed\xa0\x80")  # encoded surrogate


# ---- maskbench JSON Schema patterns -----------------------------------------------------------

MASKBENCH = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "maskbench-dev"

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def _collect_patterns(node, out: collections.Counter, in_map: bool = False):
    if isinstance(node, dict):
        for key, value in node.items():
            if not in_map:
                if key == "pattern" and isinstance(value, str):
                    out[value] += 1
                if key == "patternProperties" and isinstance(value, dict):
                    for name in value:
                        out[name] += 1
            _collect_patterns(value, out, in_map=not in_map and key in _SCHEMA_MAPS)
    elif isinstance(node, list):
        for item in node:
            _collect_patterns(item, out)


@pytest.fixture(scope="module")
def maskbench_patterns() -> collections.Counter:
    if not MASKBENCH.is_dir():
        pytest.skip("maskbench-dev data not available")
    found: collections.Counter = collections.Counter()
    for path in sorted(MASKBENCH.glob("*.json")):
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        except (ValueError, KeyError, TypeError):
            continue
        _collect_patterns(schema, found)
    return found


def _reason(err: RegexError) -> str:
    return str(err).split(" at position")[0]


def test_maskbench_patterns_parse_or_regex_error(maskbench_patterns):
    assert maskbench_patterns
    reasons: collections.Counter = collections.Counter()
    parsed = 0
    for pattern in maskbench_patterns:
        results = []
        for parse in (parse_regex, parse_regex_search):
            try:
                parse(pattern)
                results.append(True)
            except RegexError as err:
                results.append(False)
                if parse is parse_regex:
                    reasons[_reason(err)] += 1
        assert results[0] == results[1], pattern
        parsed += results[0]
    print(
        f"\nmaskbench: {parsed}/{len(maskbench_patterns)} distinct patterns parse; errors: {reasons.most_common()}"
    )
    assert parsed >= 0.95 * len(maskbench_patterns)


def _tolerated(pattern: str, text: str, exact: bool) -> bool:
    """Disagreements explained by known ECMA/Python differences, for patterns given to Python as is."""
    if exact:
        return False  # the Python version spells out `.`, `\\s`, `\\S` and `$` the ECMA way
    if any(ch in DOT_DIFF or ch in ECMA_SPACE_EXTRA for ch in text):
        return True  # `.` (\r \u2028 \u2029) and `\\s` (non-ASCII spaces; Python uses re.ASCII here)
    return text.endswith("\n") and "$" in pattern  # Python's `$` also matches before a final newline


_EMPTY_CLASS = re.compile(r"(?:^|[^\\])(?:\\\\)*\[\^?\]")  # an unescaped `[]` or `[^]`


def _comparable(patterns):
    """(pattern, IR, compiled Python version, exact) for patterns both sides accept.

    The Python version is `python_version(pattern)` (exact: `.`/`\\s`/`\\S`/`$` spelled out the ECMA
    way) unless the pattern uses `\\S` inside a class, which has no Python spelling; then the raw
    pattern is used and `_tolerated` excuses the known differences.
    """
    out = []
    for pattern in patterns:
        if "{," in pattern or _EMPTY_CLASS.search(pattern):
            continue  # ECMA literal `{,n}` / empty classes differ from Python on purpose
        try:
            expr = parse_regex(pattern)
        except RegexError:
            continue
        try:
            compiled, exact = re.compile(python_version(pattern), re.ASCII), True
        except (AssertionError, re.error):
            try:
                compiled, exact = re.compile(pattern, re.ASCII), False
            except re.error:
                continue
        out.append((pattern, expr, compiled, exact))
    return out


def _mutations(text: str, rng: random.Random, alphabet: str):
    for _ in range(3):
        yield mutated(text, alphabet, rng)


def test_maskbench_agreement_with_python(maskbench_patterns):
    rng = random.Random(1234)
    comparable = _comparable(maskbench_patterns)
    assert len(comparable) > 800
    checked = tolerated = 0
    for pattern, expr, compiled, exact in comparable:
        alphabet = "".join(sorted(set(pattern) - set("\\"))) + "a0-_.Z中 😀"
        for _ in range(3):
            try:
                member = ir_match.sample(expr, rng, extra=2).decode("utf-8")
            except ir_match.NoSample:
                continue
            candidates = [(member, True)]
            if len(member) <= 14:  # Python backtracks exponentially on some patterns' non-members
                candidates += [(m, None) for m in _mutations(member, rng, alphabet)]
            for text, expected in candidates:
                ours = fullmatch_ir(expr, text)
                if expected is not None:
                    assert ours, (pattern, text)
                theirs = bool(compiled.fullmatch(text))
                checked += 1
                if ours != theirs:
                    assert _tolerated(pattern, text, exact), (pattern, text, ours, theirs)
                    tolerated += 1
    n_exact = sum(exact for *_, exact in comparable)
    print(
        f"\nmaskbench agreement: {len(comparable)} patterns ({n_exact} with an exact Python version), "
        f"{checked} strings, {tolerated} tolerated differences"
    )


@pytest.fixture(scope="module")
def comparable_patterns(maskbench_patterns):
    return _comparable(maskbench_patterns)


def test_maskbench_from_regex_members(comparable_patterns, python_oracle):
    """Strings Hypothesis' `from_regex` generates for (a fixed sample of) the patterns are members."""
    rng = random.Random(5)
    chosen = rng.sample(comparable_patterns, min(100, len(comparable_patterns)))
    generated = 0
    for pattern, expr, compiled, exact in chosen:
        for text in python_oracle.members(compiled.pattern, 2) or []:
            generated += 1
            if not fullmatch_ir(expr, text):
                assert _tolerated(pattern, text, exact), (pattern, compiled.pattern, text)
    assert generated >= 150


def test_maskbench_search_agreement(comparable_patterns):
    rng = random.Random(99)
    affixes = ["", "x", "中", "-1", " 😀"]
    for pattern, expr, compiled, exact in comparable_patterns:
        search = parse_regex_search(pattern)
        try:
            member = ir_match.sample(expr, rng, extra=1).decode("utf-8")
        except ir_match.NoSample:
            continue
        for _ in range(2):
            text = rng.choice(affixes) + member + rng.choice(affixes)
            ours = fullmatch_ir(search, text)
            theirs = bool(compiled.search(text))
            if ours != theirs:
                assert _tolerated(pattern, text, exact), (pattern, text, ours, theirs)
