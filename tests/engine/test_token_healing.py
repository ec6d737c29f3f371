"""Token healing at jump-forward boundaries (engine/generate.py, runtime/healing.py).

On the real SmolLM2 vocabulary and model: the prefix index equals a brute-force scan, and a healed
generation stays valid, deterministic, and each healed choice is the model's best token among those
extending the backed-off one."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

import strictgen as sg
from strictgen.engine import GenerationConfig, generate
from strictgen.runtime.healing import allowed_in, restrict_logits, token_prefixes
from tests.models import embedded

# a string right after forced text: `"name": "` may merge with the string's first characters
SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "string", "maxLength": 12}, "tag": {"type": "string", "maxLength": 12}, "n": {"type": "integer"}},
    "required": ["id", "tag", "n"],
    "additionalProperties": False,
}
PROMPT = 'Give a JSON record whose id is "_x1" (with the underscore), tag "[draft]" and n 3.'


def test_prefix_index_equals_brute_force():
    tok = sg.TokenizerInfo.from_name("smollm2")
    index = token_prefixes(tok)
    assert token_prefixes(tok) is index  # one per vocabulary
    tb = tok.all_token_bytes
    for prefix in (b' "', b'"', b"{", b" ", b"\xe6", b"zzzzqq"):
        want = [i for i, b in enumerate(tb) if not tok.is_special[i] and b.startswith(prefix) and len(b) > len(prefix)]
        assert index.extending(prefix).tolist() == want, prefix


def test_allowed_in_and_restrict_logits():
    tok = sg.TokenizerInfo.from_name("smollm2")
    g = sg.GrammarCompiler(tok).compile_regex(r'"[a-z_]+"')
    m = sg.GrammarMatcher(g)
    row = m.next_token_mask()
    ids = token_prefixes(tok).extending(b'"')
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")[: tok.vocab_size]
    assert allowed_in(row, ids).tolist() == [i for i in ids.tolist() if bits[i]]
    logits = np.arange(10, dtype=np.float32)
    restrict_logits(logits, np.array([2, 7]))
    assert int(np.argmax(logits)) == 7 and np.isinf(logits[[0, 1, 3, 9]]).all() and logits[2] == 2


@pytest.fixture(scope="module")
def model():
    return embedded("llama.cpp")


def test_healed_generation_is_valid_deterministic_and_a_best_choice(model):
    g = sg.GrammarCompiler(model.tokenizer_info).compile_json_schema(SCHEMA, whitespace="spaced", numbers="canonical")
    prompt = model.encode_prompt(PROMPT)
    on = generate(model, prompt, g, GenerationConfig(max_tokens=48))
    again = generate(model, prompt, g, GenerationConfig(max_tokens=48))
    off = generate(model, prompt, g, GenerationConfig(max_tokens=48, token_healing=False))
    for r in (on, off):
        jsonschema.validate(json.loads(r.text), SCHEMA)
    assert (on.text, on.token_ids) == (again.text, again.token_ids)
    assert on.stats.healed > 0 and off.stats.healed == 0
    assert 0 <= on.stats.healed_longer <= on.stats.healed
    # replay: every sampled token is the masked arg-max or, at a healed step, the arg-max of the
    # allowed tokens that begin with the forced text there (the backed-off token's bytes)
    matcher = sg.GrammarMatcher(g)
    tb = model.tokenizer_info.all_token_bytes
    model.reset()
    logits = model.forward(prompt)
    for tok, forced in zip(on.token_ids, on.forced):
        if not forced:
            sg.apply_token_bitmask_inplace(logits, matcher.next_token_mask())
            if logits[tok] < float(np.max(logits)) - 0.1:
                forced_text = matcher.find_jump_forward_bytes()
                assert forced_text and tb[tok].startswith(forced_text), tok
                pool = [t for t in np.flatnonzero(np.isfinite(logits)) if tb[t].startswith(forced_text)]
                assert logits[tok] >= max(logits[pool]) - 0.1
        assert matcher.accept_token(tok)
        logits = model.forward([tok])


def test_healing_off_when_the_grammar_allows_no_longer_token(model):
    """A choice list forces whole words: nothing can merge past them, so nothing is healed."""
    g = sg.GrammarCompiler(model.tokenizer_info).compile_grammar('root ::= "{\\"a\\": 1}"')
    r = generate(model, model.encode_prompt("Say it."), g, GenerationConfig(max_tokens=16))
    assert r.text == '{"a": 1}' and r.stats.healed == 0 and r.stats.forward_passes == 0


def test_prompt_healing_continues_the_last_word(model):
    """A raw prompt ending mid-word: its last token is backed off, the first output token begins
    with its bytes, and the text is what follows them; streamed text (on_text) equals the result."""
    prompt = model.encode_prompt("The quick brown fox jumps over the la", chat=False)
    tail = model.token_bytes(prompt[-1])
    shown = []
    r = generate(model, prompt, None, GenerationConfig(max_tokens=6, heal_prompt=True, on_text=shown.append))
    again = generate(model, prompt, None, GenerationConfig(max_tokens=6, heal_prompt=True))
    assert r.stats.healed == 1 and (r.text, r.token_ids) == (again.text, again.token_ids)
    first = model.token_bytes(r.token_ids[0])
    assert first.startswith(tail)
    assert r.text.encode() == model.detokenize(r.token_ids)[len(tail):] == shown[-1]
    assert all(shown[i + 1].startswith(shown[i]) for i in range(len(shown) - 1))  # streamed text only grows
    plain = generate(model, prompt, None, GenerationConfig(max_tokens=6))  # off by default
    assert plain.stats.healed == 0 and plain.text.encode() == model.detokenize(plain.token_ids)
