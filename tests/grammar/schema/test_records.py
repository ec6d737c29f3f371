"""schema.records.record: a frozen dataclass whose generated __init__ writes the instance dict;
on the schema IR's records it takes the dataclass's parameters (fields in order, declared defaults)."""

import dataclasses

import pytest

from strictgen.grammar.schema import ir
from strictgen.grammar.schema.records import record

RECORDS = [ir.SrcInfo, ir.NumberConstraints, ir.Length, ir.Matches, ir.Format, ir.AmongStrings, ir.NotAll, ir.Contains, ir.ArrayConstraints, ir.KeyRule, ir.ObjectConstraints, ir.Conjunct]


def _sample(i: int, f: dataclasses.Field):
    """A value for field number i unlike its default (identity is what the check compares)."""
    return ("value", i, f.name)


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_init_takes_the_dataclass_parameters(cls):
    fs = dataclasses.fields(cls)
    values = [_sample(i, f) for i, f in enumerate(fs)]
    positional, keyword = cls(*values), cls(**{f.name: v for f, v in zip(fs, values)})
    for f, v in zip(fs, values):
        assert getattr(positional, f.name) is v and getattr(keyword, f.name) is v
    required = [f for f in fs if f.default is dataclasses.MISSING]
    partial = cls(*values[: len(required)])
    for f in fs[len(required):]:
        assert getattr(partial, f.name) is f.default  # defaults as declared
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(positional, fs[0].name, None)
    with pytest.raises(TypeError):
        cls(*values, "one too many")


def test_equality_hash_and_replace_stay_the_dataclass_ones():
    a = ir.Conjunct(null=False, bools=frozenset((True,)))
    b = ir.Conjunct(False, frozenset((True,)))
    assert a == b and hash(a) == hash(b) and a != ir.TOP
    assert dataclasses.replace(a, null=True, bools=ir.ALL_BOOLS) == ir.TOP
    assert ir.KeyRule("name", ir.TRUE, name="x", pointer="/a") == ir.KeyRule("name", ir.TRUE, name="x", pointer="/b")  # pointer: compare=False


def test_default_factory_is_refused():
    class WithFactory:
        __annotations__ = {"xs": "list"}
        xs: list = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match="default_factory"):
        record(WithFactory)
