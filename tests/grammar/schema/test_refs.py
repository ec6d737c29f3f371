"""schema.refs (the Normalizer's reference resolution): `$ref` by JSON pointer, anchor, `$id`
base and to other supplied documents, `$dynamicRef` with its dynamic scope (bookending), each
judged by jsonschema on the normalised DNF; references to one target share one formula; an
unresolvable reference is refused (strict) naming the missing document, or recorded (loose);
a non-string `$ref` is an invalid schema; `$recursiveRef` with `$recursiveAnchor` is refused."""

from __future__ import annotations

import pytest

from strictgen.errors import SchemaError

from .oracle import SEEDS, check_agreement, dnf_holds, normalizer, validator


def agrees(schema, values, documents=None):
    norm = normalizer(schema, documents=documents)
    dnf = norm.dnf(norm.root_formula)
    outcomes = check_agreement(norm, validator(schema, documents), values, dnf)
    assert outcomes == {True, False}, "test error: the values should include valid and invalid ones"
    return norm


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"i": {"type": "integer", "minimum": 2}}, "$ref": "#/$defs/i"},
        {"$defs": {"i": {"$anchor": "small", "maximum": 3}}, "type": "integer", "$ref": "#small"},
        {"$defs": {"a~b/c": {"type": "string"}}, "$ref": "#/$defs/a~0b~1c"},
        {"$defs": {"no": False}, "anyOf": [{"$ref": "#/$defs/no"}, {"type": "null"}]},
        {"$id": "https://ex.test/root", "$defs": {"x": {"$id": "item", "type": "array", "items": {"$ref": "#/$defs/y"}, "$defs": {"y": {"type": "integer"}}}}, "$ref": "item"},
        {"type": "object", "properties": {"a": {"$ref": "#/properties/b"}, "b": {"type": "string"}}},
    ],
)
def test_local_references_resolve_as_jsonschema_does(schema):
    agrees(schema, SEEDS)


def test_references_to_other_supplied_documents():
    docs = {
        "https://ex.test/defs.json": {"$defs": {"name": {"type": "string", "maxLength": 2}}},
        "https://ex.test/dir/other.json": {"$id": "https://ex.test/dir/other.json", "items": {"$ref": "../defs.json#/$defs/name"}},
    }
    schema = {"$id": "https://ex.test/main.json", "type": "array", "$ref": "dir/other.json", "minItems": 1}
    agrees(schema, SEEDS + [["ab", "a"], ["abc"]], documents=docs)


def test_references_to_one_target_by_any_spelling_normalise_alike():
    t = {"$anchor": "tt", "type": "integer", "minimum": 1}
    schema = {"$defs": {"t": t}, "type": "object", "properties": {"a": {"$ref": "#/$defs/t"}, "b": {"$ref": "#tt"}, "c": True}}
    norm = normalizer(schema)
    (c,) = norm.dnf(norm.root_formula)
    values = {r.name: r.schema for r in c.obj.rules if r.kind == "name"}
    target = norm.dnf(norm.sub(norm.root_formula, t, "$defs", "t"))
    assert norm.dnf(values["a"]) == norm.dnf(values["b"]) == target
    assert target != norm.dnf(values["c"])


def test_dynamic_ref_resolves_to_the_outermost_dynamic_anchor():
    tree = {
        "$id": "https://ex.test/tree",
        "$dynamicAnchor": "node",
        "type": "object",
        "properties": {"data": True, "children": {"type": "array", "items": {"$dynamicRef": "#node"}}},
    }
    strict_tree = {
        "$id": "https://ex.test/strict-tree",
        "$dynamicAnchor": "node",
        "$ref": "tree",
        "properties": {"data": True, "children": True},
        "additionalProperties": False,
    }
    docs = {"https://ex.test/tree": tree}
    nested_typo = {"children": [{"daat": 1}]}
    values = [{}, {"data": 1}, {"children": [{"data": 1}]}, nested_typo, {"children": [{"children": [{"x": 1}]}]}, {"x": 1}]
    agrees(strict_tree, values, documents=docs)
    # the same tree on its own: the nested typo is allowed (the dynamic scope has no strict-tree)
    loose = normalizer(tree)
    assert dnf_holds(loose, loose.dnf(loose.root_formula), nested_typo)
    assert validator(tree).is_valid(nested_typo)


def test_an_unresolvable_reference_is_refused_naming_the_missing_document():
    schema = {"$id": "https://ex.test/a.json", "$ref": "b.json#/x"}
    with pytest.raises(SchemaError, match="https://ex.test/b.json") as e:
        norm = normalizer(schema)
        norm.dnf(norm.root_formula)
    assert e.value.keyword == "$ref" and "documents=" in str(e.value)
    loose = normalizer(schema, strict=False)
    assert loose.dnf(loose.root_formula)[0].is_top  # not enforced: any value
    assert loose.reporter.unenforced == [("$ref", "/$ref")]


def test_a_missing_pointer_in_a_known_document_is_named_as_such():
    with pytest.raises(SchemaError, match="no JSON pointer '/\\$defs/nope'"):
        norm = normalizer({"$defs": {}, "$ref": "#/$defs/nope"})
        norm.dnf(norm.root_formula)


@pytest.mark.parametrize("ref", [3, None, ["#"]])
def test_a_non_string_ref_is_an_invalid_schema(ref):
    with pytest.raises(SchemaError, match="must be a string") as e:
        norm = normalizer({"$ref": ref}, strict=False)  # invalid in every mode
        norm.dnf(norm.root_formula)
    assert e.value.keyword == "$ref"


