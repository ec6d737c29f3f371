"""The byte loops a grammar's token masks will meet, read off its rule automata at compile time.

The string shortcuts of token masks (token_mask.py) skip the tokens made only of the bytes a
string-like state loops on, by splits of the vocabulary built per loop (`VocabTrie.loop_inside`,
its tokens grouped by first byte, the others' suffixes or their trie). Built on first use, these
were a fifth of first-pass fill time, paid by the one or two schemas that meet each format's or
pattern's loop. The machine finds its loops on its lazily built states; this finds them ahead on
the rule DFAs the compile has built: a state whose bytes, eight or more of them, lead to one
state, itself (a free string body) or the next place of a counter (`maxLength`). The match is
close, not exact (a machine state may mix frames, a deferred rule is not built yet): a loop
found here that no fill asks for costs its build, and one missed is built on first use, as
before; masks do not depend on it.
"""

from __future__ import annotations

import numpy as np

from . import _rule_loops
from .automaton import RuleDFA

MIN_LOOP_BYTES = 8  # as the shortcuts ask: narrower byte groups are walked

# every valid multi-byte UTF-8 character (RFC 3629) as its bytes' ranges, one row per form
_UTF8_FORMS = (((0xC2, 0xDF), (0x80, 0xBF)), ((0xE0, 0xE0), (0xA0, 0xBF), (0x80, 0xBF)), ((0xE1, 0xEC), (0x80, 0xBF), (0x80, 0xBF)),
               ((0xED, 0xED), (0x80, 0x9F), (0x80, 0xBF)), ((0xEE, 0xEF), (0x80, 0xBF), (0x80, 0xBF)),
               ((0xF0, 0xF0), (0x90, 0xBF), (0x80, 0xBF), (0x80, 0xBF)), ((0xF1, 0xF3), (0x80, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
               ((0xF4, 0xF4), (0x80, 0x8F), (0x80, 0xBF), (0x80, 0xBF)))


def rule_loops(rules: list[RuleDFA]) -> list[tuple[bytes, bool, bool]]:
    """The wide byte groups of `rules`' states, each once, in the order found: (the bytes, whether
    every valid multi-byte character goes the same way, whether the group loops back to its
    state); the keys `VocabTrie.loop_inside` and its splits take (with `multibyte`)."""
    out: dict[tuple[bytes, bool], bool] = {}
    for rule in rules:
        for key, self_loop in _dfa_loops(rule):
            out[key] = out.get(key, False) or self_loop
    return [(loop_bytes, multibyte, self_loop) for (loop_bytes, multibyte), self_loop in out.items()]


def _dfa_loops(rule: RuleDFA):
    """((bytes, multibyte), self-loop) for the wide byte groups of `rule`: MIN_LOOP_BYTES or more
    bytes from a state to itself, or along a chain of states that the same bytes step (a
    counter: the group of each state's largest live byte class goes on to the next state by the
    same bytes); found in C (`_rule_loops.wide_groups`), each distinct group once."""
    table, classmap = rule.dfa.compact()
    found = _rule_loops.wide_groups(table, classmap, rule.num_states, MIN_LOOP_BYTES)
    if not found:
        return
    classes = np.frombuffer(classmap, dtype=np.uint8)
    rows = np.frombuffer(table, dtype=np.int32).reshape(rule.num_states, -1)
    for loop_bytes, state, target, self_loop in found:
        yield (loop_bytes, _characters_lead(rows, classes, state, target)), bool(self_loop)


def _characters_lead(rows: np.ndarray, classes: np.ndarray, state: int, target: int) -> bool:
    """Whether every valid multi-byte UTF-8 character leads from `state` to `target` (what
    `PushdownMachine.utf8_target` says of a machine state). A format's ASCII loop fails at its
    first lead byte."""
    for form in _UTF8_FORMS:
        at = {state}
        for lo, hi in form:
            by = set(classes[lo : hi + 1].tolist())
            at = {int(rows[x, c]) for x in at for c in by}
            if -1 in at:
                return False
        if at != {target}:
            return False
    return True
