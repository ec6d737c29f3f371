"""Structural tags (the format vLLM and xgrammar accept) → grammar IR.

A structural tag describes output as nested pieces: fixed strings, JSON documents under a schema,
GBNF or regex languages, free text, and `tag`s (begin string, content, end string) that free text
may open at a trigger. Accepted shapes, as xgrammar's `StructuralTag` documents them:

    {"type": "structural_tag", "format": FORMAT}
    FORMAT = {"type": "const_string", "value": str}
           | {"type": "json_schema", "json_schema": schema}
           | {"type": "grammar", "grammar": gbnf}          | {"type": "regex", "pattern": str}
           | {"type": "any_text"}
           | {"type": "sequence", "elements": [FORMAT...]} | {"type": "or", "elements": [FORMAT...]}
           | {"type": "tag", "begin": str, "content": FORMAT, "end": str | [str...]}
           | {"type": "triggered_tags", "triggers": [str], "tags": [tag...], "at_least_one": bool, "stop_after_first": bool}
           | {"type": "tags_with_separator", "tags": [tag...], "separator": str, "at_least_one": bool, "stop_after_first": bool}

and the older vLLM form `{"type": "structural_tag", "structures": [{"begin", "schema", "end"}], "triggers": [...]}`.

`any_text` is free text up to what follows it: inside a tag, text without the tag's end string;
at the very end, any text. Free text between triggered tags never contains a trigger, so the
grammar stays deterministic about when a tag starts (the lazy grammar of llama.cpp's triggers).
"""

from __future__ import annotations

import json
from typing import Any

from strictgen.errors import StrictgenError

from .ir import Expr, Grammar, RuleRef, alt, charset, difference, lit, rename, repeat, seq
from .json_value import JsonStyle


class StructuralTagError(StrictgenError):
    """A structural tag that is malformed (`path` names the offending part, JSON-pointer style)."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(f"{message} (at {path or '/'})")
        self.path = path


def any_text() -> Expr:
    return repeat(charset(((0, 0x10FFFF),)))


def text_without(*markers: str) -> Expr:
    """Any text containing none of `markers` (regular: the automaton needs no lookahead)."""
    anything = any_text()
    found = [m for m in markers if m]
    if not found:
        return anything
    return difference(anything, alt(*(seq(anything, lit(m), anything) for m in found)))


def embed(grammar: Grammar, prefix: str, rules: dict[str, Expr]) -> Expr:
    """Add `grammar`'s rules to `rules` (renamed under `prefix`); a reference to its root."""
    names = {n: prefix + n for n in grammar.rules}
    for n, body in grammar.rules.items():
        rules[names[n]] = rename(body, names)
    return RuleRef(names[grammar.root])


def embed_schema(schema: Any, prefix: str, rules: dict[str, Expr], style: JsonStyle, any_order: bool = False) -> Expr:
    """The JSON documents valid under `schema`, embedded into `rules` (strict: SchemaError otherwise)."""
    from .json_schema import json_schema_grammar, loaded_schema

    # (read once: the text is not parsed again, and the root's content is cut from it)
    grammar, _ = json_schema_grammar(loaded_schema(schema), strict=True, any_order=any_order, style=style)
    return embed(grammar, prefix, rules)


def _leading_literal(node: Any) -> str | None:
    """The fixed text a format node starts with, when it starts with one (used as any_text's stop)."""
    if not isinstance(node, dict):
        return None
    kind = node.get("type")
    if kind == "const_string":
        return node.get("value") or None
    if kind == "tag":
        return node.get("begin") or None
    if kind == "sequence" and node.get("elements"):
        return _leading_literal(node["elements"][0])
    return None


