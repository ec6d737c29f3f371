"""Rules built the first time the machine enters them (compile_automaton's `build_ahead`): the same
languages as rules built ahead, and the compile-time facts (productive, nullable, left
recursion) decided from the IR of rules not built yet."""

import json
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen import deadline
from strictgen.compile import automaton
from strictgen.compile.automaton import LeftRecursionError, compile_automaton
from strictgen.compile.lazy_rules import LazyRules
from strictgen.compile.machine import DEAD, HorizonKeys, PushdownMachine
from strictgen.errors import CompileTimeoutError, GrammarTooLargeError
from strictgen.grammar.ir import Grammar, RuleRef, alt, chars, intersect, lit, repeat, seq
from tests.shared_data import need_shared


def two_branches() -> Grammar:
    """x and y are recursive, so kept as calls; a document of one branch never enters the other
    rule. New objects each time: rules whose bodies an earlier compile built are built ahead."""
    return Grammar({
        "root": alt(seq(lit("a"), RuleRef("x")), seq(lit("bb"), RuleRef("y"))),
        "x": alt(lit("x"), seq(lit("("), RuleRef("x"), lit(")"))),
        "y": alt(seq(lit("y"), repeat(RuleRef("ws"))), seq(lit("["), RuleRef("y"), lit("]"))),
        "ws": alt(lit(" "), seq(lit("\t"), RuleRef("ws"))),
    })


def test_a_rule_is_built_when_the_machine_first_enters_it():
    automaton = compile_automaton(two_branches(), 0)
    assert [r.name for r in automaton.rules] == ["root"]
    machine = PushdownMachine(automaton)
    x, y = automaton.lazy.names.index("x"), automaton.lazy.names.index("y")
    state = machine.step_bytes(machine.start, b"a((")
    assert state != DEAD and x in machine.added and y not in machine.added
    assert machine.accepting[machine.step_bytes(state, b"x))")]
    # a compile after one that built x, y and ws builds them ahead (at no cost: they are kept)
    machine.step_bytes(machine.start, b"bby\t ")
    again = compile_automaton(Grammar({**two_branches().rules, **{n: automaton.lazy.rules[n] for n in ("x", "y", "ws")}}), 0)
    assert sorted(r.name for r in again.rules) == ["root", "ws", "x", "y"]


def big_branch() -> Grammar:
    """two_branches with a y whose NFA is far bigger than x's (60 words of 3 bytes); new objects."""
    words = alt(*[lit(f"w{i:02d}") for i in range(60)])
    return Grammar({**two_branches().rules, "y": alt(seq(lit("y"), words), seq(lit("["), RuleRef("y"), lit("]")))})


def test_a_rule_too_big_to_build_ahead_is_determinised_when_first_entered_and_lowered_once(monkeypatch):
    """The budget is checked before each rule, so one big rule could overshoot it many times: a
    rule whose NFA has more than AHEAD_NFA_STATES states is lowered, kept and determinised only
    when the machine first enters it (its lowering is not done twice), with the same language."""
    monkeypatch.setattr(automaton, "AHEAD_NFA_STATES", 40)
    lowerings: list[str] = []
    build = automaton.NFABuilder.build
    monkeypatch.setattr(automaton.NFABuilder, "build", lambda self, expr, *args: (lowerings.append(expr), build(self, expr, *args))[1])
    g = big_branch()
    compiled = compile_automaton(g, 4000)
    # y lowered, not determinised; ws, after it, waits too (the rules built are a prefix of the names)
    assert [r.name for r in compiled.rules] == ["root", "x"] and g.rules["y"] in lowerings
    machine = PushdownMachine(compiled)
    y = compiled.lazy.names.index("y")
    lowered_before = len(lowerings)
    state = machine.step_bytes(machine.start, b"bb[yw5")
    assert state != DEAD and y in machine.added and len(lowerings) == lowered_before
    assert machine.accepting[machine.step_bytes(state, b"9]")] and machine.step_bytes(state, b"x") == DEAD
    # without the limit y is built ahead: the budget is far from spent
    monkeypatch.setattr(automaton, "AHEAD_NFA_STATES", 10_000)
    assert sorted(r.name for r in compile_automaton(big_branch(), 4000).rules) == ["root", "ws", "x", "y"]
    # a big rule the machine's start enters (through x's start here) is built ahead all the same:
    # the machine's set-up would build it at once
    monkeypatch.setattr(automaton, "AHEAD_NFA_STATES", 40)
    g = big_branch()
    g = Grammar({**g.rules, "root": alt(RuleRef("x"), seq(lit("bb"), RuleRef("y"))), "x": alt(RuleRef("y"), seq(lit("("), RuleRef("x"), lit(")")))})
    assert sorted(r.name for r in compile_automaton(g, 4000).rules) == ["root", "ws", "x", "y"]


