"""JSON values and errors for the JSON Schema front end: exact numbers, JSON equality and value
keys, loading a schema document, and the Reporter that refuses (or records) what cannot be enforced."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from fractions import Fraction
from typing import Any, Iterable

from strictgen import deadline
from strictgen.errors import GrammarTooLargeError, SchemaError

from .limits import MAX_SCHEMA_DEPTH, check_schema_bounds

__all__ = [
    "FORMAT_MODES", "Reporter", "RefLoop", "invalid", "escape_pointer", "is_number", "to_fraction",
    "json_equal", "json_type", "plain_type_holds", "dedupe_values", "value_key", "LoadedSchema", "load_schema", "nonneg_int",
]


# ---- errors -------------------------------------------------------------------------------------


FORMAT_MODES = ("assert", "annotate")  # `format` enforced (default), or only an annotation


class Reporter:
    """Collects keywords that cannot be enforced: raises SchemaError (strict) or records them."""

    def __init__(self, strict: bool = True):
        self.strict = strict
        self.unenforced: list[tuple[str, str]] = []

    def refuse(self, message: str, keyword: str, pointer: str) -> None:
        if self.strict:
            raise SchemaError(message + " (use strict=False to compile without it)", keyword=keyword, pointer=pointer)
        item = (keyword, pointer)
        if item not in self.unenforced:
            self.unenforced.append(item)


class RefLoop(SchemaError):
    """A schema that refers to itself in place (without consuming input)."""


def invalid(message: str, keyword: str, pointer: str) -> SchemaError:
    """An error for a schema that is not valid JSON Schema (raised in every mode)."""
    return SchemaError(message, keyword=keyword, pointer=pointer)


def escape_pointer(token: str) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


# ---- JSON values --------------------------------------------------------------------------------


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def to_fraction(v: Any) -> Fraction:
    """The exact value of a JSON number (floats read as the decimal text they came from)."""
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            raise ValueError("not a finite number")
        return Fraction(Decimal(repr(v)))
    if isinstance(v, Decimal):
        return Fraction(v)
    return Fraction(v)


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, booleans differ from numbers, objects compare regardless of key order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        try:
            return to_fraction(a) == to_fraction(b)
        except ValueError:
            return a == b
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False


def json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if is_number(v):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    raise TypeError(f"not a JSON value: {v!r}")


_PLAIN_TYPES = {type(None): "null", bool: "boolean", str: "string", list: "array", dict: "object"}


def plain_type_holds(v: Any, types: Iterable[str], integral_floats: bool) -> bool | None:
    """Has `v` one of the JSON `types`, as jsonschema's type checker of a draft says? None when `v`
    is not a plain JSON value (an int, float, str, list, dict, bool or None itself, no subclass),
    which only the judge can tell. `integral_floats`: `1.0` is an "integer" (drafts 6 and later;
    drafts 3 and 4 take only ints). Exact for plain values, so the common `type` + `enum` filters
    its values without importing jsonschema (~80 ms in a process's first compile)."""
    t = type(v)
    if t is int:
        return "integer" in types or "number" in types
    if t is float:
        return "number" in types or (integral_floats and "integer" in types and v.is_integer())
    name = _PLAIN_TYPES.get(t)
    return None if name is None else name in types


def dedupe_values(values: Iterable[Any]) -> tuple:
    """The values without JSON-equal repeats, first occurrence kept; by `value_key`, so linear
    (an enum of 50,000 values is 50,000 look-ups, not 10^9 comparisons)."""
    out: dict[Any, Any] = {}
    for n, v in enumerate(values):
        if not n & 4095:
            deadline.check()
        # a string is its own key, in a 1-tuple (never equal to another value's key, a str):
        # JSON-equal strings are equal strings, and json.dumps per enum string was most of this
        out.setdefault((v,) if type(v) is str else value_key(v), v)
    return tuple(out.values())


def value_key(v: Any) -> str:
    """A hashable key equal for JSON-equal values."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return json.dumps(v)
    if is_number(v):
        try:
            f = to_fraction(v)
            return f"n:{f.numerator}/{f.denominator}"
        except ValueError:
            return f"n:{v!r}"
    if isinstance(v, list):
        return "[" + ",".join(value_key(x) for x in v) + "]"
    return "{" + ",".join(json.dumps(k) + ":" + value_key(v[k]) for k in sorted(v)) + "}"


class LoadedSchema:
    """A schema `load_schema` has read and checked already, as the compiler's cache key made it:
    its JSON text and, where reading it parsed text (an object no caller holds), that value. Given
    to `load_schema` again, it is not parsed nor checked a second time: the value, or the text
    parsed now (a dict the caller gave may be changed after the call, and holds Python values
    that JSON text does not, such as tuples: the grammar is built from its text, as before)."""

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: Any = None):
        self.text = text
        self.value = value  # None: parse `text` when the value is asked


def load_schema(schema: Any) -> Any:
    """dict / bool / JSON text / pydantic model class → a JSON Schema (dict or bool)."""
    if type(schema) is LoadedSchema:
        return schema.value if schema.value is not None else _parsed(schema.text)
    if isinstance(schema, (bytes, bytearray)):
        schema = schema.decode("utf-8")
    if isinstance(schema, str):
        schema = _parsed(schema)
    elif isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        schema = schema.model_json_schema()
    elif hasattr(schema, "model_json_schema") and callable(schema.model_json_schema):
        schema = schema.model_json_schema()
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"a JSON Schema is an object or a boolean, not {type(schema).__name__}")
    check_schema_bounds(schema)
    return schema


def _parsed(text: str) -> Any:
    """The JSON value of schema text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise SchemaError(f"schema text is not valid JSON: {e}") from None
    except RecursionError:
        raise GrammarTooLargeError(f"schema text nested too deeply to parse (limit MAX_SCHEMA_DEPTH = {MAX_SCHEMA_DEPTH} levels)") from None


def nonneg_int(value: Any, keyword: str, pointer: str) -> int:
    if isinstance(value, bool) or not is_number(value) or value < 0 or (isinstance(value, float) and not value.is_integer()):
        raise invalid(f"{keyword} must be a non-negative integer, not {value!r}", keyword, pointer)
    return int(value)
