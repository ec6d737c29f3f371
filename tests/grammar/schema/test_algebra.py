"""schema.algebra (the Normalizer's boolean algebra on DNFs), checked against jsonschema.

- `dnf(f)`: a value satisfies the DNF of a schema iff jsonschema says it is valid;
- `negate(dnf)` (and `dnf(not f)`): satisfied iff jsonschema says invalid;
- `product` of two DNFs: satisfied iff both schemas hold;
- `disjoint(f, g)` True ⇒ no value satisfies both, and it does say True for plainly disjoint pairs;
- the limits: a $ref loop is a RefLoop, more than MAX_ALTERNATIVES conjuncts a GrammarTooLargeError.
Satisfaction of the IR is read by tests/grammar/schema/oracle.py, independently of the algebra."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from strictgen.errors import GrammarTooLargeError, SchemaError
from strictgen.grammar.schema.algebra import MAX_ALTERNATIVES, disjoint, negate, product
from strictgen.grammar.schema.values import RefLoop

from .oracle import SEEDS, check_agreement, check_random_agreement, dnf_holds, json_values, normalizer, validator

FEW = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

SCHEMAS = [
    {"type": "integer", "minimum": 2, "maximum": 9, "multipleOf": 3},
    {"type": ["string", "null"], "minLength": 1, "maxLength": 3},
    {"type": "string", "pattern": "^a+$"},
    {"enum": [1, "a", [1, 2], {"a": 1}, None, True]},
    {"const": {"a": [1.0, 2]}},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": False},
    {"type": "object", "patternProperties": {"^x": {"type": "string"}}, "minProperties": 1, "maxProperties": 2},
    {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"}, "maxItems": 3},
    {"type": "array", "contains": {"type": "integer"}, "minContains": 2},
    {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]},
    {"oneOf": [{"type": "integer", "minimum": 3}, {"multipleOf": 2}]},
    {"not": {"type": ["object", "array"]}},
    {"if": {"type": "integer"}, "then": {"minimum": 5}, "else": {"type": "string"}},
    {"type": "object", "propertyNames": {"maxLength": 1}},
    {"type": "object", "dependentRequired": {"a": ["b"]}},
    {"exclusiveMinimum": 0, "exclusiveMaximum": 3},
    {"type": "number", "not": {"const": 1}},
    {"allOf": [{"type": "array", "minItems": 1}, {"items": {"enum": [1, 2]}}]},
    {"$defs": {"n": {"type": "integer"}}, "type": "object", "additionalProperties": {"$ref": "#/$defs/n"}},
    {"type": "object", "dependentSchemas": {"a": {"required": ["c"]}}},
    {"type": "string", "format": "date"},
    {"type": "boolean", "enum": [True, 0]},
    {"properties": {"a": {"const": 1}}, "required": ["a"], "not": {"required": ["b"]}},
]
IDS = [str(i) for i in range(len(SCHEMAS))]


def _norm(schema):
    norm = normalizer(schema)
    return norm, norm.dnf(norm.root_formula)


@pytest.mark.parametrize("schema", SCHEMAS, ids=IDS)
def test_dnf_and_its_negation_agree_with_jsonschema_on_seed_values(schema):
    norm, dnf = _norm(schema)
    neg = negate(norm.formulas, dnf)
    via_not = norm.dnf(norm.not_(norm.root_formula))
    judge = validator(schema)
    check_agreement(norm, judge, SEEDS, dnf, neg)
    check_agreement(norm, judge, SEEDS, dnf, via_not)


@pytest.mark.parametrize("schema", SCHEMAS, ids=IDS)
def test_dnf_and_its_negation_agree_with_jsonschema_on_random_values(schema):
    norm, dnf = _norm(schema)
    check_random_agreement(norm, validator(schema), dnf, negate(norm.formulas, dnf), examples=25)


def _pair(a, b):
    """One normaliser holding both schemas, and their formulas."""
    norm = normalizer({"$defs": {"a": a, "b": b}})
    root = norm.root_formula
    return norm, norm.sub(root, a, "$defs", "a"), norm.sub(root, b, "$defs", "b")


PAIRS = [(SCHEMAS[i], SCHEMAS[j]) for i, j in [(0, 9), (0, 10), (1, 2), (3, 4), (3, 11), (5, 14), (5, 19), (7, 8), (7, 17), (9, 12), (13, 6), (15, 16), (22, 5), (20, 1)]]


@pytest.mark.parametrize("a,b", PAIRS)
def test_product_is_the_conjunction(a, b):
    norm, fa, fb = _pair(a, b)
    both = product(norm.formulas, [norm.dnf(fa), norm.dnf(fb)], norm.and_(fa, fb))
    ja, jb = validator(a), validator(b)
    for v in SEEDS:
        assert dnf_holds(norm, both, v) == (ja.is_valid(v) and jb.is_valid(v)), v


DISJOINT = [
    ({"type": "integer"}, {"type": "string"}),
    ({"const": 1}, {"const": 2}),
    ({"const": 1}, {"const": 1.5}),
    ({"type": "number", "minimum": 5}, {"type": "number", "maximum": 4}),
    ({"type": "integer"}, {"type": "number", "not": {"type": "integer"}}),
    ({"type": "string", "maxLength": 2}, {"type": "string", "minLength": 3}),
    ({"type": "string", "pattern": "^a+$"}, {"type": "string", "pattern": "^b"}),
    ({"type": "object", "properties": {"k": {"const": "x"}}, "required": ["k"]}, {"type": "object", "properties": {"k": {"const": "y"}}, "required": ["k"]}),
    ({"type": "array", "prefixItems": [{"type": "integer"}], "minItems": 1}, {"type": "array", "prefixItems": [{"type": "string"}], "minItems": 1}),
    ({"enum": ["a", "b"]}, {"type": "string", "minLength": 2}),
]
OVERLAPPING = [
    ({"type": "integer"}, {"type": "number", "minimum": 3}),
    ({"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b$"}),
    ({"type": "object", "required": ["a"]}, {"type": "object", "required": ["b"]}),
    ({"enum": ["a", "aa"]}, {"type": "string", "minLength": 2}),
    ({"type": "array", "contains": {"const": 1}}, {"type": "array", "maxItems": 1}),
]


@pytest.mark.parametrize("a,b", DISJOINT)
def test_disjoint_finds_plainly_disjoint_pairs(a, b):
    norm, fa, fb = _pair(a, b)
    assert disjoint(norm.formulas, fa, fb) and disjoint(norm.formulas, fb, fa)


@pytest.mark.parametrize("a,b", OVERLAPPING + PAIRS)
def test_disjoint_is_never_wrong_when_it_says_true(a, b):
    norm, fa, fb = _pair(a, b)
    ja, jb = validator(a), validator(b)
    common = [v for v in SEEDS if ja.is_valid(v) and jb.is_valid(v)]
    if (a, b) in OVERLAPPING:
        assert common, "test error: the pair should share a seed value"
    if disjoint(norm.formulas, fa, fb):
        assert not common

        @FEW
        @given(json_values)
        def prop(v):
            assert not (ja.is_valid(v) and jb.is_valid(v))

        prop()


def test_a_ref_loop_in_place_is_a_ref_loop():
    norm = normalizer({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})
    with pytest.raises(RefLoop) as e:
        norm.dnf(norm.root_formula)
    assert e.value.keyword == "$ref"


def test_a_recursive_ref_under_a_property_is_not_a_loop():
    schema = {"type": "object", "properties": {"next": {"$ref": "#"}}}
    norm = normalizer(schema)
    dnf = norm.dnf(norm.root_formula)
    assert check_agreement(norm, validator(schema), [{}, {"next": {}}, {"next": {"next": 1}}, {"next": 1}], dnf) == {True, False}


def test_too_many_alternatives_is_refused_clearly():
    # each anyOf has two overlapping branches that no pruning merges: 2^10 conjuncts
    schema = {"allOf": [{"anyOf": [{"minimum": i}, {"multipleOf": i + 2}]} for i in range(10)]}
    assert 2**10 > MAX_ALTERNATIVES
    norm = normalizer(schema)
    with pytest.raises(GrammarTooLargeError, match="alternatives"):
        norm.dnf(norm.root_formula)


def test_negating_unique_items_is_refused_in_strict_mode_and_recorded_otherwise():
    schema = {"not": {"type": "array", "uniqueItems": True}}
    with pytest.raises(SchemaError) as e:
        norm = normalizer(schema)
        norm.dnf(norm.root_formula)
    assert e.value.keyword == "uniqueItems"
    loose = normalizer(schema, strict=False)
    loose.dnf(loose.root_formula)
    assert [k for k, _ in loose.reporter.unenforced] == ["uniqueItems"]


def test_dnf_is_memoised_and_deterministic():
    schema = SCHEMAS[10]
    norm = normalizer(schema)
    first = norm.dnf(norm.root_formula)
    assert norm.dnf(norm.root_formula) is first
    assert normalizer(schema).dnf(normalizer(schema).root_formula) == first


_leaf = st.one_of(
    st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"]).map(lambda t: {"type": t}),
    st.integers(0, 6).map(lambda k: {"minimum": k}),
    st.integers(0, 6).map(lambda k: {"exclusiveMaximum": k}),
    st.sampled_from([2, 3, 0.5]).map(lambda m: {"multipleOf": m}),
    st.integers(0, 3).map(lambda k: {"maxLength": k}),
    st.integers(1, 3).map(lambda k: {"minLength": k}),
    st.sampled_from(["^a", "b", "^x+$"]).map(lambda p: {"pattern": p}),
    st.sampled_from([1, "a", None, [1], {"a": 1}, True]).map(lambda v: {"const": v}),
    st.lists(st.sampled_from([1, 2.0, "a", "b", None, [], {}]), min_size=1, max_size=3).map(lambda vs: {"enum": vs}),
    st.sampled_from(["a", "b", "x"]).map(lambda k: {"required": [k]}),
    st.integers(0, 2).map(lambda k: {"maxProperties": k}),
    st.integers(1, 2).map(lambda k: {"minItems": k}),
    st.just({"additionalProperties": False, "properties": {"a": True}}),
    st.just({"propertyNames": {"maxLength": 1}}),
    st.just({"dependentRequired": {"a": ["b"]}}),
)
random_schemas = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"allOf": xs}),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"anyOf": xs}),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"oneOf": xs}),
        inner.map(lambda x: {"not": x}),
        st.tuples(inner, inner, inner).map(lambda t: {"if": t[0], "then": t[1], "else": t[2]}),
        st.tuples(st.sampled_from(["a", "b", "x"]), inner).map(lambda t: {"properties": {t[0]: t[1]}}),
        inner.map(lambda x: {"items": x}),
        inner.map(lambda x: {"contains": x}),
        inner.map(lambda x: {"additionalProperties": x}),
    ),
    max_leaves=5,
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(random_schemas)
def test_random_schemas_dnf_and_negation_agree_with_jsonschema(schema):
    norm = normalizer(schema, strict=False)
    try:
        dnf = norm.dnf(norm.root_formula)
        neg = negate(norm.formulas, dnf)
    except GrammarTooLargeError:
        assume(False)
    assume(not norm.reporter.unenforced)  # what was dropped is not claimed
    check_agreement(norm, validator(schema), SEEDS, dnf, neg)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(random_schemas, random_schemas, st.lists(json_values, max_size=6))
def test_random_pairs_product_and_disjoint_agree_with_jsonschema(a, b, values):
    norm, fa, fb = _pair(a, b)
    try:
        apart = disjoint(norm.formulas, fa, fb)
        both = product(norm.formulas, [norm.dnf(fa), norm.dnf(fb)], norm.and_(fa, fb))
    except (GrammarTooLargeError, SchemaError):
        assume(False)
    ja, jb = validator(a), validator(b)
    for v in SEEDS + values:
        in_both = ja.is_valid(v) and jb.is_valid(v)
        assert not (apart and in_both), v
        assert dnf_holds(norm, both, v) == in_both, v
