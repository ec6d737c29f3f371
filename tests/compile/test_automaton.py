"""IR → DFAs: inlining, recursion, trimming, and the errors compile time must give."""

import pytest

from strictgen.compile.automaton import LeftRecursionError, compile_automaton, recursive_rules
from strictgen.compile.machine import DEAD, PushdownMachine
from strictgen.errors import GrammarSyntaxError, StrictgenError
from strictgen.grammar.ir import NOTHING, Grammar, RuleRef, alt, chars, lit, opt, repeat, seq


def accepts(grammar: Grammar, data: bytes) -> bool:
    machine = PushdownMachine(compile_automaton(grammar))
    state = machine.step_bytes(machine.start, data)
    return state != DEAD and machine.accepting[state]


def test_non_recursive_rules_are_inlined_into_one_dfa():
    g = Grammar({"root": seq(RuleRef("a"), RuleRef("a")), "a": alt(lit("x"), lit("yz"))})
    automaton = compile_automaton(g)
    assert len(automaton.rules) == 1
    assert all(not calls for calls in automaton.rules[0].calls)
    assert accepts(g, b"xyz") and accepts(g, b"yzyz") and not accepts(g, b"xy")


def test_recursive_rules_keep_call_edges():
    g = Grammar({"root": RuleRef("p"), "p": alt(lit(""), seq(lit("("), RuleRef("p"), lit(")"), RuleRef("p")))})
    assert recursive_rules(g) == {"p"}
    assert accepts(g, b"(()())()") and accepts(g, b"") and not accepts(g, b"(()")
    deep = b"(" * 200 + b")" * 200
    assert accepts(g, deep) and not accepts(g, deep + b")")


def test_mutual_recursion():
    g = Grammar({"root": RuleRef("a"), "a": alt(lit("x"), seq(lit("["), RuleRef("b"), lit("]"))), "b": seq(RuleRef("a"), repeat(seq(lit(","), RuleRef("a"))))})
    assert recursive_rules(g) == {"a", "b"}
    assert accepts(g, b"[x,[x,x],[[x]]]") and not accepts(g, b"[x,]")


def test_right_recursion_stays_flat():
    g = Grammar({"root": RuleRef("list"), "list": alt(lit("."), seq(lit("a"), RuleRef("list")))})
    machine = PushdownMachine(compile_automaton(g))
    state = machine.step_bytes(machine.start, b"a" * 500)
    assert state != DEAD
    # tail calls: the stack does not grow with the input, so the machine stays small
    assert machine.num_states < 10
    assert machine.accepting[machine.step_bytes(state, b".")]


@pytest.mark.parametrize(
    "rules",
    [
        {"root": RuleRef("e"), "e": alt(seq(RuleRef("e"), lit("+"), lit("1")), lit("1"))},
        {"root": RuleRef("a"), "a": seq(opt(lit("x")), RuleRef("b")), "b": alt(seq(RuleRef("a"), lit("y")), lit("z"))},
        {"root": RuleRef("a"), "a": alt(seq(RuleRef("n"), RuleRef("a"), lit("q")), lit("z")), "n": opt(lit("x"))},
    ],
)
def test_left_recursion_is_refused(rules):
    with pytest.raises(LeftRecursionError, match="left-recursive"):
        compile_automaton(Grammar(rules))
    assert issubclass(LeftRecursionError, GrammarSyntaxError)


def test_empty_language_and_missing_rules_are_errors():
    with pytest.raises(StrictgenError, match="accepts no string"):
        compile_automaton(Grammar({"root": NOTHING}))
    with pytest.raises(StrictgenError, match="accepts no string"):
        compile_automaton(Grammar({"root": RuleRef("a"), "a": seq(lit("x"), RuleRef("a"))}))
    with pytest.raises(StrictgenError, match="undefined rule"):
        compile_automaton(Grammar({"root": RuleRef("nope")}))
    with pytest.raises(StrictgenError, match="no root rule"):
        compile_automaton(Grammar({"start": lit("x")}))


def test_non_productive_alternatives_are_trimmed():
    # `a` can never finish, so after "x" only "y" may follow: no dead end is reachable
    g = Grammar({"root": alt(seq(lit("x"), RuleRef("a")), lit("xy")), "a": seq(lit("z"), RuleRef("a"))})
    machine = PushdownMachine(compile_automaton(g))
    state = machine.step_bytes(machine.start, b"x")
    assert machine.step(state, ord("z")) == DEAD
    assert machine.accepting[machine.step(state, ord("y"))]


def test_bounded_repeats_and_charsets():
    g = Grammar({"root": seq(repeat(chars("你好"), 2, 3), lit("!"))})
    assert accepts(g, "你好!".encode()) and accepts(g, "好好你!".encode())
    assert not accepts(g, "你!".encode()) and not accepts(g, "你好你好!".encode())
    assert not accepts(g, "你".encode()[:2] + b"!")


