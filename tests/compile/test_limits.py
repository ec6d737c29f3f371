"""Adversarial formats (issue 14): every compile ends within its time limit (plus a little), and
a schema too deep or malformed is refused with a clear StrictgenError that names the limit and
the JSON pointer; no RecursionError, MemoryError or internal AttributeError text reaches a user."""

from __future__ import annotations

import json
import random
import string
import time

import jsonschema
import pytest

import strictgen as sg
from strictgen.grammar.schema.limits import MAX_SCHEMA_DEPTH

LIMIT = 1.0  # seconds: small, so that the cases that cannot finish stay quick
SLACK = 1.0  # seconds past LIMIT * 1.1 still allowed (one unchecked stretch, unwinding)
HANG_S = 60.0  # wall-clock bound that only catches a hang: a loaded machine stretches the unchecked stretches


class Stopwatch:
    """CPU seconds (what a compile past its deadline would keep burning, and what a loaded machine
    does not inflate) and wall seconds (checked only against HANG_S) of a block."""

    def __enter__(self):
        self.cpu0, self.wall0 = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.cpu, self.wall = time.process_time() - self.cpu0, time.perf_counter() - self.wall0
        return False

    def check(self, what: str) -> None:
        assert self.cpu <= LIMIT * 1.1 + SLACK, f"{what}: {self.cpu:.2f} CPU s against a {LIMIT} s limit"
        assert self.wall <= HANG_S, f"{what}: {self.wall:.1f} s: a hang"


def _words(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 12))))
    return sorted(out)


def _nested_objects(depth: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


ADVERSARIAL = {  # name: (compile method, its argument)
    "choice_100k_words": ("compile_choice", lambda: _words(100_000, 0)),
    "enum_50k_words": ("compile_json_schema", lambda: {"enum": _words(50_000, 1)}),
    "anyof_2000_const_objects": ("compile_json_schema", lambda: {"anyOf": [{"const": {"id": i, "name": f"n{i}"}} for i in range(2000)]}),
    "allof_200_patterns": (
        "compile_json_schema",
        lambda: {"type": "string", "allOf": [{"pattern": f"^[a-z0-9]*{i}[a-z0-9]*$"} for i in range(200)]},
    ),
    "pattern_maxlength_3000": ("compile_json_schema", lambda: {"type": "string", "pattern": "^[a-z]+(-[a-z0-9]+)*$", "maxLength": 3000}),
}


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_compile_stays_within_its_time_limit(qwen, case):
    """Each case either compiles or fails with a GrammarTooLargeError (CompileTimeoutError when
    the time ran out) within LIMIT * 1.1 + SLACK seconds of CPU (wall time only bounds a hang)."""
    method, make = ADVERSARIAL[case]
    arg = make()
    compile_ = getattr(sg.GrammarCompiler(qwen, compile_timeout=LIMIT), method)
    with Stopwatch() as watch:
        try:
            compile_(arg)
        except sg.GrammarTooLargeError as exc:
            if isinstance(exc, sg.CompileTimeoutError):
                assert f"{LIMIT:g} s limit" in str(exc)
    watch.check(case)


@pytest.mark.parametrize("as_text", [False, True])
def test_deep_schema_is_refused_with_limit_and_pointer(qwen, as_text):
    # as text it is written out directly: json.dumps itself cannot nest 2,000 deep
    text = '{"type":"object","required":["a"],"properties":{"a":' * 2000 + '{"type":"string"}' + "}}" * 2000
    compiler = sg.GrammarCompiler(qwen, compile_timeout=5)
    with pytest.raises(sg.GrammarTooLargeError) as info:
        compiler.compile_json_schema(text if as_text else _nested_objects(2000))
    message = str(info.value)
    assert "MAX_SCHEMA_DEPTH" in message and str(MAX_SCHEMA_DEPTH) in message
    if not as_text:  # a parsed document: the pointer where the limit was passed
        assert "#/properties/a/properties/a/" in message
    # the same shape within the limit compiles
    doc = {"a": {"a": "x"}}
    g = compiler.compile_json_schema(_nested_objects(2))
    assert sg.GrammarMatcher(g).accept_string(json.dumps(doc))


def test_ref_chain_is_refused_with_limit_and_pointer(qwen):
    defs = {f"d{i}": {"$ref": f"#/definitions/d{i + 1}"} for i in range(300)}
    defs["d300"] = {"type": "integer"}
    with pytest.raises(sg.GrammarTooLargeError, match=r"MAX_APPLICATOR_NESTING\) at #/definitions/d\d+"):
        sg.GrammarCompiler(qwen, compile_timeout=5).compile_json_schema({"definitions": defs, "$ref": "#/definitions/d0"})


def test_long_chain_of_nested_rules_compiles(qwen):
    """60 nested objects: more rules inlined inside one another than the builder may recurse
    through (MAX_INLINE_DEPTH), so some become calls; the language is unchanged."""
    schema = _nested_objects(60)
    doc: object = "x"
    for _ in range(60):
        doc = {"a": doc}
    g = sg.GrammarCompiler(qwen, compile_timeout=30).compile_json_schema(schema)
    m = sg.GrammarMatcher(g)
    assert m.accept_string(json.dumps(doc)) and m.accept_token(qwen.eos_token_ids[0])
    assert not sg.GrammarMatcher(g).accept_string(json.dumps(doc).replace('"x"', "1"))


@pytest.mark.parametrize(
    "schema, keyword, pointer",
    [
        ({"type": "object", "properties": []}, "properties", "/properties"),
        ({"items": 5}, "items", "/items"),
        ({"properties": {"a": {"anyOf": {"x": {}}}}}, "anyOf", "/properties/a/anyOf"),
        ({"properties": {"a": {"enum": [1], "properties": {"x": 3}}}}, "properties", "/properties/a/properties"),
        ({"$id": 5, "type": "string"}, "$id", ""),
    ],
)
def test_malformed_keyword_is_named_not_a_python_error(qwen, schema, keyword, pointer):
    with pytest.raises(sg.SchemaError) as info:
        sg.GrammarCompiler(qwen).compile_json_schema(schema)
    assert info.value.keyword == keyword and info.value.pointer == pointer
    assert "attribute" not in str(info.value) and "object has no" not in str(info.value)


def _accepts(g: sg.CompiledGrammar, doc) -> bool:
    m = sg.GrammarMatcher(g)
    return m.accept_string(json.dumps(doc)) and m.accept_token(g.tokenizer_info.eos_token_ids[0])


@pytest.mark.parametrize(
    "dialect, judge",
    [
        ("http://json-schema.org/draft-04/schema#", jsonschema.Draft4Validator),
        ("https://json-schema.org/draft/2019-09/schema", jsonschema.Draft201909Validator),
        (None, jsonschema.Draft201909Validator),  # no $schema: 2020-12, with the legacy array form read as tuples
    ],
)
@pytest.mark.parametrize("extra", [{}, {"additionalItems": False}, {"additionalItems": {"type": "boolean"}}])
def test_array_form_items_is_tuple_validation(qwen, dialect, judge, extra):
    schema = {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], **extra}
    if dialect:
        schema["$schema"] = dialect
    g = sg.GrammarCompiler(qwen).compile_json_schema(schema)
    for doc in [[], ["a"], ["a", 1], ["a", 1, True], ["a", 1, "b"], [1, "a"], ["a", "b"], [None]]:
        assert _accepts(g, doc) == judge(schema).is_valid(doc), doc


