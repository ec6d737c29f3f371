"""Batched decoding: concurrent generations share one forward pass per step.

A `BatchScheduler` owns a batch backend (`LlamaCppBatch`: one llama.cpp context with a KV sequence
per slot) and a thread that steps every live generation together. Each generation is the
single-sequence loop's own state (`generate.GenerationRun`: its matcher, sampler, stop strings, max_tokens,
jump-forward and truncation-safe budget) driven through the same per-step pieces; only the forward
pass and the mask computation are shared. One step:

1. every live sequence says what to feed (one sampled token, the forced text of a jump-forward, or
   its whole prompt when just admitted) after rolling its KV entries back to the common prefix;
2. the masks of all matchers are filled as a batch (`fill_next_token_bitmask_batch`, in the
   background) while the backend decodes all feeds in one `llama_decode`;
3. each row of logits gets its mask and the sequence chooses and accepts its token (or finishes).

New requests are admitted between steps onto a free slot — the one holding the longest reusable
prefix of the prompt (kv_cache.py: whole aligned chunks), so a follow-up turn reuses its cache
without its logits depending on it. Whether sequences that share a pass get the logits they would
get alone is the backend's to say (LlamaCppBatch: exactly, with `deterministic=True`).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from strictgen.compile.compiled import CompiledGrammar
from strictgen.errors import ModelError
from strictgen.runtime.batch import fill_next_token_bitmask_batch_async
from strictgen.runtime.bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
)

from .generate import GenerationConfig, GenerationResult, GenerationRun
from .kv_cache import KVSequence
from .model import Model


class BatchBackend(Protocol):
    n_seq: int
    n_ctx: int
    vocab_size: int
    seqs: list[KVSequence]  # what each sequence's KV entries hold

    def truncate(self, seq: int, length: int) -> None: ...

    def decode(self, feeds: list[tuple[int, list[int]]]) -> list[np.ndarray]: ...

    def close(self) -> None: ...


@dataclass
class _Active:
    run: GenerationRun
    future: Future
    seq: int = -1


class BatchScheduler:
    """Runs generations submitted from any thread, up to `backend.n_seq` of them per forward pass.

    `model` serves tokenization (jump-forward re-encodes text); `backend` runs the network."""

    def __init__(self, model: Model, backend: BatchBackend):
        self.model = model
        self.backend = backend
        self.n_seq = backend.n_seq
        self._bitmask = allocate_token_bitmask(self.n_seq, backend.vocab_size)
        self._cond = threading.Condition()
        self._waiting: list[_Active] = []
        self._active: list[_Active] = []
        self._closed = False
        self.steps = 0  # forward passes made
        self.max_batch = 0  # most sequences seen in one pass
        self._thread = threading.Thread(target=self._loop, name="strictgen-batch", daemon=True)
        self._thread.start()

    # ---- submitting ----

    def submit(self, prompt_ids: list[int], grammar: CompiledGrammar | None = None, config: GenerationConfig | None = None) -> Future[GenerationResult]:
        """Queue a generation; the future gives its result (or its error). A bad request (empty
        prompt, budget too small for the grammar) raises here."""
        run = GenerationRun(self.model, prompt_ids, grammar, config or GenerationConfig())
        item = _Active(run, Future())
        with self._cond:
            if self._closed:
                raise ModelError("the batch scheduler is closed")
            self._waiting.append(item)
            self._cond.notify()
        return item.future

    def generate(self, prompt_ids: list[int], grammar: CompiledGrammar | None = None, config: GenerationConfig | None = None) -> GenerationResult:
        """Like engine.generate, blocking until this generation is done."""
        return self.submit(prompt_ids, grammar, config).result()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=60)

    # ---- the scheduler thread ----

    def _admit(self) -> None:
        """Move waiting generations onto free slots (blocks while there is nothing to do)."""
        with self._cond:
            while not self._closed and not self._active and not self._waiting:
                self._cond.wait()
            if self._closed:
                for item in self._waiting + self._active:
                    item.future.set_exception(ModelError("the batch scheduler was closed"))
                self._waiting.clear()
                self._active.clear()
                return
            used = {a.seq for a in self._active}
            free = [s for s in range(self.n_seq) if s not in used]
            while free and self._waiting:
                item = self._waiting.pop(0)
                if not item.future.set_running_or_notify_cancel():
                    continue
                item.seq = max(free, key=lambda s: self.backend.seqs[s].reusable(item.run.prompt))
                free.remove(item.seq)
                self._active.append(item)
                try:
                    item.run.begin()
                except BaseException as exc:  # noqa: BLE001 - handed to the submitter
                    self._fail(item, exc)

    def _loop(self) -> None:
        while True:
            self._admit()
            if self._closed:
                return
            try:
                self._step()
            except BaseException as exc:  # noqa: BLE001 - a failed pass fails every live generation
                for item in list(self._active):
                    self._fail(item, exc)

    def _finish(self, item: _Active, finish: str) -> None:
        self._active.remove(item)
        try:
            result = item.run.result(finish)
        except BaseException as exc:  # noqa: BLE001
            item.future.set_exception(exc)
            return
        item.future.set_result(result)

    def _fail(self, item: _Active, exc: BaseException) -> None:
        if item in self._active:
            self._active.remove(item)
        if not item.future.done():
            item.future.set_exception(exc)

    def _masks(self, pending, masked: list[_Active]) -> dict[int, bool | BaseException]:
        """Per masked generation: whether its mask row needs applying, or what its mask raised (a
        grammar's rule built at run time can fail: that fails its generation, not the batch)."""
        if pending is None:
            return {}
        try:
            return {id(item): need for item, need in zip(masked, pending.result())}
        except BaseException:  # noqa: BLE001 - find whose: each mask again, alone (the others are cache hits now)
            out: dict[int, bool | BaseException] = {}
            for item in masked:
                try:
                    out[id(item)] = item.run.matcher.fill_next_token_bitmask(self._bitmask, index=item.seq)
                except BaseException as exc:  # noqa: BLE001
                    out[id(item)] = exc
            return out

    def _step(self) -> None:
        backend = self.backend
        live: list[tuple[_Active, list[int]]] = []
        for item in list(self._active):
            run = item.run
            try:
                finish = run.check_done()
                if finish is not None:
                    self._finish(item, finish)
                    continue
                keep, feed = run.next_feed(backend.seqs[item.seq])
                if keep + len(feed) > backend.n_ctx:
                    raise ModelError(f"context full: {keep} + {len(feed)} tokens exceed n_ctx={backend.n_ctx}")
                backend.truncate(item.seq, keep)
            except BaseException as exc:  # noqa: BLE001
                self._fail(item, exc)
                continue
            live.append((item, feed))
        if not live:
            return
        masked = [item for item, _ in live if item.run.matcher is not None]
        t_mask = time.perf_counter()
        pending = (
            # no prefetch: llama.cpp's forward pass runs on the cores a build ahead would take (runtime/batch.py)
            fill_next_token_bitmask_batch_async([i.run.matcher for i in masked], self._bitmask, [i.seq for i in masked], prefetch=False)
            if masked
            else None
        )
        t0 = time.perf_counter()
        try:
            logits = backend.decode([(item.seq, feed) for item, feed in live])
        finally:
            apply = self._masks(pending, masked)
        dt = time.perf_counter() - t0
        mask_wait = time.perf_counter() - t_mask - dt
        self.steps += 1
        self.max_batch = max(self.max_batch, len(live))
        for (item, _), row in zip(live, logits):
            run = item.run
            try:
                if run.matcher is not None:
                    t1 = time.perf_counter()
                    if isinstance(apply[id(item)], BaseException):
                        raise apply[id(item)]
                    run.observe_logits(row)
                    if apply[id(item)]:
                        apply_token_bitmask_inplace(row, self._bitmask[item.seq])
                    run.stats.mask_s += max(0.0, mask_wait) + time.perf_counter() - t1
                run.record_forward(dt)
                finish = run.step(row)
            except BaseException as exc:  # noqa: BLE001
                self._fail(item, exc)
                continue
            if finish is not None:
                self._finish(item, finish)
