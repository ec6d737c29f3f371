"""The regular-language core beneath grammar/ and compile/: byte-interval automata in C.

One face for both layers (DESIGN.md §1): an `NFA` is built edge by edge (byte ranges, epsilon
edges, call edges for the pushdown machine's rules); `determinize` turns it into a `DFA`, lazily
row by row on the way (`lazy`); DFAs are trimmed, minimised (Hopcroft, or Moore's rounds with
their history of splits) and combined (`product`: intersection and difference). Questions about
languages (`find_member`: is an intersection of languages and complements empty, and if not, a
shortest member) search the product on the fly and stop at the first witness, without building
whole DFAs.

Every operation takes the compile deadline (`strictgen.deadline`) and a state budget: past the
deadline it raises CompileTimeoutError, past the budget GrammarTooLargeError with the caller's
message. The work is in C: one file per algorithm family (`_nfa.c`, `_lazy.c`, `_dfa.c`,
`_minimize.c`, `_rounds.c`, `_search.c`; `_regular.h` between them), the Python types in `_regular.c`, and
`_spelling.c` (the JSON spellings of a string DFA); this module only translates arguments and
errors.
"""

from __future__ import annotations

import array
from typing import Iterable, NamedTuple, Sequence

from strictgen import deadline
from strictgen.errors import CompileTimeoutError, GrammarTooLargeError

from ._regular import DFA, NFA, Lazy, Limit
from ._regular import find_member as _find_member
from ._regular import from_table as _from_table
from ._regular import lazy as _lazy
from ._regular import lower as _lower
from ._spelling import columns as _columns
from ._spelling import spell as _spell

__all__ = ["DFA", "NFA", "Lazy", "dense", "determinize", "from_classes", "find_member", "from_table", "is_empty", "json_spellings", "table_columns", "lazy", "lower", "minimal", "minimal_with_splits", "minimize", "product", "refine", "Splits"]


def _raise(exc: Limit, too_large: str) -> None:
    if exc.args and exc.args[0] == "time":
        deadline.check()  # raises: the same clock said the deadline has passed
        raise CompileTimeoutError("compiling took longer than its time limit") from None
    raise GrammarTooLargeError(too_large) from None


def lazy(nfa: NFA, start: int, final: int, max_states: int = -1, too_large: str = "automaton too large") -> Lazy:
    """The subset construction of `nfa` from `start` to `final`, computed row by row on demand
    (at most `max_states` subsets, -1 = no bound)."""
    try:
        return _lazy(nfa, start, final, max_states)
    except Limit as exc:
        _raise(exc, too_large)


def lower(nfa: NFA, ops, dfas: list[DFA], templates: int, start: int, end: int, max_states: int) -> int:
    """Build into `nfa`, from start to end, the NFA of a flat program of a rule's IR (int32 ops in
    pre-order, `_lower.c` lists them; `dfas` the automata its EMBED ops name, `templates` how many
    TEMPLATE ids it uses), without the GIL. 0 when built; else the NFA is as it was and the status
    says why not (1: more than `max_states` states, 2: past the compile deadline, 3: a template met
    inside itself, 4: a malformed program): the caller builds the IR another way, which raises
    what it should."""
    return _lower(nfa, ops, dfas, templates, start, end, max_states, deadline.expires_at())


def determinize(nfa: NFA, start: int, final: int, max_states: int = -1, too_large: str = "automaton too large") -> DFA:
    """The DFA of the paths start → final (state 0 is the start); call edges become DFA call edges
    (callee, the subset they return to)."""
    try:
        return _lazy(nfa, start, final, max_states).determinize(deadline.expires_at())
    except Limit as exc:
        _raise(exc, too_large)


def minimize(dfa: DFA) -> DFA:
    """The minimal DFA of a trimmed `dfa` (call edges are letters: callee and return state)."""
    try:
        return dfa.minimize(deadline.expires_at())
    except Limit as exc:
        _raise(exc, "automaton too large to minimise")


def refine(dfa: DFA, rounds: int) -> tuple[bytes, int]:
    """Moore's refinement of `dfa` from (accepting, callees), at most `rounds` rounds: (a class per
    state as int32 bytes, the round that changed nothing or -1)."""
    try:
        return dfa.refine(rounds, deadline.expires_at())
    except Limit as exc:
        _raise(exc, "automaton too large to refine")


def minimal(dfa: DFA, productive: bytes | None = None) -> DFA:
    """Trim (calls only of the rules flagged in `productive`), then minimise: in one C call, which
    for a DFA without calls (products, pieces) makes no trimmed copy (see _minimize.c)."""
    try:
        return dfa.trim_minimize(productive, deadline.expires_at())
    except Limit as exc:
        _raise(exc, "automaton too large to minimise")


