"""String emission: the JSON spellings of string constraints.

A string subschema is a conjunction of atoms (schema.ir's `Length`, `Matches`, `Format`,
`AmongStrings`, `NotAll`), whose raw-character language (between the quotes, before escaping) the
string-language service gives (schema.strings); `spelled` turns it into every JSON spelling of
those strings, which commutes with the intersections and differences the atoms are built from.
Long length bounds are counted through one called character rule, and a long bound combined with a
pattern whose product would be too big is built at run time (length_product)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from typing import TYPE_CHECKING

from strictgen.errors import CompileTimeoutError, GrammarTooLargeError, StrictgenError

from ..automata import dfa_size, regular_dfa
from ..ir import NOTHING, CharSet, Expr, Intersect, Literal, RuleRef, Spelled, repeat
from ..json_escapes import json_escaped
from ..json_value import json_string
from .ir import AmongStrings, Length
from .length_product import length_product, product_exceeds
from .strings import ANY_CHAR, string_language

if TYPE_CHECKING:
    from .emitter import SchemaEmitter

__all__ = ["LONG_STRING", "MAX_LENGTH_PRODUCT", "emit_string", "escaped_string", "spelled"]

LONG_STRING = 48  # length bounds above this count characters through a called rule
MAX_LENGTH_PRODUCT = 60_000  # raw DFA states of a pattern/format ∩ a long length bound, at most


def spelled(expr: Expr) -> Expr:
    """Every JSON spelling of the raw strings of `expr` (string bodies, between the quotes): a
    literal or one class is rewritten in place, anything else is spelled on its determinised
    automaton (`Spelled`), where a pattern's products with lengths and formats are cheap."""
    if isinstance(expr, (Literal, CharSet)):
        return json_escaped(expr, "all")
    return Spelled(expr)


SPELLED_CHAR = spelled(ANY_CHAR)  # one object for every grammar (see ir.called_body)


def emit_string(em: SchemaEmitter, atoms: tuple) -> Expr:
    """A string subschema: patterns, formats and long counts become one rule of `em` per distinct
    conjunction of atoms (`em.string_rules`), shared by every use; enums go through `em.enum`."""
    if not atoms:
        return json_string()
    ins = [a.values for a in atoms if type(a) is AmongStrings]
    if ins:
        common = frozenset.intersection(*ins)
        rest = tuple(a for a in atoms if type(a) is not AmongStrings)
        kept = sorted(s for s in common if not rest or em.strings.member(rest, s))
        if not kept:
            return NOTHING
        return em.enum(kept)
    name = em.string_rules.get(atoms)
    if name is not None:
        return RuleRef(name)
    lens = [a for a in atoms if type(a) is Length]
    long = bool(lens) and max(lens[0].lo, lens[0].hi or 0) > LONG_STRING
    if long and len(atoms) == 1:
        # a long length bound alone: count characters with calls to one character rule
        body = json_string(repeat(_char_rule(em), lens[0].lo, lens[0].hi))
    elif long and not _length_product_small(atoms, lens[0]):
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
    name = em.string_rules[atoms] = _rule_name(atoms)
    em.rules[name] = body
    return RuleRef(name)


@functools.lru_cache(maxsize=1024)
def _rule_name(atoms: tuple) -> str:
    """The rule name of a conjunction of atoms, the same in every grammar and process."""
    return "str_" + hashlib.sha1(stable_text(atoms).encode()).hexdigest()[:16]


def stable_text(value) -> str:
    """A text of string atoms that is the same in every process: repr() of a frozenset follows the
    process's string hashing (PYTHONHASHSEED), so a rule named from it had another name in the
    next process, and so did the grammar text and every key built from it."""
    if isinstance(value, (frozenset, set)):
        return "{" + ", ".join(sorted(stable_text(v) for v in value)) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(stable_text(v) for v in value) + ")"
    if dataclasses.is_dataclass(value):
        fields = (f"{f.name}={stable_text(getattr(value, f.name))}" for f in dataclasses.fields(value))
        return f"{type(value).__name__}({', '.join(fields)})"
    return repr(value)


@functools.lru_cache(maxsize=1024)
def _length_product_small(atoms: tuple, length: Length) -> bool:
    """Is the product of a long length bound and a pattern/format small enough to build ahead?
    (Else it is built at run time, length_product.) A function of the atoms alone, answered once
    a process (counting the product's layers was asked again in every compile).

    The estimate (~4 product states per pattern state and count) is only a cheap pass: past
    it the minimal product's states are counted layer by layer, which proves most products too
    big without building them (`product_exceeds`); the rest are built, since most patterns and
    formats collapse far below the estimate (email with maxLength 1024: 11,436 states for an
    estimate of 618,496); the core stops that at its own state budget."""
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
    if product_exceeds(regular_dfa(string_language(rest)), length.lo, length.hi, MAX_LENGTH_PRODUCT):
        return False  # proven without building the product (most of the time here went to minimising it)
    try:
        product = dfa_size(lang)
    except CompileTimeoutError:
        raise
    except GrammarTooLargeError:
        product = MAX_LENGTH_PRODUCT + 1
    return product is None or product <= MAX_LENGTH_PRODUCT


def _char_rule(em: SchemaEmitter) -> Expr:
    """One canonically spelled character, as a called rule: a length bound of N then costs
    about N DFA states instead of ~25 N (UTF-8 and escape sub-states per position)."""
    return em.called("json_char", SPELLED_CHAR)


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
