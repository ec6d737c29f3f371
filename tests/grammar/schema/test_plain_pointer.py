"""SchemaSource.plain_pointer, the short way of a `$ref` that is a plain JSON pointer into a root
document with no inner resources: wherever it answers, it is the schema referencing's own lookup
finds, with a resolver of the same base URI; where the lookup must decide (escapes, percent
encoding, inner `$id`s, other documents, dynamic references, a pointer to nowhere) it declines,
and the reference is still resolved, or refused, as before."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from strictgen.errors import SchemaError
from strictgen.grammar.json_schema import json_schema_grammar
from strictgen.grammar.schema.refs import base_uri

from .oracle import normalizer

_NAMES = st.sampled_from(["a", "b", "c d", "é", "0", "1", "items", "properties"])
_DOCS = st.recursive(
    st.one_of(st.booleans(), st.integers(), st.just({"type": "string"})),
    lambda inner: st.one_of(st.dictionaries(_NAMES, inner, max_size=3), st.lists(inner, max_size=2)),
    max_leaves=10,
)


@settings(max_examples=120, deadline=None)
@given(_DOCS, st.lists(_NAMES, min_size=1, max_size=4), st.sampled_from(["", "https://example.com/s.json"]))
def test_where_it_answers_it_is_referencings_lookup(defs, path, uri):
    root = {"x-data": defs, "$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s"}  # (x-data: an annotation)
    if uri:
        root["$id"] = uri
    norm = normalizer(root)
    target_ref = "#/x-data/" + "/".join(path)
    unset = norm.plain_pointer(norm.resolver, target_ref)  # (no $id: set up without referencing, resolver None)
    resolver = norm.source.resolver_of(norm.root_formula)  # referencing's, made now where it was not
    got = norm.plain_pointer(resolver, target_ref)
    assert got is unset
    try:
        resolved = resolver.lookup(target_ref)
    except Exception:  # noqa: BLE001 - referencing's PointerToNowhere and the like
        assert got is None
        return
    if got is not None:
        assert got is resolved.contents
        assert base_uri(resolved.resolver) == base_uri(resolver)


@pytest.mark.parametrize(
    "defs, target_ref",
    [
        ({"a/b": {"type": "string"}}, "#/$defs/a~1b"),  # an escape: referencing decodes it
        ({"a b": {"type": "string"}}, "#/$defs/a%20b"),  # percent-encoding
        ({"a": {"$id": "inner.json", "type": "string"}}, "#/$defs/a"),  # an inner resource
        ({"a": {"$dynamicAnchor": "n", "type": "string"}}, "#/$defs/a"),  # a dynamic scope
        ({"a": {"allOf": [{"type": "string"}]}}, "#/$defs/a/allOf/0"),  # through an array
        ({"a": {"type": "string"}}, "#/$defs/b"),  # to nowhere
        ({"a": {"type": "string"}}, "other.json#/$defs/a"),  # another document
    ],
)
def test_it_declines_where_the_lookup_must_decide(defs, target_ref):
    norm = normalizer({"$defs": {"ok": {"type": "string"}, **defs}, "$ref": "#/$defs/ok"})
    resolver = norm.source.resolver_of(norm.root_formula)  # references set up: the decline is plain_pointer's own
    assert resolver is not None and norm.plain_pointer(resolver, target_ref) is None
    assert norm.plain_pointer(norm.resolver, target_ref) is None


def test_it_answers_the_common_reference():
    root = {"definitions": {"io.k8s.Meta": {"type": "object"}}, "properties": {"m": {"$ref": "#/definitions/io.k8s.Meta"}}}
    norm = normalizer(root)
    assert norm.plain_pointer(norm.resolver, "#/definitions/io.k8s.Meta/type") == "object"
    assert norm.plain_pointer(norm.resolver, "#/definitions/io.k8s.Meta") is root["definitions"]["io.k8s.Meta"]


def test_references_it_declines_still_resolve_or_are_refused():
    grammar, _ = json_schema_grammar({"$defs": {"a/b": {"type": "integer"}}, "$ref": "#/$defs/a~1b"})
    assert grammar.rules  # resolved by referencing
    with pytest.raises(SchemaError, match="cannot resolve reference"):
        json_schema_grammar({"$defs": {"a": {"type": "integer"}}, "$ref": "#/$defs/b"})