class Splits(NamedTuple):
    """The history of a minimisation by Moore's rounds (`minimal_with_splits`), by state of the
    minimal DFA: the round that split its class off (`born`, int32 bytes; 0 for the initial classes
    of (accepting, callees)), the state it split from (`parent`, int32 bytes; -1 for the initial
    classes), and the last round that split anything (`last`: born's largest, read in C with the
    minimisation; a compile asks it of every rule, and in numpy it cost ~20 us a rule)."""

    born: bytes
    parent: bytes
    last: int


def minimal_with_splits(dfa: DFA, productive: bytes | None = None) -> tuple[DFA, Splits | None]:
    """Trim (as `minimal`), then minimise by Moore's rounds to their fixpoint: (the DFA `minimal`
    gives, the history of its splits or None). In one C call: where trimming would keep the DFA
    as it is (all but a few rule DFAs over the bench), the minimisation's set-up answers that from
    the in-edges and row runs it makes anyway, and trimming's own scans are skipped (14% of
    trimming and minimising the bench's rule DFAs). The history (`Splits`) is two int32 arrays by
    state, the round that split the state's class off and the state it split from (-1 for the
    initial classes of (accepting, callees)), and the last round that split one; the classes after any round r follow from it (each state's first
    ancestor split off by round r), so a rule's horizon classes need no refinement of their own."""
    try:
        got, born, parent, last = dfa.trim_minimize_rounds(productive, deadline.expires_at())
    except Limit as exc:
        _raise(exc, "automaton too large to minimise")
    return got, None if born is None else Splits(born, parent, last)


def product(a: DFA, b: DFA, difference: bool = False, max_states: int = -1, too_large: str = "automaton too large") -> DFA:
    """The pair automaton of a and b (no call edges): `a ∩ b`, or `a − b` with `difference`.
    Not trimmed or minimised (`minimal` does that)."""
    try:
        return a.product(b, difference, max_states, deadline.expires_at())
    except Limit as exc:
        _raise(exc, too_large)


def find_member(languages: Sequence[tuple[Lazy, bool]], max_states: int = -1) -> bytes | None:
    """A shortest byte string in every language paired with True and in none paired with False,
    or None. Searches the product breadth first, computing only the rows it reaches; past
    `max_states` product states it raises GrammarTooLargeError."""
    try:
        return _find_member(list(languages), max_states, deadline.expires_at())
    except Limit as exc:
        _raise(exc, f"deciding emptiness needs more than {max_states} product states")


def is_empty(languages: Sequence[tuple[Lazy, bool]], max_states: int = -1) -> bool:
    """Is the intersection of the languages (complemented where paired with False) empty?"""
    return find_member(languages, max_states) is None


def from_table(rows: Iterable[Sequence[int]], accepting: Iterable[bool], classmap: bytes | None = None) -> DFA:
    """A DFA without calls from rows of next states (-1 = dead); state 0 is the start. Rows have
    256 entries, or with `classmap` (each byte's class, 256 bytes) one entry per class."""
    width = 256 if classmap is None else max(classmap) + 1
    table = array.array("i")
    for row in rows:
        if len(row) != width:
            raise ValueError(f"every row needs {width} next states")
        table.extend(row)
    return _from_table(table.tobytes(), bytes(bool(a) for a in accepting), classmap)


def dense(table: bytes, accepting: bytes) -> DFA:
    """A DFA without calls from a dense table (int32 bytes, 256 next states per state, -1 dead;
    state 0 the start) and one accepting byte per state."""
    return _from_table(table, accepting, None)


def from_classes(table: bytes, accepting: bytes, classmap: bytes) -> DFA:
    """A DFA without calls from a table by byte class (int32 bytes, one next state per class
    and state, -1 dead; state 0 the start), one accepting byte per state and the 256-byte class
    map: what `DFA.compact()` gives back, read in again."""
    return _from_table(table, accepting, classmap)


def json_spellings(table: bytes, accepting: bytes, max_states: int, all_spellings: bool = True, classmap: bytes | None = None) -> DFA | None:
    """The DFA (not minimised) of the JSON string bodies that decode into the strings of a
    raw-UTF-8 DFA (`table256()` and `accepting()`, or `compact()`'s table and classmap: read by
    class, never widened), in every spelling (with `all_spellings` False printable ASCII only
    raw), or None when that needs more than `max_states` states."""
    got = _spell(table, accepting, max_states, all_spellings, deadline.expires_at(), classmap)
    if got is False:
        deadline.check()  # raises: the same clock said the deadline has passed
        raise CompileTimeoutError("compiling took longer than its time limit")
    return None if got is None else _from_table(*got)


def table_columns(dfa: DFA) -> tuple[bytes, bytes]:
    """(the distinct columns of `dfa`'s table, n int32 each, joined; the classmap onto them, numbered
    as bytes first meet them): equal tables give equal pairs whatever byte classes the DFAs were
    built with (the spellings' cache key, grammar/automata.py's table_key)."""
    return _columns(*dfa.compact())
