"""Choices and string enums compile to a trie of shared prefixes (grammar.ir.literal_trie): on a
real vocabulary they accept exactly the given strings, the masks are the tokens that keep a
choice reachable, and 100,000 choices compile in seconds."""

from __future__ import annotations

import bisect
import json
import random
import time

import pytest

import strictgen as sg
from strictgen.grammar.ir import EMPTY, NOTHING, Alt, RuleRef, Seq, alt, literal_trie, lit, seq

from ..helpers import allowed_ids


def _choices() -> list[str]:
    """Shared prefixes of every length, a choice that is a prefix of others, non-ASCII, a quote."""
    rng = random.Random(7)
    stems = ["app", "apple", "application", "apply", "b", "ban", "banana", "日本", "日本語", 'q"uote', "x"]
    out = set(stems)
    for _ in range(400):
        out.add(rng.choice(stems) + "".join(rng.choices("abcz-_ 0", k=rng.randint(0, 5))))
    return sorted(out)


def _allowed_reference(tok: sg.TokenizerInfo, choices: list[bytes], prefix: bytes, ended: bool) -> set[int]:
    """Tokens t with prefix + t a prefix of some choice (EOS when the prefix is a choice)."""
    allowed = set(tok.eos_token_ids) if ended else set()
    special = tok.is_special
    for t in range(tok.vocab_size):
        if special[t]:
            continue
        s = prefix + tok.token_bytes(t)
        i = bisect.bisect_left(choices, s)
        if i < len(choices) and choices[i].startswith(s):
            allowed.add(t)
    return allowed


def test_trie_branches_between_characters_and_non_ascii_enums_compile(qwen):
    """Strings that share a character's lead byte (ö and ü are C3 B6 and C3 BC) branch before
    the character, so every literal is whole UTF-8, which the JSON spelling of an enum decodes
    (a German place-name enum failed with an internal error before)."""
    assert literal_trie(["schön", "schüler"]) == seq(lit("sch"), Alt((lit("ön"), lit("üler"))))
    names = ["Schöneberg", "Schüler", "Köpenick", "Kreuzberg"]
    g = sg.GrammarCompiler(qwen).compile_json_schema({"enum": names})
    for name in names:
        for text in (json.dumps(name), json.dumps(name, ensure_ascii=False)):
            m = sg.GrammarMatcher(g)
            assert m.accept_string(text) and m.can_end(), text
    m = sg.GrammarMatcher(g)
    assert not (m.accept_string('"Sch\\u00fcneberg"') and m.can_end())  # escaped: no member either


def test_literal_trie_shares_prefixes():
    assert literal_trie([]) == NOTHING
    assert literal_trie(["x"]) == lit("x")
    assert literal_trie(["aa", "ab", "ab"]) == seq(lit("a"), Alt((lit("a"), lit("b"))))
    # a choice that is a prefix of another: the shared node also accepts the end
    assert literal_trie(["ab", "abc", ""]) == Alt((EMPTY, seq(lit("ab"), Alt((EMPTY, lit("c"))))))
    # choices nested in one another: one literal per edge, built without recursion
    lengths = list(range(1, 300, 7))
    want: object = lit("a" * 7)
    for _ in range(len(lengths) - 2):
        want = seq(lit("a" * 7), Alt((EMPTY, want)))
    assert literal_trie(["a" * n for n in lengths]) == seq(lit("a"), Alt((EMPTY, want)))
    # nested deeper than MAX_TRIE_NESTING: a flat alternation, which compiles without deep recursion
    deep = ["a" * n for n in range(1, 3000, 3)]
    assert literal_trie(deep) == Alt(tuple(lit(w) for w in deep))


def test_alt_dedupes_in_linear_time():
    assert alt(lit("a"), lit("b"), lit("a")) == Alt((lit("a"), lit("b")))
    shared = seq(lit("x"), RuleRef("r"))
    assert alt(seq(lit("{"), shared), seq(lit("{"), shared), lit("q")) == Alt((seq(lit("{"), shared), lit("q")))
    # a DAG 60 levels deep with every level shared twice: hashing it whole would take 2**60 steps
    dag = lit("z")
    for _ in range(60):
        dag = Seq((dag, dag))
    t0 = time.perf_counter()
    assert alt(dag, Seq((dag, lit("y"))), dag) == Alt((dag, Seq((dag, lit("y")))))
    many = alt(*(lit(str(i)) for i in range(200_000)), lit("7"))
    assert isinstance(many, Alt) and len(many.items) == 200_000
    assert time.perf_counter() - t0 < 10  # quadratic deduplication took hours