class FormatBuilder:
    """Builds format nodes into IR expressions; JSON Schema and GBNF rules collect in `rules`."""

    def __init__(self, style: JsonStyle):
        self.style = style
        self.rules: dict[str, Expr] = {}
        self.count = 0

    def fresh(self, kind: str) -> str:
        self.count += 1
        return f"st{self.count}_{kind}_"

    def build(self, node: Any, path: str, stops: tuple[str, ...]) -> Expr:
        """`node`'s language; `stops`: the strings that end any free text at its end."""
        if not isinstance(node, dict) or not isinstance(node.get("type"), str):
            raise StructuralTagError("a format must be an object with a string 'type'", path)
        kind = node["type"]
        method = FORMAT_KINDS.get(kind)  # an explicit table: request data never names a method
        if method is None:
            raise StructuralTagError(f"unknown format type {kind!r}; the types are {', '.join(FORMAT_KINDS)}", path + "/type")
        return method(self, node, path, stops)

    @staticmethod
    def _field(node: dict, key: str, kind, path: str, default: Any = ...):
        if key not in node:
            if default is ...:
                raise StructuralTagError(f"{node['type']} needs '{key}'", path)
            return default
        value = node[key]
        if not isinstance(value, kind):
            raise StructuralTagError(f"'{key}' has the wrong type ({type(value).__name__})", f"{path}/{key}")
        return value

    @staticmethod
    def _defaults_only(node: dict, path: str, **defaults: Any) -> None:
        """Refuse a field that xgrammar knows and strictgen does not enforce, unless it holds its
        default (SGLang sends every field of xgrammar's models, defaults included)."""
        for key, default in defaults.items():
            if key in node and node[key] != default:
                raise StructuralTagError(f"'{key}' = {node[key]!r} is not supported (only {default!r})", f"{path}/{key}")

    def _excludes(self, node: dict, path: str) -> tuple[str, ...]:
        """xgrammar's `excludes`: strings free text must not contain."""
        excludes = self._field(node, "excludes", list, path, [])
        if not all(isinstance(e, str) for e in excludes):
            raise StructuralTagError("'excludes' must be a list of strings", path + "/excludes")
        return tuple(excludes)

    def _const_string(self, node, path, stops):
        return lit(self._field(node, "value", str, path))

    def _any_text(self, node, path, stops):
        self._defaults_only(node, path, max_tokens=None, max_chars=None)
        return text_without(*stops, *self._excludes(node, path))

    def _json_schema(self, node, path, stops):
        self._defaults_only(node, path, style="json", max_whitespace_cnt=None, excludes=[])
        any_order = self._field(node, "any_order", bool, path, False)
        schema = node.get("json_schema", node.get("schema"))
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as exc:
                raise StructuralTagError(f"json_schema is not JSON: {exc}", path + "/json_schema") from exc
        if not isinstance(schema, (dict, bool)):
            raise StructuralTagError("json_schema needs a JSON Schema (object or boolean)", path + "/json_schema")
        return embed_schema(schema, self.fresh("json"), self.rules, self.style, any_order=any_order)

    def _grammar(self, node, path, stops):
        from .gbnf import parse_gbnf

        self._defaults_only(node, path, syntax="ebnf")
        return embed(parse_gbnf(self._field(node, "grammar", str, path)), self.fresh("gbnf"), self.rules)

    def _regex(self, node, path, stops):
        from .regex import parse_regex

        return parse_regex(self._field(node, "pattern", str, path))

    def _sequence(self, node, path, stops):
        elements = self._field(node, "elements", list, path)
        out = []
        for i, el in enumerate(elements):
            nxt = _leading_literal(elements[i + 1]) if i + 1 < len(elements) else None
            out.append(self.build(el, f"{path}/elements/{i}", (nxt,) if nxt else stops))
        return seq(*out)

    def _or(self, node, path, stops):
        elements = self._field(node, "elements", list, path)
        if not elements:
            raise StructuralTagError("'or' needs at least one element", path + "/elements")
        return alt(*(self.build(el, f"{path}/elements/{i}", stops) for i, el in enumerate(elements)))

    def _tag(self, node, path, stops):
        begin = self._field(node, "begin", str, path)
        end = node.get("end", "")
        ends = [end] if isinstance(end, str) else end
        if not isinstance(ends, list) or not ends or not all(isinstance(e, str) for e in ends):
            raise StructuralTagError("'end' must be a string or a non-empty list of strings", path + "/end")
        content = self._field(node, "content", dict, path)
        body = self.build(content, path + "/content", tuple(e for e in ends if e) or stops)
        return seq(lit(begin), body, alt(*(lit(e) for e in ends)))

    def _tags(self, node, path) -> list[Expr]:
        tags = self._field(node, "tags", list, path)
        if not tags:
            raise StructuralTagError("needs at least one tag", path + "/tags")
        out = []
        for i, t in enumerate(tags):
            if not isinstance(t, dict):
                raise StructuralTagError("a tag must be an object", f"{path}/tags/{i}")
            out.append(self._tag({"type": "tag", **t}, f"{path}/tags/{i}", ()))
        return out

    def _triggered_tags(self, node, path, stops):
        triggers = self._field(node, "triggers", list, path)
        if not triggers or not all(isinstance(t, str) and t for t in triggers):
            raise StructuralTagError("triggers must be a non-empty list of strings", path + "/triggers")
        tags = self._field(node, "tags", list, path)
        for i, t in enumerate(tags):
            begin = t.get("begin") if isinstance(t, dict) else None
            if not isinstance(begin, str) or not any(begin.startswith(tr) for tr in triggers):
                raise StructuralTagError("every tag's begin must start with one of the triggers", f"{path}/tags/{i}/begin")
        one = alt(*self._tags(node, path))
        free = text_without(*triggers, *stops, *self._excludes(node, path))
        if self._field(node, "stop_after_first", bool, path, False):
            return seq(free, one) if self._field(node, "at_least_one", bool, path, False) else seq(free, alt(one, lit("")))
        if self._field(node, "at_least_one", bool, path, False):
            return seq(free, one, repeat(seq(free, one)), free)
        return seq(free, repeat(seq(one, free)))

    def _tags_with_separator(self, node, path, stops):
        one = alt(*self._tags(node, path))
        sep = self._field(node, "separator", str, path, "")
        at_least_one = self._field(node, "at_least_one", bool, path, False)
        if self._field(node, "stop_after_first", bool, path, False):
            return one if at_least_one else alt(one, lit(""))
        many = seq(one, repeat(seq(lit(sep), one)))
        return many if at_least_one else alt(many, lit(""))


