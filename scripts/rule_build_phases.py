"""Where the bench's first pass spends its rule automata, in thread CPU time, split by when they
are built: in compiles (every bench schema compiled with a fresh compiler) or in fills (rules a
document enters first: deferred rules and family members, lazy_rules.py). Phases: the rule's NFA
(lowering, pieces) and its subset construction (`rule.build`, determinising inside it:
`rule.determinize`), trimming, minimising, the C machine's tables (`rule.tabling`) and horizon
classes (`rule.horizon`); `add_rule` is a whole build inside a fill. Counts states before and
after minimising, and the fills' CPU in all. Runs on trees with or without
`regular.minimal_with_splits` (minimising by Moore's rounds; before it, `regular.minimal`).
With --no-minimise, rule DFAs are only trimmed (what skipping minimisation would cost and save:
compare `compile_mask_walks.py` for masks and states). With --lowering, a rule's NFA is split
further, each part timed without the parts inside it: `lower.pieces` (the automata of embedded
pieces, products and spellings that the walk asks for, all their work inside), `lower.c` (the C
lowering, `regular.lower`, of the rule's own program), `lower.key` (the rule's cache key and what
it reaches), and `lower.walk`, the rest of `rule.build` but determinising: the Python walk that
writes the program and asks for decisions. With --pieces, the pieces built (missing every cache)
by kind, their time (`... spent`, all inside), how many have the value of one built before (in
the compile, in the run) or, for spelled strings, the same raw table; and the pieces' steps (`piece.content_key`: the builder's content keys of
products and spelled strings, which a hit must pay before it saves anything).

    PYTHONPATH=<tree>/src python scripts/rule_build_phases.py [--vocab qwen] [--no-minimise] [--lowering] [--pieces]"""

import argparse
import sys
import time
from collections import Counter

import strictgen as sg
import strictgen.compile.automaton as automaton
import strictgen.compile.machine as machine
import strictgen.grammar.automata as automata
import strictgen.grammar.build_memo as build_memo
from strictgen import bench, regular
from strictgen.grammar.ir_keys import ContentKey, ContentKeys

SPENT: Counter = Counter()
CALLS: Counter = Counter()
WHEN = ["compile"]
RULE_FILES = ("automaton.py", "lazy_rules.py")


def add(label: str, seconds: float) -> None:
    SPENT[f"{WHEN[0]}.{label}"] += seconds
    CALLS[f"{WHEN[0]}.{label}"] += 1


def timed(owner, name: str, label: str) -> None:
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        t0 = time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            add(label, time.thread_time() - t0)

    setattr(owner, name, wrapper)


OPEN: list[list[float]] = []  # the exclusive timers running: [time spent in the timers inside]


