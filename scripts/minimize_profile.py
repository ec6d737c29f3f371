"""The regular core's work on real rule automata, timed alone: every rule DFA the compiles of the
bench (or of named maskbench-dev schemas) trim and minimise, and every NFA they determinise, kept
and run again here (thread CPU, best of 3 over all of them): determinise, trim, the minimisation's
set-up alone (refine(0)), its first round (refine(1)), Moore's rounds with their history
(minimize_rounds) and Hopcroft's (minimize). Also Moore's rounds on (a|b)*a(a|b){14} (32,768
states, where signature rounds cost 4x Hopcroft) and a 4,000-place counter. What compile_phases'
core.* phases hold, without the compiles around them: for C changes, run two trees alternately.

    PYTHONPATH=<tree>/src python scripts/minimize_profile.py [bench | NAME[,NAME...]] [--dir DIR]"""

import json
import sys
from pathlib import Path

import regular_micro  # this folder's: the same timer

import strictgen as sg
from strictgen import bench, regular
from strictgen.regular import NFA


def best(f) -> float:
    """ms, the best of 3 (regular_micro's timer)"""
    return regular_micro.best(f, 3) * 1e3


def collected(cases: list) -> tuple[list, list]:
    """(the trimmed DFAs minimal_with_splits was given, the (nfa, start, final) determinised) over
    fresh compiles of `cases`."""
    trimmed, nfas = [], []
    minimal_with_splits, determinize = regular.minimal_with_splits, regular.determinize

    def keep_trimmed(dfa, productive=None):
        trimmed.append(dfa.trim(productive))
        return minimal_with_splits(dfa, productive)

    def keep_nfa(nfa, start, final, *args):
        nfas.append((nfa, start, final))
        return determinize(nfa, start, final, *args)

    regular.minimal_with_splits, regular.determinize = keep_trimmed, keep_nfa
    tok = sg.TokenizerInfo.from_name("qwen")
    for schema in cases:
        try:
            sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(schema))
        except sg.StrictgenError:
            pass
    regular.minimal_with_splits, regular.determinize = minimal_with_splits, determinize
    return trimmed, nfas


def synthetic() -> dict[str, float]:
    k = 14
    window = NFA()
    for _ in range(k + 2):
        window.add_state()
    window.add_range(0, 0x61, 0x62, 0)
    window.add_range(0, 0x61, 0x61, 1)
    for i in range(1, k + 1):
        window.add_range(i, 0x61, 0x62, i + 1)
    adversarial = regular.determinize(window, 0, k + 1).trim()
    counter = NFA()
    start, final = counter.add_state(), counter.add_state()
    at = start
    for _ in range(4000):
        nxt = counter.add_state()
        counter.add_range(at, 0x61, 0x7A, nxt)
        counter.add_eps(at, final)
        at = nxt
    counter.add_eps(at, final)
    places = regular.determinize(counter, start, final).trim()
    return {"window_rounds": best(lambda: adversarial.minimize_rounds()), "window_hopcroft": best(lambda: adversarial.minimize()),
            "counter_rounds": best(lambda: places.minimize_rounds()), "counter_refine130": best(lambda: places.refine(130))}


def main() -> None:
    argv = sys.argv[1:]
    folder = Path(argv.pop(argv.index("--dir") + 1)) if "--dir" in argv else Path(__file__).resolve().parents[1].parent / "shared" / "data" / "maskbench-dev"
    which = argv[0] if argv else "bench"
    if which == "bench":
        cases = [case.schema_text for case in bench.load_cases(bench.default_schemas_dir())]
    else:
        cases = [json.loads((folder / f"{name}.json").read_text())["schema"] for name in which.split(",")]
    trimmed, nfas = collected(cases)
    res = {
        "determinize": best(lambda: [regular.lazy(n, s, f).determinize() for n, s, f in nfas]),
        "trim": best(lambda: [t.trim() for t in trimmed]),
        "setup": best(lambda: [t.refine(0) for t in trimmed]),
        "round1": best(lambda: [t.refine(1) for t in trimmed]),
        "rounds": best(lambda: [t.minimize_rounds() for t in trimmed]),
        "hopcroft": best(lambda: [t.minimize() for t in trimmed]),
        **synthetic(),
    }
    print(f"{len(trimmed)} rule DFAs ({sum(t.num_states for t in trimmed)} states), {len(nfas)} NFAs:", " ".join(f"{k}={v:.2f}" for k, v in res.items()), "(ms)")


if __name__ == "__main__":
    main()
