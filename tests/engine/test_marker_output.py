"""The generation loop with a grammar whose markers are special tokens of the vocabulary: a
sampled marker token is output text (its own), so the text parses and the grammar accepts it.

The model is the stand-in of tests/engine/fake.py (pseudo-random logits) over DeepSeek's real
vocabulary with its tool-call tokens special (tests/helpers.py); the marker tokens are favoured,
as a model trained on them favours them."""

from __future__ import annotations

import numpy as np
import pytest

import strictgen as sg
from strictgen.engine import GenerationConfig, SamplingParams, generate
from strictgen.serve.tools.families import FAMILIES
from strictgen.serve.tools.grammar import tool_call_grammar
from strictgen.serve.tools.parse import parse_output
from tests.engine.fake import FakeModel

from ..helpers import deepseek_with_tool_specials

FMT = next(f for f in FAMILIES if f.name == "deepseek_v3_1")
WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}}, "required": ["city"], "additionalProperties": False}


class MarkerFavouringModel(FakeModel):
    def __init__(self, tok, favoured):
        super().__init__(tok)
        self.favoured = np.asarray(sorted(favoured))

    def _forward(self, tokens):
        logits = super()._forward(tokens)
        logits[self.favoured] += 40.0
        return logits


@pytest.mark.parametrize("jump_forward", [False, True], ids=["sampled", "jump-forward"])
def test_marker_tokens_come_out_as_their_text(jump_forward):
    tok, ids = deepseek_with_tool_specials()
    model = MarkerFavouringModel(tok, ids.values())
    g = tool_call_grammar(FMT, [("get_weather", WEATHER)], mode="required", parallel=False, reasoning=None)
    compiled = sg.GrammarCompiler(tok).compile_ir(g)
    config = GenerationConfig(max_tokens=60, jump_forward=jump_forward, sampling=SamplingParams(temperature=0.0))
    result = generate(model, model.tokenize("Weather in Paris?"), compiled, config)
    assert result.finish_reason == "stop", result.text
    used = {i for i in result.token_ids if i in ids.values()}
    if not jump_forward:  # sampled: the favoured special tokens were taken where they could start
        assert result.token_ids[:2] == [ids["<｜tool▁calls▁begin｜>"], ids["<｜tool▁call▁begin｜>"]], result.token_ids
        assert len(used) >= 3, used  # (a text token such as '"}<' can start a marker too; then it is text)
    for marker in ids:
        assert result.text.count(marker) == 1, result.text
    m = sg.GrammarMatcher(compiled)
    assert m.accept_string(result.text) and m.can_end(), result.text
    parsed = parse_output(result.text, FMT, {"get_weather": WEATHER}, None, final=True)
    assert [c.name for c in parsed.calls] == ["get_weather"], result.text
