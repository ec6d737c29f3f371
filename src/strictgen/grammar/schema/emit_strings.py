"""String emission: the raw-character language of string constraints, and its JSON spellings.

A string subschema is a conjunction of atoms (schema.ir's `Length`, `Matches`, `Format`,
`AmongStrings`, `NotAll`). `string_language` gives their
raw-character language (between the quotes, before escaping); `spelled` turns it into every JSON
spelling of those strings, which commutes with the intersections and differences the atoms are
built from. Long length bounds are counted through one called character rule, and a long bound
combined with a pattern is refused early when its product would be too big."""

from __future__ import annotations

import functools
import hashlib

from strictgen.errors import CompileTimeoutError, GrammarTooLargeError, StrictgenError

from ..automata import Language, dfa_size, regular_dfa
from ..ir import (
    MAX_CODEPOINT,
    NOTHING,
    ByteSet,
    CharSet,
    Expr,
    Intersect,
    Literal,
    Repeat,
    RuleRef,
    Spelled,
    charset,
    difference,
    intersect,
    literal_trie,
    normalize_ranges,
    repeat,
)
from ..json_escapes import json_escaped
from ..json_value import json_string
from .length_product import length_product
from .ir import AmongStrings, Format, Length, Matches, NotAll, pattern_language
from .rule_sizes import length_range

__all__ = [
    "ANY_CHAR",
    "ANY_STRING",
    "LONG_STRING",
    "MAX_LENGTH_PRODUCT",
    "StringEmitter",
    "escaped_string",
    "spelled",
    "string_language",
]

LONG_STRING = 48  # length bounds above this count characters through a called rule
MAX_LENGTH_PRODUCT = 60_000  # raw DFA states of a pattern/format ∩ a long length bound, at most

ANY_CHAR = charset([(0, MAX_CODEPOINT)])


def spelled(expr: Expr) -> Expr:
    """Every JSON spelling of the raw strings of `expr` (string bodies, between the quotes): a
    literal or one class is rewritten in place, anything else is spelled on its determinised
    automaton (`Spelled`), where a pattern's products with lengths and formats are cheap."""
    if isinstance(expr, (Literal, CharSet)):
        return json_escaped(expr, "all")
    return Spelled(expr)


SPELLED_CHAR = spelled(ANY_CHAR)  # one object for every grammar (see json_schema._called_rule)
ANY_STRING = repeat(ANY_CHAR)


class StringEmitter:
    """String subschemas, mixed into `json_schema.SchemaEmitter` (whose `rules`, `enum` and
    `called` it uses). Patterns, formats and long counts become one rule per distinct
    conjunction of atoms, shared by every use."""

    def __init__(self):
        self._languages: dict[tuple, Language] = {}
        self._str_emptiness: dict[tuple, bool] = {}  # str_language_empty's answers
        self._string_rules: dict[tuple, str] = {}
        super().__init__()

    def string(self, atoms: tuple) -> Expr:
        if not atoms:
            return json_string()
        ins = [a.values for a in atoms if type(a) is AmongStrings]
        if ins:
            common = frozenset.intersection(*ins)
            rest = tuple(a for a in atoms if type(a) is not AmongStrings)
            kept = sorted(s for s in common if not rest or self.str_member(rest, s))
            if not kept:
                return NOTHING
            return self.enum(kept)
        name = self._string_rules.get(atoms)
        if name is not None:
            return RuleRef(name)
        lens = [a for a in atoms if type(a) is Length]
        long = bool(lens) and max(lens[0].lo, lens[0].hi or 0) > LONG_STRING
        if long and len(atoms) == 1:
            # a long length bound alone: count characters with calls to one character rule
            body = json_string(repeat(self._char_rule(), lens[0].lo, lens[0].hi))
        elif long and not self._length_product_small(atoms, lens[0]):
            # too big to build ahead: (pattern state, count) pairs built as a document reaches them
            rest = tuple(a for a in atoms if type(a) is not Length)
            body = json_string(length_product(regular_dfa(string_language(rest)), lens[0].lo, lens[0].hi))
        else:
            body = escaped_string(atoms)
        if not long and len(lens) == len(atoms):
            return body
        # patterns, formats, long counts: one rule per distinct constraint, shared by every use
        # (big ones are then compiled once, as calls)
        # a stable name (the same atoms give the same rule name and body object in every grammar,
        # so a compiler-side cache of rule automata could reuse e.g. the date-time automaton)
        name = self._string_rules[atoms] = "str_" + hashlib.sha1(repr(atoms).encode()).hexdigest()[:16]
        self.rules[name] = body
        return RuleRef(name)

    def _length_product_small(self, atoms: tuple, length: Length) -> bool:
        """Is the product of a long length bound and a pattern/format small enough to build ahead?
        (Else it is built at run time, length_product.)

        The estimate (~4 product states per pattern state and count) is only a cheap pass: past
        it the raw-character product is built, since most patterns and formats collapse far below
        it (email with maxLength 1024: 11,436 states for an estimate of 618,496); the core stops
        that at its own state budget."""
        rest = tuple(a for a in atoms if type(a) is not Length)
        lang = string_language(atoms)
        if not isinstance(lang, Intersect):
            return True  # the length bound was implied by the other atoms, or merged into one class
        states = _raw_states(rest)
        if states is None:
            return True
        count = max(length.lo, length.hi or 0)
        if 4 * states * count <= MAX_LENGTH_PRODUCT:
            return True
        try:
            product = dfa_size(lang)
        except CompileTimeoutError:
            raise
        except GrammarTooLargeError:
            product = MAX_LENGTH_PRODUCT + 1
        return product is None or product <= MAX_LENGTH_PRODUCT

    def _char_rule(self) -> Expr:
        """One canonically spelled character, as a called rule: a length bound of N then costs
        about N DFA states instead of ~25 N (UTF-8 and escape sub-states per position)."""
        return self.called("json_char", SPELLED_CHAR)

    def str_lang(self, atoms: tuple) -> Expr:
        """The raw-character language of a conjunction of string atoms."""
        return string_language(atoms)

    def _language(self, atoms: tuple) -> Language:
        got = self._languages.get(atoms)
        if got is None:
            got = self._languages[atoms] = Language(self.str_lang(atoms))
        return got

    def str_member(self, atoms: tuple, s: str) -> bool:
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
                if self.str_member(a.atoms, s):
                    return False
            else:
                simple = False
        if simple:
            return True
        return self._language(atoms).accepts(s.encode("utf-8"))

    def str_language_empty(self, atoms: tuple) -> bool:
        """Is the conjunction empty? Decided lazily (the core stops at the first member); a
        language too big to decide counts as not empty, which only costs a disjointness proof."""
        got = self._str_emptiness.get(atoms)
        if got is None:
            try:
                got = self._language(atoms).is_empty()
            except CompileTimeoutError:
                raise
            except (StrictgenError, TypeError):
                got = False
            self._str_emptiness[atoms] = got
        return got


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


@functools.lru_cache(maxsize=1024)
def _raw_states(atoms: tuple) -> int | None:
    """DFA states of the raw-character language of the atoms (None: empty language); the product
    with a length bound is taken there, before the spellings (`Spelled`) are added."""
    try:
        return dfa_size(string_language(atoms))
    except CompileTimeoutError:
        raise
    except StrictgenError:
        return None


@functools.lru_cache(maxsize=1024)
def escaped_string(atoms: tuple) -> Expr:
    """A quoted JSON string whose value is in the language of the atoms, canonically spelled."""
    return json_string(spelled(string_language(atoms)))


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

