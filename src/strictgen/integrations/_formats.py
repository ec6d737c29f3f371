"""Shared by the engine integrations: which format a request names, and compiling it.

vLLM passes per-request settings as `SamplingParams.extra_args` (from `vllm_xargs` on its OpenAI
server, whose values are strings, numbers or lists of them), so a schema or a choice list may come
as JSON text; SGLang passes the format's text by kind. Both end here, in the one format table (strictgen.grammar.format_spec). A structural tag is
the JSON payload vLLM puts in `StructuredOutputsParams.structural_tag` and SGLang in its
`structural_tag` sampling parameter: `{"type": "structural_tag", "format": {...}}` or the older
`structures`/`triggers` form.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

from strictgen.compile.compiled import CompiledGrammar
from strictgen.compile.compiler import GrammarCompiler
from strictgen.errors import StrictgenError
from strictgen.grammar.format_spec import FormatSpec
from strictgen.tokenizer.info import TokenizerInfo

JSON_SCHEMA = "strictgen_json_schema"
REGEX = "strictgen_regex"
GRAMMAR = "strictgen_grammar"
CHOICE = "strictgen_choice"
JSON_OBJECT = "strictgen_json_object"
STRUCTURAL_TAG = "strictgen_structural_tag"
FORMAT_KEYS = (JSON_SCHEMA, REGEX, GRAMMAR, CHOICE, JSON_OBJECT, STRUCTURAL_TAG)

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off", ""}


def _flag(value: Any) -> bool:
    """A truthy setting as vllm_xargs can carry it: a bool, a number, or text such as "true"."""
    if isinstance(value, (bool, int, float)):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise StrictgenError(f"{JSON_OBJECT} must be true or false, got {value!r}")


def request_format(args: Mapping[str, Any] | None) -> tuple[str, Any] | None:
    """The (key, value) of the one strictgen_* format a request names; None when it names none.

    A false `strictgen_json_object` counts as not named. Two formats at once are refused."""
    if not args:
        return None
    named = [(k, args[k]) for k in FORMAT_KEYS if k in args and args[k] is not None]
    named = [(k, v) for k, v in named if k != JSON_OBJECT or _flag(v)]
    if len(named) > 1:
        raise StrictgenError(f"give one strictgen format per request, got {', '.join(k for k, _ in named)}")
    return named[0] if named else None


# request key → the kind of the format table (strictgen.grammar.format_spec)
KEY_KINDS = {JSON_SCHEMA: "json_schema", REGEX: "regex", GRAMMAR: "grammar", CHOICE: "choice", JSON_OBJECT: "json_object", STRUCTURAL_TAG: "structural_tag"}


def compile_format(compiler: GrammarCompiler, key: str, value: Any) -> CompiledGrammar:
    """Compile one request's format (a key of FORMAT_KEYS and its value) for the compiler's
    vocabulary, through the one format table (values as JSON text are read there)."""
    kind = KEY_KINDS.get(key)
    if kind is None:
        raise StrictgenError(f"unknown strictgen format {key!r}; use one of {', '.join(FORMAT_KEYS)}")
    return compiler.compile_format(FormatSpec(kind, value, origin=key))


@functools.lru_cache(maxsize=1)
def byte_compiler() -> GrammarCompiler:
    """A compiler over the 256 single bytes: checks a format where the model's vocabulary is not
    loaded (vLLM validates requests in its front-end process). Every error a format can raise
    comes from the grammar, not the vocabulary."""
    tokens = [bytes([b]) for b in range(256)] + [b""]
    return GrammarCompiler(TokenizerInfo.from_vocab(tokens, eos_token_ids=[256], special_token_ids=[256]))


def empty_document(compiler: GrammarCompiler) -> CompiledGrammar:
    """The grammar whose only document is "": a row given it ends at once (EOS is all it allows)."""
    return compiler.compile_choice([""])
