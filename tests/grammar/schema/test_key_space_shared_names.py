"""objects_keys_disjoint answers "not disjoint" without key languages when both objects list
and allow one name: its answer must be the languages' answer, on random object pairs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.grammar.schema.key_space import allowed_keys, objects_keys_disjoint

from .oracle import normalizer

KEYS = ["a", "b", "ab", "c"]
VALUE_SCHEMAS = [True, False, {"type": "integer"}, {"type": "string"}, {"not": {"type": "integer"}}]

object_schemas = st.fixed_dictionaries(
    {
        "properties": st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUE_SCHEMAS), max_size=3),
        "required": st.lists(st.sampled_from(KEYS), unique=True, max_size=2),
    },
    optional={
        "additionalProperties": st.sampled_from([False, {"type": "integer"}]),
        "patternProperties": st.dictionaries(st.sampled_from(["^a", "b$"]), st.sampled_from(VALUE_SCHEMAS), min_size=1, max_size=1),
        "minProperties": st.integers(1, 2),
    },
)


@settings(max_examples=120, deadline=None)
@given(object_schemas, object_schemas)
def test_the_shortcut_gives_the_key_languages_answer(a, b):
    norm = normalizer({"$defs": {"a": {"type": "object", **a}, "b": {"type": "object", **b}}})
    da = norm.dnf(norm.sub(norm.root_formula, norm.root["$defs"]["a"], "$defs", "a"))
    db = norm.dnf(norm.sub(norm.root_formula, norm.root["$defs"]["b"], "$defs", "b"))
    if not da or not db:
        return  # an object schema that no object satisfies
    oa, ob = da[0].obj, db[0].obj
    schema = norm.normalized
    by_languages = False
    if not (oa.exists or ob.exists) and (oa.min > 0 or oa.required) and (ob.min > 0 or ob.required):
        from strictgen.grammar.ir import intersect

        by_languages = schema.strings.raw_is_empty(intersect(allowed_keys(schema, oa), allowed_keys(schema, ob)))
    assert objects_keys_disjoint(schema, oa, ob) == by_languages
