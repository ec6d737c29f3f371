"""The other documents a schema refers to (`$ref` to another URI): supplied by the caller, never fetched.

A schema may point into other documents (`{"$ref": "https://example.com/address.json#/$defs/zip"}`).
The compiler fetches nothing: the caller passes those documents, as a mapping of URI -> schema or as
a `referencing.Registry` (what jsonschema itself takes), and `SchemaDocuments` holds them. Base URIs
(`$id`), relative references, JSON-pointer fragments and `$anchor`s resolve as the spec says,
through `referencing`; a reference to any URI not supplied stays unresolvable and is refused
(SchemaError naming the URI and the JSON pointer).

A Registry's own `retrieve` callable (which may fetch over the network) is dropped: only the
resources it already holds are used. The documents' canonical text (`cache_text`) is part of the
compile cache key, so equal schemas with different documents never share a grammar."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from strictgen.errors import SchemaError

from .dialects import legacy_items_2020
from .limits import check_schema_bounds
from .values import load_schema

__all__ = ["SchemaDocuments", "dialect_of"]


def dialect_of(contents: Any, default: Any = None) -> Any:
    """The referencing Specification of a schema document: its `$schema`, else `default`, else
    2020-12 (read with the legacy array form of `items`, see schema.dialects)."""
    import referencing.jsonschema as rj

    dialect = contents.get("$schema") if isinstance(contents, dict) else None
    fallback = default if default is not None else rj.DRAFT202012
    spec = rj.specification_with(dialect, default=fallback) if isinstance(dialect, str) else fallback
    return legacy_items_2020() if spec is rj.DRAFT202012 else spec


def _made_with(resource: Any) -> Any:
    """The Specification a Registry's resource was made with (a JSON Schema dialect, or referencing's
    opaque one), None when it is another one. referencing has no public accessor for it (it keeps it
    in the private `_specification`), but Resources compare equal by contents and specification: it
    is the one that makes an equal resource of the same contents."""
    import referencing
    import referencing.jsonschema as rj

    known = (rj.DRAFT202012, legacy_items_2020(), rj.DRAFT201909, rj.DRAFT7, rj.DRAFT6, rj.DRAFT4, rj.DRAFT3, referencing.Specification.OPAQUE)
    for spec in known:
        if spec.create_resource(resource.contents) == resource:
            return spec
    return None


@dataclass(frozen=True)
class SchemaDocuments:
    """Documents by URI: (uri, contents, referencing Specification) sorted by URI."""

    items: tuple[tuple[str, Any, Any], ...] = ()

    @classmethod
    def of(cls, documents: Any) -> "SchemaDocuments":
        """From None, a SchemaDocuments, a mapping of URI -> schema (dict, bool, JSON text or a
        pydantic model class) or a referencing.Registry (its resources, crawled; not its retrieve)."""
        if documents is None:
            return cls()
        if isinstance(documents, SchemaDocuments):
            return documents
        import referencing

        if isinstance(documents, referencing.Registry):
            crawled = documents.crawl()
            rows = ((uri, crawled[uri].contents, _made_with(crawled[uri])) for uri in crawled)
            return cls(tuple(sorted(((u, c, s or dialect_of(c)) for u, c, s in rows), key=lambda item: item[0])))
        if not isinstance(documents, Mapping):
            raise SchemaError(f"documents must be a mapping of URI -> schema or a referencing.Registry, not {type(documents).__name__}")
        out = []
        for uri, schema in documents.items():
            if not isinstance(uri, str):
                raise SchemaError(f"documents: a URI must be a string, not {uri!r}")
            contents = load_schema(schema)
            out.append((uri, contents, dialect_of(contents)))
        return cls(tuple(sorted(out, key=lambda item: item[0])))

    def __bool__(self) -> bool:
        return bool(self.items)

    def get(self, uri: str) -> Any:
        """The contents of the document supplied under `uri` or whose `$id` is `uri` (an empty
        fragment ignored on either side), None when there is none."""
        strip = lambda u: u[:-1] if isinstance(u, str) and u.endswith("#") else u  # noqa: E731
        uri = strip(uri)
        for key, contents, _ in self.items:
            if strip(key) == uri or (isinstance(contents, dict) and strip(contents.get("$id")) == uri):
                return contents
        return None

    def cache_text(self) -> str:
        """Canonical text of every document (URI, dialect, contents with member order kept: it is
        the emission order); "" when there are none."""
        if not self.items:
            return ""
        rows = [[uri, getattr(spec, "name", ""), contents] for uri, contents, spec in self.items]
        try:
            return json.dumps(rows, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
        except (TypeError, ValueError) as e:
            raise SchemaError(f"documents: a document is not JSON data: {e}") from None

    def check_bounds(self) -> None:
        for _, contents, _ in self.items:
            check_schema_bounds(contents)

    def registry(self, root_uri: str, root: Any, crawl: bool = True):
        """A referencing.Registry with these documents and `root` (a Resource) at `root_uri`,
        crawled for the anchors and `$id`s inside them unless `crawl` is False (JSON pointers
        resolve without it); it has no retrieve, so any other URI is unresolvable."""
        import referencing

        pairs = [(uri, spec.create_resource(contents)) for uri, contents, spec in self.items]
        registry = referencing.Registry().with_resources(pairs).with_resource(root_uri, root)
        return registry.crawl() if crawl or pairs else registry
