"""The raw DFAs a bench pass spells (the inputs `grammar.automata.spelled_dfa` does not find in its
cache: every spelled string language of the bench schemas, compiled in one process with a fresh
compiler each, as `strictgen bench` does), saved once to a file, then timed on their own by phase:
table_key, json_spelling.spell, minimal (of spell's result: what spelled_dfa paid for it before), and spelled_dfa whole with its cache emptied (thread CPU time, best of
REPEATS each, summed over inputs), with the states each phase gives.

    PYTHONPATH=<tree>/src python scripts/spelling_inputs.py --save /tmp/spell-inputs.pkl
    PYTHONPATH=<tree>/src python scripts/spelling_inputs.py --load /tmp/spell-inputs.pkl [--repeats 5]
    PYTHONPATH=<tree>/src python scripts/spelling_inputs.py --load /tmp/spell-inputs.pkl --loop 200

    PYTHONPATH=<tree>/src python scripts/spelling_inputs.py --in-compile

--in-compile times, inside one bench pass (as --save compiles it; thread CPU, summed), the whole
compile, spelled_dfa and its parts (table_key, spell) and json_escaped (wrapped where the schema
front end imported it): what a compile pays for spellings, caches cold as in `strictgen bench`.
--loop N runs spelled_dfa (cache emptied) on every input N times and prints nothing else: a
workload for perf or py-spy. --max-raw-states N leaves out raw DFAs of more states (past
json_spelling.SPELL_ALL_STATES they take the printable-ASCII-raw mode, and one such input is most
of the time)."""

import argparse
import inspect
import pickle
import time

import strictgen as sg
from strictgen import bench, regular
from strictgen.grammar import automata
from strictgen.grammar.json_spelling import spell


def capture(path: str) -> None:
    inputs: list[tuple[bytes, bytes]] = []
    original = automata.spell  # what spelled_dfa calls on a cache miss: what a compile pays

    def recording(raw, *rest):
        inputs.append((raw.table256(), raw.accepting()))
        return original(raw, *rest)

    automata.spell = recording
    tok = bench.load_vocab("qwen").build_info()
    for case in bench.load_cases(bench.default_schemas_dir()):
        try:
            sg.GrammarCompiler(tok).compile_json_schema(case.schema_text)
        except sg.StrictgenError:
            continue
    automata.spell = original
    with open(path, "wb") as f:
        pickle.dump(inputs, f)
    print(f"{len(inputs)} raw DFAs ({sum(len(a) for _, a in inputs)} states) saved to {path}")


def bench_pass() -> float:
    """Compile every bench schema once with a fresh compiler (as `strictgen bench` does, after one
    warm-up compile that pays the lazy imports); the thread CPU seconds of the compiles."""
    tok = bench.load_vocab("qwen").build_info()
    sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}}))
    total = 0.0
    for case in bench.load_cases(bench.default_schemas_dir()):
        t0 = time.thread_time()
        try:
            sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(case.schema_text))
        except sg.StrictgenError:
            pass
        total += time.thread_time() - t0
    return total


def in_compile() -> None:
    from strictgen.grammar import json_escapes
    from strictgen.grammar.schema import emit_strings, emitter, length_product

    spent: dict[str, float] = {}

    def timing(module, name, label):
        original = getattr(module, name)

        def timed(*args, **kwargs):
            t0 = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.thread_time() - t0

        setattr(module, name, timed)

    timing(automata, "spelled_dfa", "spelled_dfa")
    timing(automata, "table_key", "table_key")
    timing(automata, "spell", "spell")
    for module in (json_escapes, emitter, emit_strings, length_product):
        timing(module, "json_escaped", "json_escaped")
    total = bench_pass()
    print(f"compile {total * 1e3:.0f} ms: " + ", ".join(f"{k} {v * 1e3:.1f} ms ({100 * v / total:.1f}%)" for k, v in spent.items()))


def best_of(repeats: int, fn, *args):
    best, got = float("inf"), None
    for _ in range(repeats):
        t0 = time.thread_time()
        got = fn(*args)
        best = min(best, time.thread_time() - t0)
    return best, got


def spell_of(raw: regular.DFA) -> regular.DFA:
    if "raw" in inspect.signature(spell).parameters:  # json_spelling.spell(raw, max_states) since the spell branch
        return spell(raw, automata.MAX_DFA_STATES)
    return spell(raw.table256(), raw.accepting(), automata.MAX_DFA_STATES)


def uncached(raw: regular.DFA) -> regular.DFA:
    automata.forget_kept_automata()
    return automata.spelled_dfa(raw)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--save")
    ap.add_argument("--load")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--loop", type=int, default=0)
    ap.add_argument("--in-compile", action="store_true")
    ap.add_argument("--max-raw-states", type=int, default=1 << 30, help="leave out bigger raw DFAs (the fallback mode's)")
    args = ap.parse_args()
    if args.save:
        capture(args.save)
        return
    if args.in_compile:
        in_compile()
        return
    with open(args.load, "rb") as f:
        raws = [regular.dense(table, accepting) for table, accepting in pickle.load(f) if len(accepting) <= args.max_raw_states]
    if args.loop:
        for _ in range(args.loop):
            for raw in raws:
                uncached(raw)
        return
    totals = dict.fromkeys(["table_key", "spell", "minimal", "spelled_dfa"], 0.0)
    states = [0, 0, 0, 0]
    for raw in raws:
        t, key = best_of(args.repeats, automata.table_key, raw)
        totals["table_key"] += t
        t, spelled = best_of(args.repeats, spell_of, raw)
        totals["spell"] += t
        t, small = best_of(args.repeats, regular.minimal, spelled)
        totals["minimal"] += t
        t, whole = best_of(args.repeats, uncached, raw)
        totals["spelled_dfa"] += t
        for i, dfa in enumerate((raw, spelled, small, whole)):
            states[i] += dfa.num_states
    print(f"{len(raws)} inputs, best of {args.repeats} (thread CPU): " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in totals.items()))
    print(f"states: raw {states[0]}, spelled {states[1]}, minimal {states[2]}, spelled_dfa {states[3]}")


if __name__ == "__main__":
    main()
