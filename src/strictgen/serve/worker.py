"""Running generations for concurrent requests: a pool of model slots, each with its own KV cache.

A Model holds one sequence, so each concurrent generation needs a slot of its own. Slots are
copies of the same model file (llama.cpp maps the weights, so a slot costs only its context).
A request waits for a free slot, runs the engine's generation loop in a thread (llama.cpp and the
mask code release the GIL, so slots decode in parallel), and reports its output as it grows. A
cancelled request (the client went away) stops at its next step. Requests share nothing mutable:
each has its own matcher, sampler and slot.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from dataclasses import dataclass
from typing import AsyncIterator, Callable

from strictgen.compile.compiled import CompiledGrammar
from strictgen.engine.generate import GenerationConfig, GenerationResult, generate
from strictgen.engine.model import Model
from strictgen.runtime.matcher import _complete_utf8_prefix


@dataclass
class Job:
    prompt_ids: list[int]
    grammar: CompiledGrammar | None
    config: GenerationConfig


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
        model = self._free.get()
        try:

            def progress(ids: list[int]) -> bool:
                if cancelled is not None and cancelled.is_set():
                    return False
                if on_text is not None:
                    on_text(_complete_utf8_prefix(model.detokenize(ids)))
                return True

            job.config.on_progress = progress
            result = generate(model, job.prompt_ids, job.grammar, job.config)
            if self.on_finished is not None:
                self.on_finished(job, result)
            return result
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
