"""The reasoning budget: once the block at the start of the output used its tokens, the close
marker is forced and the format after it applies. The stand-in model (tests/engine/fake.py, real
SmolLM2 vocabulary, pseudo-random logits) never closes a block by itself, which is the case a
budget is for; greedy decoding makes the limited run's block the unlimited run's first tokens."""

from __future__ import annotations

import json

import jsonschema
import pytest

import strictgen as sg
from strictgen.engine import GenerationConfig, SamplingParams, generate
from strictgen.engine.reasoning_limit import ReasoningLimit
from tests.engine.fake import FakeModel

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}
TAG = {"type": "structural_tag", "format": {"type": "sequence", "elements": [
    {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
    {"type": "json_schema", "json_schema": SCHEMA}]}}


@pytest.fixture(scope="module")
def model():
    return FakeModel(sg.TokenizerInfo.from_name("smollm2"))


def run(model, grammar, limit, max_tokens=40):
    cfg = GenerationConfig(max_tokens=max_tokens, sampling=SamplingParams(temperature=0.0), reasoning_limit=limit)
    return generate(model, model.tokenize("prompt:"), grammar, cfg)


@pytest.mark.parametrize("budget", [0, 1, 6])
def test_close_forced_at_the_budget_then_the_format(model, budget):
    grammar = sg.GrammarCompiler(model.tokenizer_info).compile_structural_tag(TAG)
    free = run(model, grammar, None, max_tokens=30)
    assert not free.stats.reasoning_cut and "</think>" not in free.text[:60]  # the model alone stays inside
    limited = run(model, grammar, ReasoningLimit("<think>", "</think>", budget), max_tokens=40)
    assert limited.stats.reasoning_cut and limited.finish_reason == "stop", limited.text
    assert limited.text.startswith("<think>")
    reasoning, _, answer = limited.text[len("<think>"):].partition("</think>")
    free_reasoning = free.text[len("<think>"):]
    assert reasoning == free_reasoning[: len(reasoning)] and len(reasoning) < len(free_reasoning)  # the same tokens, cut
    # the block holds the budget's tokens (give or take the token that completed the open marker and
    # the last ones, re-encoded together with the forced close)
    assert len(model.tokenize(reasoning)) <= budget + 2, reasoning
    assert budget < 6 or len(model.tokenize(reasoning)) >= budget - 2, reasoning
    jsonschema.validate(json.loads(answer), SCHEMA)
    assert run(model, grammar, ReasoningLimit("<think>", "</think>", budget)).text == limited.text  # reproducible


def test_unconstrained_output_that_starts_inside_the_block(model):
    free = run(model, None, None, max_tokens=12)
    limited = run(model, None, ReasoningLimit("<think>", "</think>", 3, starts_inside=True), max_tokens=12)
    reasoning, close, _ = limited.text.partition("</think>")
    assert close and limited.stats.reasoning_cut
    assert reasoning.encode() == model.detokenize(free.token_ids[:3])


def test_a_block_closed_within_the_budget_is_left_alone(model):
    grammar = sg.GrammarCompiler(model.tokenizer_info).compile_structural_tag(TAG)
    free = run(model, grammar, None, max_tokens=30)
    again = run(model, grammar, ReasoningLimit("<think>", "</think>", 100), max_tokens=30)
    assert again.text == free.text and not again.stats.reasoning_cut


def test_bad_budget_is_refused():
    with pytest.raises(sg.StrictgenError, match="non-negative"):
        ReasoningLimit("<think>", "</think>", -2)
