"""`strictgen bench --batch 1,16,64,128`: one decoding step of a batch, engine by engine (DESIGN §5).

The protocol of issue 28, on CPU torch here and on CUDA logits where a GPU is present:
- every row is a request constrained by one of the bench schemas and teacher-forced on one of its
  valid documents (the token fed at each step is the document's next token, then EOS), so every
  engine walks the same states;
- rows start (`rows`, `--batch-rows`) *fresh* (the default): every row's first request starts at
  its document's beginning and every token from there is fed in a timed step, so the first masks
  and the rule builds a compile deferred to decoding are paid inside the timed fills, as a fresh
  request pays them; or *spread*: row r's first request has consumed a share r/B of its document
  untimed, so the batch starts in the mix of positions continuous batching settles into (cheaper
  cold fills: that untimed prefix holds most of the first masks and rule builds, which is why it
  is not the default). The result counts the tokens fed untimed (`untimed_tokens`: 0 when fresh);
- `steps` timed decoding steps per batch size and phase; 0: as many as it takes for every request
  of one pass over the workload to reach its EOS (every document decoded whole, once, timed);
- when a request has accepted its EOS, the next request of the workload takes its row before the
  next step, with a fresh matcher (not timed), as in continuous batching;
- per step, each engine's own batch API is timed: fill (the whole batch's masks), apply (to a
  (B, V) float32 logits tensor, reset before each step without timing) and accept; steps follow
  each other at once, or (`forward_ms`, `--batch-forward-ms`) after an untimed pause that stands
  for the model's forward pass, where a real server's CPU is free for an engine's background work
  (strictgen builds the rules a compile deferred there: runtime/prefetch.py);
- *cold*: a fresh compiler, the grammars compiled before the steps (not timed), so the fills meet
  states for the first time; *warm*: the same request sequence again on the same compiled grammars.

Engines: strictgen (`fill_next_token_bitmask_batch`, `apply_token_bitmask_inplace`,
`accept_token_batch`); xgrammar (`BatchGrammarMatcher`, its `apply_token_bitmask_inplace`);
llguidance (`LLExecutor` through `llguidance.numpy.fill_next_token_bitmask_par` and
`consume_token_par`; its masks applied with xgrammar's kernel as vLLM does, else llguidance's own
numpy apply). Only strictgen's public API is used, so the module also measures an older strictgen
(compare trees by interleaved runs).

With more rows than documents, a fresh batch holds the same document in several rows at the same
position (the workload repeats); an engine that computes a state's mask once per step gains there.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from strictgen.bench import default_schemas_dir, load_cases, load_vocab, one_torch_thread

PHASES = ("cold", "warm")
ROW_STARTS = ("fresh", "spread")
PARTS = ("fill", "apply", "accept")


# ---- engines: the batch API of each library ------------------------------------------------------


class BatchEngine:
    name = "?"

    def __init__(self, vocab, info, threads: int, device: str):
        self.vocab, self.info, self.threads, self.device = vocab, info, threads, device
        self.V = info.vocab_size
        self.eos = int(info.eos_token_ids[0])

    has_any_order = False  # whether compile(..., any_order=True) accepts object members in any order

    def new_compiler(self): ...
    def compile(self, compiler, schema_text: str, any_order: bool = False): ...
    def matcher(self, artefact): ...
    def allocate(self, rows: int): ...
    def fill(self, matchers, mask) -> None: ...
    def apply(self, logits, mask) -> None: ...
    def accept(self, matchers, tokens: list[int]) -> list[bool]: ...


class StrictgenBatch(BatchEngine):
    name = "strictgen"

    def __init__(self, *a):
        super().__init__(*a)
        import strictgen as sg

        self.sg = sg

    def new_compiler(self):
        return self.sg.GrammarCompiler(self.info)

    has_any_order = True

    def compile(self, compiler, schema_text, any_order=False):
        return compiler.compile_json_schema(schema_text, any_order=True) if any_order else compiler.compile_json_schema(schema_text)

    def matcher(self, artefact):
        return self.sg.GrammarMatcher(artefact)

    def allocate(self, rows):
        return self.sg.allocate_token_bitmask(rows, self.V)

    def fill(self, matchers, mask):
        self.sg.fill_next_token_bitmask_batch(matchers, mask)

    def apply(self, logits, mask):
        self.sg.apply_token_bitmask_inplace(logits, mask)

    def accept(self, matchers, tokens):
        batch_accept = getattr(self.sg, "accept_token_batch", None)  # absent from trees before issue 28
        if batch_accept is None:
            return [m.accept_token(t) for m, t in zip(matchers, tokens)]
        return batch_accept(matchers, tokens)


class XGrammarBatch(BatchEngine):
    name = "xgrammar"

    def __init__(self, *a):
        super().__init__(*a)
        import xgrammar as xgr

        from strictgen.bench import xgrammar_tokenizer_info

        self.xgr = xgr
        self.xinfo = xgrammar_tokenizer_info(xgr, self.info)
        self.batch = xgr.BatchGrammarMatcher(max_threads=self.threads)

    def new_compiler(self):
        return self.xgr.GrammarCompiler(self.xinfo, max_threads=self.threads)

    has_any_order = True

    def compile(self, compiler, schema_text, any_order=False):
        return compiler.compile_json_schema(schema_text, strict_mode=False, any_order=any_order)

    def matcher(self, artefact):
        return self.xgr.GrammarMatcher(artefact)

    def allocate(self, rows):
        return self.xgr.allocate_token_bitmask(rows, self.V)

    def fill(self, matchers, mask):
        self.batch.batch_fill_next_token_bitmask(matchers, mask)

    def apply(self, logits, mask):
        self.xgr.apply_token_bitmask_inplace(logits, mask.to(logits.device, non_blocking=True))

    def accept(self, matchers, tokens):
        return self.batch.batch_accept_token(matchers, tokens)


class LLGuidanceBatch(BatchEngine):
    name = "llguidance"

    def __init__(self, *a):
        super().__init__(*a)
        import llguidance
        import llguidance.numpy as llnp

        from strictgen.bench import LLTokenizerSource

        self.llg, self.llnp = llguidance, llnp
        src = LLTokenizerSource(self.info, self.vocab.encode)
        self.tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(src), n_vocab=self.V, eos_token=list(self.info.eos_token_ids))
        self.executor = llguidance.LLExecutor(num_threads=self.threads)
        try:
            import xgrammar

            self.kernel = xgrammar.apply_token_bitmask_inplace
        except ImportError:
            self.kernel = None

    def new_compiler(self):
        return None

    def compile(self, compiler, schema_text, any_order=False):
        return self.llg.LLMatcher.grammar_from_json_schema(schema_text)

    def matcher(self, artefact):
        return self.llg.LLMatcher(self.tokenizer, artefact, log_level=0)

    def allocate(self, rows):
        return self.llnp.allocate_token_bitmask(rows, self.V)

    def fill(self, matchers, mask):
        self.llnp.fill_next_token_bitmask_par(self.executor, [(m, i) for i, m in enumerate(matchers)], mask)

    def apply(self, logits, mask):
        if self.kernel is not None:
            import torch

            self.kernel(logits, torch.from_numpy(mask).to(logits.device, non_blocking=True))
        else:
            self.llnp.apply_token_bitmask_inplace(logits.numpy(), mask)

    def accept(self, matchers, tokens):
        return self.executor.consume_token_par(list(zip(matchers, tokens)))


ENGINE_CLASSES: dict[str, Callable[..., BatchEngine]] = {"strictgen": StrictgenBatch, "xgrammar": XGrammarBatch, "llguidance": LLGuidanceBatch}


# ---- the decoding loop ---------------------------------------------------------------------------


@dataclass
class Request:
    case: int  # index into the compiled grammars
    ids: list[int]  # the document's tokens, then EOS
    pos: int = 0


def request_stream(workload: list[tuple[int, list[int]]], eos: int):
    """The workload's (grammar, document tokens) pairs in order, forever, as fresh requests."""
    while True:
        for case, ids in workload:
            yield Request(case, [*ids, eos])


