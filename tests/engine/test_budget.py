"""Shortest completions and token budgets (truncation safety), on the real SmolLM2 vocabulary."""

from __future__ import annotations

import json
import random
import re

import pytest

import strictgen as sg
from strictgen.runtime.budget import GreedyTokenizer, ShortestCompletions, TokenBudget

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temp_c": {"type": "integer"}, "weather": {"enum": ["晴", "多云", "雨"]}},
    "required": ["city", "temp_c", "weather"],
    "additionalProperties": False,
}
GBNF = 'root ::= "(" item ("," item)* ")"\nitem ::= [a-z]+ | root\n'


@pytest.fixture(scope="module")
def compiler():
    return sg.GrammarCompiler(sg.TokenizerInfo.from_name("smollm2"))


def _grammars(compiler):
    return {
        "schema": compiler.compile_json_schema(WEATHER, whitespace="compact"),
        "schema_flexible": compiler.compile_json_schema(WEATHER),
        "json": compiler.compile_json(),
        "regex": compiler.compile_regex(r"[0-9]{3}-[a-z]{2,4}"),
        "gbnf": compiler.compile_grammar(GBNF),
        "choice": compiler.compile_choice(["maybe", "yes", "no"]),
    }


def test_shortest_documents_are_shortest_and_valid(compiler):
    g = _grammars(compiler)
    expect = {
        "schema": '{"city":"","temp_c":0,"weather":"晴"}',
        "json": "0",
        "regex": "000-aa",
        "gbnf": "(a)",
        "choice": "no",
    }
    for name, text in expect.items():
        sc = ShortestCompletions(g[name].machine)
        assert sc.completion(g[name].machine.start).decode() == text, name
    doc = ShortestCompletions(g["schema_flexible"].machine).completion(g["schema_flexible"].machine.start)
    assert json.loads(doc) == {"city": "", "temp_c": 0, "weather": "晴"}


def test_completion_closes_deep_nesting(compiler):
    g = compiler.compile_json()
    m = sg.GrammarMatcher(g)
    assert m.accept_string('[{"a":[[{"b":"x')
    tail = ShortestCompletions(g.machine).completion(m.state).decode()
    assert tail == '"}]]}]'
    assert m.accept_string(tail) and m.can_end()


def test_budget_consistency_first_token_costs_one(compiler):
    """From any reachable state, the first token of the state's completion lowers the cost by exactly one:
    the invariant that keeps the truncation guard free of dead ends."""
    rnd = random.Random(5)
    for name, g in _grammars(compiler).items():
        budget = TokenBudget(g)
        tok = g.tokenizer_info
        for _ in range(15):
            m = sg.GrammarMatcher(g)
            for _ in range(rnd.randint(0, 12)):  # a random walk through allowed tokens
                from tests.helpers import allowed_ids

                ids = [i for i in allowed_ids(m).tolist() if i not in tok.eos_token_ids]
                if not ids:
                    break
                assert m.accept_token(rnd.choice(ids))
            need = budget.tokens_needed(m.state)
            if need == 0:
                assert m.can_end()
                continue
            first = budget.completion_tokens(m.state)[0]
            nxt = g.machine.step_bytes(m.state, tok.token_bytes(first))
            assert budget.tokens_needed(nxt) == need - 1, name
            assert budget.fits(m.state, first, need)
            assert m.accept_token(first)


def test_check_refuses_budget_below_minimum_naming_it(compiler):
    g = _grammars(compiler)["schema"]
    budget = TokenBudget(g)
    minimum = budget.minimum_tokens()
    assert 5 < minimum < 40
    budget.check(minimum)  # exactly enough is fine
    with pytest.raises(sg.BudgetError, match=rf"needs {minimum} tokens") as info:
        budget.check(minimum - 1)
    assert info.value.minimum == minimum and isinstance(info.value, sg.StrictgenError)


def test_greedy_tokenizer_spells_bytes():
    tok = sg.TokenizerInfo.from_vocab([b"a", b"ab", b"abc", b"b", b"c", b"<e>"], eos_token_ids=[5], special_token_ids=[5])
    greedy = GreedyTokenizer(tok.all_token_bytes, tok.is_special)
    assert greedy.encode(b"abcab") == [2, 1]
    assert greedy.encode(b"") == []
    with pytest.raises(sg.StrictgenError, match="no token"):
        greedy.encode(b"ad")


def test_regex_completion_matches_pattern(compiler):
    g = compiler.compile_regex(r"(ab|c){2,3}x")
    sc = ShortestCompletions(g.machine)
    text = sc.completion(g.machine.start).decode()
    assert re.fullmatch(r"(ab|c){2,3}x", text) and len(text) == 3
