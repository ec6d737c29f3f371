"""The JSON spellings of a string language, built on its byte-level DFA (the IR node `Spelled`).

A JSON string body decodes to exactly one string, character by character: raw UTF-8 (except `"`,
`\\` and U+0000..U+001F), a short escape (``\\"`` ``\\\\`` ``\\/`` ``\\b`` ``\\f`` ``\\n`` ``\\r`` ``\\t``),
``\\uXXXX`` with hex digits in either case, or a surrogate pair ``\\uD83D\\uDE00`` above U+FFFF.
So the bodies decoding into a language L are recognised by L's own DFA (determinised and
minimised over raw UTF-8, where intersections and differences are cheap) with, at every state
between characters, a deterministic trie of escapes that leads to the state the escaped
character reaches. The result is deterministic and only a few states per DFA state bigger; the
tries are hash-consed by what they lead to. Lone surrogates are never accepted.

Minimal as built, with every spelling, when the raw DFA is minimal. Decoding is a function from
bodies to strings and every string has a spelling, so the bodies a state accepts are the
spellings of the raw strings it accepts: two raw states (between characters or inside one, whose
continuation bytes stay raw) with different raw languages keep different spelled ones, and
reachability and liveness carry over. The other states:
- a trie state reads exactly `width` hex digits (either case), then goes where its signature
  (value ranges → targets) sends the value; tries are interned by (width, signature), and
  signatures are canonical (sorted, neighbouring runs with one target merged), so two with
  different keys differ in some value's target, or in the length of hex they read before a
  state that reads something other than hex: a raw state that reads a character raw also
  reads `\\`, and a state after a high surrogate reads only `\\`;
- the state after `\\` is interned by (its short escapes' targets, its `u` trie); it reads `u`
  whenever it reads anything (every escaped character has a `\\u` spelling), which no trie,
  raw state (with every spelling a raw `u` comes with `\\`) or state after a high surrogate's
  `\\` (whose trie reads low surrogates only, which no other trie reads) does;
- the states after a high surrogate are interned by their low signature, and read only `\\`.
So distinct states have distinct languages: the DFA is minimal as built.
"""

from __future__ import annotations

from strictgen import regular
from strictgen.errors import GrammarTooLargeError

__all__ = ["every_spelling", "spell"]

SPELL_ALL_STATES = 8_000  # raw automata up to this size get every spelling of every character
SPELLED_FACTOR = 8  # ... unless their spellings need more than this many times their states


def spell(raw: regular.DFA, max_states: int) -> regular.DFA:
    """A minimal DFA over UTF-8 strings → the minimal DFA of their JSON string bodies (between the
    quotes), in every spelling (the work: regular.json_spellings, on the DFA's table by class).

    Escapes cost a few states beside every state (hex digits, by the state they lead to), so an
    automaton of more than SPELL_ALL_STATES states (a date-time, a pattern times a long length
    bound), or one whose spellings outgrow SPELLED_FACTOR times its size, accepts printable ASCII
    raw only (what `json.dumps` writes, ensure_ascii or not) and every other character in every
    spelling: the escape tries then sit only beside states that read such characters.

    With every spelling the construction is minimal (the module's docstring says why): minimising
    it again was ~40% of a spelled string's cost, to remove nothing. With printable ASCII raw only
    a raw state can equal an escape state (one reading only `u`, then four hex digits), so that
    result is minimised."""
    got = every_spelling(raw, max_states)
    if got is not None:
        return got
    table, classmap = raw.compact()
    got = regular.json_spellings(table, raw.accepting(), max_states, False, classmap)
    if got is None:
        raise GrammarTooLargeError(f"grammar too large: the JSON spellings of a string need more than {max_states} states")
    return regular.minimal(got)


def every_spelling(raw: regular.DFA, max_states: int) -> regular.DFA | None:
    """`spell`'s DFA with every character in every spelling, or None where `spell` falls back to
    printable ASCII raw only (more than SPELL_ALL_STATES raw states, or spellings past
    SPELLED_FACTOR times them or `max_states`). The one place that choice is made: the unique-items
    counting (schema/unique.py) asks it too, since counting the strings an escape can still become
    assumes every character has its escapes."""
    n = raw.num_states
    if n > SPELL_ALL_STATES:
        return None
    table, classmap = raw.compact()
    return regular.json_spellings(table, raw.accepting(), min(max_states, SPELLED_FACTOR * n + 5_000), True, classmap)