@dataclass
class StepTimes:
    """Seconds per timed step for each part, and what the timed steps covered."""

    times: dict[str, list[float]]
    untimed_tokens: int  # accepted outside the timed steps (the spread rows' prefixes)
    timed_tokens: int
    finished: int  # requests that reached their EOS inside the timed steps


def run_steps(engine: BatchEngine, grammars: list, workload, batch: int, steps: int, logits, base, rows: str = "fresh",
              forward_s: float = 0.0) -> StepTimes:
    """`steps` decoding steps of `batch` rows (0: until one pass over the workload has ended),
    the rows started as `rows` says (module docstring); seconds per step for fill, apply, accept,
    and the fill's process CPU time (every thread of it: what a loaded machine does not inflate
    the way it inflates wall time, for engines with thread pools of their own too)."""
    if rows not in ROW_STARTS:
        raise ValueError(f"rows must be one of {', '.join(ROW_STARTS)}, not {rows!r}")
    stream = request_stream(workload, engine.eos)
    requests, matchers, untimed = [], [], 0
    for r in range(batch):
        req = next(stream)
        m = engine.matcher(grammars[req.case])
        skip = (len(req.ids) - 1) * r // max(1, batch) if rows == "spread" else 0  # spread over their documents
        if skip and not all(engine.accept([m], [t])[0] for t in req.ids[:skip]):
            raise RuntimeError(f"{engine.name} refused a valid document of grammar {req.case}")
        req.pos, untimed = skip, untimed + skip
        requests.append(req)
        matchers.append(m)
    serial = list(range(batch))  # each row's request's place in the stream: one pass is the first len(workload)
    issued, unfinished = batch, min(batch, len(workload))
    mask = engine.allocate(batch)
    times = {part: [] for part in (*PARTS, "fill_cpu")}
    clock, cpu = time.perf_counter, time.process_time
    rows_logits = logits[:batch]
    step, fed, finished = 0, 0, 0
    while (step < steps) if steps > 0 else (unfinished > 0):
        step += 1
        rows_logits.copy_(base[:batch])
        tokens = [req.ids[req.pos] for req in requests]
        c0, t0 = cpu(), clock()
        engine.fill(matchers, mask)
        t1, c1 = clock(), cpu()
        engine.apply(rows_logits, mask)
        _sync(rows_logits)
        t2 = clock()
        accepted = engine.accept(matchers, tokens)
        t3 = clock()
        times["fill"].append(t1 - t0)
        times["fill_cpu"].append(c1 - c0)
        times["apply"].append(t2 - t1)
        times["accept"].append(t3 - t2)
        fed += batch
        if not all(accepted):
            raise RuntimeError(f"{engine.name} refused a token of a valid document")
        for r, req in enumerate(requests):
            req.pos += 1
            if req.pos == len(req.ids):  # EOS accepted: the next request takes the row
                finished += 1
                if serial[r] < len(workload):
                    unfinished -= 1
                requests[r] = req = next(stream)
                matchers[r] = engine.matcher(grammars[req.case])
                serial[r], issued = issued, issued + 1
                unfinished += serial[r] < len(workload)
        if forward_s:
            time.sleep(forward_s)  # the model's forward pass (untimed), where an engine's background work may run
    return StepTimes(times, untimed, fed, finished)


