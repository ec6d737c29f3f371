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

Modules: workload.py (schemas, documents, vocabularies), engines.py (one adapter per library),
timeouts.py (the per-cell budget), cells.py (one engine on one schema, and the statistics),
run.py (the runs and their medians), report.py (the table), batch.py (`--batch`: a decoding step
of a batch, engine by engine). This file wires the command line.
"""

from __future__ import annotations

import sys

from strictgen.bench.cells import EVICT_BYTES, measure_cell
from strictgen.bench.engines import (
    ENGINE_CLASSES,
    ENGINES,
    EngineUnavailable,
    LLGuidanceEngine,
    LLTokenizerSource,
    StrictgenEngine,
    XGrammarEngine,
    xgrammar_tokenizer_info,
)
from strictgen.bench.report import format_table
from strictgen.bench.run import one_torch_thread, run_bench
from strictgen.bench.timeouts import CellTimeout, cell_deadline
from strictgen.bench.workload import WARMUP_DOC, WARMUP_SCHEMA, BenchCase, Vocab, default_schemas_dir, load_cases, load_vocab

__all__ = [
    "ENGINES", "ENGINE_CLASSES", "EVICT_BYTES", "WARMUP_DOC", "WARMUP_SCHEMA", "BenchCase", "CellTimeout", "EngineUnavailable",
    "LLGuidanceEngine", "LLTokenizerSource", "StrictgenEngine", "Vocab", "XGrammarEngine", "add_arguments", "cell_deadline",
    "default_schemas_dir", "format_table", "load_cases", "load_vocab", "main", "measure_cell", "one_torch_thread", "run_bench",
    "xgrammar_tokenizer_info",
]


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
    parser.add_argument("--batch-steps", type=int, default=32,
                        help="decoding steps timed per batch size and phase (--batch); 0: until one pass over the workload ended")
    parser.add_argument("--batch-rows", default="fresh", choices=["fresh", "spread"],
                        help="--batch: rows start at their documents' beginnings, every token timed (fresh, default), "
                             "or part-way in, the prefixes fed untimed (spread)")
    parser.add_argument("--threads", type=int, default=None, help="threads of each engine's batch API (--batch; default: CPUs)")
    parser.add_argument("--batch-forward-ms", type=float, default=0.0,
                        help="--batch: an untimed pause per step standing for the model's forward pass, where an engine's "
                             "background work may run (default 0: steps back to back)")


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
