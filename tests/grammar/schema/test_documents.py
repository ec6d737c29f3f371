"""`documents=`: the other documents a schema's `$ref` points to (strictgen.grammar.schema.documents).

Each case is checked against jsonschema given the same documents (the judge of validity), plus the
refusals: a URI not supplied is a SchemaError naming it and the JSON pointer, never a fetch."""

from __future__ import annotations

import json

import jsonschema
import pytest
import referencing
import referencing.jsonschema as rj

import strictgen as sg
from strictgen.errors import SchemaError, StrictgenError
from strictgen.grammar.schema.documents import SchemaDocuments
from tests.grammar.test_json_schema import Schema


def judged(schema, documents: dict, accept, reject):
    """The grammar accepts exactly what jsonschema (with the same documents) says is valid."""
    registry = referencing.Registry().with_resources((u, rj.DRAFT202012.create_resource(d)) for u, d in documents.items())
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    s = Schema(schema, documents=documents)
    for doc in accept:
        assert validator.is_valid(doc) and json.dumps(doc) in s, doc
    for doc in reject:
        assert not validator.is_valid(doc) and json.dumps(doc) not in s, doc


def test_absolute_ref_and_json_pointer_fragment():
    docs = {"https://ex.com/defs.json": {"$defs": {"pos": {"type": "integer", "minimum": 0}}, "type": "string"}}
    judged({"$ref": "https://ex.com/defs.json"}, docs, ["a"], [1])
    judged({"$ref": "https://ex.com/defs.json#/$defs/pos"}, docs, [0, 7], [-1, "a"])


def test_relative_ref_against_the_root_id():
    docs = {"https://ex.com/schemas/defs.json": {"$defs": {"pos": {"type": "integer", "minimum": 0}}}}
    root = {"$id": "https://ex.com/schemas/root.json", "type": "object", "properties": {"a": {"$ref": "defs.json#/$defs/pos"}}}
    judged(root, docs, [{"a": 3}, {}], [{"a": -3}, {"a": "x"}])


def test_anchor_in_another_document():
    docs = {"https://ex.com/y/z.json": {"$defs": {"w": {"$anchor": "word", "type": "string", "pattern": "^[a-z]+$"}}}}
    judged({"$id": "https://ex.com/y/root", "$ref": "z.json#word"}, docs, ["abc"], ["ABC", 1])


def test_the_other_documents_own_id_is_its_base_uri():
    """Supplied under one URI, identified by another: its relative refs resolve against its $id
    (RFC 3986 §5.1.1). jsonschema 4.26 resolves them against the URI it was supplied under and
    finds nothing, so this case is checked by hand."""
    docs = {
        "https://ex.com/x.json": {"$id": "https://other.org/y/x.json", "$ref": "z.json#word"},
        "https://other.org/y/z.json": {"$defs": {"w": {"$anchor": "word", "type": "string", "pattern": "^[a-z]+$"}}},
    }
    s = Schema({"$ref": "https://ex.com/x.json"}, documents=docs)
    assert '"abc"' in s and '"ABC"' not in s and "1" not in s
    # a subschema found by its own relative $id is not re-based twice
    docs = {"https://ex.com/r.json": {"$defs": {"f": {"$id": "folder/", "$ref": "int.json", "$defs": {"i": {"$id": "int.json", "type": "integer"}}}}}}
    judged({"$ref": "https://ex.com/folder/"}, docs, [1], ["a"])