def test_recursive_ref_with_recursive_anchor_is_refused():
    schema = {"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveAnchor": True, "properties": {"a": {"$recursiveRef": "#"}}}
    norm = normalizer(schema)
    (c,) = norm.dnf(norm.root_formula)  # the property's value is normalised lazily
    (rule,) = c.obj.rules
    with pytest.raises(SchemaError) as e:
        norm.dnf(rule.schema)
    assert e.value.keyword == "$recursiveRef" and e.value.pointer == "/properties/a/$recursiveRef"


_BASES = ["http://example.com/schema.json", "https://a.b:8080", "https://a.b/x/y?q#f", "http://a.b#f", "http://a.b?",
          "HTTP://a.b/", "http://[::1]/", "http://u@a.b/", "urn:x:y", "", "http://a.b\t/x", " http://a.b/",
          "file:///x", "http://a.b;p/x", "http://a..b/"]
_REFERENCES = ["/properties/repo", "/a/b/c.json", "/a//b", "/./a", "/a/..", "/a/../b", "/", "/a/", "#/x", "a/b",
               "/a~b/c_d-e", "/a?x", "/a;p", "/.a/..b", "/a/.", "//x/y", "/é", "/a b", ""]


@pytest.mark.parametrize("base", _BASES)
def test_joined_uri_is_urljoin(base):
    """refs.joined_uri's fast case (absolute-path `$id` under a plain http(s) authority) answers
    as urllib's urljoin does, and every other pair is urllib's answer."""
    from urllib.parse import urljoin

    from strictgen.grammar.schema.refs import joined_uri

    assert [joined_uri(base, r) for r in _REFERENCES] == [urljoin(base, r) for r in _REFERENCES]


@pytest.mark.parametrize("schema_id", ["/properties/a", "#/properties/a", "sub.json", "#", "", 5, None])
def test_entered_is_referencings_in_subresource(schema_id):
    """refs.entered gives the base URI referencing's Resolver.in_subresource gives (draft 6 and
    2020-12 ids; a non-string id leaves the resolver as it is)."""
    import referencing
    import referencing.jsonschema as rj

    from strictgen.grammar.schema.refs import base_uri, entered

    for spec in (rj.DRAFT6, rj.DRAFT202012, rj.DRAFT4):
        key = "id" if spec is rj.DRAFT4 else "$id"
        schema = {key: schema_id, "type": "string"} if schema_id is not None else {"$id": None, "type": "string"}
        resolver = referencing.Registry().resolver(base_uri="http://example.com/root.json")
        try:
            expected = resolver.in_subresource(spec.create_resource(schema))
        except (TypeError, ValueError, AttributeError):
            expected = resolver
        got = entered(resolver, schema, spec)
        assert base_uri(got) == base_uri(expected)
        assert (got is resolver) == (expected is resolver)


_D6 = "http://json-schema.org/draft-06/schema#"
_INNER_IDS = [
    {"$schema": _D6, "$id": "http://example.com/s.json", "type": "object", "properties": {
        "a": {"$id": "/properties/a", "type": "string", "enum": ["x", "y", 3]},
        "b": {"$id": "/properties/b", "type": "array", "items": {"$id": "/properties/b/items", "type": "integer", "maximum": 3}},
        "c": {"$id": "#/properties/c", "type": "boolean"}, "id": {"$id": "sub/c.json", "type": "null"}}},
    {"$id": "http://example.com/s.json", "anyOf": [{"$id": "a.json", "const": 1}, {"$id": "/b", "type": "string"}]},
    {"$schema": _D6, "$id": "urn:x:y", "properties": {"a": {"$id": "/a", "minimum": 2}}},
    {"$schema": _D6, "properties": {"a": {"$id": "/a", "type": "string"}, "b": {"$id": "/a", "type": "string"}}},
    # refused alike: a malformed shape below an inner $id; what the crawl itself refuses (kept crawling)
    {"$schema": _D6, "properties": {"a": {"$id": "/a", "items": 5}}},
    {"$schema": _D6, "properties": {"a": {"$id": 5, "type": "string"}}},
    {"$schema": _D6, "properties": {"a": {"$id": "http://[::1/a", "type": "string"}}},
    {"$schema": _D6, "properties": {"a": {"$id": "/a", "dependencies": ["b"]}}},
    {"$schema": _D6, "properties": {"a": {"$id": "/a", "$schema": "http://example.com/unknown", "type": "string"}}},
]


def _front_outcome(schema):
    from strictgen.grammar.schema.entry import json_schema_grammar

    try:
        return repr(json_schema_grammar(schema))
    except SchemaError as e:
        return f"{e.keyword} {e.pointer} {e}"


@pytest.mark.parametrize("schema", _INNER_IDS)
def test_a_crawl_nothing_asks_for_is_skipped_with_the_same_outcome(schema, monkeypatch):
    """A document with inner `$id`s and nothing to look up is not crawled (SchemaSource._crawl_unasked),
    and compiles (grammar, refusal) exactly as with the crawl."""
    from strictgen.grammar.schema.normalize import SchemaSource

    skipped = _front_outcome(schema)
    monkeypatch.setattr(SchemaSource, "_crawl_unasked", lambda self, root, keys, spec: False)
    assert _front_outcome(schema) == skipped


def test_the_crawl_is_skipped_only_where_nothing_looks_up():
    from strictgen.grammar.schema.normalize import SchemaSource

    plain = SchemaSource(_INNER_IDS[0])
    with pytest.raises(LookupError):  # (an inner resource: only the crawl would have found it)
        plain.registry.contents("http://example.com/properties/a")
    referring = SchemaSource({**_INNER_IDS[0], "not": {"$ref": "#/properties/b"}})
    assert referring.registry.contents("http://example.com/properties/a")["type"] == "string"
