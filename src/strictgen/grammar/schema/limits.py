"""Bounds on a schema document, checked before anything recurses over it.

The schema front end, the cache key (`json.dumps`) and the automaton builder all walk a schema
recursively; a document nested thousands of levels deep would end in a bare RecursionError deep
inside one of them. This walk is iterative and runs first, so such a schema is refused with a
GrammarTooLargeError that names the limit and the JSON pointer where it was passed."""

from __future__ import annotations

from typing import Any

from strictgen.errors import GrammarTooLargeError

MAX_SCHEMA_DEPTH = 128  # nested JSON objects/arrays in one schema document
MAX_SCHEMA_NODES = 1_000_000  # JSON values in one schema document

__all__ = [
    "MAX_SCHEMA_DEPTH", "MAX_SCHEMA_NODES", "SUBSCHEMA_SHAPES", "check_schema_bounds", "json_pointer", "malformed_subschema", "shape_holds",
]


def json_pointer(path) -> str:
    """The RFC 6901 pointer of a path of keys and indices ("" is the whole document)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _path(link) -> list:
    out = []
    while link is not None:
        link, key = link
        out.append(key)
    return out[::-1]


def check_schema_bounds(schema: Any, max_depth: int = MAX_SCHEMA_DEPTH, max_nodes: int = MAX_SCHEMA_NODES) -> None:
    """Refuse a schema document nested deeper than `max_depth` objects/arrays or holding more
    than `max_nodes` JSON values (GrammarTooLargeError with the limit and a JSON pointer).
    Every compile runs it, so the walk keeps no paths; only a schema that passes a limit is
    walked again, with paths, to name where."""
    if _within_bounds(schema, max_depth, max_nodes):
        return
    count = 0
    stack: list[tuple[Any, int, Any]] = [(schema, 0, None)]  # (value, depth, (parent link, key))
    while stack:
        node, depth, link = stack.pop()
        count += 1
        if count > max_nodes:
            raise GrammarTooLargeError(
                f"schema too large: more than {max_nodes} JSON values (MAX_SCHEMA_NODES), "
                f"passed at #{json_pointer(_path(link))}"
            )
        if isinstance(node, dict):
            children = node.items()
        elif isinstance(node, list):
            children = enumerate(node)
        else:
            continue
        if depth >= max_depth:
            raise GrammarTooLargeError(
                f"schema nested too deeply: more than {max_depth} levels of objects and arrays "
                f"(MAX_SCHEMA_DEPTH) at #{json_pointer(_path(link))}"
            )
        for key, value in children:
            stack.append((value, depth + 1, (link, key)))


def _within_bounds(schema: Any, max_depth: int, max_nodes: int) -> bool:
    """check_schema_bounds' answer, counting a container's values at once and stacking only
    the containers (most of a schema's values are strings and numbers)."""
    if not isinstance(schema, (dict, list)):
        return True
    count = 1
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        node, depth = stack.pop()
        if depth >= max_depth:
            return False
        children = node.values() if isinstance(node, dict) else node
        count += len(children)
        if count > max_nodes:
            return False
        depth += 1
        for value in children:
            if isinstance(value, (dict, list)):
                stack.append((value, depth))
    return True


# keywords whose values hold subschemas, by shape (draft 4 to 2020-12): a schema, an object whose
# values are schemas, an array of schemas, or (`items`) a schema or an array of schemas
ONE_SCHEMA, SCHEMA_MAP, SCHEMA_LIST, SCHEMA_OR_LIST = "one", "map", "list", "items"
SUBSCHEMA_SHAPES: dict[str, str] = {
    **dict.fromkeys(
        """additionalItems additionalProperties unevaluatedItems unevaluatedProperties contains
        propertyNames not if then else contentSchema""".split(),
        ONE_SCHEMA,
    ),
    **dict.fromkeys("properties patternProperties $defs definitions dependentSchemas".split(), SCHEMA_MAP),
    **dict.fromkeys("allOf anyOf oneOf prefixItems".split(), SCHEMA_LIST),
    "items": SCHEMA_OR_LIST,
}
_MUST = {
    ONE_SCHEMA: "a schema (an object or a boolean)",
    SCHEMA_MAP: "an object whose values are schemas",
    SCHEMA_LIST: "an array of schemas",
}


def shape_holds(shape: str, value: Any) -> bool:
    """Has `value` the shape (SUBSCHEMA_SHAPES) of its keyword? (malformed_subschema's test of one
    keyword; SchemaSource._index asks it of every subschema keyword as it indexes the document)"""
    if shape == ONE_SCHEMA:
        return isinstance(value, (dict, bool))
    if shape == SCHEMA_MAP:
        return isinstance(value, dict) and all(isinstance(v, (dict, bool)) for v in value.values())
    if shape == SCHEMA_LIST or isinstance(value, list):
        return isinstance(value, list) and all(isinstance(v, (dict, bool)) for v in value)
    return isinstance(value, (dict, bool))  # (items, one schema)


def malformed_subschema(schema: Any) -> tuple[str, str, str] | None:
    """The first applicator keyword whose value has the wrong shape, as (keyword, JSON pointer,
    what it must be), or None. Libraries that walk a schema (referencing, jsonschema) fail on
    these with their internal error text ('list' object has no attribute 'values'); this names
    the keyword instead. `items` may be a schema or, in the legacy form, an array of schemas."""

    def bad(link: Any, kw: str, must: str) -> tuple[str, str, str]:  # the pointer is written only here
        return kw, f"#{json_pointer(_path(link))}/{kw}", must

    stack: list[tuple[Any, Any]] = [(schema, None)]
    while stack:
        node, link = stack.pop()
        if not isinstance(node, dict):
            continue
        for kw, value in node.items():
            shape = SUBSCHEMA_SHAPES.get(kw)
            if shape is None:
                continue
            if not shape_holds(shape, value):
                listed = shape == SCHEMA_OR_LIST and isinstance(value, list)
                return bad(link, kw, "a schema or an array of schemas" if listed else _MUST.get(shape, _MUST[ONE_SCHEMA]))
            if shape == SCHEMA_MAP:
                stack.extend((v, ((link, kw), k)) for k, v in value.items())
            elif isinstance(value, list):
                stack.extend((v, ((link, kw), i)) for i, v in enumerate(value))
            else:
                stack.append((value, (link, kw)))
    return None
