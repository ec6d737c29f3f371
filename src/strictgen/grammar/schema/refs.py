"""References: `$ref`, `$dynamicRef` (with its dynamic scope) and `$recursiveRef`, resolved with
`referencing` in the registry the normaliser built from the root document and the `documents=`
supplied (nothing is fetched), or as plain JSON pointers into the root document where that gives
the same schema (SchemaSource.plain_pointer; a document whose references are all such pointers
is normalised without importing referencing, its registry made only if something else asks).

Functions of the normaliser, not a mixin: `ref`, `dynamic_ref` and `recursive_ref` (what the
applicators ask) return the formula a reference points to; they use the normaliser's registry,
its formula constructor `src`, the JSON pointers of schema objects, its dialects and its reporter.
`DynamicScope` (one per normaliser) tracks which resources' `$dynamicAnchor`s matter; `entered`
and `base_uri` are functions of referencing's resolvers."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from .ir import FALSE, TRUE, Formula
from .values import invalid

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["DynamicScope", "base_uri", "dynamic_ref", "entered", "joined_uri", "recursive_ref", "ref"]

# joined_uri's fast case: an http(s) base whose authority is a plain host (and port), and an
# absolute-path reference of plain segments (none "." or "..", none empty)
_PLAIN_AUTHORITY = re.compile(r"https?://[A-Za-z0-9.\-]+(?::[0-9]+)?(?=[/?#]|$)")
_PLAIN_ABSOLUTE_PATH = re.compile(r"(?:/(?!\.\.?(?:/|$))[A-Za-z0-9_.~\-]+)+")


def base_uri(resolver: Any) -> str:
    """The base URI a referencing Resolver resolves against ("" for none). referencing has no
    public accessor for it (0.37 keeps it in the private `_base_uri`; `dynamic_scope()` gives only
    the URIs before it), and it moves as a lookup's JSON pointer passes through subresources with
    an `$id`, which only referencing knows: this is the one place that reads it."""
    return getattr(resolver, "_base_uri", "")


def joined_uri(base: str, reference: str) -> str:
    """urljoin(base, reference): the base URI inside a subschema with that `$id`. Generated
    draft-06 schemas give every subschema an absolute-path `$id` ("/properties/repo"); there the
    result is the base's scheme and authority followed by the path as written (RFC 3986 §5.2.2,
    and urllib's own answer when no segment is empty, "." or ".."), so urllib's two parses and
    its unparse (half of entering a subschema, ~5% of such a schema's front end) are skipped.
    Anything else (fragments, relative paths, other schemes, unusual authorities) asks urllib."""
    if reference[:1] == "/" and _PLAIN_ABSOLUTE_PATH.fullmatch(reference):
        authority = _PLAIN_AUTHORITY.match(base)
        if authority is not None:
            return authority.group(0) + reference
    return urljoin(base, reference)


def entered(resolver: Any, schema: dict, spec: Any) -> Any:
    """The resolver inside `schema`: its `$id` (`id` in old drafts) is the base URI of the
    references in it. An `$id` that is not a URI string is ignored, as referencing's crawl does.
    What referencing's `Resolver.in_subresource(spec.create_resource(schema))` gives (the
    resource's id is the dialect's `id_of` without trailing "#"; the resolver is evolved with
    the joined base URI), without making a Resource or parsing the URIs where joined_uri need not."""
    if resolver is None or ("$id" not in schema and "id" not in schema):  # (tested without a generator:
        return resolver  # every subschema asks) (None: a schema with nothing to resolve)
    import attrs  # (referencing's Resolver is an attrs class; imported with referencing already)

    try:
        uri = spec.id_of(schema)
        if uri is None:
            return resolver
        return attrs.evolve(resolver, base_uri=joined_uri(base_uri(resolver), uri.rstrip("#")))
    except (TypeError, ValueError, AttributeError):
        return resolver


class DynamicScope:
    """The dynamic scope of `$dynamicRef` (resources entered on the way, outermost first), kept in
    formulas only when the schema has a `$dynamicRef` (`active`) and only for resources that
    define a `$dynamicAnchor`, so other schemas share one formula per subschema."""

    def __init__(self, registry: Any, active: bool):
        self.registry = registry
        self.active = active
        self._anchors_of: dict[str, frozenset] = {}

    def anchor_names(self, uri: str) -> frozenset:
        """The $dynamicAnchor names defined in the resource at `uri` (not in its subresources)."""
        got = self._anchors_of.get(uri)
        if got is None:
            names: set[str] = set()
            try:
                root = self.registry.contents(uri)
            except LookupError:  # referencing's NoSuchResource: no resource at that URI
                root = None
            work = [root]
            while work:
                node = work.pop()
                if isinstance(node, dict):
                    if node is not root and "$id" in node:
                        continue
                    if isinstance(node.get("$dynamicAnchor"), str):
                        names.add(node["$dynamicAnchor"])
                    work.extend(v for v in node.values() if isinstance(v, (dict, list)))
                elif isinstance(node, list):
                    work.extend(v for v in node if isinstance(v, (dict, list)))
            got = self._anchors_of[uri] = frozenset(names)
        return got

    def enter(self, scope: tuple, resolver: Any) -> tuple:
        """The dynamic scope after entering the resource of `resolver` (kept only when it matters)."""
        if not self.active:
            return ()
        uri = base_uri(resolver)
        if uri in scope or not self.anchor_names(uri):
            return scope
        return scope + (uri,)


def ref(norm: Normalizer, f: Formula, target_ref: Any, kw: str) -> Formula:
    """The formula the reference `target_ref` (keyword `kw` of the src formula `f`) points to;
    one that does not resolve is refused (TRUE when the refusal is only recorded)."""
    ptr = f.src.pointer + "/" + kw
    if not isinstance(target_ref, str):
        raise invalid(f"{kw} must be a string", kw, ptr)
    target = norm.plain_pointer(f.src.resolver, target_ref)
    if target is not None:
        found = f.src.resolver
    else:
        resolver = norm.source.resolver_of(f)  # (a document set up without referencing gets it now)
        try:
            resolved = resolver.lookup(target_ref)
        except Exception as e:
            norm.reporter.refuse(_unresolvable(norm, resolver, target_ref, e), kw, ptr)
            return TRUE
        target, found = resolved.contents, resolved.resolver
    if isinstance(target, bool):
        return TRUE if target else FALSE
    if not isinstance(target, dict):
        raise invalid(f"reference {target_ref!r} does not point to a schema", kw, ptr)
    spec = norm.vocabularies.dialect_spec(target, f.src.spec)
    resolver = _canonical(norm, found, target, spec)
    scope = norm.scope.enter(f.src.scope, resolver)
    return norm.src(target, resolver, spec, norm.pointers.get(id(target), target_ref), scope)


def _canonical(norm: Normalizer, resolver: Any, target: dict, spec: Any) -> Any:
    """The resolver inside a reference's target. A document supplied under one URI with
    another `$id` has that `$id` as the base of its references (RFC 3986 §5.1.1), but
    referencing's lookup leaves the base at the URI asked for; it is the target's `$id` joined
    onto that URI when the registry holds the target there (a relative `$id` of a target found
    by its own canonical URI is not applied twice)."""
    inside = entered(resolver, target, spec)
    if inside is resolver:
        return resolver
    try:
        return inside if norm.source.registry.contents(base_uri(inside)) is target else resolver
    except LookupError:
        return resolver


def _unresolvable(norm: Normalizer, resolver: Any, target_ref: str, exc: Exception) -> str:
    """Why `target_ref` does not resolve, naming the absolute URI: nothing is fetched, so a document
    that was not supplied (documents=) is missing, or the fragment names nothing in it."""
    from urllib.parse import urldefrag, urljoin

    base = base_uri(resolver)
    uri, fragment = urldefrag(urljoin(base, target_ref)) if not target_ref.startswith("#") else (base, target_ref[1:])
    try:
        norm.source.registry[uri]
    except LookupError:
        return (
            f"cannot resolve reference {target_ref!r}: no document {uri or '(the root)'!r} was supplied "
            "(other documents are never fetched; pass them with documents=)"
        )
    what = "JSON pointer" if fragment.startswith("/") else "anchor"
    return f"cannot resolve reference {target_ref!r}: document {uri!r} has no {what} {fragment!r} ({type(exc).__name__})"


def dynamic_ref(norm: Normalizer, f: Formula, target_ref: Any) -> Formula:
    """$dynamicRef: like $ref, unless the target is a $dynamicAnchor of the fragment's name
    ("bookending"): then the outermost resource of the dynamic scope defining that anchor wins."""
    target = ref(norm, f, target_ref, "$dynamicRef")
    if target.kind != "src" or not isinstance(target_ref, str) or "#" not in target_ref:
        return target
    name = target_ref.split("#", 1)[1]
    if target.src.schema.get("$dynamicAnchor") != name:
        return target
    for uri in f.src.scope:
        if name in norm.scope.anchor_names(uri):
            return ref(norm, f, f"{uri}#{name}", "$dynamicRef")
    return target


def recursive_ref(norm: Normalizer, f: Formula, target_ref: Any) -> Formula:
    """$recursiveRef: like $ref; refused where a `$recursiveAnchor` makes it dynamic."""
    ptr = f.src.pointer + "/$recursiveRef"
    if norm.has_recursive_anchor:
        norm.reporter.refuse("$recursiveRef with $recursiveAnchor (dynamic scope) is not supported", "$recursiveRef", ptr)
        return TRUE
    return ref(norm, f, target_ref, "$recursiveRef")
