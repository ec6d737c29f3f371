"""The compile time limit: a compile that runs past it fails with a clear CompileTimeoutError,
fallbacks inside the schema compiler do not swallow it, and nothing half-built is cached."""

import uuid

import pytest

import strictgen as sg
from strictgen import deadline


def _big_schema():
    """Many optional properties whose values are patterned strings with length bounds: ~0.2 s of
    work even in a warm process, and new to it (automata kept across compiles cannot shorten
    it: each call's patterns end in their own literal)."""
    salt = uuid.uuid4().hex[:6]
    return {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "pattern": f"^[a-z]{{1,{i % 60 + 2}}}-[0-9]+{salt}{i}$", "maxLength": 40} for i in range(120)},
        "oneOf": [{"required": ["p1"]}, {"required": ["p2"]}],
    }


def test_compile_timeout_is_a_clear_error(qwen):
    compiler = sg.GrammarCompiler(qwen, compile_timeout=0.05)
    with pytest.raises(sg.CompileTimeoutError, match=r"longer than the 0.05 s limit"):
        compiler.compile_json_schema(_big_schema())
    assert isinstance(sg.CompileTimeoutError("x"), sg.GrammarTooLargeError)
    # the failed compile left nothing in the cache, and the limit was per compile
    small = compiler.compile_regex("[ab]+")
    assert sg.GrammarMatcher(small).accept_string("abba")


def test_no_limit_and_nested_limits():
    with deadline.compile_deadline(None):
        deadline.check()  # no limit: never raises
    with deadline.compile_deadline(1e-9):
        with deadline.compile_deadline(100):  # an enclosing, earlier deadline stays in force
            with pytest.raises(sg.CompileTimeoutError):
                deadline.check()
    deadline.check()  # outside any block: no limit
