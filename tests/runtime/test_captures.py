"""GrammarMatcher.captures(): the spans of named rules, checked against the `lark` package's parse
trees (propagate_positions) on random members of each grammar, through rollback, in GBNF, and
with the language unchanged by the capture attributes."""

from __future__ import annotations

import random
import re

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.errors import GrammarSyntaxError
from strictgen.grammar.gbnf import parse_gbnf
from strictgen.grammar.lark import parse_lark

from ..grammar.lark_sample import derive
from ..helpers import mutated

# unambiguous grammars (lark and we may pick different trees of an ambiguous one)
GRAMMARS = {
    "tool_calls": r"""
        start: call (";" call)*
        call: name "(" args ")"
        name[capture]: /[a-z_]+/
        args[capture="arguments"]: "{" [pair ("," pair)*] "}"
        pair: KEY ":" value
        value: KEY | NUMBER | args | list
        list[capture]: "[" [value ("," value)*] "]"
        KEY: /"[a-z]*"/
        %import common.NUMBER
    """,
    "terminals": r"""
        start: (WORD | NUM) (" " (WORD | NUM))*
        WORD[capture]: /[a-zé]+/
        NUM[capture="number"]: /[0-9]+/
    """,
    "left_recursive": r"""
        start: sum
        sum[capture]: sum "+" product | product
        product[capture="term"]: product "*" atom | atom
        atom: DIGIT | "(" sum ")"
        %import common.DIGIT
    """,
    "nested": r"""
        start: expr
        expr[capture]: atom (OP atom)*
        atom: DIGIT | "(" expr ")" | neg
        neg[capture="negation"]: "-" atom
        OP: "+" | "*"
        %import common.DIGIT
    """,
}


def without_captures(grammar_text: str) -> str:
    """The grammar with its capture attributes removed (lark knows none)."""
    out = re.sub(r'\[capture(="[a-z]+")?\]', "", grammar_text)
    assert "capture" not in out
    return out


def lark_spans(text: str, grammar_text: str, captured: dict[str, str]) -> list[tuple[str, str]]:
    """The (capture, text) pairs of lark's parse tree, children before their parent."""
    parser = lark.Lark(without_captures(grammar_text), parser="earley", lexer="dynamic_complete", propagate_positions=True)
    out: list[tuple[str, str]] = []

    def walk(node) -> None:
        if node is None:  # an empty [optional]
            return
        if isinstance(node, lark.Token):
            if node.type in captured:
                out.append((captured[node.type], text[node.start_pos:node.end_pos]))
            return
        for child in node.children:
            walk(child)
        if node.data in captured:
            out.append((captured[node.data], text[node.meta.start_pos:node.meta.end_pos]))

    walk(parser.parse(text))
    return out


@pytest.fixture(scope="module")
def compiler(qwen):
    return sg.GrammarCompiler(qwen)


def finished(compiled, text: str, eos: int) -> sg.GrammarMatcher:
    m = sg.GrammarMatcher(compiled)
    assert m.accept_string(text), text
    assert m.accept_token(eos), text
    return m


@pytest.mark.parametrize("name", sorted(GRAMMARS))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_captures_equal_lark_spans(compiler, qwen, name, seed):
    text = GRAMMARS[name]
    grammar = parse_lark(text)
    member = derive(grammar, random.Random(seed))
    m = finished(compiler.compile_lark(text), member, qwen.eos_token_ids[0])
    assert m.captures() == lark_spans(member, text, grammar.captures), member


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), cut=st.integers(1, 8))
def test_rollback_drops_what_the_rolled_back_steps_captured(compiler, qwen, seed, cut):
    text = GRAMMARS["tool_calls"]
    member = derive(parse_lark(text), random.Random(seed))
    compiled = compiler.compile_lark(text)
    m = sg.GrammarMatcher(compiled)
    pieces = [member[i:i + 3] for i in range(0, len(member), 3)]
    for piece in pieces:
        assert m.accept_string(piece)
    m.accept_token(qwen.eos_token_ids[0])
    cut = min(cut, len(pieces))
    m.rollback(cut + 1)  # the EOS too
    kept = "".join(pieces[:-cut])
    fresh = sg.GrammarMatcher(compiled)
    assert fresh.accept_string(kept)
    assert m.captures() == fresh.captures()
    assert all(cap in lark_spans(member, text, parse_lark(text).captures) for cap in m.captures())
    for piece in pieces[-cut:]:  # forward again: the whole document's captures come back
        assert m.accept_string(piece)
    assert m.accept_token(qwen.eos_token_ids[0])
    assert m.captures() == lark_spans(member, text, parse_lark(text).captures)


@pytest.mark.parametrize("name", sorted(GRAMMARS))
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_every_prefix_reports_a_prefix_of_the_final_captures(compiler, qwen, name, seed):
    """Captures close in order and never change once reported (unambiguous grammars): what a
    prefix reports is a leading part of what the whole document reports."""
    text = GRAMMARS[name]
    member = derive(parse_lark(text), random.Random(seed))
    compiled = compiler.compile_lark(text)
    final = finished(compiled, member, qwen.eos_token_ids[0]).captures()
    m = sg.GrammarMatcher(compiled)
    before: list = []
    for ch in member:
        assert m.accept_string(ch)
        got = m.captures()
        assert got == final[:len(got)] and len(got) >= len(before), (member, ch)
        before = got


