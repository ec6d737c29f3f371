"""The C determinisation (`_machine.c`) against a plain Python simulation of the same pushdown
machine (sets of stacks as tuples, nothing interned), and its errors on bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile import _machine
from strictgen.compile.automaton import compile_automaton
from strictgen.compile.machine import DEAD, PushdownMachine
from strictgen.grammar.ir import Grammar, RuleRef, alt, charset, lit, opt, repeat, seq

GRAMMARS = {
    "parens": Grammar({"root": RuleRef("p"), "p": alt(lit(""), seq(lit("("), RuleRef("p"), lit(")"), RuleRef("p")))}),
    "lists": Grammar(
        {
            "root": RuleRef("v"),
            "v": alt(lit("x"), seq(lit("["), opt(RuleRef("ws")), opt(seq(RuleRef("v"), repeat(seq(lit(","), opt(RuleRef("ws")), RuleRef("v"))))), lit("]"))),
            "ws": seq(lit(" "), opt(RuleRef("ws"))),
        }
    ),
    "tail": Grammar({"root": seq(RuleRef("list"), lit("!")), "list": alt(lit("."), seq(lit("a"), RuleRef("list")))}),
}


def reference_stacks(automaton, stacks):
    """Expand stacks (tuples of (rule, state), top last) until each top waits for a byte; () is a
    finished root. The machine's definition, without interning or tail calls."""
    out, work, seen = set(), list(stacks), set(stacks)
    while work:
        stack = work.pop()
        if not stack:
            out.add(stack)
            continue
        rule, state = stack[-1]
        dfa = automaton.rules[rule]
        nexts = [stack[:-1] + ((rule, ret), (callee, 0)) for callee, ret in dfa.calls[state]]
        if dfa.byte_groups[state]:
            out.add(stack)
        if dfa.accepting[state]:
            nexts.append(stack[:-1])
        for s in nexts:
            if s not in seen:
                seen.add(s)
                work.append(s)
    return out


def reference_step(automaton, stacks, byte):
    moved = set()
    for stack in stacks:
        if stack:
            rule, state = stack[-1]
            for target, byte_values in automaton.rules[rule].byte_groups[state]:
                if byte in byte_values:
                    moved.add(stack[:-1] + ((rule, target),))
    return reference_stacks(automaton, moved)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(GRAMMARS)), data=st.lists(st.sampled_from(b"()[]x, a.!"), max_size=40))
