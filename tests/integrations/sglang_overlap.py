"""SGLang's overlap schedule for grammar masks, driven with SGLang's own code and a CPU stand-in for
the forward pass (no GPU here). Used by tests/integrations/test_sglang_backend.py and measured by
scripts/sglang_overlap_wait.py.

SGLang 0.5.23's overlap scheduler (`Scheduler.event_loop_overlap`), for a decode batch with
grammars, per step N:
1. `run_batch(N)` launches the forward pass on the device and returns at once; with grammars the
   worker defers sampling (`TpModelWorker.forward_batch_generation` sets `delay_sample_func`);
2. `process_batch_result(N - 1)` advances each request's grammar over the token it sampled
   (`BatchResultProcessor._accept_grammar_tokens`);
3. `launch_batch_sample_if_needed(N)` runs `ModelRunner.sample`, whose `_preprocess_logits` fills
   the batch's masks on the host (`SamplingBatchInfo.update_regex_vocab_mask`, which calls the
   backend's `fill_vocab_mask_batched`) and enqueues the apply (`GrammarMask.apply`) behind the
   forward pass on the device stream.
So the fill (2 and 3) runs on the host while the device runs forward pass N: the device waits for
the grammar only when the fill ends after the forward pass.

Here `_preprocess_logits` and `_accept_grammar_tokens` are SGLang's, compiled from its installed
files by `ast`, unchanged (their modules import torchvision, which pins its own torch);
`SamplingBatchInfo` and `GrammarMask` are imported. The forward pass is a thread that sleeps for
the forward time (a device computes without the host's CPU) and then marks its end; the logits
object hands `_preprocess_logits` its logits only after that end, as the device stream orders the
apply after the forward pass. The device's wait for the grammar is the time from the forward
pass's end to the end of the fill, when positive.
"""

from __future__ import annotations

import ast
import importlib.util
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import torch

from tests.integrations.triton_stand_in import imported

with imported():
    from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo


def sglang_functions(relative: str, names: tuple[str, ...], namespace: dict) -> dict:
    """SGLang's functions or methods `names` from its installed file `relative` (under sglang/srt),
    compiled unchanged into `namespace` (the module-level names they read) and returned by name."""
    path = Path(next(iter(importlib.util.find_spec("sglang").submodule_search_locations))) / "srt" / relative
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            found.setdefault(node.name, node)
    missing = set(names) - set(found)
    assert not missing, f"SGLang's {relative} no longer defines {sorted(missing)}"
    future = ast.ImportFrom(module="__future__", names=[ast.alias(name="annotations")], level=0)
    body = [future, *(found[n] for n in names)]
    exec(compile(ast.fix_missing_locations(ast.Module(body=body, type_ignores=[])), str(path), "exec"), namespace)
    return {n: namespace[n] for n in names}


class _Abort:
    """Stands for SGLang's FINISH_ABORT (in schedule_batch.py, which needs torchvision): what
    `_accept_grammar_tokens` records on a request when the grammar refuses its token."""

    def __init__(self, message, *args):
        self.message = message


_preprocess_logits = sglang_functions("model_executor/model_runner.py", ("_preprocess_logits",), {})["_preprocess_logits"]
_accept_grammar_tokens = sglang_functions(
    "managers/scheduler_components/batch_result_processor.py", ("_accept_grammar_tokens",),
    {"logger": logging.getLogger("sglang.batch_result_processor"), "FINISH_ABORT": _Abort, "HTTPStatus": SimpleNamespace(INTERNAL_SERVER_ERROR=500)},
)["_accept_grammar_tokens"]


class ForwardStandIn:
    """A forward pass of `seconds` on a device: launched, it returns at once; `end` is when the
    device is done (set by a thread that sleeps that long and holds no GIL meanwhile)."""

    def __init__(self, seconds: float):
        self.done = threading.Event()
        self.end = 0.0
        self._thread = threading.Thread(target=self._run, args=(seconds,), daemon=True)
        self._thread.start()

    def _run(self, seconds: float) -> None:
        time.sleep(seconds)
        self.end = time.perf_counter()
        self.done.set()