def test_a_rule_whose_program_passes_the_cap_is_left_before_its_lowering(monkeypatch):
    """A rule built ahead whose program passes AHEAD_PROGRAM_OPS ops is left as soon as its walk
    passes them: not lowered at compile (no C lowering of it), lowered at its first entry, the
    same language; under the cap (its NFA's states under theirs) it is built ahead."""
    monkeypatch.setattr(automaton, "AHEAD_NFA_STATES", 10_000)
    lowered: list[int] = []
    lower = automaton.regular.lower
    monkeypatch.setattr(automaton.regular, "lower", lambda nfa, ops, *args: (lowered.append(len(ops)), lower(nfa, ops, *args))[1])
    monkeypatch.setattr(automaton, "AHEAD_PROGRAM_OPS", 100)  # y's program: 60 words, ~300 ops
    compiled = compile_automaton(big_branch(), 4000)
    assert [r.name for r in compiled.rules] == ["root", "x"] and max(lowered) < 100
    machine = PushdownMachine(compiled)
    state = machine.step_bytes(machine.start, b"bb[yw5")
    assert compiled.lazy.names.index("y") in machine.added and max(lowered) > 100  # lowered at its first entry
    assert machine.accepting[machine.step_bytes(state, b"9]")] and machine.step_bytes(state, b"x") == DEAD
    monkeypatch.setattr(automaton, "AHEAD_PROGRAM_OPS", 10_000)
    assert sorted(r.name for r in compile_automaton(big_branch(), 4000).rules) == ["root", "ws", "x", "y"]


@settings(max_examples=100, deadline=None)
@given(data=st.lists(st.sampled_from(b"abxyw0159()[] \t"), max_size=12).map(bytes))
def test_a_rule_left_for_its_first_entry_has_the_language_of_one_built_ahead(data):
    ahead = PushdownMachine(compile_automaton(big_branch(), None))
    for name, value in (("AHEAD_NFA_STATES", 40), ("AHEAD_PROGRAM_OPS", 100)):  # left lowered; left before lowering
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(automaton, name, value)
            compiled = compile_automaton(big_branch(), 4000)
        assert [r.name for r in compiled.rules] == ["root", "x"]
        assert _walk(PushdownMachine(compiled), data) == _walk(ahead, data)


def _walk(machine: PushdownMachine, data: bytes) -> list[tuple[bool, bool]]:
    """(alive, accepting) after each prefix of `data`."""
    out, state = [], machine.start
    for b in data:
        state = machine.step_bytes(state, bytes((b,))) if state != DEAD else DEAD
        out.append((state != DEAD, state != DEAD and machine.accepting[state]))
    return out


@settings(max_examples=150, deadline=None)
@given(data=st.lists(st.sampled_from(b"abbxy()[] \t"), max_size=14).map(bytes))
def test_deferred_rules_give_the_language_of_rules_built_ahead(data):
    ahead = PushdownMachine(compile_automaton(two_branches(), None))
    later = PushdownMachine(compile_automaton(two_branches(), 0))
    assert _walk(later, data) == _walk(ahead, data)


