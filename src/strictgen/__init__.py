"""strictgen: language-model output guaranteed to match a format.

Formats compile to byte-level automata; at each decoding step a matcher says which tokens of the
real vocabulary keep the output valid. See DESIGN.md for the layers and the public contract.
"""

from strictgen.compile.compiled import CompiledGrammar
from strictgen.compile.compiler import GrammarCompiler
from strictgen.errors import (
    BudgetError,
    CompileTimeoutError,
    GrammarSyntaxError,
    GrammarTooLargeError,
    InternalError,
    ModelError,
    RegexError,
    SchemaError,
    StrictgenError,
)
from strictgen.runtime.batch import (
    accept_token_batch,
    fill_next_token_bitmask_batch,
    fill_next_token_bitmask_batch_async,
    find_jump_forward_string_batch,
)
from strictgen.runtime.bitmask import allocate_token_bitmask, apply_token_bitmask_inplace
from strictgen.runtime.matcher import GrammarMatcher
from strictgen.tokenizer.info import TokenizerInfo
from strictgen.reliability import (
    RepairResult,
    StructuredOutputError,
    ValidationIssue,
    parse_partial,
    repair_json,
    structured_call,
    validate,
)

__version__ = "0.1.0"

__all__ = [
    "BudgetError",
    "CompileTimeoutError",
    "CompiledGrammar",
    "GrammarCompiler",
    "GrammarMatcher",
    "GrammarSyntaxError",
    "GrammarTooLargeError",
    "InternalError",
    "ModelError",
    "RegexError",
    "SchemaError",
    "StrictgenError",
    "TokenizerInfo",
    "accept_token_batch",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "fill_next_token_bitmask_batch",
    "fill_next_token_bitmask_batch_async",
    "find_jump_forward_string_batch",
    "RepairResult",
    "StructuredOutputError",
    "ValidationIssue",
    "parse_partial",
    "repair_json",
    "structured_call",
    "validate",
]
