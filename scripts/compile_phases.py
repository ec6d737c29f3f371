"""Where a cold compile's time goes, by phase, for named bench schemas (or ALL): the JSON Schema
front end (and its rule-size planning), the automata (rule DFAs: lowering + determinising;
trimming + minimising; the shared-node walk), the pushdown machine's set-up and the token masker's
(horizon classes). Wall time (with --cpu: this thread's CPU time, which a loaded machine's
preemptions do not reach), the best of REPEATS fresh-compiler compiles per schema; nested
phases are inside their parents (front.sizes in front, aut.* in automaton); core.* are the
regular core's determinising and trimming + minimising wherever they run (front-end questions,
embedded pieces, rule DFAs).

--dir DIR reads the schemas of DIR instead of the bench's (maskbench-dev: `{"schema": ...}` files,
no documents needed); --each prints each schema's phases too (its best compile).

    PYTHONPATH=<tree>/src python scripts/compile_phases.py NAME[,NAME...]|ALL [REPEATS] [--cpu] [--dir DIR] [--each]"""

import json
import sys
import time
from pathlib import Path

import strictgen as sg
import strictgen.compile.automaton as automaton
import strictgen.compile.compiled as compiled
import strictgen.grammar.json_schema as json_schema
import strictgen.grammar.schema.emitter as schema_emitter
import strictgen.grammar.schema.entry as schema_entry
from strictgen import bench

SPENT: dict[str, float] = {}
CLOCK = time.thread_time if "--cpu" in sys.argv else time.perf_counter


def timed(module, name: str, label: str) -> None:
    inner = getattr(module, name)

    def wrapper(*args, **kwargs):
        t0 = CLOCK()
        try:
            return inner(*args, **kwargs)
        finally:
            SPENT[label] = SPENT.get(label, 0.0) + CLOCK() - t0

    setattr(module, name, wrapper)


def main() -> None:
    argv = sys.argv[1:]
    folder = argv.pop(argv.index("--dir") + 1) if "--dir" in argv else None
    args = [a for a in argv if a not in ("--cpu", "--dir", "--each")]
    names = set(args[0].split(","))
    repeats = int(args[1]) if len(args) > 1 else 10
    for module, name, label in [
        (json_schema, "json_schema_grammar", "front"), (schema_emitter, "call_big_rules", "front.sizes"),
        (schema_entry, "Normalizer", "front.normalize"),
        (automaton.rule_facts, "productive_rules", "aut.facts"), (automaton.rule_facts, "check_left_recursion", "aut.facts"),
        (compiled.automaton, "compile_automaton", "automaton"), (automaton, "_rule_dfa", "aut.rule_dfas"),
        (automaton.regular, "determinize", "core.determinize"), (automaton.regular, "minimal", "core.trim+minimize"),
        (automaton.regular, "minimal_with_splits", "core.trim+minimize"),
        (automaton, "shared_nodes", "aut.shared_nodes"), (compiled, "PushdownMachine", "machine"), (compiled, "TokenMasker", "masker"),
    ]:
        timed(module, name, label)
    tok = sg.TokenizerInfo.from_name("qwen")
    sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(bench.WARMUP_SCHEMA))
    total: dict[str, float] = {}
    for name, schema in _schemas(folder):
        if name not in names and "ALL" not in names:
            continue
        best = None
        for _ in range(repeats):
            SPENT.clear()
            t0 = CLOCK()
            try:
                sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(schema))
            except sg.StrictgenError:
                break
            SPENT["total"] = CLOCK() - t0
            best = dict(SPENT) if best is None or SPENT["total"] < best["total"] else best
        if best:
            if "--each" in sys.argv:
                print(name, _line(best))
            for k, v in best.items():
                total[k] = total.get(k, 0.0) + v
    print("all", _line(total))


def _line(spent: dict[str, float]) -> str:
    return " ".join(f"{k}={v * 1e3:.1f}ms ({v / spent['total']:.0%})" for k, v in sorted(spent.items()))


def _schemas(folder: str | None):
    """(name, schema) of the bench's cases, or of every `{"schema": ...}` file in `folder`."""
    if folder is None:
        return [(case.name, case.schema_text) for case in bench.load_cases(bench.default_schemas_dir())]
    return [(p.stem, json.loads(p.read_text())["schema"]) for p in sorted(Path(folder).glob("*.json"))]


if __name__ == "__main__":
    main()
