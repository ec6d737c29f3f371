"""oneOf's tagged branches (disjointness.tag_disjoint_pairs): pairs of branches told apart by a
required member's distinct tags (`^text$` patterns, string consts/enums) are left out of the
pairwise proofs. Each such pair is one the proof finds disjoint, and the schemas below compile to
the same grammar, with the same refusals, with the tags as without them (every pair proved)."""

from __future__ import annotations

import pytest

import strictgen.grammar.schema.applicators as applicators
import strictgen.grammar.schema.normalize as normalize
from strictgen.grammar.schema.disjointness import dnfs_disjoint

from .oracle import compile_outcome


def _tagged(tag: dict, extra: dict | None = None) -> dict:
    return {"type": "object", "properties": {"kind": tag, "v": {"type": "integer"}, **(extra or {})}, "required": ["kind"]}


def _pattern(text: str) -> dict:
    return {"type": "string", "pattern": f"^{text}$"}


SCHEMAS = [
    {"oneOf": [_tagged(_pattern(f"P{i}")) for i in range(6)]},
    {"oneOf": [_tagged({"const": f"c{i}"}) for i in range(5)]},
    {"oneOf": [_tagged({"enum": [f"a{i}", f"b{i}"]}) for i in range(4)]},
    # a tag shared by two branches: those two overlap, the others do not
    {"oneOf": [_tagged(_pattern("A")), _tagged(_pattern("A"), {"w": {"type": "string"}}), _tagged(_pattern("B")), _tagged(_pattern("C"))]},
    # branches of several conjuncts (an anyOf inside), a branch with an optional tag, mixed tag kinds
    {"oneOf": [{**_tagged(_pattern("X")), "anyOf": [{"required": ["v"]}, {"required": ["w"]}]}, _tagged(_pattern("Y")), _tagged(_pattern("Z"))]},
    {"oneOf": [_tagged(_pattern("X")), _tagged({"const": "Y"}), _tagged({"const": "Z"}), {"type": "object", "properties": {"kind": {"const": "Q"}}}]},
    # a tag pattern with an enum beside it, a pattern that is no literal, a non-string const
    {"oneOf": [_tagged({"type": "string", "pattern": "^A$", "enum": ["A", "B"]}), _tagged(_pattern("B")), _tagged({"type": "string", "pattern": "^C+$"}), _tagged({"const": 3})]},
    # the schema's own keywords (the context) with member rules, and a nested tagged oneOf
    {"properties": {"kind": {"type": "string"}}, "oneOf": [_tagged(_pattern(f"T{i}")) for i in range(4)]},
    {"oneOf": [_tagged(_pattern("O1"), {"in": {"oneOf": [_tagged({"const": f"i{i}"}) for i in range(3)]}}), _tagged(_pattern("O2")), _tagged(_pattern("O3"))]},
    # a recursive tagged union (proofs inside a normalisation of the schema itself)
    {"$defs": {"t": {"oneOf": [{"type": "object", "properties": {"kind": {"const": "leaf"}}, "required": ["kind"]},
                               {"type": "object", "properties": {"kind": {"const": "node"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}}, "required": ["kind"]},
                               {"type": "object", "properties": {"kind": {"const": "ref"}, "to": {"$ref": "#/$defs/t"}}, "required": ["kind"]}]}},
     "$ref": "#/$defs/t"},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
@pytest.mark.parametrize("strict", [True, False])
def test_same_grammar_with_and_without_the_tags(schema, strict, monkeypatch):
    with_tags = compile_outcome(schema, strict=strict)
    monkeypatch.setattr(applicators, "tag_disjoint_pairs", lambda *a: set())
    assert compile_outcome(schema, strict=strict) == with_tags


@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
def test_every_tagged_pair_is_one_the_proof_finds(schema, monkeypatch):
    real = applicators.tag_disjoint_pairs
    found: list[tuple[int, int]] = []

    def checked(alg, dnfs, context, met):
        pairs = real(alg, dnfs, context, met)
        for i, j in pairs:
            assert dnfs_disjoint(alg, dnfs[i], dnfs[j], None, None, 0, context, {}), (i, j)
        found.extend(pairs)
        return pairs

    monkeypatch.setattr(applicators, "tag_disjoint_pairs", checked)
    compile_outcome(schema)
    if schema is SCHEMAS[0]:
        assert len(found) == 15  # every pair of the six tags
    if schema is SCHEMAS[3]:
        assert (0, 1) not in found and len(found) == 5  # the shared tag is proved (and overlaps)


@pytest.mark.parametrize("limit", [5, 20, 40, 200])
def test_judge_checks_counted_as_without_the_tags(limit, monkeypatch):
    """The tags ask the jsonschema judge nothing the proofs would have asked: MAX_ENUM_FILTER
    refuses the same schemas at every limit."""
    schema = {"oneOf": [_tagged({"const": f"c{i}"}, {"n": {"enum": [1, 2, i]}}) for i in range(6)]}
    monkeypatch.setattr(normalize, "MAX_ENUM_FILTER", limit)
    with_tags = compile_outcome(schema)
    monkeypatch.setattr(applicators, "tag_disjoint_pairs", lambda *a: set())
    assert compile_outcome(schema) == with_tags
