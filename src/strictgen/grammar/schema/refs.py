"""References: `$ref`, `$dynamicRef` (with its dynamic scope) and `$recursiveRef`, resolved with
`referencing` in the registry the normaliser built from the root document and the `documents=`
supplied (nothing is fetched). A mixin of `Normalizer`."""

from __future__ import annotations

from typing import Any

from .ir import FALSE, TRUE, Formula
from .values import invalid

__all__ = ["References", "base_uri"]


def base_uri(resolver: Any) -> str:
    """The base URI a referencing Resolver resolves against ("" for none). referencing has no
    public accessor for it (0.37 keeps it in the private `_base_uri`; `dynamic_scope()` gives only
    the URIs before it), and it moves as a lookup's JSON pointer passes through subresources with
    an `$id`, which only referencing knows: this is the one place that reads it."""
    return getattr(resolver, "_base_uri", "")


class References:
    """Reference resolution and the dynamic scope, for Normalizer."""

    # ---- dynamic scope ($dynamicRef) ----

    def _dynamic_anchor_names(self, uri: str) -> frozenset:
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

    def _enter(self, scope: tuple, resolver: Any) -> tuple:
        """The dynamic scope after entering the resource of `resolver` (kept only when it matters)."""
        if not self._dynamic:
            return ()
        uri = base_uri(resolver)
        if uri in scope or not self._dynamic_anchor_names(uri):
            return scope
        return scope + (uri,)

    @staticmethod
    def _entered(resolver: Any, schema: dict, spec: Any) -> Any:
        """The resolver inside `schema`: its `$id` (`id` in old drafts) is the base URI of the
        references in it. An `$id` that is not a URI string is ignored, as referencing's crawl does."""
        if not any(k in schema for k in ("$id", "id")):
            return resolver
        try:
            return resolver.in_subresource(spec.create_resource(schema))
        except (TypeError, ValueError, AttributeError):
            return resolver

    def ref(self, f: Formula, ref: Any, kw: str) -> Formula:
        ptr = f.src.pointer + "/" + kw
        if not isinstance(ref, str):
            raise invalid(f"{kw} must be a string", kw, ptr)
        try:
            resolved = f.src.resolver.lookup(ref)
        except Exception as e:
            self.reporter.refuse(self._unresolvable(f.src.resolver, ref, e), kw, ptr)
            return TRUE
        target = resolved.contents
        if isinstance(target, bool):
            return TRUE if target else FALSE
        if not isinstance(target, dict):
            raise invalid(f"reference {ref!r} does not point to a schema", kw, ptr)
        spec = self.vocabularies.dialect_spec(target, f.src.spec)
        resolver = self._canonical(resolved.resolver, target, spec)
        scope = self._enter(f.src.scope, resolver)
        return self.src(target, resolver, spec, self.pointers.get(id(target), ref), scope)

    def _canonical(self, resolver: Any, target: dict, spec: Any) -> Any:
        """The resolver inside a reference's target. A document supplied under one URI with
        another `$id` has that `$id` as the base of its references (RFC 3986 §5.1.1), but
        referencing's lookup leaves the base at the URI asked for; it is the target's `$id` joined
        onto that URI when the registry holds the target there (a relative `$id` of a target found
        by its own canonical URI is not applied twice)."""
        entered = self._entered(resolver, target, spec)
        if entered is resolver:
            return resolver
        try:
            return entered if self.registry.contents(base_uri(entered)) is target else resolver
        except LookupError:
            return resolver

    def _unresolvable(self, resolver: Any, ref: str, exc: Exception) -> str:
        """Why `ref` does not resolve, naming the absolute URI: nothing is fetched, so a document
        that was not supplied (documents=) is missing, or the fragment names nothing in it."""
        from urllib.parse import urldefrag, urljoin

        base = base_uri(resolver)
        uri, fragment = urldefrag(urljoin(base, ref)) if not ref.startswith("#") else (base, ref[1:])
        try:
            self.registry[uri]
        except LookupError:
            return (
                f"cannot resolve reference {ref!r}: no document {uri or '(the root)'!r} was supplied "
                "(other documents are never fetched; pass them with documents=)"
            )
        what = "JSON pointer" if fragment.startswith("/") else "anchor"
        return f"cannot resolve reference {ref!r}: document {uri!r} has no {what} {fragment!r} ({type(exc).__name__})"

    def dynamic_ref(self, f: Formula, ref: Any) -> Formula:
        """$dynamicRef: like $ref, unless the target is a $dynamicAnchor of the fragment's name
        ("bookending"): then the outermost resource of the dynamic scope defining that anchor wins."""
        target = self.ref(f, ref, "$dynamicRef")
        if target.kind != "src" or not isinstance(ref, str) or "#" not in ref:
            return target
        name = ref.split("#", 1)[1]
        if target.src.schema.get("$dynamicAnchor") != name:
            return target
        for uri in f.src.scope:
            if name in self._dynamic_anchor_names(uri):
                return self.ref(f, f"{uri}#{name}", "$dynamicRef")
        return target

    def recursive_ref(self, f: Formula, ref: Any) -> Formula:
        ptr = f.src.pointer + "/$recursiveRef"
        if any(d.get("$recursiveAnchor") is True for d in self._dicts):
            self.reporter.refuse("$recursiveRef with $recursiveAnchor (dynamic scope) is not supported", "$recursiveRef", ptr)
            return TRUE
        return self.ref(f, ref, "$recursiveRef")