def _sync(tensor) -> None:
    if tensor.device.type == "cuda":
        import torch

        torch.cuda.synchronize(tensor.device)


def common_workload(engines, texts: list[str], documents: list[list[list[int]]]) -> tuple[list[tuple[int, list[int]]], dict[str, dict[str, int]]]:
    """The (schema, document tokens) pairs every engine compiles and accepts to EOS, token by token:
    the same work for all. Checked on compilers of their own, so the timed compilers start cold.
    Also, per engine, what it left out of what the engines before it kept: documents of schemas it
    did not compile, documents it refused, and of those the ones it accepts with members in any order (refused only because
    their members are in another order than the schema lists them: the documented default)."""
    kept = [(i, ids) for i in range(len(texts)) for ids in documents[i]]
    left_out: dict[str, dict[str, int]] = {}
    for engine in engines:
        compiler, grammars = engine.new_compiler(), {}
        for i in sorted({i for i, _ in kept}):
            try:
                grammars[i] = engine.compile(compiler, texts[i])
            except Exception:  # noqa: BLE001  (a schema this engine does not compile)
                pass
        offered = len(kept)
        kept = [(i, ids) for i, ids in kept if i in grammars]
        accepted = [_accepts(engine, grammars[i], [*ids, engine.eos]) for i, ids in kept]
        refused = [pair for pair, ok in zip(kept, accepted) if not ok]
        order = sum(_accepts_any_order(engine, compiler, texts[i], ids) for i, ids in refused) if engine.has_any_order else 0
        left_out[engine.name] = {"not_compiled": offered - len(kept), "refused": len(refused), "member_order": order}
        kept = [pair for pair, ok in zip(kept, accepted) if ok]
    return kept, left_out


