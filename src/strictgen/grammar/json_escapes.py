"""JSON spellings of string languages: from the decoded code points to the bodies written between quotes.

A JSON string body decodes to exactly one string, and each of its characters is spelled on its own
(raw, a short escape such as ``\\n`` or ``\\/``, ``\\uXXXX`` in either hex case, or a surrogate pair
``\\uD83D\\uDE00`` above U+FFFF). So the spellings of a language L are the inverse image of L under
decoding, built character class by character class, and inverse images commute with every
operation of the IR: spelled(A ∩ B) = spelled(A) ∩ spelled(B), likewise for difference,
concatenation, alternation and repetition. `json_escaped` rewrites an expression item by item
under one of three policies (ESCAPE_POLICIES):

* ``"all"``: every JSON spelling (DESIGN.md §4 property 7): a body is accepted *if and only if* it
  decodes to a member of L. What the JSON Schema front end uses for constrained strings and keys.
* ``"standard"``: printable ASCII other than `"` and `\\` only as itself, every other character in
  any spelling: what `json.dumps` writes with ensure_ascii true or false, with smaller automata.
* ``"required"``: characters as themselves wherever JSON allows, escapes only where JSON requires.

Lone surrogates (``\\uD800`` alone) are never accepted: they are not Unicode scalar values.
"""

from __future__ import annotations

import functools
from typing import Callable

from strictgen.lru import BoundedLRU

from .ir import (
    EMPTY,
    MAX_CODEPOINT,
    SURROGATES,
    Alt,
    ByteSet,
    CharSet,
    Difference,
    Expr,
    Intersect,
    Literal,
    Repeat,
    RuleRef,
    Seq,
    alt,
    charset,
    chars,
    disjoint_alt,
    lit,
    literal_trie,
    negate_ranges,
    normalize_ranges,
    repeat,
    seq,
)

__all__ = ["ESCAPE_POLICIES", "digit_class", "json_escaped", "spelled_choice", "spelled_string", "spelled_text"]

ESCAPE_POLICIES = ("standard", "all", "required")

SHORT_ESCAPES = {0x22: '"', 0x5C: "\\", 0x2F: "/", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}
MUST_ESCAPE = ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C))
PRINTABLE_ASCII = ((0x20, 0x7E),)


def digit_class(values, base: int) -> Expr:
    """One digit out of `values` in `base` (10 or 16; hex letters in either case)."""
    ranges = []
    for v in values:
        c = "0123456789abcdef"[v]
        ranges.append((ord(c), ord(c)))
        if c.isalpha():
            ranges.append((ord(c.upper()), ord(c.upper())))
    return charset(ranges)


def ranges_and(a, b) -> tuple[tuple[int, int], ...]:
    out = []
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo, hi = max(lo1, lo2), min(hi1, hi2)
            if lo <= hi:
                out.append((lo, hi))
    return normalize_ranges(out)


def ranges_minus(a, b) -> tuple[tuple[int, int], ...]:
    return ranges_and(a, negate_ranges(b))


# printable ASCII but `"` and `\`: written raw only, unless every spelling is asked for
RAW_ONLY = ranges_minus(PRINTABLE_ASCII, MUST_ESCAPE)


def _digit_trie(groups, width: int, base: int = 16) -> Expr:
    """Numerals of exactly `width` digits followed by a continuation chosen by their value.

    `groups` is a tuple of (ranges, continuation) with disjoint value ranges. The result is
    deterministic (digits are grouped by what may follow them), so it determinises without blow-up.
    """
    memo: dict[tuple, Expr] = {}

    def rec(sig: tuple, w: int) -> Expr:
        got = memo.get((sig, w))
        if got is not None:
            return got
        if w == 0:
            out = alt(*(cont for ranges, cont in sig))  # the value 0 lies in exactly one group
        else:
            p = base ** (w - 1)
            by_sig: dict[tuple, list[int]] = {}
            for d in range(base):
                sub = []
                for ranges, cont in sig:
                    part = ranges_and(ranges, ((d * p, d * p + p - 1),))
                    if part:
                        sub.append((tuple((lo - d * p, hi - d * p) for lo, hi in part), cont))
                if sub:
                    by_sig.setdefault(tuple(sub), []).append(d)
            out = alt(*(seq(digit_class(ds, base), rec(sub, w - 1)) for sub, ds in by_sig.items()))
        memo[(sig, w)] = out
        return out

    try:
        return rec(tuple((normalize_ranges(r), c) for r, c in groups if normalize_ranges(r)), width)
    finally:
        del rec  # a recursive closure is a reference cycle: emptied here, freed by reference counting