def test_a_deferred_rule_that_derives_nothing_is_trimmed_away():
    # u never finishes (no base case) and p's only base case is an empty intersection: "a" and
    # "c" would be dead ends, so the start must not allow them
    g = Grammar({
        "root": alt(seq(lit("a"), RuleRef("u")), seq(lit("c"), RuleRef("p")), lit("b")),
        "u": seq(lit("("), RuleRef("u"), lit(")")),
        "p": alt(intersect(lit("x"), lit("y")), seq(lit("("), RuleRef("p"), lit(")"))),
    })
    machine = PushdownMachine(compile_automaton(g, 0))
    assert machine.step_bytes(machine.start, b"a") == DEAD and machine.step_bytes(machine.start, b"c") == DEAD
    assert machine.accepting[machine.step_bytes(machine.start, b"b")]


def test_a_deferred_rule_whose_product_is_not_empty_is_productive():
    g = Grammar({
        "root": seq(lit("c"), RuleRef("p")),
        "p": alt(intersect(lit("x"), chars("x")), seq(lit("("), RuleRef("p"), lit(")"))),
    })
    machine = PushdownMachine(compile_automaton(g, 0))
    assert machine.accepting[machine.step_bytes(machine.start, b"c((x))")]


def test_left_recursion_through_deferred_rules_is_refused():
    direct = Grammar({"root": seq(lit("q"), RuleRef("a")), "a": alt(seq(RuleRef("b"), lit("y")), lit("z")), "b": alt(seq(RuleRef("a"), lit("w")), lit("v"))})
    with pytest.raises(LeftRecursionError, match="left-recursive"):
        compile_automaton(direct, 0)
    # through a rule that may read nothing (n), which only the IR of n tells
    nullable = Grammar({
        "root": seq(lit("q"), RuleRef("a")),
        "a": alt(seq(RuleRef("n"), RuleRef("a"), lit("x")), lit("y")),
        "n": alt(lit(""), seq(lit("m"), RuleRef("n"))),
    })
    with pytest.raises(LeftRecursionError, match="left-recursive"):
        compile_automaton(nullable, 0)
    # the same with a byte first is right recursion, and fine
    fine = Grammar({**nullable.rules, "a": alt(seq(lit("k"), RuleRef("n"), RuleRef("a"), lit("x")), lit("y"))})
    machine = PushdownMachine(compile_automaton(fine, 0))
    assert machine.accepting[machine.step_bytes(machine.start, b"qkmkyxx")]


def test_a_failing_run_time_build_is_a_clear_error(monkeypatch):
    """A build past the machine's limits at run time reaches the caller as a StrictgenError, as at
    compile time (the failure is forced here: a real one needs an automaton of 200,000 states)."""
    monkeypatch.setattr(automaton, "EAGER_STATES", 0)  # build nothing ahead
    info = sg.TokenizerInfo.from_name("smollm2")
    compiled = sg.GrammarCompiler(info).compile_ir(two_branches())

    def too_deep(self, index):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(LazyRules, "dfa", too_deep)
    matcher = sg.GrammarMatcher(compiled)
    with pytest.raises(GrammarTooLargeError, match="nested too deeply"):
        matcher.accept_string("a(")  # the start's row already enters x


def test_a_schema_compile_defers_its_called_rules_and_builds_them_as_needed(monkeypatch):
    monkeypatch.setattr(automaton, "EAGER_STATES", 0)  # this small schema would be built whole
    info = sg.TokenizerInfo.from_name("smollm2")
    item = {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["id"]}
    schema = {"type": "object", "properties": {"a": item, "b": item, "c": {"type": "array", "items": item, "maxItems": 4}}}
    late = sg.GrammarCompiler(info).compile_json_schema(schema)
    ahead = sg.GrammarCompiler(info, defer_rules=False).compile_json_schema(schema)
    assert len(late.automaton.rules) < len(ahead.automaton.rules)
    for text in ('{"a": {"id": 1, "tags": ["x"]}, "c": [{"id": 2}]}', '{"b": {"tags": []}}', '{"c": [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}, {"id": 5}]}'):
        results = []
        for compiled in (late, ahead):
            m = sg.GrammarMatcher(compiled)
            results.append(m.accept_string(text) and m.can_end())
        assert results[0] == results[1]




