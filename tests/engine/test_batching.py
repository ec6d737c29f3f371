"""Batched decoding (engine/batching.py) on the embedded model. With `deterministic=True` each
request in a batch gets exactly what it gets alone (no pass is shared between sequences, and every
pass is the one a lone run makes: engine/kv_cache.py), so greedy outputs are compared token for
token. In the default mode passes are shared; what holds there on every CPU is checked instead: each
request is valid, and a request that runs alone repeats exactly whatever the slots' caches hold."""

from __future__ import annotations

import json
import re

import jsonschema
import numpy as np
import pytest

import strictgen as sg
from strictgen.engine import GenerationConfig, generate
from strictgen.engine.batching import BatchScheduler
from strictgen.engine.llama_cpp_runtime import LlamaCppBatch
from tests.models import embedded

# a bound that only catches a hang (a deadlocked scheduler), never a slow machine: a batch of three
# took 108 s on two cores shared by seven developers
HANG_S = 900

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 130}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
DATE = r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"


@pytest.fixture(scope="module")
def model():
    return embedded("llama.cpp")


def _scheduler(model, deterministic):
    backend = LlamaCppBatch(model, n_seq=3, n_ctx=512, deterministic=deterministic)
    return BatchScheduler(model, backend), backend


@pytest.fixture(scope="module")
def scheduler(model):
    sched, backend = _scheduler(model, deterministic=True)
    yield sched
    sched.close()
    backend.close()


@pytest.fixture(scope="module")
def shared_scheduler(model):
    sched, backend = _scheduler(model, deterministic=False)
    yield sched
    sched.close()
    backend.close()


def _jobs(model):
    c = sg.GrammarCompiler(model.tokenizer_info)
    return [
        (model.encode_prompt("Describe a software engineer named Ada as JSON."), c.compile_json_schema(PERSON, whitespace="spaced"), {}),
        (model.encode_prompt("When did the Apollo 11 mission land on the Moon? Answer with the date."), c.compile_regex(DATE), {}),
        (model.encode_prompt("Say hello."), None, {"max_tokens": 20}),
    ]


def test_batch_of_three_equals_each_alone(model, scheduler):
    jobs = _jobs(model)
    alone = [generate(model, p, g, GenerationConfig(**{"max_tokens": 32, **kw})) for p, g, kw in jobs]
    steps = scheduler.steps
    futures = [scheduler.submit(p, g, GenerationConfig(**{"max_tokens": 32, **kw})) for p, g, kw in jobs]
    batched = [f.result(timeout=HANG_S) for f in futures]
    assert scheduler.max_batch == 3  # the three were stepped together
    assert scheduler.steps - steps < sum(r.stats.forward_passes + 1 for r in batched)
    for a, b in zip(alone, batched):
        assert (b.token_ids, b.forced, b.finish_reason, b.text) == (a.token_ids, a.forced, a.finish_reason, a.text)
    jsonschema.validate(json.loads(batched[0].text), PERSON)
    assert any(batched[0].forced)  # jump-forward fed several tokens in a step
    assert re.fullmatch(DATE, batched[1].text)
    assert batched[2].finish_reason == "length" and len(batched[2].token_ids) == 20


