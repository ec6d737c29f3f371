"""The string-language service of the JSON Schema front end: the one place both stages ask about
string languages.

A string subschema is a conjunction of atoms (schema.ir's `Length`, `Matches`, `Format`,
`AmongStrings`, `NotAll`); `string_language` gives its raw-character language (between the quotes,
before escaping). The normaliser asks whether two string parts can share a value (oneOf's
disjointness, `not`), whether a key falls under a key rule, and how key patterns split the key
space; the emitters ask the same of the languages they build. `StringLanguages` answers them for
one compile, memoised, and never calls back into either stage: data flows from the schema IR into
this service and out as answers (DESIGN.md §1)."""

from __future__ import annotations

import functools

from strictgen import regular
from strictgen.errors import CompileTimeoutError, StrictgenError

from ..automata import MAX_SEARCH_STATES, Language
from ..ir import (
    MAX_CODEPOINT,
    NOTHING,
    Alt,
    ByteSet,
    CharSet,
    Expr,
    Repeat,
    alt,
    charset,
    difference,
    intersect,
    literal_trie,
    normalize_ranges,
    repeat,
)
from .ir import AmongStrings, Format, Length, Matches, NotAll
from .patterns import pattern_language
from .rule_sizes import length_range

__all__ = ["ANY_CHAR", "ANY_STRING", "StringLanguages", "pattern_region", "string_language"]

ANY_CHAR = charset([(0, MAX_CODEPOINT)])
ANY_STRING = repeat(ANY_CHAR)


class StringLanguages:
    """Membership and emptiness of string languages, for one compile (the memo tables live as
    long as the compile's normaliser and emitter, which share one instance)."""

    def __init__(self):
        self._languages: dict[tuple, Language] = {}
        self._emptiness: dict[tuple, bool] = {}  # is_empty's answers
        self._cells: dict[tuple, list[int] | None] = {}

    def language(self, atoms: tuple) -> Language:
        """The raw-character language of a conjunction of atoms, as the regular core's view."""
        got = self._languages.get(atoms)
        if got is None:
            got = self._languages[atoms] = Language(string_language(atoms))
        return got

    def member(self, atoms: tuple, s: str) -> bool:
        """Is the string s in the language of the atoms (ECMA pattern semantics)?"""
        simple = True
        for a in atoms:
            t = type(a)
            if t is Length:
                n = len(s)
                if n < a.lo or (a.hi is not None and n > a.hi):
                    return False
            elif t is AmongStrings:
                if s not in a.values:
                    return False
            elif t is NotAll:
                if self.member(a.atoms, s):
                    return False
            else:
                simple = False
        if simple:
            return True
        return self.language(atoms).accepts(s.encode("utf-8"))

    def is_empty(self, atoms: tuple) -> bool:
        """Is the conjunction empty? Decided lazily (the core stops at the first member); a
        language too big to decide counts as not empty, which only costs a disjointness proof."""
        got = self._emptiness.get(atoms)
        if got is None and _denies_itself(atoms):
            got = self._emptiness[atoms] = True
        if got is None:
            try:
                got = self.language(atoms).is_empty()
            except CompileTimeoutError:
                raise
            except (StrictgenError, TypeError):
                got = False
            self._emptiness[atoms] = got
        return got

    @staticmethod
    def raw_is_empty(lang: Expr) -> bool:
        """Is a raw-character language empty (decided lazily; too big to decide counts as not empty)?"""
        try:
            return Language(lang).is_empty()
        except CompileTimeoutError:
            raise
        except StrictgenError:
            return False

    def key_cells(self, patterns: list[str], limit: int) -> list[int] | None:
        """The masks of the pattern combinations that some key matches exactly (None: more than
        `limit`): the key space is split pattern by pattern, and empty cells are dropped, so
        patterns that rarely overlap (anchored names, prefixes) cost one cell each, not 2**n.
        A cell is the conjunction of its patterns, each in or out (`_CellQuestions`: each
        pattern lowered once, not once per cell and per pattern after it)."""
        key = tuple(patterns)
        if key in self._cells:
            return self._cells[key]
        cells: list[tuple[int, tuple[tuple[int, bool], ...]]] = [(0, ())]
        self._cells[key] = None
        questions = _CellQuestions()
        for i, p in enumerate(patterns):
            questions.add(pattern_language(p))
            cells = [
                (mask | bit << i, signs + ((i, bool(bit)),))
                for mask, signs in cells
                for bit in (1, 0)
                if not questions.is_empty(signs + ((i, bool(bit)),))
            ]
            if len(cells) > limit:
                return None
        got = self._cells[key] = sorted(mask for mask, _ in cells)
        return got


