"""The format in the prompt: a compact rendering of a JSON Schema for the model to read.

A grammar guarantees the shape of the output, but a model that does not know the shape fights the
mask (it wants prose, other keys, other types) and the constraint only catches what slips. OpenAI-
style servers therefore tell the model the format; a small model reads a compact, JSON-like sketch
far better than a JSON Schema dump. `format_hint(schema)` renders one:

    Answer with JSON only, in this form (keys in this order; ? marks an optional key):
    {"city": string, "temp_c": integer (-60 to 60), "condition": "sunny" | "cloudy" | "rain" | "snow"}

Properties in the schema's order, types, enums and consts as JSON, number bounds, formats and
patterns in a few words (string lengths are left to the grammar), `?` after optional keys, `[item, ...]` for arrays, ` | ` between
alternatives, local `$ref`s followed (a recursive one is named instead). Descriptions are left out:
the user's turn carries the task. `with_format_hint(messages, schema)` adds it to the system turn.
"""

from __future__ import annotations

import json
from typing import Any

PREAMBLE = "Answer with JSON only, in this form (keys in this order; ? marks an optional key):"
MAX_DEPTH = 8  # nesting rendered before "..." (the grammar holds the rest)


def _lit(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _resolve(ref: str, root: dict) -> Any:
    """A local JSON pointer reference (#/$defs/x), or None."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _range(schema: dict, low: str, high: str, xlow: str, xhigh: str) -> str:
    lo, hi = schema.get(low), schema.get(high)
    xlo, xhi = schema.get(xlow), schema.get(xhigh)
    parts = []
    if isinstance(lo, (int, float)) and not isinstance(lo, bool) and isinstance(hi, (int, float)) and not isinstance(hi, bool):
        parts.append(f"{_lit(lo)} to {_lit(hi)}")
    else:
        if isinstance(lo, (int, float)) and not isinstance(lo, bool):
            parts.append(f">= {_lit(lo)}")
        if isinstance(hi, (int, float)) and not isinstance(hi, bool):
            parts.append(f"<= {_lit(hi)}")
    if isinstance(xlo, (int, float)) and not isinstance(xlo, bool):
        parts.append(f"> {_lit(xlo)}")
    if isinstance(xhi, (int, float)) and not isinstance(xhi, bool):
        parts.append(f"< {_lit(xhi)}")
    return ", ".join(parts)


class _Renderer:
    def __init__(self, root: Any):
        self.root = root
        self.active: list[str] = []  # $refs being rendered (a recursive one is not expanded again)

    def render(self, schema: Any, depth: int = 0) -> str:
        if schema is True or schema == {}:
            return "any JSON value"
        if schema is False or not isinstance(schema, dict):
            return "nothing"
        if depth > MAX_DEPTH:
            return "..."
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = _resolve(ref, self.root)
            if target is None or ref in self.active:
                return ref.rsplit("/", 1)[-1] or "value"
            self.active.append(ref)
            try:
                inner = self.render(target, depth + 1)
            finally:
                self.active.pop()
            rest = {k: v for k, v in schema.items() if k not in ("$ref", "$defs", "definitions", "title", "description")}
            return inner if not rest else f"{inner} and {self.render(rest, depth + 1)}"
        if "const" in schema:
            return _lit(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return " | ".join(_lit(v) for v in schema["enum"])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                return " | ".join(self.render(s, depth + 1) for s in schema[key])
        if isinstance(schema.get("allOf"), list) and schema["allOf"]:
            base = {k: v for k, v in schema.items() if k != "allOf"}
            parts = [self.render(s, depth + 1) for s in schema["allOf"]]
            if base and base.keys() - {"title", "description", "$defs", "definitions"}:
                parts.insert(0, self.render(base, depth + 1))
            return " and ".join(parts)
        kind = schema.get("type")
        if isinstance(kind, list):
            return " | ".join(self.render({**schema, "type": k}, depth) for k in kind) or "nothing"
        if kind == "object" or (kind is None and "properties" in schema):
            return self.object(schema, depth)
        if kind == "array" or (kind is None and ("items" in schema or "prefixItems" in schema)):
            return self.array(schema, depth)
        if kind in ("integer", "number"):
            bounds = _range(schema, "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
            if "multipleOf" in schema:
                bounds = ", ".join(filter(None, (bounds, f"multiple of {_lit(schema['multipleOf'])}")))
            return f"{kind} ({bounds})" if bounds else kind
        if kind == "string":
            notes = []
            if isinstance(schema.get("format"), str):
                notes.append(schema["format"])
            if isinstance(schema.get("pattern"), str):
                notes.append(f"matching {schema['pattern']}")
            return f"string ({', '.join(notes)})" if notes else "string"
        if kind in ("boolean", "null"):
            return kind
        return "any JSON value"

    def object(self, schema: dict, depth: int) -> str:
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = set(schema.get("required") or [])
        members = [f"{_lit(name)}{'' if name in required else '?'}: {self.render(sub, depth + 1)}" for name, sub in props.items()]
        extra = schema.get("additionalProperties", None if props else True)
        if extra not in (None, False):
            members.append(f"...: {self.render(extra, depth + 1) if isinstance(extra, dict) else 'any JSON value'}")
        return "{" + ", ".join(members) + "}"

    def array(self, schema: dict, depth: int) -> str:
        prefix = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else []
        items = schema.get("items", True)
        shown = [self.render(s, depth + 1) for s in prefix]
        if items is not False:
            shown.append(f"{self.render(items, depth + 1)}, ...")
        counts = _range(schema, "minItems", "maxItems", "", "")
        text = "[" + ", ".join(shown) + "]"
        return f"{text} ({counts} items)" if counts else text


def render_schema(schema: Any) -> str:
    """The compact sketch of `schema` alone (no preamble)."""
    return _Renderer(schema).render(schema)


def format_hint(schema: Any) -> str:
    """The text that tells a model the output format: PREAMBLE and the sketch of `schema`."""
    return f"{PREAMBLE}\n{render_schema(schema)}"


def with_format_hint(messages: list[dict], schema: Any) -> list[dict]:
    """`messages` with the format hint at the end of the (first) system turn, or in a new one before
    the rest; unchanged when a turn already holds the same hint text."""
    hint = format_hint(schema)
    if any(isinstance(m.get("content"), str) and hint in m["content"] for m in messages):
        return list(messages)
    out = [dict(m) for m in messages]
    for m in out:
        if m.get("role") in ("system", "developer") and isinstance(m.get("content"), str):
            m["content"] = f"{m['content']}\n\n{hint}" if m["content"] else hint
            return out
    return [{"role": "system", "content": hint}] + out
