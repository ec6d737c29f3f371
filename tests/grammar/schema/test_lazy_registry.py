"""A schema with nothing to resolve but plain JSON pointers into itself (no `$id`, anchor, dynamic
reference or documents=; `$schema` a standard draft or none) is normalised without `referencing`:
its registry is made only if the jsonschema judge, or a reference plain_pointer cannot answer,
asks for it (normalize.SchemaSource). Checked in fresh interpreters, since this process imported
it long ago."""

from __future__ import annotations

import pytest

from strictgen.errors import SchemaError
from strictgen.grammar.json_schema import json_schema_grammar
from strictgen.grammar.schema.normalize import SchemaSource
from strictgen.compile.automaton import compile_automaton
from strictgen.compile.machine import DEAD, PushdownMachine
from tests.helpers import fresh_interpreter_words


def _imports_after(schema: str) -> list[str]:
    code = (
        "import sys\n"
        "from strictgen.grammar.json_schema import json_schema_grammar\n"
        f"json_schema_grammar({schema})\n"
        "print(' '.join(m for m in ('referencing', 'jsonschema') if m in sys.modules))\n"
    )
    return fresh_interpreter_words(code)


def test_first_compile_without_references_imports_no_referencing():
    assert _imports_after("{'type': 'object', 'properties': {'a': {'type': 'string', 'maxLength': 3}}, 'required': ['a']}") == []


def test_plain_pointers_and_a_standard_dialect_import_no_referencing():
    """References that are plain JSON pointers into the document (plain_pointer answers them) and a
    `$schema` naming a standard draft need no registry either."""
    assert _imports_after("{'$defs': {'n': {'type': 'integer'}}, 'properties': {'a': {'$ref': '#/$defs/n'}}}") == []
    assert _imports_after(
        "{'$schema': 'http://json-schema.org/draft-04/schema#', 'definitions': {'n': {'type': 'integer'}},"
        " 'properties': {'a': {'$ref': '#/definitions/n'}, 'b': {'$ref': '#/definitions/n'}}}"
    ) == []


@pytest.mark.parametrize(
    "schema",
    [
        "{'$defs': {'a/b': {'type': 'integer'}}, 'properties': {'a': {'$ref': '#/$defs/a~1b'}}}",  # an escape: referencing decodes it
        "{'$id': 'https://example.com/s.json', '$defs': {'n': {'type': 'integer'}}, '$ref': '#/$defs/n'}",  # a base URI of its own
        "{'$defs': {'n': {'$anchor': 'n', 'type': 'integer'}}, '$ref': '#n'}",  # an anchor
        "{'$schema': 'https://example.com/custom', 'type': 'string'}",  # a dialect only referencing can name
    ],
)
def test_a_reference_plain_pointer_cannot_answer_still_makes_the_registry(schema):
    assert _imports_after(schema) == ["referencing"]


def test_no_registry_until_the_judge_asks():
    plain = SchemaSource({"type": "object", "properties": {"a": {"type": "string"}}})
    assert plain.registry is None and plain.resolver is None
    assert SchemaSource({"$defs": {}, "$ref": "#/$defs"}).registry is None
    assert SchemaSource({"$schema": "http://json-schema.org/draft-07/schema#"}).registry is None
    assert SchemaSource({"$schema": "http://json-schema.org/draft-07/schema#"}).spec.name == "draft-07"
    assert SchemaSource({"type": "string"}, documents={"urn:x": {"type": "integer"}}).registry is not None
    assert SchemaSource({"$id": "urn:s", "$defs": {}, "$ref": "#/$defs"}).registry is not None
    assert SchemaSource({"$defs": {"a": {"$id": "urn:a"}}, "$ref": "#/$defs/a"}).registry is not None
    assert SchemaSource({"$dynamicRef": "#/$defs/a", "$defs": {"a": {}}}).registry is not None


def test_the_judge_makes_the_registry_and_filters_the_enum():
    # an enum with a sibling keyword is filtered by jsonschema: the registry is made then
    machine = PushdownMachine(compile_automaton(json_schema_grammar({"properties": {"a": {"type": "string", "enum": ["a", "bb", "ccc"], "maxLength": 2}}})[0]))

    def accepts(text: str) -> bool:
        state = machine.step_bytes(machine.start, text.encode())
        return state != DEAD and bool(machine.accepting[state])

    assert accepts('{"a":"bb"}') and accepts('{"a":"a"}')
    assert not accepts('{"a":"ccc"}')


def test_bad_shapes_refused_as_before():
    with pytest.raises(SchemaError) as e:
        json_schema_grammar({"type": "object", "properties": {"a": {"items": 3}}})
    assert e.value.keyword == "items" and e.value.pointer == "/properties/a/items"
