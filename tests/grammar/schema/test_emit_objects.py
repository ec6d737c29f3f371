"""schema.emit_objects (emit_object): the object part of a conjunct emits exactly the object
texts jsonschema finds valid: with any_order=True in every member order, by default in schema
order (members in `order`, other keys after them), and never an invalid one in any order;
past MAX_EXISTS existential constraints the object is refused, naming `not`."""

from __future__ import annotations

import itertools
import json

import pytest

from strictgen.errors import SchemaError
from strictgen.grammar.schema.emit_objects import MAX_EXISTS, emit_object
from strictgen.grammar.schema.ir import TRUE, KeyRule, ObjectConstraints

from .oracle import emitter, language_of, validator

SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False, "minProperties": 1},
    {"type": "object", "patternProperties": {"^x": {"type": "string"}, "y$": {"type": "integer"}}, "additionalProperties": {"type": "boolean"}},
    {"type": "object", "dependentRequired": {"a": ["b"]}, "maxProperties": 2},
    {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["xy"]}], "propertyNames": {"maxLength": 2}},
    {"type": "object", "not": {"properties": {"a": {"type": "integer"}}}},
    {"type": "object", "properties": {"b": {"const": 1}}, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
]
KEYS = ["a", "b", "xy", "x", "zy", "c"]
VALUES = [1, "s", True]


def objects():
    """Every object over a few keys and values, up to three members."""
    for n in range(4):
        for keys in itertools.combinations(KEYS, n):
            for values in itertools.product(VALUES, repeat=n):
                yield dict(zip(keys, values))


ALL = list(objects())


def emitted(schema, any_order: bool):
    em = emitter(schema, any_order=any_order)
    (c,) = em.normalized.dnf(em.normalized.root)
    expr = emit_object(em, c.obj)
    em.build(TRUE)  # the rules of the member values the object refers to
    return c.obj, language_of(em, expr)


def text(doc: dict, keys) -> str:
    return json.dumps({k: doc[k] for k in keys})


# any_order with a single member slot (one listed key whose value can hold) used to take the
# fixed-order construction, so other keys could only follow it: found here, fixed by issue 15v
@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
def test_any_order_objects_are_exactly_the_valid_ones(schema):
    judge = validator(schema)
    _, accepts = emitted(schema, any_order=True)
    verdicts = set()
    for doc in ALL:
        valid = judge.is_valid(doc)
        verdicts.add(valid)
        for keys in itertools.permutations(doc):
            assert accepts(text(doc, keys)) == valid, (doc, keys)
    assert verdicts == {True, False}


@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
def test_schema_order_objects_are_the_valid_ones_in_that_order(schema):
    judge = validator(schema)
    o, accepts = emitted(schema, any_order=False)
    slot = {k: i for i, k in enumerate(o.order)}
    for doc in ALL:
        valid = judge.is_valid(doc)
        in_order = sorted(doc, key=lambda k: slot.get(k, len(slot)))
        if valid:
            assert accepts(text(doc, in_order)), doc
        for keys in itertools.permutations(doc):
            if accepts(text(doc, keys)):
                assert valid, (doc, keys)


@pytest.mark.parametrize(
    "schema,doc",
    [
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, {"b": 1, "a": "s"}),
        # two keys listed, but "a" is forbidden: "b" is the one slot left
        ({"type": "object", "not": {"required": ["a"]}, "dependentRequired": {"a": ["b"]}, "required": ["b"]}, {"xy": 1, "b": "s"}),
    ],
)
def test_any_order_lets_other_keys_precede_a_single_member_slot(schema, doc):
    assert validator(schema).is_valid(doc), "test error"
    _, accepts = emitted(schema, any_order=True)
    assert accepts(json.dumps(dict(reversed(doc.items()))))  # the slot first: accepted today
    assert accepts(json.dumps(doc))  # another key first: valid, any order asked for, rejected today


def test_too_many_existential_constraints_are_refused_naming_not():
    rules = tuple(KeyRule("name", TRUE, name=f"k{i}", evaluates=False) for i in range(MAX_EXISTS + 1))
    with pytest.raises(SchemaError) as e:
        emit_object(emitter(True), ObjectConstraints(exists=rules))
    assert e.value.keyword == "not"
    loose = emitter(True, strict=False)
    emit_object(loose, ObjectConstraints(exists=rules))
    assert [k for k, _ in loose.reporter.unenforced] == ["not"]


def test_many_overlapping_key_patterns_are_partitioned_into_cells():
    # six prefix patterns: 2^6 combinations, but a key matches at most a chain of them
    pats = {"^" + "a" * i: {"type": "integer", "minimum": i} for i in range(1, 7)}
    schema = {"type": "object", "patternProperties": pats, "additionalProperties": False}
    judge = validator(schema)
    _, accepts = emitted(schema, any_order=True)
    for key in ["a", "aaa", "aaaaaaa", "b"]:
        for v in [0, 1, 3, 7]:
            assert accepts(json.dumps({key: v})) == judge.is_valid({key: v}), (key, v)


