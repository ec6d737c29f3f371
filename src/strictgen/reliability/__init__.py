"""Defence in depth on top of constrained generation: validate, retry with feedback, repair, partial JSON, eval.

A constraint guarantees shape, not truth. `validate` judges documents with jsonschema (Draft 2020-12);
`structured_call` constrains where the backend can, validates, and retries with the errors fed back;
`repair_json` recovers JSON from unconstrained output and says what it changed; `parse_partial` reads
a streamed prefix; `strictgen eval` (eval.py) measures it all per mode.
"""

from .call import (
    Attempt,
    CallOutcome,
    LocalBackend,
    OpenAIBackend,
    StructuredOutputError,
    run_structured,
    structured_call,
)
from .repair import RepairError, RepairResult, parse_partial, repair_json
from .validate import ValidationIssue, validate

__all__ = [
    "Attempt",
    "CallOutcome",
    "LocalBackend",
    "OpenAIBackend",
    "RepairError",
    "RepairResult",
    "StructuredOutputError",
    "ValidationIssue",
    "parse_partial",
    "repair_json",
    "run_structured",
    "structured_call",
    "validate",
]