class DeviceLogits:
    """`logits_output` for `_preprocess_logits`: `next_token_logits` is read after the fill, where
    the device stream puts the apply after the forward pass; reading it notes when the mask was
    ready and waits for the forward pass (the host's own wait, not the device's)."""

    def __init__(self, forward: ForwardStandIn, logits: torch.Tensor):
        self.forward = forward
        self._logits = logits
        self.mask_ready = 0.0

    @property
    def next_token_logits(self) -> torch.Tensor:
        self.mask_ready = self.mask_ready or time.perf_counter()
        self.forward.done.wait()
        return self._logits


@dataclass
class Request:
    """What SGLang's `_accept_grammar_tokens` reads of a request, and the tokens to feed it."""

    grammar: object
    tokens: list[int]  # teacher-forced: the next token of a valid document at each step
    rid: str = "r"
    pos: int = 0
    to_finish: object = None


@dataclass
class StepTimes:
    fill: list[float] = field(default_factory=list)  # seconds from the last accept to the mask's end
    wait: list[float] = field(default_factory=list)  # seconds the device waited for the mask (>= 0)


def new_sampling_info(rows: int, vocab_size: int) -> SamplingBatchInfo:
    """A SamplingBatchInfo with the fields `update_regex_vocab_mask` and `apply_logits_bias` read
    (no penalties, no logit bias), as a decode batch of `rows` grammar requests on the CPU has."""
    info = SamplingBatchInfo.__new__(SamplingBatchInfo)
    info.vocab_size, info.device = vocab_size, "cpu"
    info.temperatures = torch.ones((rows, 1))
    info.acc_additive_penalties = info.acc_scaling_penalties = info.penalizer_orchestrator = info.logit_bias = None
    info.grammar_mask = None
    return info


def overlap_steps(requests: list[Request], next_request: Callable[[], Request], logits: torch.Tensor, steps: int,
                  forward_seconds: float, check: Callable[[int, Request, torch.Tensor], None] | None = None) -> StepTimes:
    """`steps` decoding steps of SGLang's overlap schedule over `requests` (one per row, replaced by
    `next_request()` when its grammar has terminated). Each step launches the forward stand-in,
    advances every grammar over the token of the step before (SGLang's `_accept_grammar_tokens`),
    then runs SGLang's `_preprocess_logits` (fill, then apply once the forward pass is done) on a
    copy of `logits`; `check(row, request, masked_row)` sees each masked row before its token is
    taken. Returns the fill time and the device's wait per step."""
    rows = len(requests)
    info = new_sampling_info(rows, logits.shape[1])
    pending: list[int | None] = [None] * rows  # the token each row sampled in the step before
    times = StepTimes()
    for _ in range(steps):
        step_logits = logits.clone()  # what the forward pass will write (copied before the step: not timed)
        forward = ForwardStandIn(forward_seconds)  # 1. run_batch(N): launched, returns at once
        for r, req in enumerate(requests):  # 2. process_batch_result(N - 1)
            if pending[r] is not None:
                _accept_grammar_tokens(None, req, pending[r])
                assert req.to_finish is None, req.to_finish.message
                req.pos += 1
                if req.grammar.is_terminated():
                    requests[r] = next_request()  # a new request takes the row
        start = time.perf_counter()
        info.grammars = [req.grammar for req in requests]
        output = DeviceLogits(forward, step_logits)
        _preprocess_logits(None, output, info)  # 3. fill on the host; apply after the forward pass
        masked = output.next_token_logits  # the forward pass has ended: its end is known
        times.fill.append(output.mask_ready - start)
        times.wait.append(max(0.0, output.mask_ready - forward.end))
        for r, req in enumerate(requests):
            if check is not None:
                check(r, req, masked[r])
            pending[r] = req.tokens[req.pos]
    return times