def test_intersection_and_difference_are_exact():
    from strictgen.grammar.ir import difference, intersect
    from strictgen.grammar.regex import parse_regex, parse_regex_search

    import re

    both = intersect(repeat(chars("abc"), 2, 4), parse_regex_search("ab"), parse_regex(".*c"))
    minus = difference(repeat(chars("abc"), 0, 3), alt(lit("ab"), lit("")))
    g_both, g_minus = Grammar({"root": both}), Grammar({"root": minus})
    import itertools

    for n in range(6):
        for t in itertools.product("abc", repeat=n):
            s = "".join(t)
            assert accepts(g_both, s.encode()) == (2 <= n <= 4 and "ab" in s and s.endswith("c")), s
            assert accepts(g_minus, s.encode()) == (n <= 3 and s not in ("ab", "")), s
    # inside a sequence and with a shared operand used twice
    key = difference(repeat(chars("xy"), 1, 3), lit("xy"))
    g = Grammar({"root": seq(key, lit("="), key)})
    assert accepts(g, b"x=yy") and not accepts(g, b"xy=x") and not accepts(g, b"x=xy")
    assert re.fullmatch  # keep the import used


def test_intersection_refuses_recursive_operands():
    from strictgen.grammar.ir import intersect

    g = Grammar({"root": intersect(RuleRef("p"), repeat(chars("()"))), "p": alt(lit(""), seq(lit("("), RuleRef("p"), lit(")")))})
    with pytest.raises(StrictgenError, match="regular"):
        compile_automaton(g)


def test_shared_subexpressions_build_once():
    # a chain where each step is used twice: as a tree it has 2**40 paths, as a DAG 40 nodes
    tail = lit("!")
    for i in range(40):
        tail = alt(seq(lit("a"), tail), seq(lit("b"), tail))
    automaton = compile_automaton(Grammar({"root": tail}))
    assert automaton.rules[0].num_states < 200
    assert accepts(Grammar({"root": tail}), b"ab" * 20 + b"!")


def test_a_rule_body_shared_by_grammars_means_each_grammar_s_own_callees_and_inlined_rules():
    """Rule automata are kept across grammars by the identity of the bodies they are built from
    and the numbers of the rules they call: the same body object, calling a rule defined apart,
    calling a rule numbered apart or inlining a rule defined apart, is each grammar's own language."""
    shared = seq(lit("<"), repeat(alt(RuleRef("leaf"), RuleRef("inner"), RuleRef("shared")), 0, 2), lit(">"))  # one object
    x = lit("x")  # one object: the second grammar reuses the first one's automaton of "shared"
    kinds = [
        ({"leaf": lit("a"), "inner": x}, b"a", b"x"),
        ({"leaf": lit("b"), "inner": x}, b"b", b"x"),  # another leaf (a called rule), the same numbers
        ({"leaf": lit("a"), "inner": x, "aaa": seq(lit("!"), opt(RuleRef("aaa")))}, b"a", b"x"),  # "leaf" numbered apart
        ({"leaf": lit("a"), "inner": lit("y")}, b"a", b"y"),  # another inlined rule
    ]
    for extra, leaf, inner in kinds:
        rules = {"root": seq(RuleRef("shared"), opt(RuleRef("aaa")) if "aaa" in extra else lit("")), "shared": shared,
                 "leaf": seq(extra["leaf"], opt(RuleRef("leaf"))), **{k: v for k, v in extra.items() if k != "leaf"}}
        g = Grammar(rules, "root")
        assert accepts(g, b"<" + leaf + inner + b">")
        assert accepts(g, b"<<" + leaf + leaf + b">" + inner + b">")
        assert not accepts(g, b"<" + (b"b" if leaf == b"a" else b"a") + b">")
        assert not accepts(g, b"<" + (b"y" if inner == b"x" else b"x") + b">")