# format type → the FormatBuilder method that builds it
FORMAT_KINDS = {
    "const_string": FormatBuilder._const_string,
    "any_text": FormatBuilder._any_text,
    "json_schema": FormatBuilder._json_schema,
    "grammar": FormatBuilder._grammar,
    "regex": FormatBuilder._regex,
    "sequence": FormatBuilder._sequence,
    "or": FormatBuilder._or,
    "tag": FormatBuilder._tag,
    "triggered_tags": FormatBuilder._triggered_tags,
    "tags_with_separator": FormatBuilder._tags_with_separator,
}


def legacy_to_format(tag: dict) -> dict:
    """vLLM's older structural tag ({"structures": [...], "triggers": [...]}) as a `format`."""
    structures = tag.get("structures")
    if not isinstance(structures, list):
        raise StructuralTagError("a structural tag needs 'format' (or the older 'structures' and 'triggers')", "")
    tags = []
    for i, s in enumerate(structures):
        if not isinstance(s, dict) or not isinstance(s.get("begin"), str):
            raise StructuralTagError("a structure needs 'begin', 'schema' and 'end'", f"/structures/{i}")
        tags.append({"begin": s["begin"], "content": {"type": "json_schema", "json_schema": s.get("schema", True)}, "end": s.get("end", "")})
    fmt = {"type": "triggered_tags", "triggers": tag.get("triggers") or [], "tags": tags}
    if "at_least_one" in tag:  # SGLang's legacy form carries it
        fmt["at_least_one"] = tag["at_least_one"]
    return fmt


def structural_tag_grammar(tag: Any, style: JsonStyle | None = None) -> Grammar:
    """The grammar of a structural tag: `{"type": "structural_tag", "format": ...}`, the older
    `structures`/`triggers` form, or a bare format object. JSON inside follows `style`."""
    if isinstance(tag, str):
        try:
            tag = json.loads(tag)
        except json.JSONDecodeError as exc:
            raise StructuralTagError(f"the structural tag is not JSON: {exc}") from exc
    if not isinstance(tag, dict):
        raise StructuralTagError("a structural tag must be an object")
    if tag.get("type") == "structural_tag":
        fmt = tag["format"] if "format" in tag else legacy_to_format(tag)
        path = "/format" if "format" in tag else ""
    else:
        fmt, path = tag, ""
    builder = FormatBuilder(style or JsonStyle("spaced"))
    root = builder.build(fmt, path, ())
    rules = dict(builder.rules)
    rules["st_root"] = root
    return Grammar(rules, "st_root")
