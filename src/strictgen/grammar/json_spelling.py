"""The JSON spellings of a string language, built on its byte-level DFA (the IR node `Spelled`).

A JSON string body decodes to exactly one string, character by character: raw UTF-8 (except `"`,
`\\` and U+0000..U+001F), a short escape (``\\"`` ``\\\\`` ``\\/`` ``\\b`` ``\\f`` ``\\n`` ``\\r`` ``\\t``),
``\\uXXXX`` with hex digits in either case, or a surrogate pair ``\\uD83D\\uDE00`` above U+FFFF.
So the bodies decoding into a language L are recognised by L's own DFA (determinised and
minimised over raw UTF-8, where intersections and differences are cheap) with, at every state
between characters, a deterministic trie of escapes that leads to the state the escaped
character reaches. The result is deterministic and only a few states per DFA state bigger; the
tries are hash-consed by what they lead to. Lone surrogates are never accepted.
"""

from __future__ import annotations

from strictgen import regular
from strictgen.errors import GrammarTooLargeError

__all__ = ["spell"]

SPELL_ALL_STATES = 8_000  # raw automata up to this size get every spelling of every character
SPELLED_FACTOR = 8  # ... unless their spellings need more than this many times their states


def spell(table: bytes, accepting: bytes, max_states: int) -> regular.DFA:
    """A dense DFA (`regular.dense`'s bytes) over UTF-8 strings → the DFA (not minimised) of their
    JSON string bodies (between the quotes), in every spelling (the work: regular.json_spellings).

    Escapes cost a few states beside every state (hex digits, by the state they lead to), so an
    automaton of more than SPELL_ALL_STATES states (a date-time, a pattern times a long length
    bound), or one whose spellings outgrow SPELLED_FACTOR times its size, accepts printable ASCII
    raw only (what `json.dumps` writes, ensure_ascii or not) and every other character in every
    spelling: the escape tries then sit only beside states that read such characters."""
    n = len(accepting)
    if n <= SPELL_ALL_STATES:
        got = regular.json_spellings(table, accepting, min(max_states, SPELLED_FACTOR * n + 5_000), True)
        if got is not None:
            return got
    got = regular.json_spellings(table, accepting, max_states, False)
    if got is None:
        raise GrammarTooLargeError(f"grammar too large: the JSON spellings of a string need more than {max_states} states")
    return got
