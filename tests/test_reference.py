"""Tests of the reference recognizer (tests/reference.py) against independent oracles.

The reference judges the fast engine, so it is itself checked against things that are trusted
for other reasons: Python's `re`, Python's UTF-8 codec, brute-force enumeration, and small
hand-written counter automata.
"""

from __future__ import annotations

import itertools
import random
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

try:
    from reference import ReferenceRecognizer, utf8_sequences
except ImportError:  # tests/ collected as a package
    from tests.reference import ReferenceRecognizer, utf8_sequences

from strictgen.grammar.ir import (
    NOTHING,
    Alt,
    ByteSet,
    CharSet,
    Grammar,
    Literal,
    Repeat,
    RuleRef,
    Seq,
    lit,
)

SETTINGS = settings(
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def grammar(root_expr, **rules) -> Grammar:
    return Grammar(rules={"root": root_expr, **rules}, root="root")


def rec(root_expr, **rules) -> ReferenceRecognizer:
    return ReferenceRecognizer(grammar(root_expr, **rules))


def all_strings(alphabet: bytes, max_len: int):
    for n in range(max_len + 1):
        for combo in itertools.product(alphabet, repeat=n):
            yield bytes(combo)


# ---- UTF-8 splitting -------------------------------------------------------------------------


def expand_sequences(seqs) -> list[bytes]:
    out = []
    for seq in seqs:
        for combo in itertools.product(*(range(lo, hi + 1) for lo, hi in seq)):
            out.append(bytes(combo))
    return out


def encodings(lo: int, hi: int) -> set[bytes]:
    return {chr(cp).encode("utf-8") for cp in range(lo, hi + 1) if not 0xD800 <= cp <= 0xDFFF}


def check_utf8_sequences(lo: int, hi: int) -> None:
    seqs = utf8_sequences(lo, hi)
    expanded = expand_sequences(seqs)
    assert len(expanded) == len(set(expanded)), "sequences overlap"
    assert set(expanded) == encodings(lo, hi)
    for seq in seqs:
        assert 1 <= len(seq) <= 4
        assert all(0 <= a <= b <= 255 for a, b in seq)


INTERESTING_CODEPOINTS = [
    0, 0x7F, 0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xD800, 0xDFFF, 0xE000, 0xFFFF,
    0x10000, 0x3FFFF, 0x40000, 0xFFFFF, 0x100000, 0x10FFFF,
]  # fmt: skip

codepoint = st.one_of(
    st.integers(0, 0x10FFFF),
    st.sampled_from(INTERESTING_CODEPOINTS).flatmap(
        lambda c: st.integers(max(0, c - 70), min(0x10FFFF, c + 70))
    ),
)


@SETTINGS
@given(codepoint, st.integers(0, 5000))
def test_utf8_sequences_random_ranges(lo, width):
    check_utf8_sequences(lo, min(lo + width, 0x10FFFF))


@pytest.mark.parametrize(
    "lo,hi",
    [(0, 0), (0, 0x7F), (0x41, 0x5A), (0x80, 0x7FF), (0x7F, 0x800), (0xD000, 0xE000),
     (0xD800, 0xDFFF), (0xD7FF, 0xE000), (0x4E00, 0x9FFF), (0x1F600, 0x1F64F),
     (0xFFF0, 0x10010), (0x10FF00, 0x10FFFF)],
)  # fmt: skip
def test_utf8_sequences_fixed_ranges(lo, hi):
    check_utf8_sequences(lo, hi)


def test_utf8_sequences_surrogates_only_is_empty():
    assert utf8_sequences(0xD800, 0xDFFF) == []


def test_utf8_sequences_whole_range():
    seqs = utf8_sequences(0, 0x10FFFF)
    # The textbook table of well-formed UTF-8 (Unicode 15, table 3-7), with the E0/ED/F0/F4 rows.
    assert sorted(seqs) == sorted(
        [
            ((0x00, 0x7F),),
            ((0xC2, 0xDF), (0x80, 0xBF)),
            ((0xE0, 0xE0), (0xA0, 0xBF), (0x80, 0xBF)),
            ((0xE1, 0xEC), (0x80, 0xBF), (0x80, 0xBF)),
            ((0xED, 0xED), (0x80, 0x9F), (0x80, 0xBF)),
            ((0xEE, 0xEF), (0x80, 0xBF), (0x80, 0xBF)),
            ((0xF0, 0xF0), (0x90, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
            ((0xF1, 0xF3), (0x80, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
            ((0xF4, 0xF4), (0x80, 0x8F), (0x80, 0xBF), (0x80, 0xBF)),
        ]
    )


# ---- random regular grammars vs Python re ----------------------------------------------------


def _class_regex(ranges) -> bytes:
    return b"[" + b"".join(b"\\x%02x-\\x%02x" % (lo, hi) for lo, hi in ranges) + b"]"


def _ranges_of(byte_values) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for b in sorted(set(byte_values)):
        if out and b == out[-1][1] + 1:
            out[-1][1] = b
        else:
            out.append([b, b])
    return tuple((a, b) for a, b in out)


def regular_pairs(alphabet: bytes, unbounded: bool = True, nothing: bool = False):
    """Strategy for (IR expression, equivalent Python bytes regex) pairs over `alphabet`."""
    literal = st.lists(st.sampled_from(alphabet), max_size=3).map(
        lambda bs: (Literal(bytes(bs)), b"(?:" + re.escape(bytes(bs)) + b")")
    )
    byteset = st.sets(st.sampled_from(alphabet), min_size=1).map(
        lambda s: (ByteSet(_ranges_of(s)), _class_regex(_ranges_of(s)))
    )
    leaves = [literal, byteset]
    if nothing:
        leaves += [st.just((ByteSet(()), b"(?!)")), st.just((NOTHING, b"(?!)"))]

    def make_seq(children):
        return Seq(tuple(e for e, _ in children)), b"(?:" + b"".join(p for _, p in children) + b")"

    def make_alt(children):
        if not children:
            return NOTHING, b"(?!)"
        return Alt(tuple(e for e, _ in children)), b"(?:" + b"|".join(p for _, p in children) + b")"

    def make_repeat(args):
        (e, p), lo, extra = args
        hi = None if extra is None else lo + extra
        bound = b"{%d,}" % lo if hi is None else b"{%d,%d}" % (lo, hi)
        return Repeat(e, lo, hi), b"(?:" + p + b")" + bound

    extra = st.one_of(st.none(), st.integers(0, 3)) if unbounded else st.integers(0, 3)

    def extend(children):
        return st.one_of(
            st.lists(children, max_size=3).map(make_seq),
            st.lists(children, min_size=1 if not nothing else 0, max_size=3).map(make_alt),
            st.tuples(children, st.integers(0, 3), extra).map(make_repeat),
        )

    return st.recursive(st.one_of(leaves), extend, max_leaves=8)


def hoist_rules(expr, rnd: random.Random) -> Grammar:
    """An equivalent grammar in which some sub-expressions live in their own rules (RuleRef)."""
    rules: dict = {}

    def walk(e):
        if isinstance(e, Seq):
            e = Seq(tuple(walk(x) for x in e.items))
        elif isinstance(e, Alt):
            e = Alt(tuple(walk(x) for x in e.items))
        elif isinstance(e, Repeat):
            e = Repeat(walk(e.item), e.min, e.max)
        if rnd.random() < 0.4:
            name = f"r{len(rules)}"
            rules[name] = e
            return RuleRef(name)
        return e

    rules["root"] = walk(expr)
    return Grammar(rules=rules, root="root")


ALPHABET = b"abc"
random_input = st.lists(st.sampled_from(ALPHABET + b"d"), max_size=10).map(bytes)


@SETTINGS
@given(regular_pairs(ALPHABET, nothing=True), st.lists(random_input, max_size=20), st.randoms())
def test_accepts_matches_re_on_random_strings(pair, inputs, rnd):
    expr, pattern = pair
    compiled = re.compile(pattern)
    for g in (grammar(expr), hoist_rules(expr, rnd)):
        r = ReferenceRecognizer(g)
        for data in inputs:
            assert r.accepts(data) == bool(compiled.fullmatch(data)), (pattern, data)


@SETTINGS
@given(regular_pairs(ALPHABET), st.data())
def test_accepts_strings_generated_from_regex(pair, data):
    expr, pattern = pair
    r = rec(expr)
    for _ in range(5):
        s = data.draw(st.from_regex(pattern, fullmatch=True))
        assert r.accepts(s), (pattern, s)
        for i in range(len(s) + 1):
            assert r.is_viable_prefix(s[:i])
            if i < len(s):
                assert s[i] in r.allowed_next_bytes(s[:i])


def max_len(e) -> int | None:
    """An upper bound on sentence length, None when unbounded."""
    if isinstance(e, Literal):
        return len(e.data)
    if isinstance(e, ByteSet):
        return 1
    if isinstance(e, (Seq, Alt)):
        sub = [max_len(x) for x in e.items]
        if None in sub:
            return None
        return (sum(sub) if isinstance(e, Seq) else max(sub, default=0)) if sub else 0
    if isinstance(e, Repeat):
        sub = max_len(e.item)
        return None if sub is None or e.max is None else sub * e.max
    raise TypeError(e)


@SETTINGS
@given(regular_pairs(b"ab", unbounded=False, nothing=True))
def test_viability_exact_on_finite_languages(pair):
    expr, pattern = pair
    bound = max_len(expr)
    assume(bound <= 7)
    compiled = re.compile(pattern)
    sentences = [s for s in all_strings(b"ab", bound) if compiled.fullmatch(s)]
    prefixes = {s[:i] for s in sentences for i in range(len(s) + 1)}
    r = rec(expr)
    for s in all_strings(b"ab", bound + 1):
        assert r.accepts(s) == (s in sentences), (pattern, s)
        assert r.is_viable_prefix(s) == (s in prefixes), (pattern, s)
        expected_next = {c for c in b"ab" if s + bytes([c]) in prefixes}
        assert r.allowed_next_bytes(s) == expected_next, (pattern, s)
        state = r.state_after(s)
        assert r.state_viable(state) == (s in prefixes)
        assert r.state_accepts(state) == (s in sentences)


@SETTINGS
@given(regular_pairs(b"ab", nothing=True))
def test_viability_consistent_on_infinite_languages(pair):
    # Brute force with a length bound is exact only one way: an accepted extension proves viability;
    # and the reference must never call a prefix viable while allowing no byte and not accepting.
    expr, pattern = pair
    compiled = re.compile(pattern)
    sentences = {s for s in all_strings(b"ab", 7) if compiled.fullmatch(s)}
    witnessed = {s[:i] for s in sentences for i in range(len(s) + 1)}
    r = rec(expr)
    for s in all_strings(b"ab", 5):
        viable = r.is_viable_prefix(s)
        if s in witnessed:
            assert viable, (pattern, s)
        assert viable == (r.accepts(s) or bool(r.allowed_next_bytes(s)))
        for c in r.allowed_next_bytes(s):
            assert r.is_viable_prefix(s + bytes([c]))


# ---- recursion, left recursion, nullable rules -----------------------------------------------


def balanced_oracle(s: bytes) -> tuple[bool, bool]:
    """(accepted, viable) for balanced parentheses."""
    depth = 0
    for c in s:
        depth += 1 if c == ord("(") else -1
        if depth < 0:
            return False, False
    return depth == 0, True


@pytest.mark.parametrize(
    "rules",
    [
        # S ::= "" | "(" S ")" S
        {"root": Alt((lit(""), Seq((lit("("), RuleRef("root"), lit(")"), RuleRef("root")))))},
        # S ::= S "(" S ")" | ""   (left-recursive)
        {"root": Alt((Seq((RuleRef("root"), lit("("), RuleRef("root"), lit(")"))), lit("")))},
        # S ::= ("(" S ")")*
        {"root": Repeat(Seq((lit("("), RuleRef("root"), lit(")"))), 0, None)},
    ],
)
def test_balanced_parentheses(rules):
    r = ReferenceRecognizer(Grammar(rules=rules, root="root"))
    for s in all_strings(b"()", 10):
        accepted, viable = balanced_oracle(s)
        assert r.accepts(s) == accepted, s
        assert r.is_viable_prefix(s) == viable, s


ARITH = Grammar(
    rules={
        "expr": Alt((Seq((RuleRef("expr"), lit("+"), RuleRef("term"))), RuleRef("term"))),
        "term": Alt((Seq((RuleRef("term"), lit("*"), RuleRef("factor"))), RuleRef("factor"))),
        "factor": Alt((Repeat(ByteSet(((0x30, 0x39),)), 1, None), Seq((lit("("), RuleRef("expr"), lit(")"))))),
    },
    root="expr",
)  # fmt: skip


def arith_oracle(s: bytes) -> tuple[bool, bool]:
    """(accepted, viable) for ARITH via a counter automaton: states EXPECT (an operand),
    NUM (inside a number), CLOSED (just after ')'). Every live state can be completed."""
    state, depth = "EXPECT", 0
    for c in s.decode("latin-1"):
        if state == "EXPECT":
            if c.isdigit():
                state = "NUM"
            elif c == "(":
                depth += 1
            else:
                return False, False
        elif c.isdigit() and state == "NUM":
            pass
        elif c in "+*":
            state = "EXPECT"
        elif c == ")" and depth > 0:
            state, depth = "CLOSED", depth - 1
        else:
            return False, False
    return state != "EXPECT" and depth == 0, True


def test_left_recursive_arithmetic():
    r = ReferenceRecognizer(ARITH)
    for s in all_strings(b"1+*()", 6):
        accepted, viable = arith_oracle(s)
        assert r.accepts(s) == accepted, s
        assert r.is_viable_prefix(s) == viable, s
    assert r.accepts(b"12+3*(4+5)*(((6)))")
    assert r.allowed_next_bytes(b"(1+") == set(b"0123456789(")
    assert r.allowed_next_bytes(b"(1") == set(b"0123456789+*)")
    assert r.allowed_next_bytes(b"1") == set(b"0123456789+*")


def test_nullable_before_terminal():
    # The classic failure of naive Earley: S ::= A A "x", A ::= "".
    r = rec(Seq((RuleRef("A"), RuleRef("A"), lit("x"))), A=lit(""))
    assert r.accepts(b"x")
    assert not r.accepts(b"")
    assert r.allowed_next_bytes(b"") == {ord("x")}


def test_nullable_ambiguous_cycle():
    # E ::= E E | "a" | ""  is a*  (infinitely ambiguous, cyclic through nullables).
    r = rec(RuleRef("E"), E=Alt((Seq((RuleRef("E"), RuleRef("E"))), lit("a"), lit(""))))
    for n in range(12):
        assert r.accepts(b"a" * n)
    assert not r.is_viable_prefix(b"ab")
    assert r.allowed_next_bytes(b"aaa") == {ord("a")}


def test_hidden_left_recursion_through_nullable():
    # A ::= B A "x" | "y" ;  B ::= "" | "b"   is  { b^k y x^n : k <= n }.
    r = rec(
        RuleRef("A"),
        A=Alt((Seq((RuleRef("B"), RuleRef("A"), lit("x"))), lit("y"))),
        B=Alt((lit(""), lit("b"))),
    )
    pattern = re.compile(rb"(b*)y(x*)")
    for s in all_strings(b"bxy", 7):
        m = pattern.fullmatch(s)
        assert r.accepts(s) == bool(m and len(m[1]) <= len(m[2])), s
        # viable: b's then (optionally) y and x's; any count of b's can still be matched by x's
        assert r.is_viable_prefix(s) == bool(re.fullmatch(rb"b*(yx*)?", s)), s


def test_deep_nullable_chain():
    rules = {f"R{i}": Seq((RuleRef(f"R{i + 1}"), RuleRef(f"R{i + 1}"))) for i in range(8)}
    rules["R8"] = Alt((lit(""), lit("a")))
    r = ReferenceRecognizer(Grammar(rules=rules, root="R0"))
    for n in range(0, 257, 37):
        assert r.accepts(b"a" * n)
    assert not r.is_viable_prefix(b"a" * 257)
    assert r.is_viable_prefix(b"a" * 256)


def test_nullable_repeat_item():
    # (a?)* and ("" | b)+ must not loop or lose strings
    r = rec(Seq((Repeat(Repeat(lit("a"), 0, 1), 0, None), Repeat(Alt((lit(""), lit("b"))), 1, None))))
    assert r.accepts(b"")
    assert r.accepts(b"aaabbb")
    assert not r.accepts(b"aba")


# ---- productivity ----------------------------------------------------------------------------


def test_non_productive_alternatives_are_ignored():
    # X ::= "c" X has no finite derivation, so "a" X can never complete.
    r = rec(Alt((Seq((lit("a"), RuleRef("X"))), lit("b"))), X=Seq((lit("c"), RuleRef("X"))))
    assert r.allowed_next_bytes(b"") == {ord("b")}
    assert not r.is_viable_prefix(b"a")
    assert not r.is_viable_prefix(b"ac")
    assert r.accepts(b"b")


def test_non_productive_root_has_nothing_viable():
    for expr in (Seq((lit("a"), RuleRef("root"))), NOTHING, ByteSet(()), Repeat(NOTHING, 1, None)):
        r = rec(expr)
        assert not r.is_viable_prefix(b"")
        assert not r.accepts(b"")
        assert r.allowed_next_bytes(b"") == set()


def test_repeat_of_nothing_is_empty_string():
    r = rec(Seq((lit("a"), Repeat(NOTHING, 0, 3), Repeat(NOTHING, 0, None))))
    assert r.accepts(b"a")
    assert r.allowed_next_bytes(b"a") == set()
    assert r.is_viable_prefix(b"a")


def test_undefined_rule_is_an_error():
    with pytest.raises(ValueError):
        rec(RuleRef("missing"))
    with pytest.raises(ValueError):
        ReferenceRecognizer(Grammar(rules={"a": lit("a")}, root="root"))


# ---- large bounds and incremental use --------------------------------------------------------


def test_large_repeat_bounds():
    r = rec(Repeat(lit("ab"), 0, 1000))
    assert r.accepts(b"ab" * 150)
    assert r.is_viable_prefix(b"ab" * 150 + b"a")
    r = rec(Seq((Repeat(ByteSet(((0x61, 0x62),)), 250, 300), lit("!"))))
    assert not r.accepts(b"a" * 249 + b"!")
    assert r.accepts(b"a" * 250 + b"!")
    assert r.accepts(b"ab" * 150 + b"!")
    assert not r.is_viable_prefix(b"a" * 301)
    assert r.allowed_next_bytes(b"a" * 300) == {ord("!")}
    assert r.allowed_next_bytes(b"a" * 249) == {ord("a"), ord("b")}


def test_incremental_api_matches_whole_input():
    r = ReferenceRecognizer(ARITH)
    prefix = b"(12+3)*(4"
    base = r.state_after(prefix)
    assert r.state_viable(base) and not r.state_accepts(base)
    tokens = [bytes(t) for n in range(1, 4) for t in itertools.product(b"0+*()", repeat=n)]
    for tok in tokens:
        state = base
        for b in tok:
            state = r.advance(state, b)
        assert r.state_accepts(state) == r.accepts(prefix + tok) == arith_oracle(prefix + tok)[0]
        assert r.state_viable(state) == r.is_viable_prefix(prefix + tok) == arith_oracle(prefix + tok)[1]
    assert r.advance(None, ord("1")) is None
    assert r.state_after(b")") is None


# ---- CharSet: UTF-8 ------------------------------------------------------------------------


CJK = CharSet(((0x4E00, 0x9FFF),))
EMOJI = CharSet(((0x1F600, 0x1F64F),))


def test_chinese_characters():
    r = rec(Repeat(CJK, 1, None))
    zhong = "中".encode()  # E4 B8 AD
    assert r.accepts("中文字".encode())
    assert not r.accepts(b"")
    assert r.is_viable_prefix(zhong[:1]) and not r.accepts(zhong[:1])
    assert r.is_viable_prefix(zhong[:2]) and not r.accepts(zhong[:2])
    assert not r.is_viable_prefix(zhong[:1] + b"A")  # not a continuation byte
    assert not r.is_viable_prefix(zhong[:2] + b"\xe4")  # a lead byte where a continuation is due
    assert not r.is_viable_prefix(zhong[:1] + b"\xb7")  # U+4DC0..: below the range
    assert r.allowed_next_bytes(b"") == set(range(0xE4, 0xEA))
    assert r.allowed_next_bytes(zhong[:1]) == set(range(0xB8, 0xC0))
    assert r.allowed_next_bytes(zhong[:2]) == set(range(0x80, 0xC0))
    assert r.allowed_next_bytes(zhong) == set(range(0xE4, 0xEA))
    assert not r.accepts("中a".encode())


def test_emoji_and_mixed_text():
    r = rec(Seq((lit("say "), Repeat(Alt((CJK, EMOJI)), 1, None), lit("!"))))
    text = "say 你好😀🙏!".encode()
    assert r.accepts(text)
    smile = "😀".encode()  # F0 9F 98 80
    for i in range(1, 4):
        assert r.is_viable_prefix(b"say " + smile[:i])
        assert not r.accepts(b"say " + smile[:i] + b"!")
    assert r.allowed_next_bytes(b"say ") == set(range(0xE4, 0xEA)) | {0xF0}
    assert r.allowed_next_bytes(b"say \xf0") == {0x9F}
    assert r.allowed_next_bytes(b"say \xf0\x9f") == {0x98, 0x99}
    assert r.allowed_next_bytes(b"say \xf0\x9f\x99") == set(range(0x80, 0x90))
    assert r.allowed_next_bytes(b"say " + smile) == set(range(0xE4, 0xEA)) | {0xF0, ord("!")}
    assert not r.accepts("say 😀 !".encode())


def test_surrogates_overlongs_and_out_of_range_rejected():
    r = rec(CharSet(((0, 0x10FFFF),)))
    assert r.accepts(b"\x00") and r.accepts("\U0010ffff".encode()) and r.accepts("\ud7ff".encode())
    assert not r.is_viable_prefix(b"\xed\xa0")  # would be a surrogate
    assert not r.accepts(b"\xed\xa0\x80")
    assert not r.is_viable_prefix(b"\xc0")  # overlong lead bytes
    assert not r.is_viable_prefix(b"\xc1")
    assert not r.is_viable_prefix(b"\xe0\x80")  # overlong 3-byte
    assert not r.is_viable_prefix(b"\xf0\x80")  # overlong 4-byte
    assert not r.is_viable_prefix(b"\xf4\x90")  # beyond U+10FFFF
    assert not r.is_viable_prefix(b"\xf5")
    assert r.allowed_next_bytes(b"\xed") == set(range(0x80, 0xA0))
    assert r.allowed_next_bytes(b"\xf4") == set(range(0x80, 0x90))
    r = rec(CharSet(((0xD000, 0xE000),)))
    assert r.accepts("\ud7ff".encode()) and r.accepts("\ue000".encode())
    assert r.allowed_next_bytes(b"\xed") == set(range(0x80, 0xA0))


charset_ranges = st.lists(
    st.tuples(codepoint, st.integers(0, 300)).map(lambda t: (t[0], min(t[0] + t[1], 0x10FFFF))),
    min_size=1,
    max_size=3,
)


@SETTINGS
@given(charset_ranges)
def test_charset_prefixes_by_brute_force(ranges):
    r = rec(CharSet(tuple(ranges)))
    sentences = set().union(*(encodings(lo, hi) for lo, hi in ranges))
    prefixes = {s[:i] for s in sentences for i in range(len(s) + 1)}
    for p in prefixes:
        assert r.accepts(p) == (p in sentences), p
        assert r.is_viable_prefix(p)
        assert r.allowed_next_bytes(p) == {s[len(p)] for s in sentences if len(s) > len(p) and s.startswith(p)}
    for s in sentences:
        assert not r.is_viable_prefix(s + b"\x80")


def _str_class(ranges) -> str:
    return "[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges) + "]"


@SETTINGS
@given(
    charset_ranges,
    st.lists(st.integers(0, 3), max_size=3),
    st.lists(st.one_of(codepoint.map(lambda c: chr(c).encode("utf-8", "surrogatepass")), st.binary(max_size=2)), max_size=6),
)
def test_charset_matches_utf8_decode_and_re(ranges, shape, pieces):
    # root ::= CharSet{shape[0]} "-" CharSet* ; oracle: strict UTF-8 decode, then a str regex.
    cs = CharSet(tuple(ranges))
    r = rec(Seq((Repeat(cs, len(shape), len(shape) + 1), lit("-"), Repeat(cs, 0, None))))
    cls = _str_class(ranges)
    pattern = re.compile(f"{cls}{{{len(shape)},{len(shape) + 1}}}-{cls}*")
    inside = [chr(lo).encode() for lo, _ in ranges if not 0xD800 <= lo <= 0xDFFF]
    candidates = [b"".join(pieces)] + [
        b"".join(inside[i % len(inside)] for i in range(n)) + b"-" + b"".join(pieces)
        for n in range(3)
        if inside
    ]
    for data in candidates:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        expected = text is not None and bool(pattern.fullmatch(text))
        assert r.accepts(data) == expected, (ranges, data)