def exclusive(owner, name: str, label: str) -> None:
    """Time `owner.name` without the time of the exclusive timers inside it, and pass through
    the calls made inside a `lower.pieces` one (a piece's automata are all its own)."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        if OPEN and OPEN[-1][1] == "lower.pieces":
            return inner(*args, **kwargs)
        OPEN.append([0.0, label])
        t0 = time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent = time.thread_time() - t0
            inside = OPEN.pop()[0]
            add(label, spent - inside)
            if OPEN:
                OPEN[-1][0] += spent

    setattr(owner, name, wrapper)


def patch_lowering() -> None:
    """The parts of a rule build (see the docstring); determinising is timed apart already."""
    exclusive(automaton, "_rule_dfa", "lower.walk")
    exclusive(automaton, "_rule_bodies", "lower.key")
    exclusive(automaton, "_reach", "lower.key")
    exclusive(automata.NFABuilder, "embedded_dfa", "lower.pieces")
    exclusive(automata.NFABuilder, "regular_dfa", "lower.pieces")
    exclusive(automata.regular, "lower", "lower.c")
    exclusive(automata.regular, "determinize", "lower.determinize")


PIECES: Counter = Counter()  # --pieces: builds by kind, and how many repeat an earlier one
SEEN: dict[str, set] = {"run": set(), "compile": set(), "raw": set()}
KEYS = ContentKeys()
HELD: list = []  # the pieces keyed, alive for the run (content keys are by node id)


def own_key(expr) -> ContentKey:
    """The content key of `expr` from this script's own hashes (not the builder's, which are timed)."""
    return ContentKey(expr, KEYS.hash_of(expr))


def value_hit(memo, expr):
    """The automaton the tree's cache by value holds for `expr` (`_valued`; before it, products
    only, `_products`), or None."""
    if hasattr(automata, "_valued"):
        return automata._valued.get((automata.MAX_DFA_STATES, own_key(expr))) if isinstance(expr, automata._VALUED_KINDS) else None
    return automata._products.get(own_key(expr)) if isinstance(expr, (automata.Intersect, automata.Difference)) else None


def patch_pieces() -> None:
    """Count the pieces `regular_dfa` and `embedded_dfa` build (a miss in every cache), by kind,
    and how many have the same IR value as one built before in this compile or this run, or the
    same raw table (a spelled string's item: what `spelled_dfa` keys by); time each step."""
    raw_key = automata.table_key
    for name, label in (("sub_nfa", "piece.sub_nfa"), ("_product_dfa", "piece.product"), ("_calls_nothing", "piece.calls_nothing")):
        timed(automata.NFABuilder, name, label)
    timed(automata, "spell", "piece.spell")
    timed(getattr(build_memo, "PieceKeys", ContentKeys), "key", "piece.content_key")  # the builder's keys (before PieceKeys: ContentKeys)
    timed(automata, "table_key", "piece.table_key")
    for name in ("regular_dfa", "embedded_dfa"):
        inner = getattr(automata.NFABuilder, name)

        def counted(self, expr, inner=inner, name=name):
            memo = self._memo
            cached = memo.dfas.get(id(expr)) or memo.embedded.get(id(expr)) or automata._minimal_pieces.get_same(expr)
            if name == "embedded_dfa" and cached is None:
                cached = automata._pieces.get_same(expr)
            if name == "regular_dfa" and cached is None:
                cached = value_hit(memo, expr)
            t0 = time.thread_time()
            got = inner(self, expr)
            spent = time.thread_time() - t0
            if cached is None and got is not None:
                kind = f"{WHEN[0]}.{name}.{type(expr).__name__}"
                HELD.append(expr)
                key = (name, own_key(expr))
                PIECES[f"{kind} built"] += 1
                SPENT[f"{kind} spent"] += spent
                PIECES[f"{kind} same IR in compile"] += key in SEEN["compile"]
                PIECES[f"{kind} same IR in run"] += key in SEEN["run"]
                SEEN["compile"].add(key), SEEN["run"].add(key)
                if isinstance(expr, automata.Spelled) and id(expr.item) in memo.dfas:
                    raw = raw_key(memo.dfas[id(expr.item)])
                    PIECES[f"{kind} same raw table in run"] += raw in SEEN["raw"]
                    SEEN["raw"].add(raw)
            return got

        setattr(automata.NFABuilder, name, counted)


def patch_minimising(skip: bool) -> None:
    """Time trim and minimise apart where rules are minimised (called from automaton.py or
    lazy_rules.py; the pieces of the front end and the builder are left alone)."""
    name = "minimal_with_splits" if hasattr(regular, "minimal_with_splits") else "minimal"
    inner = getattr(regular, name)

    def minimised(dfa, productive=None):
        if not sys._getframe(1).f_code.co_filename.endswith(RULE_FILES):
            return inner(dfa, productive)
        t0 = time.thread_time()
        trimmed = dfa.trim(productive)
        add("rule.trim", time.thread_time() - t0)
        SPENT[f"{WHEN[0]}.states trimmed"] += trimmed.num_states
        if skip:
            return (trimmed, None) if name == "minimal_with_splits" else trimmed
        t0 = time.thread_time()
        got = inner(trimmed, productive)  # trimming a trimmed DFA again costs a little
        add("rule.minimise", time.thread_time() - t0)
        SPENT[f"{WHEN[0]}.states minimal"] += (got[0] if isinstance(got, tuple) else got).num_states
        return got

    setattr(regular, name, minimised)
    determinize = regular.determinize

    def determinized(*args, **kwargs):
        t0 = time.thread_time()
        try:
            return determinize(*args, **kwargs)
        finally:
            if sys._getframe(1).f_code.co_filename.endswith(RULE_FILES):
                add("rule.determinize", time.thread_time() - t0)

    regular.determinize = determinized


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="qwen")
    ap.add_argument("--no-minimise", action="store_true")
    ap.add_argument("--lowering", action="store_true")
    ap.add_argument("--pieces", action="store_true")
    args = ap.parse_args()
    if args.pieces:
        patch_pieces()
    if args.lowering:
        patch_lowering()
    patch_minimising(args.no_minimise)
    timed(automaton, "_rule_dfa", "rule.build")
    timed(machine, "_rule_part", "rule.tabling")
    timed(machine, "horizon_classes", "rule.horizon")
    timed(machine.PushdownMachine, "_add_lazy_rule", "add_rule")
    vocab = bench.load_vocab(args.vocab)
    tok = vocab.build_info()
    eos = tok.eos_token_ids[0]
    mask = sg.allocate_token_bitmask(1, tok.vocab_size)
    sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(bench.WARMUP_SCHEMA))
    SPENT.clear(), CALLS.clear()
    fill_s = 0.0
    for case in bench.load_cases(bench.default_schemas_dir()):
        WHEN[0] = "compile"
        SEEN["compile"].clear()
        try:
            grammar = sg.GrammarCompiler(tok).compile_json_schema(case.schema_text)
            sg.GrammarMatcher(grammar)
        except sg.StrictgenError:
            continue
        WHEN[0] = "fill"
        for doc in case.documents:
            matcher = sg.GrammarMatcher(grammar)
            for token in list(vocab.encode(doc)) + [eos]:
                t0 = time.thread_time()
                matcher.fill_next_token_bitmask(mask)
                fill_s += time.thread_time() - t0
                if not matcher.accept_token(token):
                    break
    print(f"fills, thread CPU: {fill_s * 1e3:.1f} ms")
    for key in sorted(SPENT):
        value = SPENT[key]
        print(f"  {key:28s} {value:9.0f}" if "states" in key else f"  {key:28s} {value * 1e3:9.1f} ms  ({CALLS[key]} calls)")
    for key in sorted(PIECES):
        print(f"  {key:50s} {PIECES[key]:6d}")


if __name__ == "__main__":
    main()