def test_rows_agree_with_a_plain_simulation(name, data):
    """The machine (its rules built when first entered) against a simulation of every rule's DFA
    built ahead (the same numbering: no unique arrays, no families here)."""
    automaton = compile_automaton(GRAMMARS[name], None)
    machine = PushdownMachine(compile_automaton(GRAMMARS[name], 0))
    state, stacks = machine.start, reference_stacks(automaton, {((0, 0),)})
    for byte in data:
        row = machine.compute_row(state)
        live = {b for b in range(256) if reference_step(automaton, stacks, b)}
        assert set(np.flatnonzero(row != DEAD).tolist()) == live
        assert machine.accepting[state] == (() in stacks)
        state, stacks = int(row[byte]), reference_step(automaton, stacks, byte)
        if state == DEAD:
            assert not stacks
            break


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_rows_of_one_stack_and_of_many_agree_with_the_simulation(name):
    """compute_row has its own path for states of one stack (a byte's target found per byte class)
    beside the general one: every state the rows reach within a few bytes, of either kind, has the
    live bytes and the accepting flag of the simulation, and both kinds are met."""
    automaton = compile_automaton(GRAMMARS[name], None)
    machine = PushdownMachine(compile_automaton(GRAMMARS[name], 0))
    frontier, seen, kinds = [(machine.start, frozenset(reference_stacks(automaton, {((0, 0),)})))], {machine.start}, set()
    for _ in range(5):
        nxt = []
        for state, stacks in frontier:
            kinds.add(len([n for n in machine.stacks(state) if n != 0]) == 1)
            row = machine.compute_row(state)
            steps = {b: reference_step(automaton, stacks, b) for b in range(256)}
            assert {b for b in range(256) if row[b] != DEAD} == {b for b, s in steps.items() if s}
            assert machine.accepting[state] == (() in stacks)
            for b, target in enumerate(row.tolist()):
                if target != DEAD and target not in seen:
                    seen.add(target)
                    nxt.append((target, frozenset(steps[b])))
        frontier = nxt
    assert kinds == {True, False}


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_a_row_of_many_stacks_is_the_union_of_its_stacks_rows(name):
    """A state of several stacks steps each byte to the union of what each stack alone steps it to
    (sub_state: a one-stack row, looked up per byte class). compute_row builds such a row run by
    run of the stacks' classmaps (class_edges) and answers a byte that leaves one stack live from
    that stack's closure, remembered per node (closure_alone): a run cut wrong, or a remembered
    state that is not the closure's, gives a byte the stacks of another. Each stack's own step (its
    rule's DFA) is in its byte's target, no two state ids hold the same stacks, and every state
    reached accepts where the simulation does."""
    automaton = compile_automaton(GRAMMARS[name], None)
    machine = PushdownMachine(compile_automaton(GRAMMARS[name], 0))
    frontier = [(machine.start, frozenset(reference_stacks(automaton, {((0, 0),)})))]
    seen, by_stacks, bytes_checked, one_live = {machine.start}, {}, 0, 0
    for _ in range(6):
        nxt = []
        for state, stacks in frontier:
            held = machine.stacks(state)
            assert by_stacks.setdefault(held, state) == state
            row = machine.compute_row(state)
            tops = [i for i, n in enumerate(held) if n != 0]
            for i in tops:  # each stack's own byte step, read off the rule's DFA: in the target
                parent, rule, q = machine.node(held[i])
                for target, byte_values in automaton.rules[rule].byte_groups[q]:
                    if automaton.rules[rule].byte_groups[target]:  # it waits: its node is kept
                        for b in byte_values:
                            assert any(n != 0 and machine.node(n) == (parent, rule, target) for n in machine.stacks(row[b]))
            if len(tops) > 1:
                alone = [machine.compute_row(machine.sub_state(state, [i == t for i in range(len(held))])) for t in tops]
                for b in range(256):
                    union = set().union(*(machine.stacks(r[b]) for r in alone if r[b] != DEAD))
                    assert set(machine.stacks(row[b])) == union
                    bytes_checked += 1
                    one_live += sum(r[b] != DEAD for r in alone) == 1
            for b, target in enumerate(row.tolist()):
                if target != DEAD and target not in seen:
                    seen.add(target)
                    nxt.append((target, frozenset(reference_step(automaton, stacks, b))))
                    assert machine.accepting[target] == (() in nxt[-1][1])
        frontier = nxt
    if name == "lists":  # '[' then ' ': the list's frame and the whitespace rule's
        assert bytes_checked and one_live


