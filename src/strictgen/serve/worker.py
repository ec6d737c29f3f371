"""Running generations for concurrent requests.

On llama.cpp (`BatchedPool`) one context holds a KV sequence per slot and a batch scheduler
(engine/batching.py) decodes every live request's new tokens in one forward pass per step, with the
matchers' masks filled as a batch; each request keeps its own matcher, sampler, stop strings and
budget. On other runtimes (`ModelPool`) slots are copies of the model, one request per copy, each
running the engine's generation loop in a thread. Either way a request waits for a free slot and
reports its output as it grows, and a cancelled request (the client went away) stops at its next
step. Requests share nothing mutable.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable

from strictgen.compile.compiled import CompiledGrammar
from strictgen.engine.generate import GenerationConfig, GenerationResult, generate
from strictgen.engine.model import Model
from strictgen.runtime.matcher import complete_utf8_prefix

from .trace import RequestTrace, current_trace


@dataclass
class Job:
    prompt_ids: list[int]
    grammar: CompiledGrammar | None
    config: GenerationConfig
    trace: RequestTrace | None = field(default_factory=current_trace)  # the HTTP request's record and deadline


class ModelPool:
    """`size` slots loaded by `load()`; the first slot also serves tokenization and templates."""

    def __init__(self, load: Callable[[], Model], size: int = 1):
        if size < 1:
            raise ValueError("the pool needs at least one slot")
        self.models = [load() for _ in range(size)]
        self.primary = self.models[0]
        self._free: queue.Queue[Model] = queue.Queue()
        for m in self.models:
            self._free.put(m)
        self.tokenize_lock = threading.Lock()  # the primary slot may be decoding while another request tokenizes
        self.on_finished: Callable[[Job, GenerationResult], None] | None = None  # observer (tests, metrics)

    @property
    def size(self) -> int:
        return len(self.models)

    def tokenize(self, fn: Callable[[Model], object]):
        """Call `fn(primary)` for tokenization / templates only (never a forward pass)."""
        with self.tokenize_lock:
            return fn(self.primary)

    def run(self, job: Job, on_text: Callable[[str], None] | None = None, cancelled: threading.Event | None = None) -> GenerationResult:
        """Run `job` on a free slot (blocking); `on_text` gets the whole output text after each step."""
        trace = job.trace

        def progress(ids: list[int]) -> bool:
            if cancelled is not None and cancelled.is_set():
                return False
            return trace is None or trace.step(len(ids))  # False: past the request's deadline

        def text(data: bytes) -> None:  # the run's output bytes (a healed prompt's own bytes left out)
            if on_text is not None:
                on_text(complete_utf8_prefix(data))

        job.config.on_progress = progress
        job.config.on_text = text
        result = self._generate(job) if trace is None else trace.run(job, lambda: self._generate(job))
        if self.on_finished is not None:
            self.on_finished(job, result)
        return result

    def _generate(self, job: Job) -> GenerationResult:
        model = self._free.get()
        try:
            return generate(model, job.prompt_ids, job.grammar, job.config)
        finally:
            self._free.put(model)

    async def stream(self, job: Job, cancelled: threading.Event) -> AsyncIterator[tuple[str, GenerationResult | None]]:
        """Yield (text so far, None) while generating, then (final text, result)."""
        loop = asyncio.get_running_loop()
        updates: asyncio.Queue = asyncio.Queue()

        def on_text(text: str) -> None:
            loop.call_soon_threadsafe(updates.put_nowait, ("text", text))

        def work() -> None:
            try:
                result = self.run(job, on_text, cancelled)
                loop.call_soon_threadsafe(updates.put_nowait, ("done", result))
            except BaseException as exc:  # noqa: BLE001 - handed to the request's task
                loop.call_soon_threadsafe(updates.put_nowait, ("error", exc))

        threading.Thread(target=work, name="strictgen-request", daemon=True).start()
        while True:
            kind, value = await updates.get()
            if kind == "text":
                yield value, None
            elif kind == "done":
                yield value.text, value
                return
            else:
                raise value

    def close(self) -> None:
        for m in self.models:
            m.close()


class BatchedPool(ModelPool):
    """`size` sequences in one llama.cpp context, decoded together (engine.batching.BatchScheduler).

    `model` (a LlamaCppModel) serves tokenization and templates; its weights back the batch context."""

    def __init__(self, model: Model, size: int = 1, *, n_ctx: int = 4096, threads: int | None = None, deterministic: bool = False):
        from strictgen.engine.batching import BatchScheduler
        from strictgen.engine.llama_cpp_runtime import LlamaCppBatch

        if size < 1:
            raise ValueError("the pool needs at least one slot")
        self.models = [model]
        self.primary = model
        self.backend = LlamaCppBatch(model, n_seq=size, n_ctx=n_ctx, threads=threads, deterministic=deterministic)
        self.scheduler = BatchScheduler(model, self.backend)
        self.tokenize_lock = threading.Lock()
        self.on_finished = None

    @property
    def size(self) -> int:
        return self.scheduler.n_seq

    def _generate(self, job: Job) -> GenerationResult:
        return self.scheduler.generate(job.prompt_ids, job.grammar, job.config)

    def close(self) -> None:
        self.scheduler.close()
        self.backend.close()
        super().close()