class _CellQuestions:
    """Is a cell of key patterns empty: the keys (any string) inside some patterns and outside
    others. The regular core's view of each pattern is made once and asked in every cell (as
    `Language` asks an intersection: the positive patterns' operands and the negated ones'
    languages searched together), where `raw_is_empty` on the cell's expression lowered every
    pattern of it again for each question (a quarter of the slowest compiles' front end). A
    pattern the core cannot take (too big) makes its cells undecided, counted not empty, as
    raw_is_empty counts them."""

    def __init__(self):
        self.operands: list[tuple[list, list] | None] = []  # per pattern: (operands inside, operands outside)
        self.every_string = Language(ANY_STRING).operands

    def add(self, lang: Expr) -> None:
        try:
            inside = Language(lang).operands
            outside = [(lazy, not positive) for lazy, positive in Language(Alt((lang,))).operands]  # the whole language, negated
            self.operands.append((inside, outside))
        except CompileTimeoutError:
            raise
        except StrictgenError:
            self.operands.append(None)

    def is_empty(self, signs: tuple[tuple[int, bool], ...]) -> bool:
        asked = list(self.every_string)
        for i, inside in signs:
            parts = self.operands[i]
            if parts is None:
                return False
            asked += parts[0] if inside else parts[1]
        try:
            return regular.find_member(asked, MAX_SEARCH_STATES) is None
        except CompileTimeoutError:
            raise
        except StrictgenError:
            return False


def _denies_itself(atoms: tuple) -> bool:
    """Does the conjunction hold some atom set and its negation (`NotAll` of atoms all present)?
    Then it is empty, told without its language: oneOf's proofs ask x and not x (a date-time
    string and not a date-time string: ~70 ms of automata)."""
    present = set(atoms)
    return any(type(a) is NotAll and present.issuperset(a.atoms) for a in atoms)


def pattern_region(patterns: list[str], mask: int) -> Expr:
    """The keys matching exactly the patterns whose bits are set in `mask`."""
    ins = [pattern_language(p) for i, p in enumerate(patterns) if mask >> i & 1]
    outs = [pattern_language(p) for i, p in enumerate(patterns) if not mask >> i & 1]
    base = intersect(*ins) if ins else ANY_STRING
    return difference(base, alt(*outs)) if outs else base


@functools.lru_cache(maxsize=2048)
def string_language(atoms: tuple) -> Expr:
    """The raw-character language of a conjunction of string atoms (cached: the same atoms give
    the same expression object in every grammar)."""
    langs = [_atom_lang(a) for a in atoms if type(a) is not Length]
    lens = [a for a in atoms if type(a) is Length]
    if lens:
        lo, hi = lens[0].lo, lens[0].hi
        if langs:  # drop or tighten the length bound where the other atoms imply it
            mins, maxs = zip(*(length_range(e) for e in langs))
            lmin = max(mins)
            lmax = min((m for m in maxs if m is not None), default=None)
            if lo <= lmin:
                lo = 0
            if hi is not None and lmax is not None and lmax <= hi:
                hi = None
        if lo or hi is not None:
            langs.append(repeat(ANY_CHAR, lo, hi))
    langs = _merge_class_repeats(langs)
    return intersect(*langs) if langs else ANY_STRING


def _atom_lang(a) -> Expr:
    t = type(a)
    if t is Length:
        return repeat(ANY_CHAR, a.lo, a.hi)
    if t is Matches:
        return pattern_language(a.pattern)
    if t is Format:
        from ..string_formats import format_value_expr

        e = format_value_expr(a.name)
        if a.name == "hostname":  # RFC 1123 labels; the whole name is at most 253 characters
            e = intersect(e, repeat(ANY_CHAR, 0, 253))
        return e
    if t is AmongStrings:
        return literal_trie(a.values)
    if t is NotAll:
        return difference(ANY_STRING, string_language(a.atoms))
    raise AssertionError(a)


def _merge_class_repeats(langs: list[Expr]) -> list[Expr]:
    """Intersect items that repeat a single character class merge into one: [a-z]{1,} ∩ .{0,9} = [a-z]{1,9}."""
    merged: tuple | None = None  # (ranges, lo, hi)
    rest: list[Expr] = []
    for e in langs:
        if isinstance(e, Repeat) and isinstance(e.item, (ByteSet, CharSet)):
            r, lo, hi = e.item.ranges, e.min, e.max
            if merged is None:
                merged = (r, lo, hi)
            else:
                mr, mlo, mhi = merged
                both = []
                for a, b in mr:
                    for c, d in r:
                        if max(a, c) <= min(b, d):
                            both.append((max(a, c), min(b, d)))
                merged = (normalize_ranges(both), max(mlo, lo), hi if mhi is None else (mhi if hi is None else min(mhi, hi)))
        else:
            rest.append(e)
    if merged is not None:
        r, lo, hi = merged
        cls = charset(r) if r else NOTHING
        rest.insert(0, NOTHING if hi is not None and lo > hi else (repeat(cls, lo, hi) if cls != NOTHING or lo == 0 else NOTHING))
    return rest