@pytest.mark.parametrize("name", ["JsonSchemaStore---clang-format", "Snowplow---sp_341_Normalized"])
def test_the_facts_of_deeply_inlined_rules_fit_the_stack_the_builder_fits(name, monkeypatch):
    """Deferred rules' facts walk their IR as deep as the builder does: a first version (three
    Python frames per level) ran out of stack on these two, which compile when built ahead. They
    are compiled with nothing built ahead, so that the facts walk every rule."""
    monkeypatch.setattr(automaton, "EAGER_STATES", 0)
    schema = json.loads(need_shared("maskbench-dev", f"{name}.json").read_text())["schema"]
    info = sg.TokenizerInfo.from_name("qwen")
    compiled = sg.GrammarCompiler(info).compile_json_schema(schema)
    assert compiled.automaton.lazy is not None and len(compiled.automaton.rules) < len(compiled.automaton.lazy.names)


def test_a_run_time_build_runs_under_the_compile_s_time_limit(monkeypatch):
    """Each rule built at run time gets the compiler's compile_timeout, as a compile does (the slow
    build is a stand-in: a sleep, then the checks every long loop of a build makes)."""
    monkeypatch.setattr(automaton, "EAGER_STATES", 0)
    info = sg.TokenizerInfo.from_name("smollm2")
    compiled = sg.GrammarCompiler(info, compile_timeout=0.05).compile_ir(two_branches())
    real = LazyRules.dfa

    def slow(self, index):
        time.sleep(0.1)
        deadline.check()
        return real(self, index)

    monkeypatch.setattr(LazyRules, "dfa", slow)
    with pytest.raises(CompileTimeoutError, match="0.05 s limit"):
        sg.GrammarMatcher(compiled).accept_string("a")
    # the failure is remembered: the next matcher of this grammar gets it at once, not after
    # another time limit, and nothing was left half built
    calls = []
    monkeypatch.setattr(LazyRules, "dfa", lambda self, index: calls.append(index) or real(self, index))
    t0 = time.monotonic()
    with pytest.raises(CompileTimeoutError, match="0.05 s limit"):
        sg.GrammarMatcher(compiled).accept_string("a")
    assert time.monotonic() - t0 < 0.05 and not calls
    fresh = sg.GrammarCompiler(info, compile_timeout=0.05, defer_rules=False).compile_ir(two_branches())
    matcher = sg.GrammarMatcher(fresh)
    assert matcher.accept_string("a(x)") and matcher.can_end()


def test_threads_entering_deferred_rules_at_once_see_one_build_each(monkeypatch):
    """Matchers on several threads (a server's mask pool) may need the same unbuilt rule at once:
    each rule is built once, and every thread's masks are those of the machine built ahead."""
    monkeypatch.setattr(automaton, "EAGER_STATES", 0)
    info = sg.TokenizerInfo.from_name("smollm2")
    late = sg.GrammarCompiler(info).compile_ir(two_branches())
    ahead = sg.GrammarCompiler(info, defer_rules=False).compile_ir(two_branches())
    built = []
    real = LazyRules.dfa

    def counting(self, index):
        built.append(index)
        time.sleep(0.01)  # widen the window in which another thread asks for the same rule
        return real(self, index)

    monkeypatch.setattr(LazyRules, "dfa", counting)
    classes = []  # (keys, rule) each time a rule's horizon classes are found
    real_add = HorizonKeys._add

    def counting_add(self, rules):
        rules = list(rules)
        classes.extend((id(self), r) for r, _ in rules)
        time.sleep(0.01)  # widen the window in which another thread syncs the same keys
        real_add(self, rules)

    monkeypatch.setattr(HorizonKeys, "_add", counting_add)
    texts = ["a((x))", "bb[[y \t ]]", "a(x)", "bby\t\t "]

    def masks(compiled, text):
        m, out = sg.GrammarMatcher(compiled), []
        for ch in text:
            out.append(m.next_token_mask().tobytes())
            assert m.accept_string(ch)
        return out

    expected = [masks(ahead, t) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda t: masks(late, t), texts * 2))
    assert got == expected * 2
    assert sorted(built) == sorted(set(built)) and len(built) == len(late.automaton.lazy.names) - 1
    assert len(classes) == len(set(classes))  # and each rule's horizon classes found once (HorizonKeys.sync's lock)