def test_walks_read_rows_in_place_while_another_thread_adds_rows(qwen):
    """The trie walk reads the machine's rows without the GIL while another thread computes new
    ones (chunked storage that never moves): its masks are those of a machine nobody else touched."""
    import threading

    schema = {"type": "array", "items": {"$ref": "#"}}  # nested arrays: a new state per depth
    shared, alone = (sg.GrammarCompiler(qwen).compile_json_schema(schema) for _ in range(2))
    prefixes = [b"[" * d for d in range(1, 40)]
    stop = threading.Event()

    def grow():
        depth = 0
        while not stop.is_set() and depth < 5000:
            depth += 40
            shared.machine.step_bytes(shared.machine.start, b"[" * depth + b"]" * (depth // 2))

    grower = threading.Thread(target=grow)
    grower.start()
    try:
        got = [shared.masker.mask(shared.machine.step_bytes(shared.machine.start, p)) for p in prefixes]
    finally:
        stop.set()
        grower.join()
    want = [alone.masker.mask(alone.machine.step_bytes(alone.machine.start, p)) for p in prefixes]
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    index, rows = shared.machine.tables  # copies: every state's row number, every row
    state = shared.machine.step_bytes(shared.machine.start, b"[[")
    table = np.frombuffer(rows, dtype=np.int32).reshape(-1, 256)
    assert (table[np.frombuffer(index, dtype=np.int32)[state]] == shared.machine.compute_row(state)).all()


def rule_arrays(table=(-1,), classmap=None, accepting=(0,), start=(0, 0), callee=(), ret=()):
    """One rule's arrays as the C machine takes them (the tuple it copies), one frame by default."""
    i32 = lambda v: np.array(v, dtype=np.int32)  # noqa: E731
    classmap = np.zeros(256, dtype=np.uint8) if classmap is None else classmap
    return (i32(table), classmap, np.array(accepting, dtype=np.uint8), i32(start), i32(callee), i32(ret))


def test_bad_arrays_and_states_are_refused():
    machine = PushdownMachine(compile_automaton(GRAMMARS["parens"]))
    with pytest.raises(ValueError, match="state out of range"):
        machine.compute_row(10**6)
    with pytest.raises(ValueError, match="node out of range"):
        machine.node(0)
    core = _machine.Machine([rule_arrays()])  # consistent
    with pytest.raises(ValueError, match="add_rule: that rule exists"):
        core.add_rule(0, rule_arrays())
    with pytest.raises(ValueError, match="inconsistent"):  # a call returning to a frame that does not exist
        _machine.Machine([rule_arrays(start=(0, 1), callee=(0,), ret=(7,))])
    with pytest.raises(ValueError, match="inconsistent"):  # a target past the rule's frames
        _machine.Machine([rule_arrays(table=(1,))])
    with pytest.raises(ValueError, match="inconsistent"):  # below -1 (dead)
        _machine.Machine([rule_arrays(table=(-2,))])
    # rows of 20 classes (copied in vector steps, _rule_tables.c): one bad target anywhere is found
    wide = np.full(40, -1, dtype=np.int32)
    wide[[3, 25]] = [1, 0]
    classes = (np.arange(256) % 20).astype(np.uint8)
    two = dict(classmap=classes, accepting=(0, 1), start=(0, 0, 0))
    fine = _machine.Machine([rule_arrays(table=wide, **two)])
    assert fine.step_bytes(fine.start_state(), bytes([3])) != DEAD and fine.step_bytes(fine.start_state(), bytes([4])) == DEAD
    for place, bad in ((0, 2), (17, -7), (39, 2**31 - 1), (38, -(2**31))):
        broken = wide.copy()
        broken[place] = bad
        with pytest.raises(ValueError, match="inconsistent"):
            _machine.Machine([rule_arrays(table=broken, **two)])
    with pytest.raises(ValueError, match="inconsistent"):  # a class past the row's end
        _machine.Machine([rule_arrays(classmap=np.full(256, 1, dtype=np.uint8))])
    with pytest.raises(ValueError, match="inconsistent"):  # a second rule whose table is one row short
        _machine.Machine([rule_arrays(), rule_arrays(table=(), accepting=(0,))])
    with pytest.raises(ValueError, match="1-D array of 4-byte"):
        _machine.Machine([(np.full(1, -1, dtype=np.int64),) + rule_arrays()[1:]])
    with pytest.raises(ValueError, match="at least one rule"):
        _machine.Machine([])
    with pytest.raises(TypeError, match="a rule's arrays"):
        _machine.Machine([rule_arrays()[:5]])
    with pytest.raises(ValueError, match="inconsistent"):  # a lazy rule's arrays are checked the same way
        core.add_rule(3, rule_arrays(table=(5,)))
    core.add_rule(3, rule_arrays(table=(0,)))
    assert core.num_frames == 2


def _copied_arrays(dfa) -> tuple:
    """A rule's arrays as a tuple numbered locally: what the machine copies (a DFA's table it holds)."""
    return (*dfa.compact(), dfa.accepting(), *dfa.call_arrays())


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_tables_held_from_dfas_step_as_tables_copied(name):
    """Rules given as DFAs (their tables numbered from each rule's base by `compact(base)` and held
    in place, what PushdownMachine gives) and as tuples of local arrays (copied) make the same
    machine: every state's row is the same, state by state, from the start (the first 300: a
    recursive grammar's states never end)."""
    rules = compile_automaton(GRAMMARS[name]).rules
    held = _machine.Machine([r.dfa for r in rules])
    copied = _machine.Machine([_copied_arrays(r.dfa) for r in rules])
    work, seen = [held.start_state()], set()
    assert work[0] == copied.start_state()
    while work and len(seen) < 300:
        state = work.pop(0)
        if state in seen:
            continue
        seen.add(state)
        row = held.row(state)
        assert row == copied.row(state)
        work += [int(t) for t in np.frombuffer(row, dtype=np.int32) if t != DEAD]
    assert len(seen) > 2


class _Shifted:
    """A DFA whose compact(base) numbers its table from another base (or hands back an array)."""

    def __init__(self, dfa, shift=0, as_array=False):
        self.dfa, self.shift, self.as_array = dfa, shift, as_array

    def compact(self, base):
        table, classmap = self.dfa.compact(base + self.shift)
        return (np.frombuffer(table, dtype=np.int32) if self.as_array else table), classmap

    def accepting(self):
        return self.dfa.accepting()

    def call_arrays(self):
        return self.dfa.call_arrays()


def test_a_held_table_numbered_from_another_base_is_refused():
    rules = compile_automaton(GRAMMARS["lists"]).rules
    assert len(rules) > 1
    for shift in (rules[1].num_states, -(10**6)):  # the second rule's table numbered from past its frames, or far before
        with pytest.raises(ValueError, match="inconsistent"):
            _machine.Machine([rules[0].dfa, _Shifted(rules[1].dfa, shift), *(r.dfa for r in rules[2:])])
    with pytest.raises(ValueError, match="inconsistent"):  # a held table must be bytes (immutable)
        _machine.Machine([rules[0].dfa, _Shifted(rules[1].dfa, as_array=True), *(r.dfa for r in rules[2:])])
    core = _machine.Machine([rule_arrays()])
    with pytest.raises(ValueError, match="inconsistent"):  # a rule added at run time: numbered from num_frames
        core.add_rule(1, _Shifted(rules[1].dfa, rules[1].num_states))
    core.add_rule(1, rules[1].dfa)
    assert core.num_frames == 1 + rules[1].dfa.num_states


# ---- what the token masks ask the C machine, against the same questions asked of its rows ----

QUESTION_GRAMMARS = {
    "string": Grammar({"root": seq(lit('"'), repeat(charset([(0x20, 0x21), (0x23, 0x10FFFF)])), lit('"'))}),
    "counter": Grammar({"root": seq(lit('"'), repeat(charset([(ord("a"), ord("z"))]), 0, 5), lit('"'))}),
    "lists": GRAMMARS["lists"],
}


def reachable_states(machine, limit=60):
    seen, work = [machine.start], [machine.start]
    while work and len(seen) < limit:
        for t in np.unique(machine.compute_row(work.pop())).tolist():
            if t != DEAD and t not in seen:
                seen.append(t)
                work.append(t)
    return seen


@pytest.mark.parametrize("name", sorted(QUESTION_GRAMMARS))
def test_row_questions_agree_with_the_rows(name):
    machine = PushdownMachine(compile_automaton(QUESTION_GRAMMARS[name]))
    states = reachable_states(machine)
    if name == "string":  # the body loops on every character: its own UTF-8 target
        assert any(machine.utf8_target(s) == s for s in states)
    for state in states:
        row = machine.compute_row(state)
        targets, counts = np.unique(row[row != DEAD], return_counts=True)
        order = np.lexsort((targets, -counts))
        assert machine.widest(state, 3) == [(int(targets[i]), int(counts[i])) for i in order[:3]]
        for t in targets.tolist():
            assert machine.group(state, t) == bytes(np.flatnonzero(row == t).tolist())
        # every valid multi-byte character (here: é, 中, an emoji) from `state` ends in one state
        ends = {machine.step_bytes(state, ch.encode()) for ch in "\u00e9\u00ff\u4e2d\u20ac\U0001f600"}
        expected = ends.pop() if len(ends) == 1 and DEAD not in ends else None
        got = machine.utf8_target(state)
        assert got == expected or (expected is not None and got is None)  # None: some other character differs


def test_chain_follows_a_counter_and_stops_where_bytes_part_ways():
    machine = PushdownMachine(compile_automaton(QUESTION_GRAMMARS["counter"]))
    body = machine.step_bytes(machine.start, b'"')
    letters = bytes(range(ord("a"), ord("z") + 1))
    chain = machine.chain(body, letters, 64)
    assert len(chain) == 6 and chain[0] == body  # five letters at most, then every letter is dead
    assert [machine.step_bytes(body, b"x" * i) for i in range(6)] == chain
    assert machine.chain(body, letters, 2) == chain[:3]  # at most `limit` steps
    assert machine.chain(machine.start, b'"a', 8) is None  # '"' goes on, 'a' is dead: they part ways
    with pytest.raises(ValueError):
        machine.chain(body, b"", 8)


def test_a_sub_state_holds_exactly_the_stacks_kept():
    """sub_state (the matcher drops the parses a uniqueItems repeat rules out): the state of some
    of a state's stacks; its rows are those stacks' rows, so two parts' live bytes make the whole's."""
    g = Grammar({"root": alt(seq(lit("["), RuleRef("a")), seq(lit("["), RuleRef("b"))), "a": alt(seq(lit("x"), RuleRef("a")), lit("]")),
                 "b": alt(seq(charset([(ord("x"), ord("y"))]), RuleRef("b")), lit(")"))})  # recursive: not inlined
    machine = PushdownMachine(compile_automaton(g, 0))
    state = machine.step_bytes(machine.start, b"[x")
    stacks = machine.stacks(state)
    assert len(stacks) == 2
    assert machine.sub_state(state, [True, True]) == state and machine.sub_state(state, [False, False]) == DEAD
    parts = [machine.sub_state(state, [i == k for i in range(2)]) for k in range(2)]
    assert [machine.stacks(p) for p in parts] == [(stacks[0],), (stacks[1],)]
    live = [set(np.flatnonzero(machine.compute_row(s) != DEAD).tolist()) for s in [state] + parts]
    assert live[0] == live[1] | live[2] and live[1] != live[2]
    assert {machine.step_bytes(p, b"]") != DEAD for p in parts} == {True, False}  # one part is the "a" parse
    with pytest.raises(ValueError, match="one keep flag per stack"):
        machine.sub_state(state, [True])
    with pytest.raises(ValueError, match="state out of range"):
        machine.sub_state(10**6, [])


def _steps_reference(rule, nullable):
    """machine._steps_per_byte from the rule's call lists: 1 without a call of a nullable rule, None
    when one may return where another such call starts, else 2."""
    skips = [(s, ret) for s, calls in enumerate(rule.calls) for callee, ret in calls if callee in nullable]
    if not skips:
        return 1
    return None if {ret for _, ret in skips} & {s for s, _ in skips} else 2


def test_steps_per_byte_against_the_call_lists():
    """The refinement steps a frame takes per byte (`_steps_per_byte`, read off the call arrays in
    numpy) against the rules' call lists, over grammars that give each answer."""
    from strictgen.compile.automaton import nullable_rules
    from strictgen.compile.machine import _steps_per_byte

    ws = alt(lit(""), seq(lit(" "), RuleRef("ws")))  # nullable, and kept as a call (it recurses)
    bodies = {
        "apart": seq(lit("["), RuleRef("ws"), opt(RuleRef("v")), RuleRef("ws"), lit("]")),
        "in a row": seq(lit("["), RuleRef("ws"), RuleRef("ws"), opt(RuleRef("v")), lit("]")),
        "none": seq(lit("["), opt(RuleRef("v")), lit("]")),
    }
    seen = set()
    for name, body in bodies.items():
        rules = compile_automaton(Grammar({"root": RuleRef("v"), "v": alt(lit("x"), body), "ws": ws})).rules
        nullable = nullable_rules(rules)
        for rule in rules:
            want = _steps_reference(rule, nullable)
            assert _steps_per_byte(rule, nullable) == want, (name, rule.name)
            seen.add(want)
    assert seen == {1, 2, None}
