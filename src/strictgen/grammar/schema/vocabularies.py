"""Dialects a supplied metaschema defines with `$vocabulary` (2019-09, 2020-12).

A schema's `$schema` names its metaschema; a metaschema's `$vocabulary` says which vocabularies
(groups of keywords) the dialect has. `{"$schema": "http://ex.com/no-validation.json", ...}` whose
metaschema lists only core and applicator makes `minimum`, `type`, `required`... annotations: they
constrain nothing. A keyword of a vocabulary the metaschema leaves out is dropped from the view of
each schema object in that dialect (Normalizer.view) and from the jsonschema judge of enum values.

Standard metaschema URIs (https://json-schema.org/draft/2020-12/schema and the others `referencing`
knows) keep their own dialect and are never looked up. Any other `$schema` is looked up among the
`documents=` the caller supplied (by the URI it was supplied under or its `$id`; nothing is
fetched); one not supplied reads as the enclosing dialect, as before. The metaschema's own
`$schema` is the base dialect (how `$id`, anchors and subresources work); a metaschema without
`$vocabulary` has its base dialect's vocabularies.

`format`: with format-assertion (2020-12) or a `format` vocabulary marked true (2019-09) formats
are asserted whatever `formats=` says; with format-annotation only, the caller's policy stays
(asserted by default, the one deviation the README states); with neither, `format` is an annotation.

A vocabulary strictgen does not know is ignored when the metaschema marks it optional (`false`)
and refused when it is required (`true`): the spec says an implementation must then refuse the
schema (SchemaError naming the vocabulary and the pointer of its `$vocabulary`). `Vocabularies`
is a service the Normalizer holds (`norm.vocabularies`); it never calls the normaliser."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .documents import dialect_of
from .values import escape_pointer, invalid

__all__ = ["Vocabularies", "Dialect", "VOCABULARY_KEYWORDS"]

_V2020 = "https://json-schema.org/draft/2020-12/vocab/"
_V2019 = "https://json-schema.org/draft/2019-09/vocab/"
_VALIDATION = frozenset(
    """type const enum multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength minLength
    pattern maxItems minItems uniqueItems maxContains minContains maxProperties minProperties required
    dependentRequired""".split()
)
# the applicator keywords, with the legacy forms the normaliser reads in these drafts (array-form
# `items` + `additionalItems`, `dependencies`): they apply subschemas too
_APPLICATOR = frozenset(
    """prefixItems items contains additionalProperties properties patternProperties dependentSchemas
    propertyNames if then else allOf anyOf oneOf not additionalItems dependencies""".split()
)
_UNEVALUATED = frozenset({"unevaluatedItems", "unevaluatedProperties"})
_NONE: frozenset = frozenset()  # core, meta-data and content keywords are always read (or annotations)

VOCABULARY_KEYWORDS: dict[str, frozenset] = {
    _V2020 + "core": _NONE,
    _V2020 + "applicator": _APPLICATOR,
    _V2020 + "unevaluated": _UNEVALUATED,
    _V2020 + "validation": _VALIDATION,
    _V2020 + "meta-data": _NONE,
    _V2020 + "format-annotation": frozenset({"format"}),
    _V2020 + "format-assertion": frozenset({"format"}),
    _V2020 + "content": _NONE,
    _V2019 + "core": _NONE,
    _V2019 + "applicator": (_APPLICATOR | _UNEVALUATED) - {"prefixItems"},
    _V2019 + "validation": _VALIDATION,
    _V2019 + "meta-data": _NONE,
    _V2019 + "format": frozenset({"format"}),
    _V2019 + "content": _NONE,
}
"""The keywords each known vocabulary gives a dialect (the ones the normaliser can tell apart)."""

_FAMILIES = {"draft2020-12": _V2020, "draft2019-09": _V2019}
_ALL = {
    name: frozenset().union(*(kws for uri, kws in VOCABULARY_KEYWORDS.items() if uri.startswith(prefix)))
    for name, prefix in _FAMILIES.items()
}
MAX_METASCHEMA_CHAIN = 16  # metaschemas whose $schema is another custom metaschema


@dataclass(frozen=True)
class Dialect:
    """A custom dialect: its referencing Specification (named after the metaschema), the keywords
    that are annotations in it, and whether it asserts formats (None: the caller's policy)."""

    spec: Any
    base: str  # the standard dialect underneath ("draft2020-12" or "draft2019-09")
    metaschema: str
    dropped: frozenset
    format_asserted: bool | None


class Vocabularies:
    """Dialect resolution for one compile: the custom dialects the supplied metaschemas define."""

    def __init__(self, documents: Any, pointers: dict[int, str], formats: str):
        """`documents`: the supplied documents (SchemaDocuments), where metaschemas are looked up;
        `pointers`: the JSON pointer of every indexed schema object (for errors); `formats`: the
        caller's format policy ("assert" or "annotate")."""
        self.documents = documents
        self.pointers = pointers
        self.formats = formats
        self._dialects_by_uri: dict[str, Dialect | None] = {}
        self._dialects_by_name: dict[str, Dialect] = {}
        self._judges: dict[tuple, Any] = {}

    def dialect_spec(self, schema: Any, default: Any) -> Any:
        """The referencing Specification of a schema object: its `$schema` (standard, or a supplied
        metaschema's custom dialect), else `default`."""
        uri = schema.get("$schema") if isinstance(schema, dict) else None
        if not isinstance(uri, str):
            return default
        custom = self._custom_dialect(uri, ())
        return custom.spec if custom is not None else dialect_of(schema, default)

    def dialect(self, spec: Any) -> Dialect | None:
        """The custom dialect of `spec`, None for a standard one."""
        return self._dialects_by_name.get(getattr(spec, "name", ""))

    def format_asserted(self, spec: Any) -> bool:
        custom = self.dialect(spec)
        if custom is not None and custom.format_asserted is not None:
            return custom.format_asserted
        return self.formats == "assert"

    def _custom_dialect(self, uri: str, seen: tuple) -> Dialect | None:
        key = uri[:-1] if uri.endswith("#") else uri
        if key in self._dialects_by_uri:
            return self._dialects_by_uri[key]
        import referencing.jsonschema as rj

        try:
            rj.specification_with(uri)
            got = None  # a standard dialect: never looked up
        except rj.UnknownDialect:
            meta = self.documents.get(key)
            got = self._read_metaschema(key, meta, seen) if isinstance(meta, dict) and key not in seen else None
        self._dialects_by_uri[key] = got
        if got is not None:
            self._dialects_by_name[got.spec.name] = got
        return got

    def _read_metaschema(self, uri: str, meta: dict, seen: tuple) -> Dialect | None:
        import attrs

        if len(seen) >= MAX_METASCHEMA_CHAIN:
            raise invalid(f"metaschemas refer to each other more than {MAX_METASCHEMA_CHAIN} deep", "$schema", uri + "#")
        parent = self._custom_dialect(meta["$schema"], seen + (uri,)) if isinstance(meta.get("$schema"), str) else None
        base_spec = parent.spec if parent is not None else dialect_of(meta)
        base = parent.base if parent is not None else getattr(base_spec, "name", "")
        vocab = meta.get("$vocabulary")
        if base not in _FAMILIES or vocab is None:
            return parent  # no vocabularies of its own: the dialect its $schema names
        ptr = self.pointers.get(id(meta), uri + "#") + "/$vocabulary"
        if not isinstance(vocab, dict) or not all(isinstance(v, bool) for v in vocab.values()):
            raise invalid("$vocabulary must be an object of vocabulary URIs to booleans", "$vocabulary", ptr)
        kept: set = set()
        for name, required in vocab.items():
            if name in VOCABULARY_KEYWORDS:
                kept |= VOCABULARY_KEYWORDS[name]
            elif required:
                raise invalid(
                    f"the metaschema {uri} requires the vocabulary {name}, which strictgen does not know "
                    "(a required vocabulary an implementation does not know means it must refuse the schema)",
                    "$vocabulary",
                    f"{ptr}/{escape_pointer(name)}",
                )
        asserting = vocab.get(_V2020 + "format-assertion") is not None or vocab.get(_V2019 + "format") is True
        spec = attrs.evolve(base_spec, name=f"{base} dialect {uri}")  # referencing's Specification is an attrs class
        return Dialect(spec, base, uri, _ALL[base] - kept, True if asserting else None)

    def vocabulary_view(self, spec: Any, schema: dict) -> dict | None:
        """`schema` without the keywords that are annotations in the custom dialect `spec`; None
        when `spec` is standard."""
        custom = self.dialect(spec)
        if custom is None:
            return None
        return {k: v for k, v in schema.items() if k not in custom.dropped}

    def judge_class(self, cls: Any, spec: Any) -> Any:
        """jsonschema validator class `cls` with the keywords of the custom dialect `spec` that are
        annotations there made no-ops (the judge of enum values must read the dialect too)."""
        custom = self.dialect(spec)
        if custom is None or not custom.dropped:
            return cls
        got = self._judges.get((cls, custom.metaschema))
        if got is None:
            import jsonschema.validators as jv

            got = self._judges[(cls, custom.metaschema)] = jv.extend(cls, {k: _annotation for k in custom.dropped})
        return got


def _annotation(validator, value, instance, schema):
    """A keyword that is only an annotation in this dialect: it never fails."""
    return iter(())
