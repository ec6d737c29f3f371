"""In-place applicators (strictgen.grammar.schema.applicators): here the complement of a tagged
union (`not` / `oneOf` of objects told apart by a required discriminator), checked against
jsonschema on documents of every kind."""

from __future__ import annotations

import json

import jsonschema

from strictgen.grammar.schema.normalize import Normalizer
from tests.grammar.test_json_schema import Schema


def tagged(n: int, fields: int = 4) -> list[dict]:
    """n object branches with a required `kind` of its own enum and `fields` optional integer members."""
    return [
        {
            "type": "object",
            "properties": {"kind": {"enum": [f"k{i}", f"alt{i}"]}, **{f"f{j}": {"type": "integer", "maximum": i} for j in range(fields)}},
            "required": ["kind"],
            "additionalProperties": False,
        }
        for i in range(n)
    ]


DOCS = [None, True, 3, "k1", [], {}, {"kind": "k1"}, {"kind": "k9"}, {"kind": 1}, {"f0": 1}, {"kind": "alt2", "f1": 2},
        {"kind": "alt2", "f1": 3}, {"kind": "k0", "f3": 0}, {"kind": "k0", "x": 1}, {"kind": "k3", "f0": "a"}, {"kind": "k7", "f2": 7}]


def judged(schema):
    s = Schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for doc in DOCS:
        assert (json.dumps(doc) in s) == validator.is_valid(doc), doc


def test_the_complement_of_a_tagged_union_is_exact():
    for n in (3, 5):
        judged({"not": {"oneOf": tagged(n)}})
        judged({"not": {"anyOf": tagged(n)}})
        judged({"type": "array", "items": {"not": {"oneOf": tagged(n)}}})


def test_the_complement_of_a_tagged_union_grows_with_the_branches_not_their_product():
    """8 branches whose complements have ~12 alternatives each: their product would be ~12**8."""
    norm = Normalizer({"not": {"oneOf": tagged(8)}})
    assert len(norm.dnf(norm.root_formula)) < 200
    judged({"not": {"oneOf": tagged(8)}})


def test_branches_whose_tags_overlap_take_the_general_way():
    branches = tagged(3)
    branches[2]["properties"]["kind"] = {"enum": ["k1", "k2"]}  # overlaps branch 1 on "k1"
    judged({"not": {"anyOf": branches}})