def test_array_form_items_with_enum_and_embedded_id(qwen):
    """The judge (jsonschema) and the resource crawl (referencing) both meet the array form."""
    schema = {"items": [{"$id": "http://example.com/first", "type": "string"}, {"type": "integer"}], "enum": [["a", 1], [1, "a"], ["b", 2, 3]]}
    g = sg.GrammarCompiler(qwen).compile_json_schema(schema)
    assert [_accepts(g, d) for d in (["a", 1], [1, "a"], ["b", 2, 3])] == [True, False, True]


def test_internal_slips_reach_users_as_internal_errors(qwen):
    """The compile entry points turn a Python error inside a compile into an InternalError (not a
    StrictgenError: the input is not at fault; a server's 500) whose text does not show the Python
    message (the original stays as __cause__ for debugging)."""
    from strictgen.compile.compiler import user_errors

    with pytest.raises(sg.InternalError) as info:
        with user_errors("json_schema"):
            [].get("x")  # the AttributeError of the issue
    assert not isinstance(info.value, sg.StrictgenError)
    assert "attribute" not in str(info.value) and isinstance(info.value.__cause__, AttributeError)
    with pytest.raises(sg.GrammarTooLargeError, match="nested too deeply"):
        with user_errors("regex"):
            raise RecursionError("maximum recursion depth exceeded")
    with pytest.raises(sg.GrammarTooLargeError, match="memory"):
        with user_errors("regex"):
            raise MemoryError()


def test_server_tool_schemas_are_bounded_and_clear(qwen):
    """The server compiles tool parameters itself (serve/grammars.py): they run under the compiler's
    time limit, and a malformed one is a RequestError naming the keyword, with no Python text."""
    from strictgen.serve.grammars import GrammarFactory, RequestError, Tool

    factory = GrammarFactory(sg.GrammarCompiler(qwen, compile_timeout=LIMIT))
    slow = Tool("pick", {"type": "object", "properties": {"x": {"anyOf": [{"const": {"id": i, "name": f"n{i}"}} for i in range(2000)]}}})
    with Stopwatch() as watch:
        try:
            factory.tool_calls([slow], mode="required", parallel=False, reasoning=False)
        except RequestError as exc:
            assert "limit" in str(exc)
    watch.check("tool schema")
    bad = Tool("bad", {"type": "object", "properties": []})
    with pytest.raises(RequestError) as info:
        factory.tool_calls([bad], mode="required", parallel=False, reasoning=False)
    assert "properties must be an object" in str(info.value) and "attribute" not in str(info.value)
