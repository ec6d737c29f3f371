"""repair_json(): unconstrained output made JSON, never silently."""

from __future__ import annotations

import pytest

import strictgen as sg
from strictgen.reliability import RepairError, repair_json

CASES = [
    # (text, value, a word that must appear in the changes)
    ('```json\n{"city": "Oslo", "temp_c": -4}\n```', {"city": "Oslo", "temp_c": -4}, "fence"),
    ('Sure! Here is the JSON you asked for: {"name": "Ann", "age": 31}', {"name": "Ann", "age": 31}, "before"),
    ('{"a": [1, 2, 3,], "b": {"c": 1,},}', {"a": [1, 2, 3], "b": {"c": 1}}, "trailing comma"),
    ("{'name': 'Ann', 'tags': ['x', 'y']}", {"name": "Ann", "tags": ["x", "y"]}, "single quote"),
    ('{"ok": True, "missing": None, "off": False}', {"ok": True, "missing": None, "off": False}, "Python literal"),
    ('{"name": "Ann", "address": {"city": "Rome"', {"name": "Ann", "address": {"city": "Rome"}}, "unclosed"),
    ('{"items": [1, 2', {"items": [1, 2]}, "unclosed"),
    ('The answer is {"x": 1} — hope that helps!', {"x": 1}, "after"),
]


@pytest.mark.parametrize("text,value,word", CASES, ids=[c[2] + str(i) for i, c in enumerate(CASES)])
def test_repairs_and_says_so(text, value, word):
    result = repair_json(text)
    assert result.value == value
    assert result.repaired is True
    assert any(word.lower() in c.lower() for c in result.changes), result.changes
    assert sg.repair_json(result.text).repaired is False  # the repaired text is valid JSON


def test_valid_json_is_not_marked_repaired():
    result = repair_json(' {"a": [1, "x"], "b": null}\n')
    assert result.repaired is False and result.changes == [] and result.value == {"a": [1, "x"], "b": None}


@pytest.mark.parametrize("text", ["", "I cannot answer that.", "   "])
def test_no_json_raises(text):
    with pytest.raises(RepairError):
        repair_json(text)
    assert issubclass(RepairError, sg.StrictgenError)
