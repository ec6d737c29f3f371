"""validate(): every error names the JSON pointer of the offending value and the failing keyword."""

from __future__ import annotations

import pytest

import strictgen as sg
from strictgen.reliability import ValidationIssue, validate

ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
                "required": ["sku", "qty"],
                "additionalProperties": False,
            },
        },
        "ship/date": {"type": "string", "format": "date"},
        "contact": {"anyOf": [{"type": "string", "format": "email"}, {"type": "integer"}]},
    },
    "required": ["id", "items"],
}


def pointers(issues):
    return {(i.pointer, i.keyword) for i in issues}


def test_valid_document_has_no_errors():
    assert validate({"id": "AB-1", "items": [{"sku": "x", "qty": 2}], "ship/date": "2025-01-31"}, ORDER) == []


def test_nested_value_error_points_at_the_value():
    issues = validate({"id": "AB-1", "items": [{"sku": "x", "qty": 1}, {"sku": "y", "qty": 0}]}, ORDER)
    assert [(i.pointer, i.keyword) for i in issues] == [("/items/1/qty", "minimum")]
    assert "0" in issues[0].message and "minimum" in issues[0].message
    assert issues[0].schema_pointer == "/properties/items/items/properties/qty/minimum"
    assert str(issues[0]).startswith("/items/1/qty (minimum):")


def test_missing_extra_and_type_errors_each_located():
    issues = validate({"items": [{"sku": 5, "qty": 1, "color": "red"}]}, ORDER)
    got = pointers(issues)
    assert ("", "required") in got and any("'id'" in i.message for i in issues if i.keyword == "required")
    assert ("/items/0/sku", "type") in got
    assert ("/items/0", "additionalProperties") in got
    assert any("color" in i.message for i in issues if i.keyword == "additionalProperties")


def test_pointer_escapes_slash_and_format_is_checked():
    issues = validate({"id": "AB-1", "items": [], "ship/date": "2025-02-30"}, ORDER)
    assert pointers(issues) == {("/ship~1date", "format")}


def test_pattern_and_anyof_branch_errors():
    issues = validate({"id": "ab1", "items": [], "contact": "not-an-email"}, ORDER)
    got = pointers(issues)
    assert ("/id", "pattern") in got
    assert ("/contact", "anyOf") in got
    assert ("/contact", "format") in got and ("/contact", "type") in got  # each branch's own reason


def test_pydantic_model_class_and_json_text_as_schema():
    pydantic = pytest.importorskip("pydantic")

    class Person(pydantic.BaseModel):
        name: str
        age: int = pydantic.Field(ge=0)

    issues = validate({"name": "Ann", "age": -1}, Person)
    assert pointers(issues) == {("/age", "minimum")}
    assert validate({"name": "Ann", "age": 3}, Person) == []
    assert pointers(validate([1, "x"], '{"type": "array", "items": {"type": "integer"}}')) == {("/1", "type")}


def test_bad_schema_raises_schema_error():
    with pytest.raises(sg.SchemaError):
        validate({}, {"type": 12})
    with pytest.raises(sg.SchemaError):
        validate({}, 42)


def test_exported_and_issue_as_dict():
    assert sg.validate is validate
    issue = validate(3, {"type": "string"})[0]
    assert isinstance(issue, ValidationIssue)
    assert issue.as_dict() == {"pointer": "", "keyword": "type", "message": issue.message, "schema_pointer": "/type"}
