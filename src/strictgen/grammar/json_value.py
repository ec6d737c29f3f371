"""Any JSON value (RFC 8259) as grammar IR, with a bounded whitespace policy.

Whitespace is where a model can run away (an endless run of newlines is valid JSON), so it is
bounded: by default what `json.dumps` writes with default separators, compact separators or
`indent=N` is accepted, i.e. at most one newline followed by up to `max_indent` spaces or tabs
between tokens. "compact" allows no whitespace at all; "spaced" is exactly `json.dumps`'s one line
(", " and ": ", nothing else), the layout models know best with every separator forced, which
suits jump-forward. The JSON Schema front end reuses the
pieces here (`JsonStyle`, `json_string`, `json_number`, ...).

Numbers follow `JsonStyle.numbers`: "any" (every RFC 8259 spelling: what a validator must accept)
or "canonical" (what generation should write): integers exactly as `json.dumps` writes them (no
fraction, no exponent, no `-0`); other numbers plain decimals, no exponent, no `-0`, at most 17
fraction digits (`json.dumps`'s most). Trailing fraction zeros stay allowed on purpose: a grammar
that forbids them lets a model that copies "1,250.00" write "1250.0", then "0", and from there
only a run of zeros ending in a non-zero digit completes the number (measured on SmolLM2:
`1250.000…0001`, 90 digits).
"""

from __future__ import annotations

from dataclasses import dataclass

from .ir import (
    MAX_CODEPOINT,
    EMPTY,
    Expr,
    Grammar,
    RuleRef,
    alt,
    charset,
    chars,
    lit,
    opt,
    repeat,
    seq,
)

HEX = chars("0123456789abcdefABCDEF")
DIGIT = charset([(ord("0"), ord("9"))])
NONZERO = charset([(ord("1"), ord("9"))])

# one JSON string character: anything but '"', '\' and control characters, or an escape
STRING_CHAR = alt(
    charset([(0x20, 0x21), (0x23, 0x5B), (0x5D, MAX_CODEPOINT)]),
    seq(lit("\\"), alt(chars('"\\/bfnrt'), seq(lit("u"), repeat(HEX, 4, 4)))),
)


@dataclass(frozen=True)
class JsonStyle:
    """The layout of JSON text: whitespace allowed between tokens, and how numbers may be spelled."""

    whitespace: str = "flexible"  # "flexible" (bounded), "compact" (none) or "spaced" (", " and ": ")
    max_indent: int = 20
    numbers: str = "any"  # "any" (every JSON spelling) or "canonical" (json.dumps's, no exponent)

    def __post_init__(self):
        if self.whitespace not in ("flexible", "compact", "spaced"):
            raise ValueError(f"whitespace must be 'flexible', 'compact' or 'spaced', not {self.whitespace!r}")
        if self.numbers not in ("any", "canonical"):
            raise ValueError(f"numbers must be 'any' or 'canonical', not {self.numbers!r}")
        if not 0 <= self.max_indent <= 1000:
            raise ValueError("max_indent must be between 0 and 1000")

    def ws(self) -> Expr:
        if self.whitespace in ("compact", "spaced"):
            return EMPTY
        return seq(opt(alt(lit("\n"), lit("\r\n"))), repeat(chars(" \t"), 0, self.max_indent))

    def separator(self, symbol: str) -> Expr:
        """A ',' or ':' with the whitespace allowed around it."""
        if self.whitespace == "spaced":
            return lit(symbol + " ")
        ws = self.ws()
        return seq(ws, lit(symbol), ws)


def json_string(body: Expr | None = None) -> Expr:
    """A quoted JSON string whose unescaped-or-escaped characters follow `body` (default: any)."""
    return seq(lit('"'), body if body is not None else repeat(STRING_CHAR), lit('"'))


def json_integer() -> Expr:
    return seq(opt(lit("-")), alt(lit("0"), seq(NONZERO, repeat(DIGIT))))


def json_number(canonical: bool = False) -> Expr:
    """A JSON number: any RFC 8259 spelling, or (canonical) only json.dumps's plain spellings."""
    if canonical:
        return CANONICAL_NUMBER
    fraction = seq(lit("."), repeat(DIGIT, 1))
    exponent = seq(chars("eE"), opt(chars("+-")), repeat(DIGIT, 1))
    return seq(json_integer(), opt(fraction), opt(exponent))


# plain decimals with at most 17 fraction digits, no exponent, no negative zero (a user asking for 0
# wants "0"); a negative number below 1 needs a non-zero fraction digit
MAX_FRACTION_DIGITS = 17
_FRACTION = seq(lit("."), repeat(DIGIT, 1, MAX_FRACTION_DIGITS))
CANONICAL_NUMBER = alt(
    seq(lit("0"), opt(_FRACTION)),
    seq(lit("-0."), alt(*(seq(repeat(lit("0"), k, k), NONZERO, repeat(DIGIT, 0, MAX_FRACTION_DIGITS - 1 - k)) for k in range(MAX_FRACTION_DIGITS)))),
    seq(opt(lit("-")), NONZERO, repeat(DIGIT), opt(_FRACTION)),
)


def json_container(open_: str, item: Expr, close: str, style: JsonStyle) -> Expr:
    """`open item (sep item)* close` with the style's whitespace, possibly empty."""
    ws = style.ws()
    items = seq(item, repeat(seq(style.separator(","), item)))
    return seq(lit(open_), ws, opt(seq(items, ws)), lit(close))


def any_value_body(value: RuleRef, colon: Expr, style: JsonStyle) -> Expr:
    """The body of a rule `value` of any JSON value (members' `colon` given: a schema grammar's
    separators are called rules)."""
    member = seq(json_string(), colon, value)
    return alt(
        json_container("{", member, "}", style),
        json_container("[", value, "]", style),
        json_string(),
        json_number(style.numbers == "canonical"),
        lit("true"),
        lit("false"),
        lit("null"),
    )


def json_value_grammar(style: JsonStyle | None = None) -> Grammar:
    """Any JSON value, without whitespace around it."""
    style = style or JsonStyle()
    value = RuleRef("value")
    return Grammar({"root": value, "value": any_value_body(value, style.separator(":"), style)}, "root")
