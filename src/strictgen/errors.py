"""Errors users see. Every error about the input is a ValueError (StrictgenError) so callers can
catch bad input uniformly; a slip of strictgen's own is an InternalError, which is not."""

from __future__ import annotations


class StrictgenError(ValueError):
    """Base of every error strictgen raises for bad input."""


class InternalError(RuntimeError):
    """A slip of strictgen's own (an AttributeError or the like inside a compile), not the input's
    fault: deliberately not a StrictgenError, so a server answers it as its 500 "internal error"
    with a request id and logs the traceback, where a StrictgenError is a 400 about the request.
    Its text never shows the slip's Python message; the slip is its __cause__."""


class GrammarSyntaxError(StrictgenError):
    """A grammar text (GBNF) is malformed or uses an unsupported feature; carries line and column (1-based)."""

    def __init__(self, message: str, line: int = 0, column: int = 0):
        self.line = line
        self.column = column
        where = f" (line {line}, column {column})" if line else ""
        super().__init__(f"{message}{where}")


class RegexError(StrictgenError):
    """A regular expression is malformed or uses an unsupported feature; carries the 0-based position."""

    def __init__(self, message: str, pattern: str = "", position: int = 0):
        self.pattern = pattern
        self.position = position
        super().__init__(f"{message} at position {position} in regex {pattern!r}")


class SchemaError(StrictgenError):
    """A JSON Schema is invalid or uses a keyword the compiler cannot enforce; names the keyword and JSON pointer."""

    def __init__(self, message: str, keyword: str = "", pointer: str = ""):
        self.keyword = keyword
        self.pointer = pointer
        where = f" (keyword {keyword!r} at {pointer or '#'})" if keyword else ""
        super().__init__(f"{message}{where}")


class GrammarTooLargeError(StrictgenError):
    """Compiling would exceed a size or time limit; raised instead of hanging or exhausting memory."""


class CompileTimeoutError(GrammarTooLargeError):
    """Compiling ran past its time limit. Code that tries a construction and falls back when it
    fails must let this one through: the limit is for the whole compile."""


class ModelError(StrictgenError):
    """A model cannot be found, loaded or run as asked (missing package, bad path, context full)."""


class BudgetError(StrictgenError):
    """max_tokens is below the fewest tokens that make a valid document; carries that minimum."""

    def __init__(self, max_tokens: int, minimum: int, shortest: str):
        self.max_tokens = max_tokens
        self.minimum = minimum
        self.shortest = shortest
        super().__init__(
            f"max_tokens={max_tokens} is too small: the shortest valid output {shortest!r} needs {minimum} "
            f"tokens; raise max_tokens to at least {minimum}"
        )
