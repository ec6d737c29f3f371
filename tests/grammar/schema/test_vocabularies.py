"""Dialects of supplied metaschemas (strictgen.grammar.schema.vocabularies): the keywords of the
vocabularies a metaschema's `$vocabulary` leaves out are annotations, an unknown required
vocabulary is refused, standard metaschema URIs are never looked up.

jsonschema 4.26 does not honour `$vocabulary` (it validates every keyword), so each expectation
is written out here, from the spec (2020-12 core §8.1.2) and the JSON-Schema-Test-Suite's
vocabulary.json and optional/format-assertion.json."""

from __future__ import annotations

import pytest

from strictgen.errors import SchemaError
from tests.grammar.test_json_schema import check

V = "https://json-schema.org/draft/2020-12/vocab/"
V19 = "https://json-schema.org/draft/2019-09/vocab/"
META = "https://json-schema.org/draft/2020-12/schema"


def metaschema(uri: str, *vocabularies: str, base: str = META, unknown: dict | None = None) -> dict:
    vocab = {v if v.startswith("http") else V + v: True for v in vocabularies}
    return {"$schema": base, "$id": uri, "$vocabulary": {**vocab, **(unknown or {})}}


def docs(*metas: dict) -> dict:
    return {m["$id"]: m for m in metas}


NO_VALIDATION = metaschema("http://ex.com/no-validation.json", "core", "applicator")
NO_APPLICATOR = metaschema("http://ex.com/no-applicator.json", "core", "validation")


def test_left_out_validation_keywords_are_annotations_and_applicators_still_apply():
    """vocabulary.json#0 of the suite, and the other validation keywords alike."""
    schema = {
        "$schema": NO_VALIDATION["$id"],
        "type": "object",
        "required": ["x"],
        "properties": {"bad": False, "n": {"minimum": 10, "type": "integer"}, "s": {"maxLength": 1, "pattern": "^a"}},
    }
    check(schema, ["{}", '{"n": 1}', '{"n": "text"}', '{"s": "bcd"}', "[]", "3"], ['{"bad": 1}'], documents=docs(NO_VALIDATION))


def test_left_out_applicators_are_annotations_and_the_enum_judge_reads_the_dialect_too():
    schema = {"$schema": NO_APPLICATOR["$id"], "type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}
    check(schema, ['{"a": "x"}', '{"b": 1}'], ["[]", "1"], documents=docs(NO_APPLICATOR))
    # the enum values are filtered by jsonschema: `properties` must not filter them here
    schema = {"$schema": NO_APPLICATOR["$id"], "enum": [{"a": 1}, {"a": "x"}, {}], "properties": {"a": {"type": "integer"}}, "minProperties": 1}
    check(schema, ['{"a": 1}', '{"a": "x"}'], ["{}"], documents=docs(NO_APPLICATOR))


def test_a_standard_metaschema_uri_keeps_its_dialect_and_is_not_looked_up():
    bogus = {"$id": META, "$vocabulary": {V + "core": True}}  # supplied under the standard URI: not read
    check({"$schema": META, "minimum": 3}, ["3", "4"], ["2"], documents={META: bogus})
    check({"$schema": META + "#", "minimum": 3}, ["3"], ["2"], documents={META: bogus})


def test_a_metaschema_not_supplied_reads_as_2020_12():
    check({"$schema": "http://ex.com/absent.json", "minimum": 3}, ["3"], ["2"])


def test_unknown_vocabularies_optional_ignored_required_refused():
    optional = metaschema("http://ex.com/opt.json", "core", "validation", unknown={"http://ex.com/vocab/custom": False})
    check({"$schema": optional["$id"], "type": "number"}, ["20"], ['"foobar"'], documents=docs(optional))
    required = metaschema("http://ex.com/req.json", "core", "validation", unknown={"http://ex.com/vocab/custom": True})
    with pytest.raises(SchemaError) as e:
        check({"$schema": required["$id"], "type": "number"}, documents=docs(required))
    assert "http://ex.com/vocab/custom" in str(e.value) and e.value.keyword == "$vocabulary"
    assert e.value.pointer == "http://ex.com/req.json#/$vocabulary/http:~1~1ex.com~1vocab~1custom"


def test_a_malformed_vocabulary_is_a_schema_error():
    bad = {"$schema": META, "$id": "http://ex.com/bad.json", "$vocabulary": {V + "core": "yes"}}
    with pytest.raises(SchemaError) as e:
        check({"$schema": bad["$id"]}, documents=docs(bad))
    assert e.value.keyword == "$vocabulary"


def test_format_follows_the_format_vocabularies():
    asserting = metaschema("http://ex.com/fa.json", "core", "format-assertion")
    annotating = metaschema("http://ex.com/fn.json", "core", "validation", "format-annotation")
    neither = metaschema("http://ex.com/f0.json", "core", "validation")
    ipv4 = lambda meta: {"$schema": meta["$id"], "format": "ipv4"}  # noqa: E731
    all_docs = docs(asserting, annotating, neither)
    for formats in ("assert", "annotate"):  # format-assertion asserts whatever the caller's policy
        check(ipv4(asserting), ['"127.0.0.1"'], ['"not-an-ipv4"'], documents=all_docs, formats=formats)
    check(ipv4(annotating), ['"127.0.0.1"'], ['"not-an-ipv4"'], documents=all_docs)  # our default policy
    check(ipv4(annotating), ['"not-an-ipv4"'], documents=all_docs, formats="annotate")
    check(ipv4(neither), ['"not-an-ipv4"', "1"], documents=all_docs)


def test_2019_09_vocabularies():
    meta = metaschema("http://ex.com/19.json", V19 + "core", V19 + "applicator", base="https://json-schema.org/draft/2019-09/schema")
    schema = {"$schema": meta["$id"], "minimum": 3, "items": {"not": {"type": "string", "minLength": 2}}, "unevaluatedProperties": False}
    check(schema, ["1", "[]", "{}"], ['["a"]', '{"a": 1}'], documents=docs(meta))  # `not` of a validation-free schema is false
    fmt = metaschema("http://ex.com/19f.json", V19 + "core", base="https://json-schema.org/draft/2019-09/schema")
    fmt["$vocabulary"][V19 + "format"] = True  # 2019-09: a required format vocabulary asserts
    check({"$schema": fmt["$id"], "format": "ipv4"}, ['"1.2.3.4"'], ['"x"'], documents=docs(fmt), formats="annotate")


def test_a_metaschema_without_vocabulary_has_its_own_metaschemas_dialect():
    child = {"$schema": NO_VALIDATION["$id"], "$id": "http://ex.com/child.json"}
    check({"$schema": child["$id"], "minimum": 3}, ["1"], documents=docs(NO_VALIDATION, child))
    loop = {"$schema": "http://ex.com/loop.json", "$id": "http://ex.com/loop.json"}  # its own metaschema
    check({"$schema": loop["$id"], "minimum": 3}, ["3"], ["1"], documents=docs(loop))


def test_a_referenced_document_in_a_custom_dialect():
    doc = {"$schema": NO_VALIDATION["$id"], "$id": "http://ex.com/doc.json", "minimum": 10, "items": False}
    check({"$ref": "http://ex.com/doc.json", "type": "number"}, ["1", "20"], ["[1]", '"a"'], documents=docs(NO_VALIDATION, doc))
    # and a subschema that declares the dialect (an embedded resource)
    schema = {"type": "array", "items": {"$id": "http://ex.com/item.json", "$schema": NO_VALIDATION["$id"], "minimum": 10}}
    check(schema, ["[1, 20]"], ["{}"], documents=docs(NO_VALIDATION))