def test_prefix_reports_closed_captures_only(compiler):
    m = sg.GrammarMatcher(compiler.compile_lark(GRAMMARS["tool_calls"]))
    assert m.accept_string("get_wea")
    assert m.captures() == []  # the name may still grow
    assert m.accept_string('ther({"a":[1')
    assert m.captures() == [("name", "get_weather")]
    assert m.accept_string(',2]')
    assert m.captures() == [("name", "get_weather")]  # one ending at the last byte waits for the next
    assert m.accept_string('}')
    assert m.captures() == [("name", "get_weather"), ("list", "[1,2]")]
    assert m.accept_string(')')
    assert m.captures() == [("name", "get_weather"), ("list", "[1,2]"), ("arguments", '{"a":[1,2]}')]


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_captures_leave_the_language_unchanged(compiler, name):
    text = GRAMMARS[name]
    plain = without_captures(text)
    assert parse_lark(text).rules == parse_lark(plain).rules  # the compiler sees the same IR
    a, b = compiler.compile_lark(text), compiler.compile_lark(plain)
    rng = random.Random(7)
    grammar = parse_lark(text)
    for _ in range(20):
        member = derive(grammar, rng)
        for candidate in (member, mutated(member, "(){}[],;:+*-0123456789az\" ", rng, 2)):
            ma, mb = sg.GrammarMatcher(a), sg.GrammarMatcher(b)
            assert ma.accept_string(candidate) == mb.accept_string(candidate)
            assert (ma.next_token_mask() == mb.next_token_mask()).all()


@pytest.mark.parametrize("attribute", ["[lazy]", "[max_tokens=5]", '[stop=""]', "[capture=x]", '[capture=""]', "[capture, lazy]"])
def test_other_rule_attributes_are_refused(attribute):
    with pytest.raises(GrammarSyntaxError) as err:
        parse_lark(f'start: a\na{attribute}: "x"\n')
    assert err.value.line == 2 and err.value.column in (2, 11)  # the bracket, or a capture's bad value




def test_gbnf_captures(compiler, qwen):
    text = 'root ::= "<tool>" name " " num "</tool>"\nname@capture ::= [a-z]+\nnum@capture ::= [0-9]+ ("." [0-9]+)?\n'
    m = finished(compiler.compile_grammar(text), "<tool>abc 12.5</tool>", qwen.eos_token_ids[0])
    assert m.captures() == [("name", "abc"), ("num", "12.5")]
    assert parse_gbnf(text).rules == parse_gbnf(text.replace("@capture", "")).rules


def test_special_tokens_read_as_their_text(compiler, qwen):
    m = sg.GrammarMatcher(compiler.compile_lark('start: turn "."\nturn[capture]: <|im_start|> /[a-z]+/ <[151644]>\n'))
    assert m.accept_token(151644) and m.accept_string("hi") and m.accept_token(151644) and m.accept_string(".")
    assert m.captures() == [("turn", "<|im_start|>hi<|im_start|>")]


def test_a_capture_at_the_end_closes_when_only_eos_may_follow(compiler):
    m = sg.GrammarMatcher(compiler.compile_lark('start: "<" name ">"\nname[capture]: "a" | "bc"\n'))
    assert m.accept_string("<bc")
    assert m.captures() == []  # ">" must come
    assert m.accept_string(">")
    assert m.captures() == [("name", "bc")]  # the document is complete before EOS: nothing can grow


def test_engine_grammar_objects_carry_captures(compiler, qwen):
    from strictgen.integrations._grammar import RequestGrammar

    request = RequestGrammar(compiler.compile_lark(GRAMMARS["terminals"]))
    assert request.matcher.accept_string("ab 12") and request.matcher.accept_token(qwen.eos_token_ids[0])
    assert request.captures() == [("WORD", "ab"), ("number", "12")]
    request.matcher.rollback(1)  # the EOS
    assert request.captures() == [("WORD", "ab")]


def test_grammars_without_captures_report_none(compiler):
    m = sg.GrammarMatcher(compiler.compile_lark('start: "a"+'))
    assert m.accept_string("aaa") and m.captures() == []


def test_the_disk_cache_keeps_no_grammar_with_captures(qwen, tmp_path):
    text = GRAMMARS["terminals"]
    for _ in range(2):  # the second compiler would read a stored file
        m = sg.GrammarMatcher(sg.GrammarCompiler(qwen, cache_dir=str(tmp_path)).compile_lark(text))
        assert m.accept_string("ab 12 c ")
        assert m.captures() == [("WORD", "ab"), ("number", "12"), ("WORD", "c")]


def test_long_rule_chains_need_no_deep_recursion(compiler, qwen):
    chain = "\n".join(f'r{i}: r{i + 1} | "b"' for i in range(150))
    compiled = compiler.compile_lark(f'start: r0 "."\nr150[capture]: "a"\n{chain}\n')
    m = sg.GrammarMatcher(compiled)
    assert m.captures() == []  # an empty prefix: every rule's rest is taken as read
    assert m.accept_string("a") and m.captures() == []
    assert m.accept_string(".") and m.captures() == [("r150", "a")]