def _u_escapes(ranges) -> Expr:
    """`uXXXX` (after the backslash) spellings of the scalar values in `ranges`, with surrogate
    pairs `uD8xx\\uDCxx` above U+FFFF; one deterministic trie."""
    ranges = ranges_minus(ranges, (SURROGATES,))
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _u_escape(ranges[0][0])
    groups: list[tuple[tuple, Expr]] = []
    bmp = ranges_and(ranges, ((0, 0xFFFF),))
    if bmp:
        groups.append((bmp, EMPTY))
    astral = ranges_and(ranges, ((0x10000, MAX_CODEPOINT),))
    if astral:
        lows_of_high: dict[tuple, list[int]] = {}
        for high in range(0x400):
            base_cp = 0x10000 + (high << 10)
            low = ranges_and(astral, ((base_cp, base_cp + 0x3FF),))
            if low:
                key = tuple((lo - base_cp + 0xDC00, hi - base_cp + 0xDC00) for lo, hi in low)
                lows_of_high.setdefault(key, []).append(0xD800 + high)
        for low, highs in lows_of_high.items():
            groups.append((normalize_ranges((h, h) for h in highs), seq(lit("\\u"), _digit_trie(((low, EMPTY),), 4))))
    if not groups:
        return Alt(())
    return seq(lit("u"), _digit_trie(tuple(groups), 4))


_HEX_DIGITS = tuple(digit_class((v,), 16) for v in range(16))


def _u_escape(cp: int) -> Expr:
    """`_u_escapes` of one scalar value, written out: the trie has one branch, the hex digits of
    the value's UTF-16 code units (either case), `\\u` between the two of a surrogate pair. The
    same expression as the trie's (`seq` flattens its one-branch levels into this Seq); digit by
    digit through _digit_trie's range tests it cost ~0.2 ms a character, most of the first
    spelling of an enum's or a key's characters in a process."""
    units = (cp,) if cp <= 0xFFFF else (0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + (cp & 0x3FF))
    items: list[Expr] = [Literal(b"u")]
    for n, unit in enumerate(units):
        if n:
            items.append(Literal(b"\\u"))
        items += (_HEX_DIGITS[unit >> shift & 15] for shift in (12, 8, 4, 0))
    return Seq(tuple(items))


@functools.lru_cache(maxsize=4096)
def _spell_set(ranges: tuple[tuple[int, int], ...], escapes: str) -> Expr:
    """The JSON spellings, under `escapes`, of one character from `ranges`."""
    ranges = ranges_minus(normalize_ranges(ranges), (SURROGATES,))
    literal = ranges_minus(ranges, MUST_ESCAPE)
    if escapes == "all":
        escaped = ranges
    elif escapes == "standard":
        escaped = ranges_minus(ranges, RAW_ONLY)
    else:  # "required"
        escaped = ranges_and(ranges, MUST_ESCAPE)
    parts = []
    if literal:
        parts.append(charset(literal))
    if escaped:
        short = [c for cp, c in sorted(SHORT_ESCAPES.items()) if any(lo <= cp <= hi for lo, hi in escaped)]
        after_backslash = alt(chars("".join(short)), _u_escapes(escaped)) if short else _u_escapes(escaped)
        parts.append(seq(lit("\\"), after_backslash))
    return alt(*parts) if parts else Alt(())


@functools.lru_cache(maxsize=4096)
def _spell_char(cp: int, escapes: str) -> Expr:
    """The JSON spellings, under `escapes`, of the character `cp`: itself where it is printable
    ASCII spelled only raw, else `_spell_set`'s (the same objects)."""
    if escapes != "all" and any(lo <= cp <= hi for lo, hi in RAW_ONLY):
        return lit(chr(cp))
    return _spell_set(((cp, cp),), escapes)


def _spelled_chars(text: str, escapes: str) -> Expr:
    """`seq` of the spellings of the characters of `text`. With every spelling most characters
    are an Alt of themselves and their escapes, whose Seq `seq` would return unchanged: that one
    is built at once (a character at a time through `seq`'s loops was most of spelling an enum)."""
    parts = [_spell_char(ord(c), escapes) for c in text]  # never an empty Alt: no surrogate decodes
    if len(parts) > 1 and set(map(type, parts)) == _ALT_ONLY:
        return Seq(tuple(parts))
    return seq(*parts)


_ALT_ONLY = {Alt}


@functools.lru_cache(maxsize=8192)
def spelled_text(text: str, escapes: str = "all") -> Expr:
    """Every spelling (under `escapes`) of the JSON string body of exactly `text`."""
    return json_escaped(lit(text), escapes) if text else EMPTY


