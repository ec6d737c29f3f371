"""Character classes of the regex dialect (grammar/regex.py): the escape classes `\\d \\w \\s`, the
control escapes, and `\\p{..}` Unicode General_Category properties, as code point ranges.

Ranges cover the whole code space; `set_expr` turns them into one IR character without the
surrogates, which never occur in UTF-8 text.
"""

from __future__ import annotations

import functools
import unicodedata

from .ir import MAX_CODEPOINT, SURROGATES, Expr, charset, negate_ranges, normalize_ranges

__all__ = [
    "ALL_CODE_POINTS", "ANY_CHAR", "CONTROL_ESCAPES", "ESCAPE_CLASSES", "LINE_TERMINATORS", "Ranges",
    "set_expr", "unicode_property",
]


Ranges = tuple[tuple[int, int], ...]

DIGIT: Ranges = ((0x30, 0x39),)
WORD: Ranges = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
SPACE: Ranges = normalize_ranges(
    [
        (0x09, 0x0D),  # \t \n \v \f \r
        (0x20, 0x20),
        (0xA0, 0xA0),
        (0x1680, 0x1680),
        (0x2000, 0x200A),
        (0x2028, 0x2029),
        (0x202F, 0x202F),
        (0x205F, 0x205F),
        (0x3000, 0x3000),
        (0xFEFF, 0xFEFF),
    ]
)
LINE_TERMINATORS: Ranges = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
ALL_CODE_POINTS: Ranges = ((0, MAX_CODEPOINT),)


def _without_surrogates(ranges) -> Ranges:
    out = []
    for lo, hi in normalize_ranges(ranges):
        if hi < SURROGATES[0] or lo > SURROGATES[1]:
            out.append((lo, hi))
            continue
        if lo < SURROGATES[0]:
            out.append((lo, SURROGATES[0] - 1))
        if hi > SURROGATES[1]:
            out.append((SURROGATES[1] + 1, hi))
    return tuple(out)


def set_expr(ranges) -> Expr:
    """One code point from `ranges` (surrogates removed: they never occur in UTF-8 text)."""
    return charset(_without_surrogates(ranges))


ANY_CHAR: Expr = set_expr(ALL_CODE_POINTS)
"""Any Unicode scalar value (the `.*` of unanchored search matches line terminators too)."""

ESCAPE_CLASSES: dict[str, Ranges] = {
    "d": DIGIT,
    "D": negate_ranges(DIGIT),
    "w": WORD,
    "W": negate_ranges(WORD),
    "s": SPACE,
    "S": negate_ranges(SPACE),
}

CONTROL_ESCAPES = {"n": 0x0A, "r": 0x0D, "t": 0x09, "f": 0x0C, "v": 0x0B}

# ---- Unicode properties -----------------------------------------------------------------------

_GC_LONG = {
    "Cased_Letter": "LC",
    "Close_Punctuation": "Pe",
    "Connector_Punctuation": "Pc",
    "Control": "Cc",
    "cntrl": "Cc",
    "Currency_Symbol": "Sc",
    "Dash_Punctuation": "Pd",
    "Decimal_Number": "Nd",
    "digit": "Nd",
    "Enclosing_Mark": "Me",
    "Final_Punctuation": "Pf",
    "Format": "Cf",
    "Initial_Punctuation": "Pi",
    "Letter": "L",
    "Letter_Number": "Nl",
    "Line_Separator": "Zl",
    "Lowercase_Letter": "Ll",
    "Mark": "M",
    "Combining_Mark": "M",
    "Math_Symbol": "Sm",
    "Modifier_Letter": "Lm",
    "Modifier_Symbol": "Sk",
    "Nonspacing_Mark": "Mn",
    "Number": "N",
    "Open_Punctuation": "Ps",
    "Other": "C",
    "Other_Letter": "Lo",
    "Other_Number": "No",
    "Other_Punctuation": "Po",
    "Other_Symbol": "So",
    "Paragraph_Separator": "Zp",
    "Private_Use": "Co",
    "Punctuation": "P",
    "punct": "P",
    "Separator": "Z",
    "Space_Separator": "Zs",
    "Spacing_Mark": "Mc",
    "Surrogate": "Cs",
    "Symbol": "S",
    "Titlecase_Letter": "Lt",
    "Unassigned": "Cn",
    "Uppercase_Letter": "Lu",
}
_GC_SHORT = {
    "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi",
    "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn",
}  # fmt: skip
_GC_GROUPS = {"L", "M", "N", "P", "S", "Z", "C", "LC"}


@functools.lru_cache(maxsize=1)
def _category_table() -> dict[str, Ranges]:
    """Two-letter General_Category -> code point ranges, over the whole code space (computed once)."""
    table: dict[str, list[list[int]]] = {}
    category = unicodedata.category
    prev = None
    for cp in range(MAX_CODEPOINT + 1):
        cat = category(chr(cp))
        if cat == prev:
            table[cat][-1][1] = cp
        else:
            table.setdefault(cat, []).append([cp, cp])
            prev = cat
    return {cat: tuple((a, b) for a, b in ranges) for cat, ranges in table.items()}


@functools.cache
def _general_category(value: str) -> Ranges | None:
    value = _GC_LONG.get(value, value)
    table = _category_table()
    if value in _GC_SHORT:
        return table.get(value, ())
    if value == "LC":
        return normalize_ranges(table.get("Lu", ()) + table.get("Ll", ()) + table.get("Lt", ()))
    if value in _GC_GROUPS:
        parts: list[tuple[int, int]] = []
        for cat, ranges in table.items():
            if cat[0] == value:
                parts.extend(ranges)
        return normalize_ranges(parts)
    return None


def unicode_property(body: str) -> Ranges | None:
    """Ranges of `\\p{body}`, or None when the property is not supported."""
    if "=" in body:
        name, _, value = body.partition("=")
        if name in ("General_Category", "gc"):
            return _general_category(value)
        return None
    if body == "Any":
        return ALL_CODE_POINTS
    if body == "ASCII":
        return ((0, 0x7F),)
    if body == "Assigned":
        return negate_ranges(_general_category("Cn"))
    return _general_category(body)
