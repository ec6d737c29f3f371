"""llama.cpp through llama-cpp-python: the default runtime for GGUF files (the embedded model).

Only llama-cpp-python's low-level pieces are used (decode a batch, read the last logits, drop KV
entries past a position); sampling, masks and jump-forward are ours. ctypes releases the GIL while
llama.cpp decodes, so the next mask can be computed in parallel.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from strictgen.errors import ModelError
from strictgen.tokenizer.info import TokenizerInfo

from .gguf_meta import gguf_chat_settings
from .kv_cache import KVSequence, aligned_pieces
from .model import ForwardStats, Model


_LOAD_LOCK = threading.Lock()


def open_llama(path: str | Path, *, extra_buffers: bool = False, **kwargs):
    """A `llama_cpp.Llama` for the GGUF at `path`, its weights in llama.cpp's plain CPU buffers.

    Why: llama.cpp is built for the CPU it runs on, and its CPU backend may repack weights into
    "extra buffer types" for that CPU. On Intel CPUs with AMX (every Xeon since Sapphire Rapids)
    the AMX buffer takes Q4_0/Q4_1/Q8_0 weights, and the first matrix product in it segfaults
    (llama.cpp issue 20824, closed without a fix), killing the process: no Python error to catch.
    `llama_model_params.use_extra_bufts = False` keeps every weight in the ordinary CPU buffer,
    which runs on every x86-64 and ARM CPU. llama-cpp-python's `Llama` has no keyword for it and
    builds its parameters from `llama_model_default_params()` inside `__init__`, so that function
    is swapped for one that turns the field off for the length of the load (under a lock: loads
    are rare, and a load on another thread meanwhile only gets the same safe setting). The result
    is checked: a `Llama` that still asks for extra buffers is refused rather than left to crash.

    `extra_buffers=True` keeps llama.cpp's default, for measuring what the repacked path gives on
    a CPU where it works (docs/generation.md)."""
    import llama_cpp
    from llama_cpp import llama_cpp as native

    with _LOAD_LOCK:
        default_params = native.llama_model_default_params

        def params_without_extra_buffers():
            params = default_params()
            params.use_extra_bufts = extra_buffers
            return params

        native.llama_model_default_params = params_without_extra_buffers
        try:
            llm = llama_cpp.Llama(model_path=str(path), **kwargs)
        finally:
            native.llama_model_default_params = default_params
    if bool(llm.model_params.use_extra_bufts) != extra_buffers:
        llm.close()
        raise ModelError(f"llama-cpp-python {llama_cpp.__version__} loaded {path} without use_extra_bufts={extra_buffers}")
    return llm


@dataclass
class _Piece:
    """An aligned piece of one sequence's feed; `row` is the feed's index when its logits are wanted."""

    seq: int
    pos: int
    tokens: list[int]
    row: int


class LlamaCppModel(Model):
    runtime = "llama.cpp"

    def __init__(self, path: str | Path, *, n_ctx: int = 4096, threads: int | None = None):
        super().__init__()
        try:
            import llama_cpp
        except ImportError as exc:
            raise ModelError("llama-cpp-python is not installed: pip install 'strictgen[llama]' (builds from source)") from exc
        self._llama_cpp = llama_cpp
        path = Path(path)
        # llama-cpp-python's own default (half the logical cores): llama.cpp's threads spin while
        # they wait, so leaving a core free keeps them fast and lets the next mask run beside them
        threads = threads or max(1, (os.cpu_count() or 2) // 2)
        try:
            self.llm = open_llama(
                path, n_ctx=n_ctx, n_batch=512, n_threads=threads, n_threads_batch=threads, logits_all=False, verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"llama.cpp cannot load {path}: {exc}") from exc
        self.name = path.name
        self.path = path
        self.n_ctx = n_ctx
        width = int(self.llm.n_vocab())
        self.tokenizer_info = TokenizerInfo.from_gguf(path, vocab_size=width)
        self.chat_template, self.add_bos, self.bos_token_id = gguf_chat_settings(path)

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def _forward(self, tokens: list[int]) -> np.ndarray:
        llm = self.llm
        if len(self.tokens) + len(tokens) > self.n_ctx:
            raise ModelError(f"context full: {len(self.tokens)} + {len(tokens)} tokens exceed n_ctx={self.n_ctx}")
        llm.n_tokens = len(self.tokens)
        t0 = time.perf_counter()
        try:
            llm.eval(tokens)
        except RuntimeError as exc:
            raise ModelError(f"llama.cpp decode failed: {exc}") from exc
        ptr = llm._ctx.get_logits_ith(-1)
        logits = np.ctypeslib.as_array(ptr, shape=(self.vocab_size,)).astype(np.float32, copy=True)
        self.stats.extra["last_forward_s"] = time.perf_counter() - t0
        return logits

    def _truncate(self, length: int) -> None:
        # eval() drops KV entries from n_tokens onwards before decoding
        self.llm.n_tokens = length
        self.llm._ctx.kv_cache_seq_rm(-1, length, -1)

    def close(self) -> None:
        llm, self.llm = self.llm, None
        if llm is not None:
            llm.close()


class LlamaCppBatch:
    """One llama.cpp context holding up to `n_seq` sequences, decoded together (one pass per step).

    Built on a loaded LlamaCppModel's weights (its own context stays for tokenization only). Each
    sequence has its seq_id in the KV cache (a KV stream of its own) and up to `n_ctx` tokens.
    `decode` splits every feed into pieces aligned to absolute positions (kv_cache.py): a whole
    aligned chunk goes through a pass of its own, so the prefix any request may reuse never depends
    on what shared its passes; the other pieces of all sequences share one pass, or, with
    `deterministic=True`, each gets a pass of its own, so a sequence gets bit for bit the logits it
    gets alone whatever else runs (at the cost of the batch's shared weight reads: docs/serve.md)."""

    def __init__(
        self, model: LlamaCppModel, *, n_seq: int, n_ctx: int = 4096, threads: int | None = None, n_batch: int = 512,
        deterministic: bool = False,
    ):
        import llama_cpp
        from llama_cpp import _internals

        if n_seq < 1:
            raise ModelError("a batch needs at least one sequence")
        self._llama_cpp = llama_cpp
        self.model = model
        self.n_seq = n_seq
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.deterministic = deterministic
        self.vocab_size = model.vocab_size
        # all cores, not half as for a lone sequence: the batch is the only decoding, and on 2 cores
        # that beats leaving one to the masks (serve_throughput, 8 requests: 80 -> 130 tokens/s)
        threads = threads or max(1, os.cpu_count() or 1)
        # the single-sequence context's settings (flash attention, RoPE scaling...), so a sequence
        # decoded here gets the logits it gets there
        base = model.llm.context_params
        params = type(base).from_buffer_copy(base)
        params.n_ctx = n_ctx * n_seq
        params.n_batch = n_batch
        params.n_ubatch = n_batch
        params.n_seq_max = n_seq
        params.n_threads = threads
        params.n_threads_batch = threads
        params.kv_unified = False  # a KV stream per sequence
        try:
            self._ctx = _internals.LlamaContext(model=model.llm._model, params=params, verbose=False)
        except ValueError as exc:
            raise ModelError(f"llama.cpp cannot create a context for {n_seq} sequences: {exc}") from exc
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self.seqs = [KVSequence(model.kv.chunk) for _ in range(n_seq)]  # what the cache holds per sequence
        self.stats = ForwardStats()

    def truncate(self, seq: int, length: int) -> None:
        """Roll sequence `seq` back to its first `length` tokens."""
        held = self.seqs[seq]
        if not 0 <= length <= len(held.tokens):
            raise ModelError(f"cannot roll sequence {seq} back to {length} tokens: it holds {len(held.tokens)}")
        if length < len(held.tokens):
            self._llama_cpp.llama_memory_seq_rm(self._ctx.memory, seq, length, -1)
            held.truncate(length)

    def decode(self, feeds: list[tuple[int, list[int]]]) -> list[np.ndarray]:
        """Append each (seq, tokens) to its sequence; return the float32 logits after each feed's
        last token, in order. Each round takes the next aligned piece of every feed."""
        for seq, toks in feeds:
            if not toks:
                raise ModelError("decode needs at least one token per sequence")
            if len(self.seqs[seq].tokens) + len(toks) > self.n_ctx:
                raise ModelError(f"context full: {len(self.seqs[seq].tokens)} + {len(toks)} tokens exceed n_ctx={self.n_ctx}")
        queues: list[list[_Piece]] = []
        for i, (seq, toks) in enumerate(feeds):
            base = len(self.seqs[seq].tokens)
            pieces = aligned_pieces(base, len(toks), self.seqs[seq].chunk)
            queues.append([_Piece(seq, pos, toks[pos - base : pos - base + n], i if pos - base + n == len(toks) else -1) for pos, n in pieces])
        out: list[np.ndarray | None] = [None] * len(feeds)
        t0 = time.perf_counter()
        calls = 0
        for round_ in range(max(len(q) for q in queues)):
            shared = []
            for q in queues:
                if round_ < len(q):
                    piece = q[round_]
                    if self.deterministic or self.seqs[piece.seq].whole_chunk(piece.pos, len(piece.tokens)):
                        calls += self._run([piece], out)
                    else:
                        shared.append(piece)
            if shared:
                calls += self._run(shared, out)
        dt = time.perf_counter() - t0
        self.stats.decode_calls += calls
        self.stats.decode_tokens += sum(len(t) for _, t in feeds)
        self.stats.decode_s += dt
        return out  # type: ignore[return-value]

    def _run(self, pieces: list["_Piece"], out: list) -> int:
        """Decode `pieces` (at most one per sequence) in as few passes as n_batch allows; store the
        logits rows asked for in `out`; return the number of passes."""
        entries = [(p.seq, p.pos + j, tok, p.row if j == len(p.tokens) - 1 else -1) for p in pieces for j, tok in enumerate(p.tokens)]
        b = self._batch
        passes = 0
        for start in range(0, len(entries), self.n_batch):
            chunk = entries[start : start + self.n_batch]
            for k, (seq, pos, tok, row) in enumerate(chunk):
                b.token[k] = tok
                b.pos[k] = pos
                b.n_seq_id[k] = 1
                b.seq_id[k][0] = seq
                b.logits[k] = row >= 0
            b.n_tokens = len(chunk)
            rc = self._llama_cpp.llama_decode(self._ctx.ctx, b)
            passes += 1
            if rc != 0:
                # a failed decode may leave part of the pieces in the cache: drop what it may have added
                for p in pieces:
                    self._llama_cpp.llama_memory_seq_rm(self._ctx.memory, p.seq, len(self.seqs[p.seq].tokens), -1)
                raise ModelError(f"llama.cpp decode failed (llama_decode returned {rc})")
            for k, (seq, pos, tok, row) in enumerate(chunk):
                if row >= 0:
                    ptr = self._llama_cpp.llama_get_logits_ith(self._ctx.ctx, k)
                    out[row] = np.ctypeslib.as_array(ptr, shape=(self.vocab_size,)).astype(np.float32, copy=True)
        alone = len(pieces) == 1 and passes == 1
        for p in pieces:
            self.seqs[p.seq].appended(p.pos, p.tokens, alone=alone)
        return passes

    def close(self) -> None:
        if self._batch is not None:
            self._llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        ctx, self._ctx = self._ctx, None
        if ctx is not None:
            ctx.close()