# members with a name no property lists may repeat one, and JSON parsers keep one member per name
# (the last, for json.loads): minProperties counts distinct names (the fuzz campaign's finding C), and
# a member required by `not` can be undone by a later one of the same name
COUNTED = [
    {"type": "object", "minProperties": 2, "required": ["a"]},
    {"type": "object", "minProperties": 3, "required": ["a", "b"], "additionalProperties": {"type": "integer"}},
    {"type": "object", "minProperties": 2, "properties": {"a": {}, "b": {}}, "additionalProperties": False},
    {"type": "object", "minProperties": 2, "properties": {"a": {}}, "required": ["a"], "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
    {"type": "object", "not": {"maxProperties": 1}, "required": ["b"]},
    # existential members: at most one unlisted member, or every allowed value witnesses it
    {"type": "object", "not": {"additionalProperties": {"type": "integer"}}, "properties": {"a": {}}, "maxProperties": 2, "required": ["a"]},
    {"type": "object", "not": {"patternProperties": {"^x": {"type": "string"}}}, "additionalProperties": {"type": "integer"}},
]
MEMBERS = [k + v for k in ['"a":', '"b":', '"x":', '"\\u0078":'] for v in ("1", '"s"')]  # "x" also spelled with an escape


@pytest.mark.parametrize("any_order", [False, True])
@pytest.mark.parametrize("schema", COUNTED, ids=[str(i) for i in range(len(COUNTED))])
def test_no_accepted_object_is_invalid_once_repeated_names_are_merged(schema, any_order):
    judge = validator(schema)
    _, accepts = emitted(schema, any_order=any_order)
    accepted = 0
    for n in range(5):
        for members in itertools.product(MEMBERS, repeat=n):
            doc = "{" + ",".join(members) + "}"
            if accepts(doc):
                assert judge.is_valid(json.loads(doc)), doc  # json.loads keeps one member per name
                accepted += 1
    assert accepted  # the schema is not refused wholesale


@pytest.mark.parametrize(
    "schema,keyword,pointer",
    [
        # (with keys that can always become new names the matcher counts distinct names: tests/compile/test_distinct_names.py)
        ({"minProperties": 2, "propertyNames": {"maxLength": 1}}, "minProperties", "/minProperties"),
        ({"minProperties": 3, "required": ["a"], "properties": {"a": {}, "b": {}}, "patternProperties": {"^(q|x+)$": {}}, "additionalProperties": False}, "minProperties", "/minProperties"),
        ({"properties": {"o": {"minProperties": 2, "propertyNames": {"enum": ["a", "b"]}, "properties": {"a": {}}}}}, "minProperties", "/properties/o/minProperties"),
        ({"not": {"maxProperties": 1}, "propertyNames": {"maxLength": 1}}, "maxProperties", "/not/maxProperties"),
        ({"not": {"additionalProperties": {"type": "integer"}}}, "additionalProperties", "/not/additionalProperties"),
        ({"allOf": [{"not": {"patternProperties": {"^x": {"type": "string"}}}}]}, "patternProperties", "/allOf/0/not/patternProperties"),
    ],
)
def test_what_a_repeated_unlisted_name_could_fake_is_refused(schema, keyword, pointer):
    for any_order in (False, True):
        em = emitter(schema, any_order=any_order)
        with pytest.raises(SchemaError) as e:
            em.build(em.normalized.root)
        assert (e.value.keyword, e.value.pointer) == (keyword, pointer)


@pytest.mark.parametrize("style", [None, "compact", 0])
@pytest.mark.parametrize("name", ["a", "description", "é/ü\"\\", "x y", "\u2028", "𝄞k"])
def test_a_named_member_is_what_seq_writes(style, name):
    """emit_objects._member puts a spelled key, the colon and the value's rule end to end: the
    expression seq(key, colon, value) writes, in every style (compact: seq joins the colon)."""
    from strictgen.grammar.ir import RuleRef, seq
    from strictgen.grammar.json_escapes import spelled_string
    from strictgen.grammar.schema.emit_objects import _member

    from strictgen.grammar.json_value import JsonStyle

    style = JsonStyle() if style is None else JsonStyle("compact") if style == "compact" else JsonStyle(max_indent=style)
    em = emitter({"type": "object"}, style=style)
    key, value = spelled_string(name), RuleRef("s1")
    assert _member(em, name, value) == seq(key, em.colon, value)
    assert _member(em, name, value) == seq(key, em.colon, value)  # (the key and colon kept, met again)
    assert _member(em, name, seq(value, value)) == seq(key, em.colon, value, value)  # not a reference: seq joins it


@pytest.mark.parametrize("names", [("a",), ("b", "a", "é\""), ()])
def test_other_keys_are_every_key_but_the_names_and_kept(names):
    """emit_objects.other_keys: any quoted key outside `names`, every spelling; one object per
    name tuple for the process (it is a piece inside a member, never a rule's whole body)."""
    from strictgen.grammar.ir import difference, literal_trie
    from strictgen.grammar.json_value import json_string
    from strictgen.grammar.schema.emit_objects import other_keys
    from strictgen.grammar.schema.emit_strings import spelled
    from strictgen.grammar.schema.strings import ANY_STRING

    got = other_keys(names)
    assert got == json_string(spelled(difference(ANY_STRING, literal_trie(names))))
    assert other_keys(tuple(names)) is got
    em = emitter({"type": "object"})
    accepts = language_of(em, got)
    for k in names:  # no spelling of a name: raw, escaped, every character as \uXXXX
        escaped = '"' + "".join(f"\\u{ord(c):04x}" for c in k) + '"'
        assert not accepts(json.dumps(k)) and not accepts(json.dumps(k, ensure_ascii=False)) and not accepts(escaped)
    for k in ("c", "aa", ""):
        assert accepts(json.dumps(k)) == (k not in names)
