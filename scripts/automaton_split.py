"""One schema's cold compile (a fresh GrammarCompiler and its first matcher, in a fresh process),
its thread CPU split where the automaton's share goes: compile_automaton, the rule builds inside it
(`_rule_dfa`: lowering and determinising; rules the machine's set-up builds at once are counted
too), the rules' trim + minimisation (`minimal_with_splits`), the IR facts (productive rules,
nullable rules inside the left-recursion check, the check) and the call-graph walks; and each rule
built (its name, determinised states, CPU) or left lowered for its first entry (AHEAD_NFA_STATES:
its NFA's states). What the tail of maskbench-dev spends outside the front end, for one schema at
a time: run two trees alternately (each with its own PYTHONPATH) to compare them.

    PYTHONPATH=<tree>/src python scripts/automaton_split.py SCHEMA.json [SCHEMA.json ...] [--vocab qwen]"""

import argparse
import json
import time

import strictgen as sg
import strictgen.compile.automaton as automaton
import strictgen.compile.rule_facts as rule_facts
from strictgen import bench, regular

SPENT: dict[str, float] = {}
RULES: list[str] = []


def timed(owner, name: str, label: str, each=None) -> None:
    """owner.name, its thread CPU added to SPENT[label] (`each(args, result, seconds)` told of each call)."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        t0 = time.thread_time()
        got = inner(*args, **kwargs)
        spent = time.thread_time() - t0
        SPENT[label] = SPENT.get(label, 0.0) + spent
        if each is not None:
            each(args, got, spent)
        return got

    setattr(owner, name, wrapper)


def rule_built(args, got, spent) -> None:
    if hasattr(got, "num_states"):
        RULES.append(f"{args[1]} {got.num_states} states {spent * 1e3:.1f} ms")
    elif got is None:  # left before its walk ended (its program passed automaton.AHEAD_PROGRAM_OPS)
        RULES.append(f"{args[1]} left unlowered {spent * 1e3:.1f} ms")
    else:  # left lowered (automaton._Lowered)
        RULES.append(f"{args[1]} left lowered: NFA {got.nfa.num_states} states {spent * 1e3:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("schemas", nargs="+")
    ap.add_argument("--vocab", default="qwen")
    args = ap.parse_args()
    tok = bench.load_vocab(args.vocab).build_info()
    sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}}))
    timed(automaton, "compile_automaton", "compile_automaton")
    timed(automaton, "_rule_dfa", "rule builds", rule_built)
    timed(regular, "minimal_with_splits", "trim+minimise")
    timed(rule_facts, "productive_rules", "productive rules")
    timed(rule_facts, "nullable_rules", "nullable rules")
    timed(rule_facts, "check_left_recursion", "left recursion (nullable inside)")
    for name in ("recursive_rules", "_reach", "_callees_first"):
        timed(automaton, name, name)
    for path in args.schemas:
        data = json.load(open(path))
        SPENT.clear()
        RULES.clear()
        t0 = time.thread_time()
        try:
            sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(data.get("schema", data)))
            outcome = "ok"
        except sg.StrictgenError as exc:
            outcome = type(exc).__name__
        total = time.thread_time() - t0
        print(f"{path.rsplit('/', 1)[-1]}: {outcome}, {total * 1e3:.1f} ms; " + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in SPENT.items()))
        for line in sorted(RULES, key=lambda s: -float(s.rsplit(" ", 2)[-2]))[:5]:
            print("   ", line)


if __name__ == "__main__":
    main()