def spelled_string(text: str) -> Expr:
    """The quoted JSON string `text` in every spelling. (A body that is a Seq of escape choices
    is what `seq` would write between the quotes, built without its loops: seq's output has no
    nested Seq and no adjacent literals, and no literal at either end joins a quote. Every
    object key of a schema is spelled here. A new object each call, around the kept body: see
    `spelled_choice`.)"""
    body = spelled_text(text)
    if type(body) is Seq and body.items and type(body.items[0]) is not Literal and type(body.items[-1]) is not Literal:
        return Seq((_QUOTE, *body.items, _QUOTE))
    return seq(lit('"'), body, lit('"'))


_QUOTE = Literal(b'"')

SPELLED_CHOICES_KEPT = 1024  # distinct string sets (enums) whose spellings the process keeps ...
SPELLED_CHOICES_CHARS = 1 << 18  # ... with at most this many characters among them all (~30 bytes each)
_choices: BoundedLRU[tuple[int, Expr]] = BoundedLRU(SPELLED_CHOICES_KEPT, SPELLED_CHOICES_CHARS, lambda got: got[0])


def spelled_choice(strings) -> Expr:
    """Exactly one of `strings`, as a quoted JSON string in every spelling (an enum's strings):
    their shared prefixes as a trie (ir.literal_trie), each character in every spelling
    (json_escaped's rewrite, whose Alts need no check for repeats here: ir.disjoint_alt). A
    trie's are disjoint: the alternatives of a node start with distinct characters or end the
    word, so their spellings, and the raw and escaped forms a one-character branch flattens
    into, are disjoint too (the check for repeats hashed every spelled word's items, half of an
    enum's spelling).

    The body between the quotes is a constant of the strings, not of the schema or the
    vocabulary, so it is kept for the process (bounded in sets and characters): building it was
    most of an enum's front-end cost in every compile. The quoted expression around it is a new
    object each call, as it was: a rule body that is the same object in two compiles is one the
    automaton compiler builds ahead (compile.automaton's kept rules), where an enum's rule was
    otherwise built only when a document reaches it."""
    words = tuple(sorted(set(strings)))  # literal_trie's order and repeats do not matter
    got = _choices.get(words)
    if got is None:
        got = (len(words) + sum(map(len, words)), _escaped(literal_trie(words), "all", disjoint_alt))
        _choices.put(words, got)
    return seq(_QUOTE, got[1], _QUOTE)


def json_escaped(expr: Expr, escapes: str = "standard") -> Expr:
    """Rewrite a language of decoded string values into the JSON string bodies spelling them.

    `expr` must be free of rule references; its ByteSets must be ASCII (bytes ≥ 0x80 would be
    parts of characters, which the value language expresses with CharSet) and its Literals UTF-8.
    Intersect and Difference are rewritten item by item (decoding is a function, so its inverse
    image commutes with them).
    """
    if escapes not in ESCAPE_POLICIES:
        raise ValueError(f"escapes must be one of {ESCAPE_POLICIES}, not {escapes!r}")
    return _escaped(expr, escapes, alt)


def _escaped(expr: Expr, escapes: str, join: Callable[..., Expr]) -> Expr:
    """json_escaped's rewrite, with `join` making the Alts (`alt`, or `disjoint_alt` where the
    alternatives are known disjoint)."""
    memo: dict[int, Expr] = {}  # by id: every node stays alive while `expr` does
    plain = RAW_ONLY if escapes != "all" else ()

    def rec(e: Expr) -> Expr:
        got = memo.get(id(e))
        if got is not None:
            return got
        if isinstance(e, Literal):
            out = _spelled_chars(e.data.decode("utf-8"), escapes)
        elif isinstance(e, (ByteSet, CharSet)):
            if isinstance(e, ByteSet) and e.ranges and e.ranges[-1][1] >= 0x80:
                raise ValueError("json_escaped: a ByteSet above 0x7F is not a character class")
            if plain and not ranges_minus(e.ranges, plain):
                out = e  # printable ASCII only: spelled as itself
            else:
                out = _spell_set(tuple(e.ranges), escapes)
        elif isinstance(e, Seq):
            out = seq(*(rec(i) for i in e.items))
        elif isinstance(e, Alt):
            out = join(*(rec(i) for i in e.items)) if e.items else e
        elif isinstance(e, Repeat):
            out = repeat(rec(e.item), e.min, e.max)
        elif isinstance(e, Intersect):
            out = Intersect(tuple(rec(i) for i in e.items))
        elif isinstance(e, Difference):
            out = Difference(rec(e.base), rec(e.minus))
        elif isinstance(e, RuleRef):
            raise ValueError("json_escaped: rule references are not supported")
        else:
            raise TypeError(f"not a grammar expression: {e!r}")
        memo[id(e)] = out
        return out

    try:
        return rec(expr)
    finally:
        del rec  # a recursive closure is a reference cycle: emptied here, freed by reference counting
