"""The generation loop on a stand-in model (fast): validity, jump-forward bookkeeping, budgets.

Validity here does not depend on the model: whatever the logits, the output must match the format."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

import strictgen as sg
from strictgen.engine import GenerationConfig, SamplingParams, generate
from strictgen.runtime.budget import TokenBudget
from tests.engine.fake import FakeModel

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
    },
    "required": ["name", "age", "tags"],
    "additionalProperties": False,
}
REGEX = r"[A-Z][a-z]{1,8}-[0-9]{2,4}"


@pytest.fixture(scope="module")
def tok():
    return sg.TokenizerInfo.from_name("smollm2")


@pytest.fixture(scope="module")
def compiler(tok):
    return sg.GrammarCompiler(tok)


@pytest.fixture(scope="module")
def model(tok):
    return FakeModel(tok)


def _prompt(model):
    return model.tokenize("prompt:")


@pytest.mark.parametrize("jump_forward", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_schema_output_valid_with_sampling(model, compiler, jump_forward, seed):
    g = compiler.compile_json_schema(SCHEMA, whitespace="compact")
    cfg = GenerationConfig(max_tokens=64, jump_forward=jump_forward, sampling=SamplingParams(temperature=1.0, seed=seed))
    r = generate(model, _prompt(model), g, cfg)
    jsonschema.validate(json.loads(r.text), SCHEMA)
    assert len(r.token_ids) <= 64
    assert r.stats.output_tokens == len(r.token_ids)
    if jump_forward:
        assert r.stats.forced_tokens > 0 and r.stats.passes_saved > 0
    else:
        assert r.stats.forced_tokens == 0 and r.stats.passes_saved == 0


def test_same_seed_same_output(model, compiler):
    g = compiler.compile_regex(REGEX)
    cfg = GenerationConfig(max_tokens=20, sampling=SamplingParams(temperature=0.8, top_p=0.9, top_k=50, seed=7))
    a = generate(model, _prompt(model), g, cfg)
    b = generate(model, _prompt(model), g, cfg)
    assert a.text == b.text and re.fullmatch(REGEX, a.text)


def test_cache_follows_output(model, compiler):
    """After generation the model's cache holds prompt + output, except the tokens after the last
    forward pass (and at most RETOKENIZE_BACKOFF tokens a final jump-forward re-encoded)."""
    from strictgen.engine.generate import RETOKENIZE_BACKOFF

    g = compiler.compile_json_schema(SCHEMA, whitespace="compact")
    prompt = _prompt(model)
    model.reset()  # an empty cache: every token it holds afterwards was fed by this run
    first_call = len(model.calls)
    r = generate(model, prompt, g, GenerationConfig(max_tokens=64, sampling=SamplingParams(temperature=1.0, seed=3)))
    seq = prompt + r.token_ids
    from strictgen.engine.kv_cache import common_prefix

    assert common_prefix(model.tokens, seq) >= len(model.tokens) - RETOKENIZE_BACKOFF
    assert len(model.tokens) > len(prompt)
    assert len(model.calls) - first_call == r.stats.forward_passes + 1  # the prefill, then one call per pass
    assert sum(model.calls[first_call:]) >= len(model.tokens)


@pytest.mark.parametrize("fmt", ["schema", "json", "regex", "gbnf"])
def test_every_budget_from_minimum_gives_valid_output(model, compiler, fmt):
    """Truncation safety: any max_tokens at or above the minimum ends in a valid document."""
    gbnf = 'root ::= "[" item ("," item)* "]"\nitem ::= [a-z]+ | root\n'
    g = {
        "schema": lambda: compiler.compile_json_schema(SCHEMA, whitespace="compact"),
        "json": lambda: compiler.compile_json(whitespace="compact"),
        "regex": lambda: compiler.compile_regex(REGEX),
        "gbnf": lambda: compiler.compile_grammar(gbnf),
    }[fmt]()
    minimum = TokenBudget(g).minimum_tokens()
    for max_tokens in range(minimum, minimum + 12):
        for jf in (True, False):
            cfg = GenerationConfig(max_tokens=max_tokens, jump_forward=jf, sampling=SamplingParams(temperature=2.0, seed=max_tokens))
            r = generate(model, _prompt(model), g, cfg)
            assert len(r.token_ids) <= max_tokens
            m = sg.GrammarMatcher(g)
            assert m.accept_string(r.text) and m.can_end(), (fmt, max_tokens, r.text)
            if fmt == "schema":
                jsonschema.validate(json.loads(r.text), SCHEMA)
    if minimum > 1:
        with pytest.raises(sg.BudgetError, match=rf"needs {minimum} tokens"):
            generate(model, _prompt(model), g, GenerationConfig(max_tokens=minimum - 1))


def test_without_truncation_safety_length_can_cut(model, compiler):
    g = compiler.compile_json_schema(SCHEMA, whitespace="compact")
    minimum = TokenBudget(g).minimum_tokens()
    cfg = GenerationConfig(max_tokens=minimum - 1, truncation_safe=False, sampling=SamplingParams(temperature=1.0, seed=0))
    r = generate(model, _prompt(model), g, cfg)
    assert r.finish_reason == "length" and len(r.token_ids) == minimum - 1
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.text)


def test_stop_string_and_unconstrained(model):
    r = generate(model, _prompt(model), None, GenerationConfig(max_tokens=30, sampling=SamplingParams(temperature=1.0, seed=1)))
    assert r.finish_reason in ("stop", "length") and 0 < len(r.token_ids) <= 30
    r2 = generate(model, _prompt(model), None, GenerationConfig(max_tokens=30, stop=(r.text[3:6],), sampling=SamplingParams(temperature=1.0, seed=1)))
    assert r2.finish_reason == "stop" and r2.text == r.text[: r.text.find(r.text[3:6])]


def test_choice_ends_without_extra_pass(model, compiler):
    g = compiler.compile_choice(["alpha", "beta"])
    r = generate(model, _prompt(model), g, GenerationConfig(max_tokens=10))
    assert r.text in ("alpha", "beta") and r.finish_reason == "stop"


def test_bad_config_is_refused():
    with pytest.raises(sg.StrictgenError, match="max_tokens"):
        GenerationConfig(max_tokens=0)
    with pytest.raises(sg.StrictgenError, match="top_p"):
        SamplingParams(top_p=0)


def test_chat_template_renders_in_a_sandbox():
    from strictgen.engine import ChatTemplate

    t = ChatTemplate("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}")
    assert t.render([{"role": "user", "content": "hi"}]) == "<user>hi<assistant>"
    failing = ChatTemplate("{{ raise_exception('only user messages') }}")
    with pytest.raises(sg.ModelError, match="only user messages"):
        failing.render([{"role": "system", "content": "x"}])
    unsafe = ChatTemplate("{{ messages.__class__.__mro__ }}")
    with pytest.raises(Exception, match="unsafe|not safely|access"):
        unsafe.render([])
    assert ChatTemplate(None).render([{"role": "user", "content": "hi"}]) == "user: hi\nassistant: "


def test_stop_string_inside_forced_text(model, compiler):
    g = compiler.compile_regex(r"[a-c]{1,3}-STOP-[a-c]{1,3}")
    r = generate(model, _prompt(model), g, GenerationConfig(max_tokens=30, stop=("STOP",), sampling=SamplingParams(temperature=1.0, seed=2)))
    assert r.finish_reason == "stop" and re.fullmatch(r"[a-c]{1,3}-", r.text), r.text
