"""schema.rule_sizes.call_big_rules reads each rule's references off its size terms and hands
them to ir.rule_references: they must be exactly what a plain walk of the final rules finds,
or the automaton compiler's cycle search would miss a call."""

from __future__ import annotations

import random

import pytest

from strictgen.bench import default_schemas_dir, load_cases
from strictgen.grammar.ir import Alt, Lazy, RuleRef, Seq, Spelled, rule_references
from strictgen.grammar.json_schema import json_schema_grammar, schema_cache_text


def walked(expr) -> frozenset[str]:
    """The rules `expr` refers to, by a walk that knows nothing of the size terms."""
    out, seen, stack = set(), set(), [expr]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, RuleRef):
            out.add(e.name)
        elif isinstance(e, Lazy):
            stack.extend(e.uses)
        elif isinstance(e, Spelled):
            stack.append(e.item)
        else:
            for field in ("items", "item", "base", "minus"):
                v = getattr(e, field, None)
                stack.extend(v if isinstance(v, tuple) else [v] if v is not None else [])
    return frozenset(out)


def _schemas():
    from strictgen.errors import StrictgenError

    many = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(14)}, "required": ["p0", "p7"]}
    deep = {"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}, "v": {"type": "string"}}}}, "$ref": "#/$defs/n"}
    built = [("any_order 14", many, True), ("recursive", deep, False)]
    bench = default_schemas_dir()
    if not bench.is_dir():  # a lone clone: the built cases still run
        reason = f"{bench} is absent: ../shared/data is not beside this clone"
        return [pytest.param("bench schemas", None, False, marks=pytest.mark.skip(reason=reason)), *built]
    picked = []
    for c in random.Random(0).sample(load_cases(bench), 14):
        try:  # the bench schemas this compiles (a few are refused, which is not this test's business)
            json_schema_grammar(schema_cache_text(c.schema), strict=False)
            picked.append(c)
        except StrictgenError:
            pass
    return [(c.name, c.schema, False) for c in picked] + built


@pytest.mark.parametrize("name,schema,any_order", _schemas(), ids=lambda x: x if isinstance(x, str) else None)
def test_references_handed_over_are_the_walked_ones(name, schema, any_order):
    grammar, _ = json_schema_grammar(schema_cache_text(schema), strict=False, any_order=any_order)
    assert grammar.rules
    for rule, expr in grammar.rules.items():
        assert rule_references(expr) == walked(expr), rule
    if any_order:  # the key sets past nine properties are Lazy calls, whose uses are references
        assert any(isinstance(e, Lazy) for e in _nodes(grammar.rules.values()))


def _nodes(roots):
    seen, stack = set(), list(roots)
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        if isinstance(e, (Seq, Alt)):
            stack.extend(e.items)
        for field in ("item", "base", "minus"):
            v = getattr(e, field, None)
            if v is not None:
                stack.append(v)


def _called(grammar) -> set[str]:
    """The rules call_big_rules kept as calls (their bodies are `called_body`'s)."""
    return {n for n, e in grammar.rules.items() if isinstance(e, Alt) and e.items[-1:] == (Seq((Alt(()), RuleRef(n))),)}


def test_a_rule_made_a_call_counts_as_one_state_everywhere_after():
    """Rule a (1,000 states) is shared by rules b and c through one node; b copies it six times
    (a repeat of at most 3 of two uses), so a becomes a call there. c, planned after b, then
    counts a as one state: 2,500 + 2, under BIG_RULE, so c stays inlined (with a's size remembered
    from before, c would count 4,500 and become a call too)."""
    from strictgen.grammar.ir import Grammar, lit, repeat, seq
    from strictgen.grammar.schema.rule_sizes import BIG_RULE, call_big_rules

    shared = seq(RuleRef("a"), RuleRef("a"))
    rules = {
        "root": seq(RuleRef("b"), RuleRef("c")),
        "a": lit("x" * 1000),
        "b": repeat(shared, 0, 3),
        "c": seq(shared, lit("y" * 2500)),
    }
    grammar = Grammar(dict(rules), "root")
    call_big_rules(grammar)
    assert _called(grammar) == {"a"}
    assert 2 * 1000 + 2500 > BIG_RULE
    for n in rules:  # the references handed over are the final rules' own
        assert rule_references(grammar.rules[n]) == walked(grammar.rules[n])


def test_a_rule_over_the_bound_by_itself_becomes_a_call_and_the_root_never():
    """A rule bigger than BIG_RULE with nothing to call becomes a call itself, the root never; a
    rule whose references are small (32 states or fewer) is not relieved by calling them."""
    from strictgen.grammar.ir import Grammar, lit, repeat, seq
    from strictgen.grammar.schema.rule_sizes import call_big_rules

    rules = {
        "root": seq(RuleRef("big"), RuleRef("many"), lit("z" * 5000)),
        "big": lit("x" * 4500),
        "many": repeat(RuleRef("small"), 0, 500),
        "small": lit("s" * 20),
    }
    grammar = Grammar(dict(rules), "root")
    call_big_rules(grammar)
    assert _called(grammar) == {"big", "many"}


def _c_and_python_terms(grammar):
    """(C, Python) of every rule: its size terms and its reference copies."""
    from strictgen.grammar.schema import _rule_sizes, rule_sizes

    names = list(grammar.rules)
    got = _rule_sizes.graph([grammar.rules[n] for n in names], {n: i for i, n in enumerate(names)}, rule_sizes._IR_TYPES, names)
    assert got is not None
    fixed, weights, flat = got
    c = {n: (fixed[i], weights[i], _rule_sizes.copies(flat, i, names)) for i, n in enumerate(names)}
    memo: dict = {}
    py = {n: (*rule_sizes._size_terms(e, memo), rule_sizes._ref_copies(e)) for n, e in grammar.rules.items()}
    return c, py


@pytest.mark.parametrize("name,schema,any_order", _schemas(), ids=lambda x: x if isinstance(x, str) else None)
def test_the_c_terms_are_the_python_walk_s(name, schema, any_order):
    """_rule_sizes.c's size terms and reference copies equal the Python reference's, rule by rule,
    on real schema grammars (shared pieces, repeats, spelled strings, lazy key-set families)."""
    grammar, _ = json_schema_grammar(schema_cache_text(schema), strict=False, any_order=any_order)
    c, py = _c_and_python_terms(grammar)
    assert c == py


def _random_grammar(draw_choices):
    """A grammar of rules r0..r4 over a pool of shared nodes (each node may be used many times)."""
    from strictgen.grammar.ir import ByteSet, CharSet, Difference, Grammar, Intersect, Literal, Repeat

    rnd = random.Random(draw_choices)
    pool = [Literal(b"ab"), Literal(b""), ByteSet(((0, 9),)), CharSet(((65, 90), (97, 122)))]
    pool += [RuleRef(f"r{i}") for i in range(5)]
    for _ in range(rnd.randint(1, 40)):
        kind = rnd.randrange(7)
        kids = tuple(rnd.choice(pool) for _ in range(rnd.randint(0, 4)))
        if kind == 0:
            pool.append(Seq(kids))
        elif kind == 1:
            pool.append(Alt(kids))
        elif kind == 2:
            lo = rnd.randint(0, 5)
            pool.append(Repeat(rnd.choice(pool), lo, rnd.choice([None, lo, lo + rnd.randint(0, 70)])))
        elif kind == 3:
            pool.append(Intersect(kids or (pool[0],)))
        elif kind == 4:
            pool.append(Difference(rnd.choice(pool), rnd.choice(pool)))
        elif kind == 5:
            pool.append(Spelled(rnd.choice(pool)))
        else:
            pool.append(Seq((rnd.choice(pool), rnd.choice(pool), rnd.choice(pool))))
    return Grammar({f"r{i}": rnd.choice(pool[4:]) for i in range(5)}, "r0")


@pytest.mark.parametrize("seed", range(60))
def test_the_c_terms_are_the_python_walk_s_on_random_dags(seed):
    """The same on random IR DAGs: nodes shared at many places, repeated children of one node,
    repeats bounded, unbounded and of zero copies, differences, intersections, spelled pieces."""
    c, py = _c_and_python_terms(_random_grammar(seed))
    assert c == py


def test_past_128_bits_or_an_unknown_rule_the_python_walk_decides():
    """Sizes past int64 are the Python walk's in C too (real schemas reach 10^30); a repeat bound
    past int64, or sizes past 128 bits: the C walk answers None and the Python walk plans; a
    reference to no rule: the error cyclic_rules gives, as before."""
    from strictgen.errors import StrictgenError
    from strictgen.grammar.ir import Grammar, Repeat, lit, repeat
    from strictgen.grammar.schema import _rule_sizes, rule_sizes
    from strictgen.grammar.schema.rule_sizes import call_big_rules

    deep = Grammar({"root": repeat(repeat(repeat(seq_of(RuleRef("a"), lit("yz")), 0, 1 << 30), 0, 1 << 30), 0, 1 << 30), "a": lit("x")}, "root")
    c, py = _c_and_python_terms(deep)
    assert c == py and c["root"][0] > 1 << 90
    huge = Repeat(RuleRef("a"), 0, 1 << 70)
    nested = repeat(repeat(repeat(repeat(RuleRef("a"), 0, 1 << 40), 0, 1 << 40), 0, 1 << 40), 0, 1 << 40)
    for body in (huge, nested):
        rules = {"root": body, "a": lit("x" * 40)}
        names = list(rules)
        assert _rule_sizes.graph(list(rules.values()), {"root": 0, "a": 1}, rule_sizes._IR_TYPES, names) is None
        grammar = Grammar(dict(rules), "root")
        call_big_rules(grammar)
        assert _called(grammar) == {"a"}  # 40 states copied past BIG_RULE: a becomes a call
    with pytest.raises(StrictgenError, match="undefined rule 'nowhere'"):
        call_big_rules(Grammar({"root": seq_of(RuleRef("nowhere"))}, "root"))


def seq_of(*items):
    return Seq(items)


@pytest.mark.parametrize("big_rule,max_depth", [(4000, 24), (60, 2), (400, 3)])
def test_small_grammars_are_left_as_the_planning_would_leave_them(monkeypatch, big_rule, max_depth):
    """_rule_sizes.c's `small` (call_big_rules' fast path) says True only where the Python
    planning calls no rule: on random grammars (cycles, shared pieces, repeats), under bounds low
    enough that the size and the depth tests both decide some of them; each answer is seen."""
    from strictgen.grammar.ir import Grammar
    from strictgen.grammar.schema import rule_sizes
    from strictgen.grammar.schema._rule_sizes import small as _c_small

    monkeypatch.setattr(rule_sizes, "BIG_RULE", big_rule)
    monkeypatch.setattr(rule_sizes, "MAX_INLINE_DEPTH", max_depth)
    monkeypatch.setattr(rule_sizes, "flat_small", lambda *args: False)  # the planning always runs
    answers = set()
    for seed in range(150):
        grammar = _random_grammar(seed)
        names = list(grammar.rules)
        index = {n: i for i, n in enumerate(names)}
        got = rule_sizes.flat_graph(list(grammar.rules.values()), index, rule_sizes._IR_TYPES, names)
        if got is None:
            continue
        small = _c_small(got[0], got[1], index, index[grammar.root], big_rule, max_depth)
        before = dict(grammar.rules)
        rule_sizes.call_big_rules(Grammar(grammar.rules, grammar.root))
        unchanged = all(grammar.rules[n] is before[n] for n in names)
        assert unchanged or not small, seed
        answers.add((small, unchanged))
    assert {(True, True), (False, False)} <= answers


def test_small_says_no_past_a_bound_and_on_a_long_chain():
    """The fast path's own cases: a rule past BIG_RULE, a chain of rules deeper than
    MAX_INLINE_DEPTH (the root excepted), weights and fixed sizes past int64, a cycle."""
    from strictgen.grammar.schema._rule_sizes import small

    index = {f"r{i}": i for i in range(40)}
    chain_w = [{f"r{i + 1}": 1} for i in range(39)] + [{}]
    assert small([1] * 40, chain_w, index, 0, 4000, 24) is False  # r1..r39: 39 deep
    assert small([1] * 25, chain_w[:24] + [{}], {f"r{i}": i for i in range(25)}, 0, 4000, 24) is True  # 25 deep at the root only
    assert small([1] * 26, chain_w[:25] + [{}], {f"r{i}": i for i in range(26)}, 0, 4000, 24) is False  # 25 deep at r1
    assert small([1 << 70, 1], [{"r1": 1}, {}], index, 0, 4000, 24) is False
    assert small([1, 5], [{"r1": 1 << 70}, {}], index, 0, 4000, 24) is False
    assert small([1, 0], [{"r1": 1 << 70}, {}], index, 0, 4000, 24) is True  # a rule of no states, copied
    cycle = [{"r1": 1000}, {"r0": 1000}]  # on a cycle both are calls: size 1 each, 1 + 1000 each
    assert small([1, 1], cycle, index, 0, 4000, 24) is True
    assert small([3001, 1], cycle, index, 0, 4000, 24) is False
    assert small([1], [{"nope": 1}], index, 0, 4000, 24) is False


def test_kept_terms_of_a_body_met_again_are_its_walked_terms(monkeypatch):
    """A big body met in a later grammar (the same object: a format's string, a spelled enum) is
    not walked again: its kept terms and reference copies are given, and they are the Python
    walk's of that grammar, rule by rule, beside rules that are walked (also one that refers to
    the big rule, and a big rule that now refers to a rule of another position)."""
    from strictgen.grammar.ir import Grammar, Repeat, lit
    from strictgen.grammar.schema import rule_sizes

    big = Seq((Repeat(Alt((lit("ab"), RuleRef("leaf"))), 0, 4_000), RuleRef("leaf")))  # ~12,000 states
    first = Grammar({"root": Seq((RuleRef("big"), RuleRef("leaf"))), "big": big, "leaf": lit("x")}, "root")
    second = Grammar({"root": Alt((RuleRef("big"), lit("y"))), "leaf": lit("zz"), "other": Repeat(RuleRef("big"), 0, 3), "big": big}, "root")
    walks = []
    real = rule_sizes.flat_graph
    monkeypatch.setattr(rule_sizes, "flat_graph", lambda bodies, *a: walks.append(bodies) or real(bodies, *a))
    rule_sizes._SHARED_TERMS.clear()
    rule_sizes._SEEN_BIG.clear()
    rule_sizes._terms(first)  # (met once: its terms are kept from the second meeting on)
    for grammar, kept_before in ((first, False), (second, True)):
        assert (rule_sizes._SHARED_TERMS.peek(id(big)) is not None) == kept_before
        terms, ref_copies, small = rule_sizes._terms(grammar)
        assert any(b is big for b in walks[-1]) != kept_before
        memo: dict = {}
        for n, e in grammar.rules.items():
            assert terms[n] == rule_sizes._size_terms(e, memo)
            assert ref_copies(n) == rule_sizes._ref_copies(e)
        assert not small
        assert rule_sizes._SHARED_TERMS.peek(id(big))[0] is big