def test_choice_accepts_exactly_the_choices_on_a_real_vocabulary(qwen):
    choices = _choices()
    g = sg.GrammarCompiler(qwen).compile_choice(choices)
    eos = qwen.eos_token_ids[0]
    rng = random.Random(3)
    members = set(choices)
    for c in rng.sample(choices, 60):
        m = sg.GrammarMatcher(g)
        assert m.accept_string(c) and m.accept_token(eos), c
    # prefixes that are not choices cannot end; extensions are refused
    for c in rng.sample(choices, 60):
        for cut in {1, len(c) // 2, len(c) - 1} - {0}:
            head = c[:cut]
            if head in members:
                continue
            m = sg.GrammarMatcher(g)
            if m.accept_string(head):
                assert not m.accept_token(eos), head
        m = sg.GrammarMatcher(g)
        assert not (m.accept_string(c + "#") and m.accept_token(eos))
    # the masks, against a per-token reference, at the start and after a few prefixes
    encoded = sorted(c.encode("utf-8") for c in choices)
    for prefix in ["", "app", "appl", "ban", "日", "q\""]:
        m = sg.GrammarMatcher(g)
        assert m.accept_string(prefix)
        want = _allowed_reference(qwen, encoded, prefix.encode("utf-8"), prefix in members)
        assert set(allowed_ids(m).tolist()) == want, prefix


@pytest.mark.slow
def test_hundred_thousand_choices_compile_in_seconds(qwen):
    choices = [f"option-{i}" for i in range(100_000)]
    t0 = time.perf_counter()
    g = sg.GrammarCompiler(qwen, compile_timeout=30).compile_choice(choices)
    assert time.perf_counter() - t0 < 30
    eos = qwen.eos_token_ids[0]
    for c in ("option-0", "option-7", "option-99999", "option-12345", "option-100"):
        m = sg.GrammarMatcher(g)
        assert m.accept_string(c) and m.accept_token(eos), c
    for c in ("option-", "option-100000", "option-01", "option-x", "option"):
        m = sg.GrammarMatcher(g)
        assert not (m.accept_string(c) and m.accept_token(eos)), c
    # after "option-9999" the grammar allows the end and one more digit, nothing else
    m = sg.GrammarMatcher(g)
    assert m.accept_string("option-9999")
    allowed = allowed_ids(m)
    texts = {qwen.token_bytes(int(t)) for t in allowed if int(t) not in qwen.eos_token_ids}
    assert texts == {str(d).encode() for d in range(10)} and eos in allowed.tolist()


@pytest.mark.slow
def test_fifty_thousand_string_enum(qwen):
    values = [f"value_{i}" for i in range(50_000)]
    schema = {"type": "string", "enum": values + [1, None]}  # mixed: non-strings are dropped by `type`
    g = sg.GrammarCompiler(qwen, compile_timeout=30).compile_json_schema(schema)
    eos = qwen.eos_token_ids[0]
    for v in ("value_0", "value_49999", "value_123"):
        m = sg.GrammarMatcher(g)
        assert m.accept_string(json.dumps(v)) and m.accept_token(eos)
    for doc in ('"value_50000"', '"value_"', "1", "null", '"value_1x"'):  # ("value_1" + whitespace is valid JSON)
        m = sg.GrammarMatcher(g)
        assert not (m.accept_string(doc) and m.accept_token(eos)), doc


def test_enum_filter_keeps_only_values_of_the_type(qwen):
    """`type` + `enum` is filtered by the type check alone; the result matches jsonschema."""
    import jsonschema

    values = ["a", 1, 1.5, True, None, [1], {"k": 2}, "b", 2]
    for t in ("string", "integer", "number", ["string", "null"], "boolean", "array", "object"):
        schema = {"type": t, "enum": values}
        g = sg.GrammarCompiler(qwen).compile_json_schema(schema)
        for v in values:
            m = sg.GrammarMatcher(g)
            got = m.accept_string(json.dumps(v)) and m.accept_token(qwen.eos_token_ids[0])
            assert got == jsonschema.Draft202012Validator(schema).is_valid(v), (t, v)
