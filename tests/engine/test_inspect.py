"""The step-by-step inspector (engine/inspect.py) checked against the matcher itself.

Documents go through the real Qwen vocabulary with its own tokenizer (no model needed); generations
through the embedded SmolLM2 model on llama.cpp. Every count is recomputed here from a separate
GrammarMatcher: the allowed count is the popcount of its mask, the forced text its
find_jump_forward_string."""

from __future__ import annotations

import json
import re

import jsonschema
import numpy as np
import pytest

import strictgen as sg
from strictgen.engine import GenerationConfig, generate
from strictgen.engine.inspect import GenerationRecorder, describe_error, format_table, inspect_document, inspect_generation
from strictgen.errors import GrammarSyntaxError, RegexError, SchemaError
from strictgen.runtime.budget import TokenBudget
from strictgen.tokenizer.info import text_encoder
from tests.helpers import allowed_ids
from tests.models import embedded, weather_schema

WEATHER = weather_schema()
DATE = r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
ARITH = 'root ::= expr\nexpr ::= term ("+" term)*\nterm ::= factor ("*" factor)*\nfactor ::= [0-9]+ | "(" expr ")"'


@pytest.fixture(scope="module")
def qwen_compiler(qwen):
    return sg.GrammarCompiler(qwen)


@pytest.fixture(scope="module")
def encode():
    return text_encoder("qwen")


def popcount(row: np.ndarray) -> int:
    return sum(int(w).bit_count() for w in row.view(np.uint32))


