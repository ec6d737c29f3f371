"""The server's start compiles a tiny schema before it reports ready (serve.grammars.warm_up), so
a user's first request pays none of the imports a first compile makes. Real model, real compiler."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")


def test_start_compiled_the_warm_up_schema(server):
    from strictgen.serve.grammars import WARM_UP_SCHEMA
    from strictgen.grammar.format_spec import FormatSpec

    g = server.warm_up_grammar
    assert g is not None
    # the request path (same options) finds it in the compiler's cache: the start compiled it there
    again = server.grammars.compile(FormatSpec("json_schema", WARM_UP_SCHEMA, server.grammars.options))
    assert again is g


def test_warm_up_grammar_is_the_schema(server):
    from strictgen.runtime.matcher import GrammarMatcher

    m = GrammarMatcher(server.warm_up_grammar)
    assert m.accept_string('{"name": "ab", "size": 3, "tags": ["a"]}')
    assert not GrammarMatcher(server.warm_up_grammar).accept_string('{"name": "AB"}')


def test_fresh_start_imports_what_a_compile_needs():
    """In a fresh interpreter, the start (a Server over the embedded model) has imported the pieces
    a first schema compile would otherwise import inside the user's request (without the warm-up
    none of these three is imported by the start)."""
    from tests.helpers import fresh_interpreter_words

    code = (
        "import sys\n"
        "from strictgen.serve import build_server\n"
        "s = build_server('default', slots=1, n_ctx=512)\n"
        "print(' '.join(m for m in ('referencing', 'jsonschema', 'strictgen.grammar.string_formats') if m in sys.modules))\n"
        "s.pool.close()\n"
    )
    assert fresh_interpreter_words(code, timeout=300) == ["referencing", "jsonschema", "strictgen.grammar.string_formats"]