def test_more_requests_than_slots_budget_stop_and_cancel(model, scheduler):
    """Five requests on three slots (the rest wait and are admitted between steps): a tight budget
    still gives a valid document, a stop string cuts, on_progress returning False cancels."""
    c = sg.GrammarCompiler(model.tokenizer_info)
    person = c.compile_json_schema(PERSON, whitespace="spaced")
    prompt = model.encode_prompt("Describe a software engineer named Ada as JSON.")
    seen: list[int] = []

    def cancel_after_three(ids):
        seen.append(len(ids))
        return len(ids) < 3

    configs = [
        (person, GenerationConfig(max_tokens=12)),
        (person, GenerationConfig(max_tokens=32)),
        (None, GenerationConfig(max_tokens=24, stop=(".",))),
        (None, GenerationConfig(max_tokens=24, on_progress=cancel_after_three)),
        (c.compile_choice(["yes", "no"]), GenerationConfig(max_tokens=4)),
    ]
    futures = [scheduler.submit(prompt, g, cfg) for g, cfg in configs]
    results = [f.result(timeout=HANG_S) for f in futures]
    tight, full, stopped, cancelled, choice = results
    # the slots hold earlier requests' tokens: each result is still exactly the lone run's
    seen.clear()
    for (g, cfg), r in zip(configs, results):
        a = generate(model, prompt, g, cfg)
        assert (r.token_ids, r.forced, r.finish_reason, r.text) == (a.token_ids, a.forced, a.finish_reason, a.text)
    assert tight.stats.guarded and not full.stats.guarded
    assert len(tight.token_ids) <= 12
    jsonschema.validate(json.loads(tight.text), PERSON)
    jsonschema.validate(json.loads(full.text), PERSON)
    assert "." not in stopped.text and stopped.finish_reason == "stop" and stopped.text
    assert cancelled.finish_reason == "cancelled" and len(cancelled.token_ids) == 3
    assert choice.text in ("yes", "no")


def test_bad_request_raises_at_submit(model, scheduler):
    with pytest.raises(sg.StrictgenError, match="empty"):
        scheduler.submit([], None, GenerationConfig(max_tokens=4))


def test_shared_passes_valid_and_a_lone_request_repeats(model, shared_scheduler):
    jobs = _jobs(model)
    futures = [shared_scheduler.submit(p, g, GenerationConfig(**{"max_tokens": 32, **kw})) for p, g, kw in jobs]
    together = [f.result(timeout=HANG_S) for f in futures]
    assert shared_scheduler.max_batch == 3
    jsonschema.validate(json.loads(together[0].text), PERSON)
    assert re.fullmatch(DATE, together[1].text)
    # one at a time, whatever the three slots now hold, a request gets the same tokens every time
    prompt, g, kw = jobs[0]
    alone = [shared_scheduler.generate(prompt, g, GenerationConfig(max_tokens=32)) for _ in range(2)]
    assert alone[0].token_ids == alone[1].token_ids == generate(model, prompt, g, GenerationConfig(max_tokens=32)).token_ids


def test_a_grammar_whose_rule_fails_to_build_fails_its_generation_only(model, scheduler, monkeypatch):
    """A rule built at run time (past the compile's budget) can fail, as a compile can. The batch's
    masks are filled together; that error fails the generation whose grammar it is, and the others
    in the same passes finish (the failure is forced: a real one needs a 200,000-state rule)."""
    from strictgen.compile import automaton
    from strictgen.compile.lazy_rules import LazyRules
    from strictgen.errors import GrammarTooLargeError
    from strictgen.grammar.ir import Grammar, RuleRef, alt, charset, lit, opt, seq

    monkeypatch.setattr(automaton, "EAGER_STATES", 0)  # build nothing ahead that can wait
    # x is a recursive rule, entered only after "=>": not on the way to the shortest completion
    broken = sg.GrammarCompiler(model.tokenizer_info).compile_ir(Grammar({
        "root": seq(charset([(0x61, 0x7A)]), opt(seq(lit("=>"), RuleRef("x")))),
        "x": alt(lit("x"), seq(lit("("), RuleRef("x"), lit(")"))),
    }))
    real = LazyRules.dfa

    def fail_for_broken(self, index):
        if self is broken.automaton.lazy:
            raise GrammarTooLargeError("grammar too large: a stand-in failure")
        return real(self, index)

    monkeypatch.setattr(LazyRules, "dfa", fail_for_broken)
    jobs = _jobs(model)
    good = scheduler.submit(jobs[0][0], jobs[0][1], GenerationConfig(max_tokens=48))
    bad = scheduler.submit(model.encode_prompt("Write a word."), broken, GenerationConfig(max_tokens=8))
    with pytest.raises(GrammarTooLargeError, match="stand-in"):
        bad.result(timeout=HANG_S)
    jsonschema.validate(json.loads(good.result(timeout=HANG_S).text), PERSON)