def _accepts_any_order(engine: BatchEngine, compiler, text: str, ids: list[int]) -> bool:
    try:
        grammar = engine.compile(compiler, text, any_order=True)
    except Exception:  # noqa: BLE001  (not compiled that way either: not a matter of order)
        return False
    return _accepts(engine, grammar, [*ids, engine.eos])


def _accepts(engine: BatchEngine, grammar, ids: list[int]) -> bool:
    matcher = engine.matcher(grammar)
    return all(engine.accept([matcher], [t])[0] for t in ids)


# ---- the benchmark -------------------------------------------------------------------------------


def _summary(values: list[float]) -> dict[str, float]:
    ms = sorted(v * 1e3 for v in values)
    return {"mean": statistics.fmean(ms), "p50": statistics.median(ms), "p99": ms[min(len(ms) - 1, int(0.99 * len(ms)))]}


def run_batch_bench(
    batches: list[int],
    *,
    schemas: str | Path | None = None,
    tokenizer: str = "qwen",
    engines: list[str] | None = None,
    limit: int | None = None,
    steps: int = 32,
    rows: str = "fresh",
    threads: int | None = None,
    device: str = "cpu",
    log: Callable[[str], None] | None = None,
    forward_ms: float = 0.0,
) -> dict[str, Any]:
    """Run the batch benchmark; results per engine, batch size and phase (ms per step). `rows`:
    "fresh" or "spread" (module docstring); `steps` 0: one whole pass over the workload;
    `forward_ms`: an untimed pause per step standing for the model's forward pass."""
    import torch

    if rows not in ROW_STARTS:
        raise ValueError(f"rows must be one of {', '.join(ROW_STARTS)}, not {rows!r}")
    say = log or (lambda s: None)
    threads = threads or os.cpu_count() or 1
    vocab = load_vocab(tokenizer)
    info = vocab.build_info()
    cases = load_cases(Path(schemas) if schemas is not None else default_schemas_dir(), limit)
    documents = [[vocab.encode(doc) for doc in case.documents] for case in cases]
    texts = [case.schema_text for case in cases]
    available: dict[str, BatchEngine] = {}
    unavailable: dict[str, str] = {}
    for name in ENGINE_CLASSES:
        try:
            available[name] = ENGINE_CLASSES[name](vocab, info, threads, device)
        except Exception as exc:  # noqa: BLE001  (a peer not installed, or broken)
            unavailable[name] = f"{type(exc).__name__}: {exc}"
    # the workload is what every installed engine accepts, timed or not: the same for any --engines
    workload, left_out = common_workload(available.values(), texts, documents)
    built = {name: available[name] for name in engines or list(ENGINE_CLASSES) if name in available}
    unavailable = {name: why for name, why in unavailable.items() if name in (engines or ENGINE_CLASSES)}
    usable = sorted({case for case, _ in workload})
    say(f"{len(usable)} schemas, {len(workload)} documents, {threads} threads, device {device}")
    width = info.vocab_size
    base = torch.randn(max(batches), width, generator=torch.Generator().manual_seed(0)).to(device)
    logits = base.clone()
    results: dict[str, Any] = {}
    for batch in batches:  # engines in turn at each size, so a machine's changing load falls on all of them
        for name, engine in built.items():
            compiler = engine.new_compiler()  # cold: nothing of this compiler's cache is warm yet
            grammars = {i: engine.compile(compiler, texts[i]) for i in usable}
            for phase in PHASES:  # warm: the same requests again on the same grammars
                run = run_steps(engine, grammars, workload, batch, steps, logits, base, rows, forward_ms / 1e3)
                times = run.times
                figures = {part: _summary(times[part]) for part in (*PARTS, "fill_cpu")}
                figures["total"] = _summary([sum(parts) for parts in zip(*(times[p] for p in PARTS))])
                figures["steps"], figures["untimed_tokens"] = len(times["fill"]), run.untimed_tokens
                figures["timed_tokens"], figures["finished"] = run.timed_tokens, run.finished
                results.setdefault(name, {}).setdefault(str(batch), {})[phase] = figures
                say(f"{name} batch {batch} {phase}: " + ", ".join(f"{p} {figures[p]['mean']:.2f}" for p in (*PARTS, "total")) + " ms/step")
    return {
        "meta": {"batches": batches, "steps": steps, "rows": rows, "threads": threads, "forward_ms": forward_ms, "device": device, "tokenizer": tokenizer,
                 "schemas": len(usable), "documents": len(workload), "torch": torch.__version__},
        "engines": results,
        "unavailable": unavailable,
        "left_out": left_out,
    }


