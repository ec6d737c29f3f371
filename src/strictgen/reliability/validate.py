"""Validation against a JSON Schema (Draft 2020-12) with precise, located errors.

A grammar guarantees shape; some rules it cannot or does not express (formats it leaves loose, a
`uniqueItems`, cross-field checks in a pydantic model), and output from an unconstrained backend
guarantees nothing. `validate` is the judge for both: every error names the JSON pointer of the
offending value, the schema keyword that failed, and a message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from strictgen.errors import SchemaError


@dataclass(frozen=True)
class ValidationIssue:
    """One reason a document is invalid."""

    pointer: str  # JSON pointer of the offending value in the document ("" is the whole document)
    keyword: str  # the schema keyword that failed ("required", "minimum", "type", ... )
    message: str
    schema_pointer: str = ""  # where that keyword sits in the schema

    def __str__(self) -> str:
        return f"{self.pointer or '/'} ({self.keyword}): {self.message}"

    def as_dict(self) -> dict:
        return {"pointer": self.pointer, "keyword": self.keyword, "message": self.message, "schema_pointer": self.schema_pointer}


def _escape(part) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def to_pointer(path) -> str:
    """A JSON pointer (RFC 6901) for a sequence of keys and indices."""
    return "".join("/" + _escape(p) for p in path)


def schema_dict(schema) -> dict | bool:
    """A JSON Schema as a dict: a dict or bool as is, JSON text parsed, a pydantic model class via model_json_schema()."""
    if isinstance(schema, (dict, bool)):
        return schema
    if isinstance(schema, (str, bytes)):
        try:
            return json.loads(schema)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"the schema is not JSON: {exc}") from exc
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    raise SchemaError(f"a schema must be a dict, JSON text or a pydantic model class, not {type(schema).__name__}")


@lru_cache(maxsize=256)
def _validator_for(schema_text: str):
    import jsonschema

    schema = json.loads(schema_text)
    cls = jsonschema.Draft202012Validator
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaError(f"invalid JSON Schema: {exc.message}", keyword=str(exc.validator), pointer=to_pointer(exc.absolute_schema_path)) from exc
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _leaves(error):
    """The most specific errors under a combinator (anyOf/oneOf) error; the error itself otherwise."""
    if not error.context:
        yield error
        return
    for sub in error.context:
        yield from _leaves(sub)


def validate(doc, schema) -> list[ValidationIssue]:
    """Every way `doc` breaks `schema` (Draft 2020-12, formats checked), sorted by document position; [] when valid.

    `schema`: a dict, JSON text, or a pydantic model class. An `anyOf`/`oneOf` failure is reported once
    for the combinator and once for each branch's own errors, so the message points inside the value."""
    validator = _validator_for(json.dumps(schema_dict(schema), sort_keys=True))
    issues: list[ValidationIssue] = []
    seen = set()
    for err in validator.iter_errors(doc):
        group = [err] + ([e for e in _leaves(err) if e is not err] if err.context else [])
        for e in group:
            issue = ValidationIssue(
                pointer=to_pointer(e.absolute_path),
                keyword=str(e.validator),
                message=e.message,
                schema_pointer=to_pointer(e.absolute_schema_path),
            )
            if issue not in seen:
                seen.add(issue)
                issues.append(issue)
    issues.sort(key=lambda i: (i.pointer, i.schema_pointer))
    return issues


def is_valid(doc, schema) -> bool:
    return not validate(doc, schema)
