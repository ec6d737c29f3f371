"""Constrained generation on the embedded model (SmolLM2-135M-Instruct, llama.cpp), short prompts."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

import strictgen as sg
from strictgen.engine import GenerationConfig, SamplingParams, generate
from strictgen.runtime.budget import TokenBudget
from tests.models import WEATHER_PROMPT, embedded, weather_schema

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "languages": {"type": "array", "items": {"type": "string", "maxLength": 15}, "minItems": 1, "maxItems": 3},
        "employed": {"type": "boolean"},
    },
    "required": ["name", "age", "languages", "employed"],
    "additionalProperties": False,
}
DATE = r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
GBNF = r"""
root   ::= answer " because " reason "."
answer ::= "yes" | "no"
reason ::= [a-z ,]{3,60}
"""


@pytest.fixture(scope="module")
def model():
    return embedded("llama.cpp")


@pytest.fixture(scope="module")
def compiler(model):
    return sg.GrammarCompiler(model.tokenizer_info)


def run(model, prompt, grammar, **kw):
    sampling = SamplingParams(**{k: kw.pop(k) for k in ("temperature", "seed", "top_p", "top_k") if k in kw})
    return generate(model, model.encode_prompt(prompt), grammar, GenerationConfig(sampling=sampling, **kw))


def test_weather_schema_jump_forward_against_token_by_token(model, compiler):
    """Greedy, with and without jump-forward: both valid, same structure, fewer passes with it.

    The texts may differ in the values. Token by token, the model spells forced text with its own
    choice of tokens (`{` then `"` then `city`); jump-forward feeds the tokenizer's own encoding
    (`{"` then `city`). The model then conditions on different token sequences for the same text, and
    a greedy choice further on can change (seen here: "temp_c": 25 against 27). What must hold
    exactly is the next test: every sampled token is the greedy choice given the tokens before it."""
    schema = weather_schema()
    g = compiler.compile_json_schema(schema, whitespace="spaced")
    on = run(model, WEATHER_PROMPT, g, max_tokens=64)
    off = run(model, WEATHER_PROMPT, g, max_tokens=64, jump_forward=False)
    for r in (on, off):
        jsonschema.validate(json.loads(r.text), schema)
        assert r.finish_reason == "stop"
    assert list(json.loads(on.text)) == list(json.loads(off.text))
    assert on.stats.forced_tokens > 0 and off.stats.forced_tokens == 0
    assert on.stats.forward_passes < off.stats.forward_passes
    assert on.stats.passes_saved >= 0.25 * (on.stats.passes_saved + on.stats.forward_passes)


@pytest.mark.parametrize("whitespace", ["spaced", "compact"])
def test_jump_forward_replays_in_its_own_passes(model, compiler, whitespace):
    """Jump-forward output, replayed pass by pass on a fresh cache: every pass gets bit for bit the
    logits it got in the run, and each sampled token is the arg-max of its masked logits. The replay
    makes no detours, so this also checks that rolling the KV cache back after re-tokenization left
    no stale entries (the run's passes came after detours the replay never takes)."""
    import numpy as np

    g = compiler.compile_json_schema(PERSON, whitespace=whitespace)
    prompt = model.encode_prompt("Describe a software engineer named Ada as JSON.")
    passes = []  # (cached tokens kept, tokens fed, what the cache then held, raw logits, the logits the run masked in place)
    forward = model.forward

    def recording(tokens):
        logits = forward(tokens)
        passes.append((len(model.tokens) - len(tokens), list(tokens), list(model.tokens), logits.copy(), logits))
        return logits

    # token healing narrows a healed choice to the tokens extending the backed-off one (its own test)
    model.forward = recording
    try:
        r = generate(model, prompt, g, GenerationConfig(max_tokens=96, token_healing=False))
    finally:
        del model.forward
    assert any(r.forced) and not all(r.forced)
    jsonschema.validate(json.loads(r.text), PERSON)
    model.reset()
    for keep, fed, _, raw, _ in passes:
        model.truncate(keep)
        assert np.array_equal(model.forward(fed), raw)
    if r.stats.guarded:  # a step the truncation guard overruled need not be the arg-max
        return
    final = prompt + r.token_ids
    checked = 0
    for _, _, held, _, masked in passes:
        at = len(held) - len(prompt)  # the output index of the token chosen after this pass
        if 0 <= at < len(r.token_ids) and not r.forced[at] and final[: len(held)] == held:
            assert int(np.argmax(masked)) == final[len(held)]
            checked += 1
    assert checked == len(r.forced) - sum(r.forced)  # every sampled token that survived was checked


@pytest.mark.parametrize("jump_forward", [True, False])
def test_person_schema_greedy_and_sampled(model, compiler, jump_forward):
    g = compiler.compile_json_schema(PERSON, whitespace="spaced")
    prompt = "Describe a software engineer named Ada as JSON."
    greedy = run(model, prompt, g, max_tokens=64, jump_forward=jump_forward)
    jsonschema.validate(json.loads(greedy.text), PERSON)
    a = run(model, prompt, g, max_tokens=64, jump_forward=jump_forward, temperature=0.9, seed=11)
    b = run(model, prompt, g, max_tokens=64, jump_forward=jump_forward, temperature=0.9, seed=11)
    jsonschema.validate(json.loads(a.text), PERSON)
    assert a.text == b.text  # same seed, same output


def test_regex_gbnf_choice_and_json(model, compiler):
    r = run(model, "When did the Apollo 11 mission land on the Moon? Answer with the date.", compiler.compile_regex(DATE), max_tokens=16)
    assert re.fullmatch(DATE, r.text), r.text
    r = run(model, "Is the sky blue? Answer and give the reason.", compiler.compile_grammar(GBNF), max_tokens=48)
    assert re.fullmatch(r"(yes|no) because [a-z ,]{3,60}\.", r.text), r.text
    choices = ["positive", "negative", "neutral"]
    r = run(model, "Sentiment of: 'I love this phone, it is great!'", compiler.compile_choice(choices), max_tokens=8)
    assert r.text in choices and r.finish_reason == "stop"
    r = run(model, "List three colors as JSON.", compiler.compile_json(whitespace="compact"), max_tokens=48)
    json.loads(r.text)


def test_tight_budget_still_valid_and_too_small_refused(model, compiler):
    g = compiler.compile_json_schema(PERSON, whitespace="spaced")
    prompt = "Describe a software engineer named Ada as JSON, with a long name and many languages."
    free = run(model, prompt, g, max_tokens=64)
    minimum = TokenBudget(g).minimum_tokens()
    tight = max(minimum, len(free.token_ids) - 6)
    assert tight < len(free.token_ids)  # the budget is smaller than what the model would use
    r = run(model, prompt, g, max_tokens=tight)
    assert len(r.token_ids) <= tight
    jsonschema.validate(json.loads(r.text), PERSON)
    with pytest.raises(sg.BudgetError, match=rf"needs {minimum} tokens") as info:
        run(model, prompt, g, max_tokens=minimum - 1)
    assert info.value.minimum == minimum


def test_unconstrained_generation_runs(model):
    r = run(model, "Say hello.", None, max_tokens=12)
    assert r.text and len(r.token_ids) <= 12 and r.finish_reason in ("stop", "length")


@pytest.mark.parametrize("runtime", ["llama.cpp", pytest.param("transformers", marks=pytest.mark.slow)])
def test_rolling_the_cache_back_gives_the_logits_of_a_fresh_pass(runtime):
    """What jump-forward's re-tokenization relies on: truncate(n) then forward == the same forward
    without the detour, bit for bit."""
    import numpy as np

    m = embedded(runtime)
    ids = m.encode_prompt("Count: one, two, three")
    m.reset()
    m.forward(ids[:-5])
    fresh = m.forward(ids[-5:])
    m.reset()
    m.forward(ids[:-5])
    m.forward([1, 2, 3])  # tokens that will be rolled back
    m.truncate(len(ids) - 5)
    again = m.forward(ids[-5:])  # the same pass as the fresh one's, after a detour: the same logits
    assert len(m.tokens) == len(ids)
    assert np.array_equal(again, fresh)


@pytest.mark.slow
def test_transformers_runtime_gives_valid_output():
    hf = embedded("transformers")
    schema = weather_schema()
    g = sg.GrammarCompiler(hf.tokenizer_info).compile_json_schema(schema, whitespace="compact")
    r = run(hf, WEATHER_PROMPT, g, max_tokens=48)
    jsonschema.validate(json.loads(r.text), schema)
    assert r.stats.forced_tokens > 0


@pytest.mark.slow
def test_hugging_face_folder_loads_with_its_own_chat_template(tmp_path):
    """A Hugging Face model folder runs on transformers: here a tiny random Llama with SmolLM2's
    tokenizer (written to a folder), so validity cannot come from the weights."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from strictgen.engine import load_model

    tokenizer = embedded("transformers").hf_tokenizer
    tokenizer.save_pretrained(tmp_path)
    config = LlamaConfig(vocab_size=49152, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, bos_token_id=1, eos_token_id=2)
    LlamaForCausalLM(config).save_pretrained(tmp_path)
    folder = load_model(str(tmp_path))
    assert folder.runtime == "transformers" and folder.tokenizer_info.vocab_size == 49152
    assert folder.chat_template.source and "<|im_start|>" in folder.chat_template.render([{"role": "user", "content": "hi"}])
    assert folder.tokenize("<|im_start|>", special=True) == [1]  # the template's special tokens are parsed
    prompt = folder.encode_prompt("Is water wet? Answer yes or no.")
    g = sg.GrammarCompiler(folder.tokenizer_info).compile_regex(r"(yes|no), [a-z]{2,6}\.")
    r = generate(folder, prompt, g, GenerationConfig(max_tokens=12, sampling=SamplingParams(temperature=1.0, seed=3)))
    assert re.fullmatch(r"(yes|no), [a-z]{2,6}\.", r.text), r.text