def format_batch_table(result: dict[str, Any]) -> str:
    """Mean ms per step: one line per (batch, phase, engine), and strictgen / best peer. "fill CPU":
    the fill's process CPU ms per step, all threads (above the fill's wall time when threads work
    at once; the figure to read when the machine is loaded)."""
    meta = result["meta"]
    steps = f"{meta['steps']} steps" if meta["steps"] else "steps until one pass over the workload ended"
    lines = [f"batch bench: {meta['schemas']} schemas, {meta['documents']} documents, {steps}, rows {meta.get('rows', 'spread')}, "
             f"{meta['threads']} threads, {meta['device']}, torch {meta['torch']}"
             + (f", {meta['forward_ms']:g} ms untimed pause per step" if meta.get("forward_ms") else "") + " (ms per step, mean; fill p99)",
             "| batch | phase | engine | fill | fill p99 | fill CPU | apply | accept | total |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    engines = result["engines"]
    for batch in map(str, meta["batches"]):
        for phase in PHASES:
            for name, per_batch in engines.items():
                f = per_batch[batch][phase]
                fill_cpu = f"{f['fill_cpu']['mean']:.2f}" if "fill_cpu" in f else "-"
                lines.append(f"| {batch} | {phase} | {name} | {f['fill']['mean']:.2f} | {f['fill']['p99']:.2f} | {fill_cpu} | "
                             f"{f['apply']['mean']:.2f} | {f['accept']['mean']:.2f} | {f['total']['mean']:.2f} |")
            peers = [n for n in engines if n != "strictgen"]
            if "strictgen" in engines and peers:
                ratios = []
                for part in (*PARTS, "total"):
                    best = min(engines[n][batch][phase][part]["mean"] for n in peers)
                    ratios.append(f"{engines['strictgen'][batch][phase][part]['mean'] / best:.2f}x" if best > 0 else "-")
                ratios.insert(1, "")  # the fill p99 column
                cpu = [engines[n][batch][phase].get("fill_cpu", {}).get("mean") for n in ("strictgen", *peers)]
                ratios.insert(2, f"{cpu[0] / min(cpu[1:]):.2f}x" if None not in cpu and min(cpu[1:]) > 0 else "-")
                lines.append(f"| {batch} | {phase} | strictgen / best peer | " + " | ".join(ratios) + " |")
    cold = [per_batch[b]["cold"] for per_batch in engines.values() for b in map(str, meta["batches"])]
    if cold and "untimed_tokens" in cold[0]:
        lines.append(f"cold phases: {sum(f['untimed_tokens'] for f in cold):,} tokens fed untimed before the steps, "
                     f"{sum(f['timed_tokens'] for f in cold):,} in timed steps, {sum(f['finished'] for f in cold):,} requests ended")
    for name, out in result.get("left_out", {}).items():
        if out["not_compiled"] or out["refused"]:
            order = f" ({out['member_order']} only because their members are in another order than the schema lists them; " \
                    "any_order=True accepts them)" if out["member_order"] else ""
            lines.append(f"left out of the workload by {name}: {out['not_compiled']} documents of schemas it does not compile, "
                         f"{out['refused']} valid documents refused{order}")
    for name, why in result["unavailable"].items():
        lines.append(f"{name}: not run ({why})")
    return "\n".join(lines)


def main_batch(args) -> int:
    batches = [int(b) for b in args.batch.split(",") if b.strip()]
    engines = ["strictgen"] if args.no_peers else [e.strip() for e in args.engines.split(",") if e.strip()]
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    log = None if args.quiet else (lambda s: print(s, flush=True, file=sys.stderr))
    with one_torch_thread(True):  # torch's apply ops on one thread, as the single-row bench: see there
        result = run_batch_bench(batches, schemas=args.schemas, tokenizer=args.tokenizer, engines=engines, limit=args.limit,
                                 steps=args.batch_steps, rows=args.batch_rows, threads=args.threads, device=device, log=log,
                                 forward_ms=args.batch_forward_ms)
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(result, indent=1))
    print(format_batch_table(result))
    return 0
