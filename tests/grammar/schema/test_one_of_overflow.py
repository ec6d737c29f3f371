"""A oneOf whose exact form must pass MAX_ALTERNATIVES is refused before it is built
(applicators._exact_overflows): tagged unions whose branches only require their own key, as
helm-testsuite writes them. The refusal is the one the construction gives (same keyword,
pointer and message), checked against the construction itself with the shortcut turned off."""

from __future__ import annotations

import pytest

import strictgen.grammar.schema.applicators as applicators
from strictgen.errors import SchemaError
from strictgen.grammar.json_schema import json_schema_grammar


def tagged(n: int, **extra) -> dict:
    keys = [f"k{i}" for i in range(n)]
    return {
        "type": "object",
        "properties": {"asserts": {
            "type": "object",
            "properties": {k: True for k in keys},
            "additionalProperties": False,
            "oneOf": [{"required": [k], "properties": {k: {"type": "object", "required": ["v"]}}, **extra} for k in keys],
        }},
    }


def outcome(schema, monkeypatch=None, shortcut=True, **options):
    if not shortcut:
        monkeypatch.setattr(applicators, "_exact_overflows", lambda *a: False)
    try:
        json_schema_grammar(schema, **options)
        return None
    except SchemaError as e:
        return (e.keyword, e.pointer, str(e))


def test_tagged_union_refused_early_as_the_construction_refuses(monkeypatch):
    seen = []
    real = applicators._exact_overflows
    monkeypatch.setattr(applicators, "_exact_overflows", lambda *a: seen.append(real(*a)) or seen[-1])
    early = outcome(tagged(12))
    assert seen == [True]
    assert early is not None and early[:2] == ("oneOf", "/properties/asserts/oneOf")
    assert outcome(tagged(12), monkeypatch, shortcut=False) == early


def test_not_strict_records_the_same_refusal(monkeypatch):
    got = json_schema_grammar(tagged(12), strict=False)[1]
    monkeypatch.setattr(applicators, "_exact_overflows", lambda *a: False)
    assert json_schema_grammar(tagged(12), strict=False)[1] == got == [("oneOf", "/properties/asserts/oneOf")]


@pytest.mark.parametrize("extra", [{"maxProperties": 3}, {"propertyNames": {"maxLength": 3}}])
def test_a_branch_that_bounds_the_members_is_left_to_the_construction(extra, monkeypatch):
    seen = []
    real = applicators._exact_overflows
    monkeypatch.setattr(applicators, "_exact_overflows", lambda *a: seen.append(real(*a)) or seen[-1])
    got = outcome(tagged(11, **extra))
    assert seen and True not in seen  # asked, not proven: these branches are not silent on the keys
    assert outcome(tagged(11, **extra), monkeypatch, shortcut=False) == got


def test_few_branches_are_built():
    # 5 branches of 2^4 alternatives each fit: no refusal
    g, unenforced = json_schema_grammar(tagged(5))
    assert unenforced == [] and "root" in g.rules
