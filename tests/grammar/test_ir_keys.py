"""Content keys of IR expressions (grammar/ir_keys.py): equal exactly when the expressions are equal
values, and linear on DAGs, where the dataclasses' own hash and equality are exponential."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.grammar import _ir_walks
from strictgen.grammar.ir import ByteSet, CharSet, Difference, Repeat, RuleRef, Spelled, alt, intersect, lit, seq
from strictgen.grammar.ir_keys import WALKED_KINDS, ContentKey, ContentKeys, same_value

leaves = st.sampled_from([lit("a"), lit("b"), lit("ab"), lit(""), ByteSet(((0x61, 0x62),)), CharSet(((0x61, 0x62),)), CharSet(((0x61, 0x63),)),
                          RuleRef("r"), RuleRef("s")])

exprs = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, min_size=1, max_size=3).map(lambda xs: seq(*xs)),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: alt(*xs)),
        st.tuples(children, st.integers(0, 2), st.one_of(st.none(), st.integers(0, 3))).map(lambda t: Repeat(t[0], t[1], t[2])),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: intersect(*xs)),
        st.tuples(children, children).map(lambda t: Difference(t[0], t[1])),
        children.map(Spelled),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(exprs, exprs)
def test_keys_are_equal_exactly_when_the_values_are(a, b):
    keys = ContentKeys()
    assert (keys.key(a) == keys.key(b)) == (a == b)
    assert same_value(a, b) == (a == b)
    twin = copy.deepcopy(a)  # the same value, other objects: the same key, from a fresh key table too
    assert ContentKeys().key(twin) == keys.key(a) and hash(ContentKeys().key(twin)) == hash(keys.key(a))


def same_in_c(a, b) -> bool:
    return _ir_walks.same_value(a, b, WALKED_KINDS)


@settings(max_examples=300, deadline=None)
@given(exprs, exprs)
def test_the_equality_walked_in_c_is_the_reference(a, b):
    """ContentKey's equality (`_ir_walks.same_value`) against `same_value` and the dataclasses'
    own: types, a Repeat's bounds, leaves' values, the number of items; keys of equal hashes are
    equal exactly when their values are."""
    assert same_in_c(a, b) == same_value(a, b) == (a == b)
    twin = copy.deepcopy(a)
    assert same_in_c(a, twin) and same_in_c(twin, a) and ContentKey(a, 7) == ContentKey(twin, 7)
    assert (ContentKey(a, 7) == ContentKey(b, 7)) == (a == b)


def test_the_equality_walked_in_c_tells_each_difference():
    """Pairs that differ in one place only, deep inside: a bound, a leaf, a type, an item more."""
    def inside(x):
        return seq(lit("q"), alt(seq(lit("a"), x), lit("z")), Spelled(x))

    base = Repeat(seq(lit("a"), RuleRef("r")), 0, 3)
    for other in (Repeat(seq(lit("a"), RuleRef("r")), 0, None), Repeat(seq(lit("a"), RuleRef("s")), 0, 3),
                  Repeat(seq(lit("a"), ByteSet(((0x61, 0x61),))), 0, 3), Repeat(seq(lit("a"), RuleRef("r"), lit("b")), 0, 3),
                  Repeat(alt(lit("a"), RuleRef("r")), 0, 3)):
        assert not same_in_c(inside(base), inside(other)) and not same_value(inside(base), inside(other))
    assert same_in_c(inside(base), inside(copy.deepcopy(base)))


def test_keys_of_a_dag_cost_one_pass_over_its_nodes():
    """40 levels, each using the level below twice: 2^40 paths as a tree, 121 nodes as a DAG."""
    def chain(marker: str):
        tail = lit("!")
        for _ in range(40):
            tail = alt(seq(lit("a"), tail), seq(lit("b"), tail))
        return seq(tail, lit(marker))

    a, b, c = chain("x"), chain("x"), chain("y")
    keys = ContentKeys()  # hashed by their dataclasses (as a tree), these would never finish
    assert a is not b and keys.key(a) == keys.key(b)
    assert keys.key(a) != keys.key(c)
    assert same_value(a, b) and not same_value(a, c)
    assert same_in_c(a, b) and not same_in_c(a, c)
