"""One format request, whoever makes it: a `FormatSpec` (kind, value, options), and the one table
from kind to builder that turns it into a grammar.

Every reader of a format (the server's dialects, `strictgen generate`, the vLLM and SGLang
integrations, the reliability layer) says what was asked as a FormatSpec and compiles it with
`GrammarCompiler.compile_format`; this module is the single place where the request's value is
checked, keyed for the cache and built into grammar IR, and where the reasoning block is put in
front of the formats that follow it. The table is explicit: a kind that is not in it is refused
with the list of those that are, never looked up by name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping

from strictgen.errors import StrictgenError

from .ir import Expr, Grammar, literal_trie
from .json_value import JsonStyle
from .reasoning import Reasoning, reasoning_prefix


class FormatError(StrictgenError):
    """A format request whose value is of the wrong shape (`param`: where it came from)."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


# what generation uses (the server, `strictgen generate`, the reliability layer): one line of JSON as
# json.dumps writes it, so every separator is forced (jump-forward saves passes), and numbers as
# json.dumps writes them (`type: integer` gives 25, not 25.0)
GENERATION_STYLE = JsonStyle("spaced", 20, "canonical")


@dataclass(frozen=True)
class FormatOptions:
    """How a format is laid out and what comes before it (part of the cache key)."""

    strict: bool = True  # JSON Schema: refuse keywords that cannot be enforced exactly
    any_order: bool = False  # JSON Schema: properties in any order
    style: JsonStyle = JsonStyle()  # JSON layout: whitespace and number spellings
    reasoning: Reasoning | None = None  # the template's reasoning block, before formats that follow it


@dataclass(frozen=True)
class FormatSpec:
    """A format as requested: `kind` (a key of FORMAT_KINDS), its `value` as given (a schema, a
    pattern, a grammar's text, a list of choices, a tag...), `options`; `origin` names the request
    field or flag it came from, for error messages."""

    kind: str
    value: Any = None
    options: FormatOptions = FormatOptions()
    origin: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class FormatKind:
    """One row of the table: `check` turns the value as given into the value built from (or
    raises FormatError), `key` is that value's content key, `build` its grammar IR.
    `after_reasoning`: the format follows the template's reasoning block (JSON answers); the others
    describe the whole output as given (a structural tag can spell the block itself)."""

    check: Callable[[Any, str], Any]
    key: Callable[[Any], Hashable]
    build: Callable[[Any, FormatOptions], Grammar]
    after_reasoning: bool = False


# ---- values as given → values built from ----


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise FormatError(f"{where} must be a string, not {type(value).__name__}", where)
    return value


def _json_text(value: Any, where: str) -> Any:
    """Structured values may come as JSON text (vLLM's extra_args carry strings)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise FormatError(f"{where} is not valid JSON: {exc}", where) from exc  # the cause keeps line and column
    return value


def _schema(value: Any, where: str) -> Any:
    value = _json_text(value, where)
    if isinstance(value, (dict, bool)) or (isinstance(value, type) and hasattr(value, "model_json_schema")):
        return value
    raise FormatError(f"a JSON Schema must be an object or a boolean, not {type(value).__name__}", where)


def _choices(value: Any, where: str) -> tuple[str, ...]:
    value = _json_text(value, where)
    if not isinstance(value, list) or not value or not all(isinstance(c, str) for c in value):
        raise FormatError(f"{where}: a choice must be a non-empty list of strings", where)
    return tuple(value)


def _tag(value: Any, where: str) -> Any:
    value = _json_text(value, where)
    if not isinstance(value, dict):
        raise FormatError(f"{where}: a structural tag must be an object", where)
    return value


# ---- builders ----


def _schema_grammar(schema: Any, o: FormatOptions) -> Grammar:
    from .json_schema import json_schema_grammar, loaded_schema

    # (read once: the text is not parsed again, and the root's content is cut from it)
    return json_schema_grammar(loaded_schema(schema), strict=o.strict, any_order=o.any_order, style=o.style)[0]


def _schema_key(schema: Any) -> str:
    from .json_schema import schema_cache_text

    return schema_cache_text(schema)


def _regex_grammar(pattern: str, o: FormatOptions) -> Grammar:
    from .regex import parse_regex

    return Grammar({"root": parse_regex(pattern)})


def _gbnf_grammar(text: str, o: FormatOptions) -> Grammar:
    """A grammar request's text: GBNF (root rule "root") where it has a `::=` rule, else Lark
    (start rule "start"), as vLLM tells the two apart: engines pass both in one `grammar` field."""
    if "::=" not in text:
        return _lark_grammar(text, o)
    from .gbnf import parse_gbnf

    return parse_gbnf(text, "root")


def _lark_grammar(text: str, o: FormatOptions) -> Grammar:
    from .lark import parse_lark

    return parse_lark(text, "start")


def _tag_grammar(tag: Any, o: FormatOptions) -> Grammar:
    from .structural_tag import structural_tag_grammar

    return structural_tag_grammar(tag, o.style)


def _json_value_grammar(_: Any, o: FormatOptions) -> Grammar:
    from .json_value import json_value_grammar

    return json_value_grammar(o.style)


FORMAT_KINDS: Mapping[str, FormatKind] = {
    "json_schema": FormatKind(_schema, _schema_key, _schema_grammar, after_reasoning=True),
    "json_object": FormatKind(lambda v, w: None, lambda v: None, _json_value_grammar),
    "regex": FormatKind(_text, lambda v: v, _regex_grammar),
    "grammar": FormatKind(_text, lambda v: v, _gbnf_grammar),  # llama.cpp's GBNF
    "lark": FormatKind(_text, lambda v: v, _lark_grammar),  # Lark (+ llguidance's %json, special tokens), start rule "start"
    "choice": FormatKind(_choices, lambda v: v, lambda v, o: Grammar({"root": literal_trie(v)})),
    "structural_tag": FormatKind(_tag, lambda v: json.dumps(v), _tag_grammar),  # member order kept (property order)
}


def prepare(spec: FormatSpec, kinds: Mapping[str, FormatKind] = FORMAT_KINDS) -> tuple[Hashable, Callable[[], Grammar]]:
    """(the spec's content key, a builder of its grammar IR): the value is checked here, the
    grammar built when the builder is called (inside the compiler's deadline)."""
    kind = kinds.get(spec.kind) if isinstance(spec.kind, str) else None
    if kind is None:
        raise FormatError(f"unknown format kind {spec.kind!r}; the kinds are {', '.join(kinds)}", spec.origin)
    where = spec.origin or spec.kind
    value = kind.check(spec.value, where)
    reasoning = spec.options.reasoning if kind.after_reasoning else None

    def build() -> Grammar:
        return after_reasoning(kind.build(value, spec.options), reasoning)

    return (spec.kind, kind.key(value), spec.options, reasoning), build


def after_reasoning(grammar: Grammar, reasoning: Reasoning | None) -> Grammar:
    """`grammar` preceded by the reasoning block (unchanged without one)."""
    if reasoning is None:
        return grammar
    rules: dict[str, Expr] = {}
    from .structural_tag import embed

    rules["sg_root"] = reasoning_prefix(reasoning, embed(grammar, "r_", rules))
    return Grammar(rules, "sg_root", markers=(*grammar.markers, reasoning.open, reasoning.close))
