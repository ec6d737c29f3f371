"""Draft 2020-12 as real schemas write it: with the legacy array form of `items`.

A schema without `$schema` is read as 2020-12, yet many generated schemas still write tuple
validation the draft-4..2019-09 way, `"items": [A, B]` (+ `additionalItems`), which 2020-12 spells
`prefixItems`. The normaliser reads that form as tuple validation; `referencing` and jsonschema's
2020-12 validator would instead treat the list as one schema and fail inside ('list' object has
no attribute 'get'). These are the same dialect with that one form accepted: resources inside an
`items` array are crawled, and the judge validates an `items` array as 2019-09 does.

Also the keyword vocabulary of each draft (`DIALECT_KEYWORDS`): a keyword that a schema's declared
draft does not define is an annotation there (a draft-04 schema's `const`), as jsonschema treats it."""

from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=None)
def legacy_items_2020():
    """The referencing Specification of 2020-12 that also crawls an array-form `items`
    (named like 2020-12: the normaliser treats it as that dialect)."""
    import attrs
    import referencing.jsonschema as rj

    base = rj.DRAFT202012

    def subresources_of(contents: Any):
        if isinstance(contents, dict) and isinstance(contents.get("items"), list):
            yield from (each for each in contents["items"] if isinstance(each, (dict, bool)))
            extra = contents.get("additionalItems")
            if isinstance(extra, (dict, bool)):
                yield extra
            contents = {k: v for k, v in contents.items() if k not in ("items", "additionalItems")}
        yield from base.subresources_of(contents)

    return attrs.evolve(base, subresources_of=subresources_of)  # referencing's Specification is an attrs class


class UnresolvedDialect:
    """A standard draft known by its name only, for documents where `referencing` is not needed:
    no `$id`, anchor or other document, no dynamic reference, and references (if any) that are
    plain JSON pointers into the document itself (normalize.SchemaSource.plain_pointer answers
    them). Only the dialect's `name` is read there (keyword vocabularies, legacy forms, the
    judge's draft), so such a compile never imports `referencing` (~21 ms of a process's first
    compile; more with the crawl); the registry is made if the jsonschema judge, or a reference
    plain_pointer cannot answer, asks."""

    def __init__(self, name: str):
        self.name = name  # as referencing's Specification of the draft names it

    def __repr__(self) -> str:
        return f"UnresolvedDialect({self.name!r})"


# the standard drafts by `$schema` URI (trailing "#" dropped, as referencing.jsonschema's
# specification_with does), named as referencing names them (2020-12: legacy_items_2020's name);
# tests/grammar/schema/test_dialects.py checks the table against referencing
_STANDARD_DIALECTS = {
    uri: UnresolvedDialect(name)
    for uri, name in (
        ("https://json-schema.org/draft/2020-12/schema", "draft2020-12"),
        ("https://json-schema.org/draft/2019-09/schema", "draft2019-09"),
        ("http://json-schema.org/draft-07/schema", "draft-07"),
        ("http://json-schema.org/draft-06/schema", "draft-06"),
        ("http://json-schema.org/draft-04/schema", "draft-04"),
        ("http://json-schema.org/draft-03/schema", "draft-03"),
    )
}
UNRESOLVED_2020 = _STANDARD_DIALECTS["https://json-schema.org/draft/2020-12/schema"]


def unresolved_dialect(schema_uri: Any) -> UnresolvedDialect | None:
    """The UnresolvedDialect of a document whose `$schema` is `schema_uri` (None: it has none,
    2020-12); None for any other value (a custom dialect, an unknown URI): referencing decides."""
    if schema_uri is None:
        return UNRESOLVED_2020
    return _STANDARD_DIALECTS.get(schema_uri.rstrip("#")) if isinstance(schema_uri, str) else None


def import_lazy_modules() -> None:
    """Import now what a schema compile imports the first time it needs it: `referencing` (a
    document with `$id`, anchors or other documents), jsonschema's validators (the judge) and the
    string formats. The library keeps them lazy so that `import strictgen` and compiles that never
    need them stay cheap; a process that wants its first request to pay none of it (a server's
    start, a benchmark's untimed warm-up) calls this once."""
    import jsonschema.validators  # noqa: F401
    import referencing.jsonschema  # noqa: F401

    from .. import string_formats  # noqa: F401


@functools.lru_cache(maxsize=None)
def legacy_items_2020_validator():
    """jsonschema's 2020-12 validator class, with `items` and `additionalItems` as 2019-09 has
    them when `items` is an array (the judge for schemas of `legacy_items_2020`)."""
    import jsonschema.validators as jv

    new, old = jv.Draft202012Validator, jv.Draft201909Validator

    def items(validator, value, instance, schema):
        yield from (old if isinstance(value, list) else new).VALIDATORS["items"](validator, value, instance, schema)

    return jv.extend(new, {"items": items, "additionalItems": old.VALIDATORS["additionalItems"]})


# ---- keyword vocabularies ----------------------------------------------------------------------------

_DRAFT4_KEYWORDS = frozenset(
    """$ref additionalItems additionalProperties allOf anyOf dependencies enum format items maxItems
    maxLength maxProperties maximum minItems minLength minProperties minimum multipleOf not oneOf
    pattern patternProperties properties required type uniqueItems exclusiveMinimum exclusiveMaximum""".split()
)
_DRAFT6_KEYWORDS = _DRAFT4_KEYWORDS | {"const", "contains", "propertyNames"}
_DRAFT7_KEYWORDS = _DRAFT6_KEYWORDS | {"if", "then", "else"}
_DRAFT201909_KEYWORDS = (_DRAFT7_KEYWORDS - {"dependencies"}) | {
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedItems",
    "unevaluatedProperties",
    "minContains",
    "maxContains",
    "$recursiveRef",
}
JSON_TYPES = frozenset("null boolean object array number string integer".split())
ALL_KEYWORDS = _DRAFT201909_KEYWORDS | {"dependencies", "prefixItems", "$dynamicRef"}
DIALECT_KEYWORDS = {
    "draft-03": _DRAFT4_KEYWORDS,
    "draft-04": _DRAFT4_KEYWORDS,
    "draft-06": _DRAFT6_KEYWORDS,
    "draft-07": _DRAFT7_KEYWORDS,
    "draft2019-09": _DRAFT201909_KEYWORDS,
}