def test_the_ir_facts_walk_each_node_of_a_dag_once():
    """Schema IR shares its pieces: a node met again is answered from what its first walk found,
    so a DAG of depth k costs a few calls a level (answers remembered included), not 2**k paths
    (counted through every recursive call; the walk before this memo took 2**17)."""
    from strictgen.compile.rule_facts import IrFacts, Nullable
    from strictgen.grammar.ir import Alt, Seq

    class CountingNullable(Nullable):
        calls = 0

        def ask(self, e, given):
            self.calls += 1
            return super().ask(e, given)

    class Counting(IrFacts):
        lefts = 0

        def left_calls(self, e, out, nullable, productive, seen):
            self.lefts += 1
            return super().left_calls(e, out, nullable, productive, seen)

    node = lit("a")  # not nullable: each level must look at both of its branches
    for _ in range(16):
        node = Alt((Seq((node,)), Seq((node, node))))
    facts = Counting({}, {}, lambda e: True)
    nullable = CountingNullable({}, {})
    facts.nullable = nullable.ask
    assert not facts.nullable(node, set())
    assert 17 <= nullable.calls <= 5 * 17  # every level asked (the fold's own recursion counted), none twice over
    out: set[int] = set()
    facts.left_calls(node, out, set(), set(), set())
    assert out == set() and facts.lefts <= 5 * 17


@settings(max_examples=25, deadline=None)
@given(data=st.lists(st.sampled_from(b"abxy()[] \t"), max_size=6).map(bytes))
@example(data=b"")
def test_a_walk_that_meets_an_unbuilt_rule_builds_it_and_goes_on(qwen, data):
    """The C trie walk, meeting a rule not built yet, has it built (its resolver) and resumes where
    it was: the mask is the one of the machine with every rule built ahead, and no NeedRule
    escapes; without a resolver the walk raises NeedRule."""
    from strictgen.compile import _walk
    from strictgen.compile._machine import NeedRule
    from strictgen.tokenizer.trie import words_for

    trie = qwen.trie
    eager, lazy = PushdownMachine(compile_automaton(two_branches())), PushdownMachine(compile_automaton(two_branches(), 0))
    state_e, state_l = eager.step_bytes(eager.start, data), lazy.step_bytes(lazy.start, data)
    assert (state_e == DEAD) == (state_l == DEAD)
    if state_e == DEAD:
        return
    built = []
    core, resolve = lazy.walk_source()

    def recording(rule):
        built.append(rule)
        resolve(rule)

    def mask(source, state):
        packed = np.zeros(words_for(qwen.vocab_size), dtype=np.int32)
        _walk.walk_bits(*source, trie.walk_nodes, trie.node_byte, trie.node_tokens, trie.roots, state, packed)
        return packed

    unbuilt = len(lazy.automaton.lazy.names) - len(lazy.automaton.rules) - len(lazy.added)
    assert np.array_equal(mask((core, recording), state_l), mask(eager.walk_source(), state_e))
    assert len(built) == len(set(built)) <= unbuilt  # each rule built once, while the walk went on
    if data == b"":  # from the start, tokens enter x ("a(") and y ("bb["): both built inside the walk
        assert built
        fresh = PushdownMachine(compile_automaton(two_branches(), 0))
        with pytest.raises(NeedRule):
            mask((fresh.walk_source()[0], None), fresh.start)