def test_recursion_through_another_document():
    docs = {"https://ex.com/node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "tree"}}}}}
    root = {"$id": "https://ex.com/tree", "$ref": "node", "required": ["kids"]}
    judged(root, docs, [{"kids": []}, {"kids": [{"kids": [{"kids": []}]}]}], [{"kids": [{}]}, {"kids": [1]}])


def test_a_registry_is_used_and_never_retrieves():
    asked: list[str] = []

    def retrieve(uri: str):
        asked.append(uri)
        return rj.DRAFT202012.create_resource({"type": "null"})

    registry = referencing.Registry(retrieve=retrieve).with_resource("urn:ex:int", rj.DRAFT202012.create_resource({"type": "integer"}))
    assert "5" in Schema({"$ref": "urn:ex:int"}, documents=registry)
    with pytest.raises(SchemaError) as e:
        Schema({"$ref": "urn:ex:other"}, documents=registry)
    assert "urn:ex:other" in str(e.value) and e.value.keyword == "$ref"
    assert asked == []


def test_a_registry_resource_keeps_the_dialect_it_was_made_with():
    """Without `$schema`, a Registry's resource is crawled in the dialect it was made with: a
    draft-04 `id` names a subresource there, not in 2020-12 (whose `$ref` to it is refused as
    unresolvable). One with `$schema` is in the dialect it names."""
    doc = {"definitions": {"x": {"id": "urn:ex:inner", "type": "integer"}}}
    for spec, found in ((rj.DRAFT4, True), (rj.DRAFT202012, False)):
        registry = referencing.Registry().with_resource("urn:ex:doc", spec.create_resource(doc))
        assert [(uri, dialect) for uri, _, dialect in SchemaDocuments.of(registry).items if uri == "urn:ex:doc"] == [("urn:ex:doc", spec)]
        if found:
            s = Schema({"$ref": "urn:ex:inner"}, documents=registry)
            assert "1" in s and '"a"' not in s
        else:
            with pytest.raises(SchemaError, match="urn:ex:inner"):
                Schema({"$ref": "urn:ex:inner"}, documents=registry)
    named = referencing.Resource.from_contents({"$schema": "http://json-schema.org/draft-04/schema#", "const": 1})
    (row,) = SchemaDocuments.of(referencing.Registry().with_resource("urn:ex:n", named)).items
    assert row[2] is rj.DRAFT4


def test_a_uri_not_supplied_is_refused_with_uri_and_pointer():
    with pytest.raises(SchemaError) as e:
        Schema({"$id": "https://ex.com/a/root", "properties": {"p": {"$ref": "b.json#/x"}}})
    assert "'https://ex.com/a/b.json'" in str(e.value) and "never fetched" in str(e.value)
    assert (e.value.keyword, e.value.pointer) == ("$ref", "/properties/p/$ref")
    # inside another document: the pointer names that document
    docs = {"https://ex.com/a/b.json": {"$defs": {"y": {"$ref": "c.json"}}}}
    with pytest.raises(SchemaError) as e:
        Schema({"$ref": "https://ex.com/a/b.json#/$defs/y"}, documents=docs)
    assert e.value.pointer == "https://ex.com/a/b.json#/$defs/y/$ref" and "https://ex.com/a/c.json" in str(e.value)
    with pytest.raises(SchemaError, match="has no JSON pointer '/nothing'"):
        Schema({"$ref": "https://ex.com/a/b.json#/nothing"}, documents=docs)
    s = Schema({"$ref": "https://ex.com/a/b.json#/nothing"}, documents=docs, strict=False)
    assert s.unenforced == [("$ref", "/$ref")]


def test_bad_documents_are_clear_errors():
    for bad in (42, {"https://ex.com": 3}, {1: {}}, {"u": {"x": {1, 2}}}):
        with pytest.raises(SchemaError):
            SchemaDocuments.of(bad).cache_text()


def test_documents_are_part_of_the_cache_key(qwen):
    compiler = sg.GrammarCompiler(qwen, cache_size=8)
    root = {"$ref": "https://ex.com/t.json"}
    as_int = compiler.compile_json_schema(root, documents={"https://ex.com/t.json": {"type": "integer"}})
    as_str = compiler.compile_json_schema(root, documents={"https://ex.com/t.json": {"type": "string"}})
    again = compiler.compile_json_schema(json.dumps(root), documents={"https://ex.com/t.json": '{"type": "integer"}'})
    assert again is as_int and as_str is not as_int
    assert sg.GrammarMatcher(as_int).accept_string("12") and not sg.GrammarMatcher(as_str).accept_string("12")
    with pytest.raises(StrictgenError):
        compiler.compile_json_schema(root, documents=[1])


@pytest.mark.parametrize(
    "schema,doc,valid",
    [
        # pointers resolve without crawling the document for inner resources
        ({"properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}}, {"a": "x"}, True),
        ({"properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}}, {"a": 1}, False),
        # an anchor, an inner $id and a draft-4 id are found only by the crawl
        ({"properties": {"a": {"$ref": "#s"}}, "$defs": {"s": {"$anchor": "s", "type": "string"}}}, {"a": 1}, False),
        ({"$id": "http://e/r.json", "properties": {"a": {"$ref": "inner.json"}}, "$defs": {"s": {"$id": "inner.json", "type": "string"}}}, {"a": 1}, False),
        ({"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"$ref": "#s"}}, "definitions": {"s": {"id": "#s", "type": "string"}}}, {"a": 1}, False),
        ({"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"$ref": "#s"}}, "definitions": {"s": {"id": "#s", "type": "string"}}}, {"a": "x"}, True),
    ],
)
def test_references_resolve_with_and_without_a_crawl(schema, doc, valid):
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert validator.is_valid(doc) == valid, "test error"
    assert (json.dumps(doc) in Schema(schema)) == valid
