"""grammar.ir.cyclic_rules (Tarjan's components, iterative, references walked in whatever order
their sets give) against its definition: a name is on a cycle when it reaches itself through one
reference or more. And post_order lists every name after the names it refers to, but on cycles;
post_order_and_cycles gives both from one walk; states_on_cycles answers cyclic_rules on states
numbered 0..n-1 given as successor lists (a DFA's), duplicates and self-steps included. The walk
is in C (grammar/_graphs.c): the same finishing order and cycles as the Python reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.errors import StrictgenError
from strictgen.grammar import _graphs, graphs as grammar_graphs
from strictgen.grammar.ir import cyclic_rules, post_order, post_order_and_cycles, states_on_cycles


def reaches_itself(graph: dict, start) -> bool:
    seen, work = set(), list(graph[start])
    while work:
        x = work.pop()
        if x == start:
            return True
        if x not in seen:
            seen.add(x)
            work.extend(graph[x])
    return False


graphs = st.integers(1, 30).flatmap(
    lambda n: st.lists(st.frozensets(st.integers(0, n - 1), max_size=4), min_size=n, max_size=n).map(lambda refs: dict(enumerate(refs)))
)


@settings(max_examples=300, deadline=None)
@given(graphs)
def test_cyclic_rules_are_the_names_that_reach_themselves(graph):
    assert cyclic_rules(graph) == {x for x in graph if reaches_itself(graph, x)}
    named = {f"r{k}": frozenset(f"r{v}" for v in refs) for k, refs in graph.items()}  # names, as rules have
    assert cyclic_rules(named) == {f"r{x}" for x in graph if reaches_itself(graph, x)}


@settings(max_examples=200, deadline=None)
@given(graphs)
def test_post_order_puts_callees_first_off_cycles(graph):
    order = post_order(graph)
    assert sorted(order) == sorted(graph)
    at = {x: i for i, x in enumerate(order)}
    cyclic = cyclic_rules(graph)
    for x, refs in graph.items():
        for y in refs:
            if not (x in cyclic and y in cyclic):
                assert at[y] < at[x], (x, y)


@settings(max_examples=200, deadline=None)
@given(graphs)
def test_post_order_and_cycles_is_both_from_one_walk(graph):
    named = {f"r{k}": frozenset(f"r{v}" for v in refs) for k, refs in graph.items()}
    for g in (graph, named):
        assert post_order_and_cycles(g) == (post_order(g), cyclic_rules(g))


def test_a_long_chain_and_a_reference_to_no_rule():
    chain = {i: frozenset({i + 1}) for i in range(20_000)} | {20_000: frozenset({0})}
    assert cyclic_rules(chain) == set(chain)  # iterative: no recursion limit
    del chain[20_000]
    chain[19_999] = frozenset()
    assert cyclic_rules(chain) == set()
    with pytest.raises(StrictgenError, match="undefined rule 'b'"):
        cyclic_rules({"a": frozenset({"b"})})
    with pytest.raises(StrictgenError, match="undefined rule 'b'"):
        post_order_and_cycles({"a": frozenset({"b"})})


@settings(max_examples=300, deadline=None)
@given(graphs, st.data())
def test_states_on_cycles_on_successor_lists(graph, data):
    succ = [sorted(graph[k]) + data.draw(st.lists(st.sampled_from(sorted(graph[k])), max_size=2)) if graph[k] else [] for k in range(len(graph))]
    assert states_on_cycles(succ) == [reaches_itself(graph, x) for x in range(len(graph))]


@settings(max_examples=300, deadline=None)
@given(graphs, st.booleans())
def test_the_walk_in_c_finishes_as_the_reference(graph, sorted_children):
    """_graphs.components: the finishing order and cycles of the Python walk, on numbers and on
    names (whose sorted order differs from their dict order); _graphs.cycles: its cycles on
    successor lists."""
    named = {f"r{(7 * k) % 31}": frozenset(f"r{(7 * v) % 31}" for v in refs) for k, refs in graph.items()}
    for g in (graph, named):
        assert _graphs.components(g, sorted_children) == grammar_graphs._components_in_python(g, sorted_children)
    succ = [sorted(graph[k]) for k in range(len(graph))]
    assert _graphs.cycles(succ) == grammar_graphs._tarjan(succ)[1]


def test_the_walk_in_c_refuses_what_it_cannot_walk():
    with pytest.raises(KeyError):
        _graphs.components({"a": ["b"]}, False)
    with pytest.raises(TypeError):
        _graphs.components({"a": ["a", 1]}, True)  # unorderable names, as sorted() says
    with pytest.raises(IndexError):
        _graphs.cycles([[1]])
    assert _graphs.components({}, True) == ([], set()) and _graphs.cycles([]) == []