def check_against_matcher(grammar: sg.CompiledGrammar, found, token_ids: list[int]) -> None:
    """Each row's counts equal a separate matcher's, token by token, up to the first refused token."""
    tok = grammar.tokenizer_info
    m = sg.GrammarMatcher(grammar)
    mask = sg.allocate_token_bitmask(1, tok.vocab_size)
    for row in found.steps:
        m.fill_next_token_bitmask(mask)
        assert row.allowed == popcount(mask[0]), row.index
        assert row.forced == m.find_jump_forward_string(), row.index
        assert row.eos_allowed == any((mask[0][e // 32] >> (e % 32)) & 1 for e in tok.eos_token_ids)
        for t in row.sample:  # every listed token is allowed
            assert (int(mask[0][t["id"] // 32]) >> (t["id"] % 32)) & 1, (row.index, t)
        if row.token is None:
            assert row.index == len(token_ids) and row.accepted == m.can_end()
            break
        assert row.token["id"] == token_ids[row.index]
        assert m.accept_token(row.token["id"]) == row.accepted
        if not row.accepted:
            break


@pytest.mark.parametrize(
    "kind, source, document",
    [
        ("schema", WEATHER, '{"city": "Beijing", "temp_c": 27, "weather": "多云"}'),
        ("regex", DATE, "2024-12-31"),
        ("gbnf", ARITH, "(1+2)*34"),
    ],
)
def test_a_valid_document_steps_like_the_matcher(qwen_compiler, encode, kind, source, document):
    compile_ = {"schema": lambda s: qwen_compiler.compile_json_schema(s, whitespace="spaced"), "regex": qwen_compiler.compile_regex, "gbnf": qwen_compiler.compile_grammar}
    grammar = compile_[kind](source)
    ids = encode(document)
    found = inspect_document(grammar, document, encode, sample=8)
    assert len(found.steps) == len(ids) + 1  # one row per token, then the end
    assert found.complete and found.departure is None and all(s.accepted for s in found.steps)
    lengths = [len(qwen_compiler.tokenizer_info.token_bytes(t)) for t in ids]
    assert [s.offset for s in found.steps] == [sum(lengths[:i]) for i in range(len(ids) + 1)]
    assert found.steps[-1].eos_allowed
    check_against_matcher(grammar, found, ids)
    json.dumps(found.to_dict())  # the API's answer is plain JSON


def test_where_a_document_leaves_the_format(qwen_compiler, encode):
    date = qwen_compiler.compile_regex(DATE)
    found = inspect_document(date, "2024-13-01", encode)
    # "2024-1" can still become a month 10-12; the "3" at byte 6 cannot
    d = found.departure
    assert not found.complete and d.offset == 6 and d.found.startswith("3") and d.expected == ["0-2"] and not d.end_allowed
    assert re.fullmatch(DATE, "2024-1" + "2" + "-01") and not any(re.fullmatch(DATE, f"2024-1{c}-01") for c in "3456789")
    assert not found.steps[-1].accepted and found.steps[-1].index == d.step
    check_against_matcher(date, found, encode("2024-13-01"))

    weather = qwen_compiler.compile_json_schema(WEATHER, whitespace="spaced", numbers="canonical")
    doc = '{"city": "Beijing", "temp_c": 27.5, "weather": "多云"}'
    found = inspect_document(weather, doc, encode)
    assert found.departure.offset == doc.index(".") and found.departure.expected == [",", "0-9"]
    check_against_matcher(weather, found, encode(doc))

    cut = '{"city": "Beijing"'  # stops early: leaves the format at its end
    found = inspect_document(weather, cut, encode)
    assert found.steps[-1].token is None and not found.steps[-1].accepted
    assert found.departure.offset == len(cut.encode()) and found.departure.found == "" and found.departure.expected == [","]
    assert found.departure.forced == ', "temp_c": '
    assert "byte 18" in found.to_dict()["departure"]["message"]


def test_search_lists_only_matching_allowed_tokens(qwen_compiler, encode):
    grammar = qwen_compiler.compile_json_schema(WEATHER, whitespace="spaced")
    doc = '{"city": "Beijing", "temp_c": 27, "weather": "多云"}'
    found = inspect_document(grammar, doc, encode, sample=1000, search="Bei")
    tok = qwen_compiler.tokenizer_info
    m = sg.GrammarMatcher(grammar)
    for row in found.steps:
        want = [int(t) for t in allowed_ids(m) if "Bei" in tok.token_bytes(int(t)).decode("utf-8", "backslashreplace")]
        assert row.matching == len(want) and [t["id"] for t in row.sample] == want[:1000]
        if row.token is not None:
            m.accept_token(row.token["id"])
    assert any(row.matching for row in found.steps)  # inside the city string
    assert all("Bei" in t["text"] for row in found.steps for t in row.sample)


def test_compile_errors_say_where():
    tok = sg.TokenizerInfo.from_name("qwen")
    compiler = sg.GrammarCompiler(tok)
    cases = [
        (lambda: compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "number", "multipleOf": 0}}}), SchemaError, {"keyword": "multipleOf", "pointer": "/properties/a/multipleOf"}),
        (lambda: compiler.compile_grammar('root ::= "a" |\nfoo ::= ['), GrammarSyntaxError, {"line": 2}),
        (lambda: compiler.compile_regex("a(b"), RegexError, {"position": 1}),
    ]
    for build, kind, where in cases:
        with pytest.raises(kind) as err:
            build()
        info = describe_error(err.value)
        assert info["type"] == kind.__name__ and {k: info[k] for k in where} == where
        wrapped = sg.StrictgenError("request refused")  # a wrapper (the server's RequestError) is looked through
        wrapped.__cause__ = err.value
        assert describe_error(wrapped) == info


@pytest.fixture(scope="module")
def model():
    return embedded("llama.cpp")


def test_a_generation_records_the_models_view(model):
    grammar = sg.GrammarCompiler(model.tokenizer_info).compile_json_schema(WEATHER, whitespace="spaced", numbers="canonical")
    prompt = model.encode_prompt("Give the current weather in Beijing as JSON: the city, the temperature in Celsius, and the weather.")
    found = inspect_generation(model, prompt, grammar, GenerationConfig(max_tokens=48), top=5, sample=5)
    plain = generate(model, prompt, grammar, GenerationConfig(max_tokens=48))
    assert found.text == plain.text  # the observer changes nothing
    jsonschema.validate(json.loads(found.text), WEATHER)
    ids = plain.token_ids
    assert len(found.steps) == len(ids) + 1 and found.complete
    check_against_matcher(grammar, found, ids)
    assert [s.origin == "forced" for s in found.steps[:-1]] == plain.forced
    sampled = [s for s in found.steps if s.origin == "sampled"]
    assert len(sampled) >= 3 and all(s.top_before and s.top_after for s in sampled)
    m = sg.GrammarMatcher(grammar)
    for s in found.steps[:-1]:
        allowed = set(allowed_ids(m).tolist())
        if s.origin == "sampled":
            assert {t["id"] for t in s.top_after} <= allowed  # after the mask: allowed tokens only
            assert 0.99 <= sum(t["p"] for t in s.top_after) or len(s.top_after) == 5
            assert s.top_before[0]["p"] >= s.top_before[-1]["p"]
            if s.chosen is None:
                assert s.token["id"] in {t["id"] for t in s.top_after}  # greedy: the top choice
        else:
            assert s.forced_by in ("jump-forward", "budget") and not s.top_before
        m.accept_token(s.token["id"])
    healed = [s for s in found.steps if s.healing]
    assert len(healed) == found.stats["healed"] and all(s.healing["candidates"] >= 2 for s in healed)
    assert "finish: stop" in format_table(found)


def test_the_truncation_guard_is_shown_where_it_acted(model):
    grammar = sg.GrammarCompiler(model.tokenizer_info).compile_json_schema(WEATHER, whitespace="spaced", numbers="canonical")
    prompt = model.encode_prompt("Describe the weather in Llanfairpwllgwyngyll as JSON with a long city name.")
    budget = TokenBudget(grammar).minimum_tokens() + 2
    recorder = GenerationRecorder(grammar, top=3)
    result = generate(model, prompt, grammar, GenerationConfig(max_tokens=budget, observer=recorder))
    found = recorder.inspection(grammar, result)
    jsonschema.validate(json.loads(found.text), WEATHER)
    guarded = [s for s in found.steps if s.guard]
    assert result.stats.guarded >= 1 and len(guarded) == result.stats.guarded
    for s in guarded:
        assert s.guard["wanted"]["id"] != s.guard["taken"]["id"]
        assert s.guard["wanted"]["id"] == s.top_after[0]["id"]  # greedy wanted the best masked token
