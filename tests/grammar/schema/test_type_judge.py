"""The `type` + `enum` filter decides plain JSON values' types without the jsonschema judge
(values.plain_type_holds, SchemaSource.type_judge): it must say what the judge's type checker
of each draft says, on the values where drafts and Python disagree most."""

import json
import subprocess
import sys

import jsonschema.validators as jv
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.grammar.schema.dialects import JSON_TYPES
from strictgen.grammar.schema.normalize import Normalizer
from strictgen.grammar.schema.values import plain_type_holds

DRAFTS = {
    "draft-03": jv.Draft3Validator,
    "draft-04": jv.Draft4Validator,
    "draft-06": jv.Draft6Validator,
    "draft-07": jv.Draft7Validator,
    "draft2019-09": jv.Draft201909Validator,
    "draft2020-12": jv.Draft202012Validator,
}
TRICKY = [
    0, 1, -1, 1.0, -0.0, 0.0, 1.5, 1e300, 2.0**53, 10**40, -(10**40), True, False, None,
    "", "1", "true", [], [1], {}, {"a": 1}, 1e-300, float(10**20),
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2),
    max_leaves=4,
)


@pytest.mark.parametrize("draft", DRAFTS)
def test_plain_types_as_each_drafts_checker_says(draft):
    checker = DRAFTS[draft].TYPE_CHECKER
    integral_floats = draft not in ("draft-03", "draft-04")
    for v in TRICKY:
        for t in sorted(JSON_TYPES):
            assert plain_type_holds(v, [t], integral_floats) == checker.is_type(v, t), (draft, v, t)


@settings(max_examples=150, deadline=None)
@given(json_values, st.lists(st.sampled_from(sorted(JSON_TYPES)), min_size=1, max_size=3), st.sampled_from(sorted(DRAFTS)))
def test_plain_types_agree_on_random_values(v, types, draft):
    checker = DRAFTS[draft].TYPE_CHECKER
    expected = any(checker.is_type(v, t) for t in types)
    assert plain_type_holds(v, types, draft not in ("draft-03", "draft-04")) == expected


def test_values_that_are_not_plain_go_to_the_judge():
    class Tag(str):
        pass

    assert plain_type_holds(Tag("a"), ["string"], True) is None
    assert plain_type_holds((1, 2), ["array"], True) is None


@pytest.mark.parametrize("uri", ["http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-07/schema#", None])
def test_type_and_enum_keeps_what_the_judge_keeps(uri):
    values = [1, 2.0, -0.0, 2.5, True, "x", None, 10**30, [1], {"a": 1}]  # no two JSON-equal
    schema = {"type": ["integer", "null"], "enum": values}
    if uri:
        schema["$schema"] = uri
    norm = Normalizer(schema)
    (conj,) = norm.dnf(norm.root_formula)
    judge = jv.validator_for(schema, default=jv.Draft202012Validator)(schema)
    assert list(conj.values) == [v for v in values if judge.is_valid(v)]


def test_type_and_enum_does_not_import_jsonschema():
    """A process's first `type` + `enum` compile pays no jsonschema import (~80 ms)."""
    code = (
        "import sys, json\n"
        "from strictgen.grammar.json_schema import json_schema_grammar\n"
        "json_schema_grammar({'type': 'object', 'properties': {'u': {'type': 'string', 'enum': ['c', 'f']},"
        " 'n': {'type': ['integer', 'null'], 'enum': [1, 2.0, None]}}})\n"
        "print(json.dumps(sorted(m for m in ('jsonschema', 'strictgen.grammar.regex') if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


@pytest.mark.parametrize(
    "schema",
    [
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"},
        {"type": "integer", "minimum": 1},
        {"const": 1},
        {"enum": [True, "1", None]},
        {"type": "number", "multipleOf": 0.5},
    ],
)
def test_the_judges_memo_keeps_values_of_other_types_apart(schema):
    """SchemaSource.is_valid memoises scalar answers: 1, True and 1.0 are JSON-equal or
    hash-equal in Python, and some drafts tell them apart."""
    norm = Normalizer(schema)
    judge = jv.validator_for(schema, default=jv.Draft202012Validator)(schema)
    values = [1, True, 1.0, -0.0, 0, False, 1.5, None, "1", 10**30] * 2
    assert [norm.source.is_valid(norm.root_formula, v) for v in values] == [judge.is_valid(v) for v in values]


def test_memoised_answers_still_count_towards_the_check_limit(monkeypatch):
    from strictgen.errors import GrammarTooLargeError
    from strictgen.grammar.schema import normalize

    monkeypatch.setattr(normalize, "MAX_ENUM_FILTER", 5)
    norm = Normalizer({"type": "string", "minLength": 1})
    for _ in range(5):
        assert norm.source.is_valid(norm.root_formula, "x")
    with pytest.raises(GrammarTooLargeError):
        norm.source.is_valid(norm.root_formula, "x")