def test_a_schema_s_masks_do_not_depend_on_what_earlier_compiles_kept(qwen):
    """Compiles keep pieces' automata by identity across compilers (grammar.automata
    _pieces/_minimal_pieces), from the second compile that meets them. A schema compiled with
    those caches emptied, again (which fills them) and once more (which reads them) gives the
    same mask at every character of a valid document each time, and accepts it to the end."""
    import json

    import strictgen as sg
    from strictgen.grammar import automata

    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "tags": {"type": "array", "items": {"enum": ["a", "bc", "d"]}, "maxItems": 3},
            "when": {"type": "string", "format": "date"},
            "n": {"type": "integer", "minimum": -5, "maximum": 500},
        },
        "required": ["name", "n"],
    }
    doc = json.dumps({"name": 'Zo \"Z\"', "tags": ["bc", "a"], "when": "2024-02-29", "n": 42})

    def masks() -> list[bytes]:
        m = sg.GrammarMatcher(sg.GrammarCompiler(qwen).compile_json_schema(schema))
        mask = sg.allocate_token_bitmask(1, qwen.vocab_size)
        out = []
        for ch in doc:
            m.fill_next_token_bitmask(mask)
            out.append(mask.tobytes())
            assert m.accept_string(ch), ch
        m.fill_next_token_bitmask(mask)
        out.append(mask.tobytes())
        return out

    for cache in (automata._pieces, automata._minimal_pieces):
        cache.clear()
    cold = masks()
    assert masks() == cold  # the second compile keeps what both met
    assert len(automata._pieces)  # the cache was filled, and is read below
    assert masks() == cold


def _calling_dfa():
    """x, then a call of rule 1 or of rule 2, then y: a DFA that trimming changes when a callee is unproductive."""
    from strictgen import regular

    nfa = regular.NFA()
    s, m, r, t = (nfa.add_state() for _ in range(4))
    nfa.add_range(s, ord("x"), ord("x"), m)
    nfa.add_call(m, 1, r)
    nfa.add_call(m, 2, r)
    nfa.add_range(r, ord("y"), ord("y"), t)
    return regular.determinize(nfa, s, t)


def test_a_reused_rule_dfa_is_minimised_once_per_flags_of_its_callees(monkeypatch):
    """minimal_rule keeps what a rule automaton shared by compiles minimises to: asked again for
    that DFA, under the same flags for its callees (other rules' flags do not matter), it gives the
    same objects without minimising; a callee's flag that changes asks the core again, and what it
    gives is what the core gives. A DFA not reused, or small, is minimised every time."""
    from strictgen import regular
    from strictgen.compile import automaton

    dfa = _calling_dfa()
    asked = []
    real = regular.minimal_with_splits

    def counting(d, productive=None):
        asked.append(productive)
        return real(d, productive)

    monkeypatch.setattr(automaton.regular, "minimal_with_splits", counting)
    assert dfa.num_states < automaton.SMALL_RULE
    automaton.minimal_rule(dfa, b"\x01\x01\x01", reused=True)
    automaton.minimal_rule(dfa, b"\x01\x01\x01", reused=True)
    assert len(asked) == 2  # small: minimised each time
    asked.clear()
    monkeypatch.setattr(automaton, "SMALL_RULE", 0)
    first = automaton.minimal_rule(dfa, b"\x01\x01\x01", reused=True)
    again = automaton.minimal_rule(dfa, b"\x01\x01\x01\x00\x00", reused=True)  # rules 3 and 4: not called
    assert again[0] is first[0] and again[1] is first[1] and len(asked) == 1
    trimmed = automaton.minimal_rule(dfa, b"\x01\x01\x00", reused=True)  # rule 2 unproductive: its call goes
    assert len(asked) == 2 and trimmed[0].num_states == first[0].num_states
    assert [c for c, _ in trimmed[0].calls(1)] == [1] and [c for c, _ in first[0].calls(1)] == [1, 2]
    want = real(dfa, b"\x01\x01\x00")
    assert trimmed[0].compact() == want[0].compact() and trimmed[1] == want[1]
    short = automaton.minimal_rule(dfa, b"\x01\x01", reused=True)  # rule 2 past the flags: unproductive, as the core reads it
    assert short[0] is trimmed[0] and len(asked) == 2
    automaton.minimal_rule(dfa, b"\x01\x01\x01")
    automaton.minimal_rule(dfa, b"\x01\x01\x01")
    assert len(asked) == 4


def test_a_rule_automaton_from_the_cache_keeps_its_minimal_dfa_across_compiles(monkeypatch):
    """Compiles of grammars sharing a recursive rule's body (the same IR objects): the second finds
    the rule's automaton in the cache (and minimises it again, keeping the result), the third finds
    its minimal DFA too, the same object (without the cache a new one: minimising this rule is
    not the automaton itself)."""
    from strictgen.compile import automaton

    monkeypatch.setattr(automaton, "SMALL_RULE", 0)  # a small rule, kept all the same
    value = alt(lit("ax"), lit("bx"), seq(lit("["), RuleRef("value"), lit("]")))  # minimising merges what a and b lead to
    compile_automaton(Grammar({"root": seq(lit("a"), RuleRef("value")), "value": value}))
    second = compile_automaton(Grammar({"root": seq(lit("b"), RuleRef("value")), "value": value}))
    third = compile_automaton(Grammar({"root": seq(lit("c"), RuleRef("value")), "value": value}))
    assert third.rules[1].dfa is second.rules[1].dfa and third.rules[1].splits is second.rules[1].splits
