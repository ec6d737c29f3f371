"""Reproducible by design (engine/kv_cache.py): the same request gives the same logits and tokens
whatever the KV cache holds and whatever ran before, on any CPU. Every assertion is an exact
equality: the design makes the passes of a warm request the very passes of a cold one, so no
tolerance is needed (or allowed: a tolerance tuned to one CPU's rounding fails on another)."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import strictgen as sg
from strictgen.engine import GenerationConfig, generate
from strictgen.engine.kv_cache import CHUNK, KVSequence, aligned_pieces, common_prefix
from tests.models import embedded

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 130}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
# long enough for three aligned chunks, so reuse stops at a chunk boundary inside the prompt
LONG = "Name three colours, then describe each of them in a long paragraph about art, history and science. " * 5


# ---- the reuse rules, on their own ----


@given(st.integers(0, 300), st.integers(1, 300), st.integers(1, 80))
def test_aligned_pieces_cover_the_feed_and_never_cross_a_boundary(start, count, chunk):
    pieces = aligned_pieces(start, count, chunk)
    assert pieces[0][0] == start and sum(n for _, n in pieces) == count
    for (pos, n), nxt in zip(pieces, pieces[1:] + [(start + count, 0)]):
        assert n >= 1 and pos + n == nxt[0]
        assert pos // chunk == (pos + n - 1) // chunk  # inside one chunk


@given(
    st.lists(st.sampled_from([1, 2, 3]), max_size=200),
    st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=200),
    st.lists(st.integers(1, 70), max_size=8),
    st.integers(0, 200),
)
def test_reusable_is_whole_canonical_chunks_of_the_common_prefix(held, seq, feeds, cut):
    """reusable() never keeps a position a cold run would compute in another pass shape."""
    kv = KVSequence(chunk=16)
    pos = 0
    for n in feeds:  # pieces as a model evaluates them, one pass each
        for p, k in aligned_pieces(pos, n, 16):
            kv.appended(p, (held + [1] * 600)[p : p + k], alone=True)
        pos += n
    kv.truncate(min(cut, len(kv.tokens)))
    keep = kv.reusable(seq)
    assert keep % 16 == 0 and keep < len(seq)
    assert keep <= common_prefix(kv.tokens, seq) and keep <= kv.canonical


def test_a_piece_shared_with_another_sequence_is_never_reused():
    kv = KVSequence(chunk=4)
    kv.appended(0, [1, 2, 3, 4], alone=False)
    assert kv.canonical == 0 and kv.reusable([1, 2, 3, 4, 5]) == 0
    kv.truncate(0)
    kv.appended(0, [1, 2, 3, 4], alone=True)
    kv.appended(4, [5, 6], alone=True)  # a partial chunk: not reusable either
    assert kv.canonical == 4 and kv.reusable([1, 2, 3, 4, 5, 6, 7]) == 4
    assert kv.reusable([1, 2, 3, 4]) == 0  # all of it: its last chunk is evaluated again


# ---- the real model ----


@pytest.fixture(scope="module")
def model():
    return embedded("llama.cpp")


def _first_pass(m, prompt):
    """The logits a request's first pass gets: what a run keeps of the cache, then the rest."""
    keep = m.kv.reusable(prompt)
    m.truncate(keep)
    return m.forward(prompt[keep:])


def _histories(m, prompt):
    """Cache states a server slot can be in when the request arrives."""
    other = m.encode_prompt("Describe a software engineer named Ada as JSON.")
    return {
        "cold": lambda: m.reset(),
        "same prompt cached": lambda: (m.reset(), m.forward(prompt)),
        "prompt and an answer cached": lambda: (m.reset(), m.forward(prompt), [m.forward([t]) for t in prompt[:5]]),
        "prompt fed token by token": lambda: (m.reset(), [m.forward([t]) for t in prompt]),
        "a longer prefix cut back": lambda: (m.reset(), m.forward(prompt[: CHUNK + 9]), m.forward(other), m.truncate(CHUNK + 3)),
        "another prompt": lambda: (m.reset(), m.forward(other)),
    }


def test_prompt_logits_are_bit_for_bit_the_cold_ones(model):
    prompt = model.encode_prompt(LONG)
    assert len(prompt) > 2 * CHUNK
    model.reset()
    cold = _first_pass(model, prompt)
    for name, make in _histories(model, prompt).items():
        make()
        assert np.array_equal(_first_pass(model, prompt), cold), name


def test_greedy_runs_repeat_exactly_whatever_ran_before(model):
    g = sg.GrammarCompiler(model.tokenizer_info).compile_json_schema(PERSON, whitespace="spaced")
    prompt = model.encode_prompt("Describe a software engineer named Ada as JSON.")
    runs = []
    for name, make in _histories(model, prompt).items():
        make()
        r = generate(model, prompt, g, GenerationConfig(max_tokens=40))
        runs.append((r.token_ids, r.forced, r.finish_reason))
        # and the follow-up turn that finds this run's answer in the cache
        generate(model, prompt + r.token_ids, None, GenerationConfig(max_tokens=3))
    assert all(run == runs[0] for run in runs), [json.dumps(model.detokenize(t).decode()) for t, _, _ in runs]
    assert any(runs[0][1])  # jump-forward fed forced text in these runs
    jsonschema.validate(json.loads(model.detokenize(runs[0][0])), PERSON)


def test_batch_context_gives_the_single_context_logits(model):
    """The batch backend evaluates the same pieces in a context with the single one's settings, so
    a request gets in the server exactly what it gets from generate()."""
    from strictgen.engine.llama_cpp_runtime import LlamaCppBatch

    prompt = model.encode_prompt(LONG)
    model.reset()
    alone = model.forward(prompt)
    other = model.encode_prompt("Say hello.")
    batch = LlamaCppBatch(model, n_seq=2, n_ctx=512, deterministic=True)
    try:
        first = batch.decode([(0, prompt), (1, other)])[0]
        batch.truncate(0, batch.seqs[0].reusable(prompt))
        again = batch.decode([(0, prompt[len(batch.seqs[0].tokens) :]), (1, [42])])[0]
    finally:
        batch.close()
    assert np.array_equal(first, alone) and np.array_equal(again, alone)


@pytest.mark.slow
def test_transformers_prompt_logits_do_not_depend_on_the_cache():
    m = embedded("transformers")
    prompt = m.encode_prompt(LONG)
    m.reset()
    cold = _first_pass(m, prompt)
    for name in ("same prompt cached", "prompt fed token by token"):
        _histories(m, prompt)[name]()
        assert np.array_equal(_first_pass(m, prompt), cold), name
