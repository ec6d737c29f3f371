"""Strings under a long length bound whose product with a pattern is too big to build ahead
(strictgen.grammar.schema.length_product): the (pattern state, count) rules built at run time accept
exactly the strings of the pattern with lo..hi code points, in every JSON spelling."""

from __future__ import annotations

import json
import random
import re

from strictgen.grammar.automata import regular_dfa
from strictgen.grammar.ir import Lazy
from strictgen.grammar.json_schema import json_schema_grammar
from strictgen.grammar.schema.length_product import LengthProduct, _Lengths, char_transitions
from strictgen.grammar.schema.patterns import pattern_language
from tests.grammar.test_json_schema import Schema

WORDS = "^(?:\\S+\\s+){0,49}\\S+$"


def _lazy_nodes(expr) -> list[Lazy]:
    out, work = [], [expr]
    while work:
        e = work.pop()
        if isinstance(e, Lazy):
            out.append(e)
        work.extend(getattr(e, "items", None) or ())
        work.extend(x for x in (getattr(e, "item", None), getattr(e, "body", None)) if x is not None and not callable(x))
    return out


def test_words_under_a_long_bound_built_at_run_time():
    schema = {"type": "string", "maxLength": 500, "pattern": WORDS}
    grammar, _ = json_schema_grammar(schema)
    assert any(_lazy_nodes(body) for body in grammar.rules.values())  # built ahead it is >60,000 states
    s = Schema(schema)
    for text in ["a", "a b", " ".join(["w"] * 49 + ["wörd"]), "x" * 500, "é\t\U0001F600"]:
        assert json.dumps(text) in s and json.dumps(text, ensure_ascii=True) in s, text
    for text in ["", "a ", " ".join(["w"] * 51), "x" * 501, "x" * 499 + "\U0001F600\U0001F600", "a  "]:
        assert json.dumps(text) not in s and json.dumps(text, ensure_ascii=True) not in s, text
    assert '"\\u0061 \\u0062"' in s and '"a\\/b"' in s and '"a\\n"' not in s  # escapes spell characters


def test_same_answers_as_python_re_on_ascii():
    s = Schema({"type": "string", "maxLength": 200, "pattern": WORDS})
    rng = random.Random(1)
    for _ in range(300):
        text = "".join(rng.choice("ab \t") for _ in range(rng.randint(0, 12)))
        assert (json.dumps(text) in s) == bool(re.fullmatch(r"(?:\S+\s+){0,49}\S+", text)), text


def test_a_minimum_length_with_periodic_lengths():
    """(ab)* has only even lengths: 52 and 100 fit 51..100; 50, 51 and 102 do not."""
    s = Schema({"type": "string", "minLength": 51, "maxLength": 100, "pattern": "^(?:ab)*$"})
    for n, ok in ((50, False), (51, False), (52, True), (100, True), (102, False)):
        assert (json.dumps("ab" * (n // 2) + "a" * (n % 2)) in s) == ok, n


def test_char_transitions_agree_with_the_byte_dfa():
    rng = random.Random(7)
    for pattern in ("^[a-zé-ü\u0400-\u04ff]+x$", "^\\S*\\s?[^\\x00-\\x7f]{2}$", "^(?:\U0001F600|\u00e9|z)*$"):
        dfa = regular_dfa(pattern_language(pattern))
        moves = char_transitions(dfa)
        for _ in range(3000):
            q = rng.randrange(dfa.num_states)
            cp = rng.choice([rng.randrange(0x80), rng.randrange(0x80, 0x800), rng.randrange(0x800, 0xD800), rng.randrange(0xE000, 0x110000), 0xE9, 0x1F600, 0x430])
            want = dfa.step(q, chr(cp).encode("utf-8"))
            got = next((t for t, ranges in moves[q].items() if any(lo <= cp <= hi for lo, hi in ranges)), -1)
            assert got == want, (pattern, q, hex(cp))


def test_char_transitions_are_maximal_disjoint_runs():
    # byte runs read as one range must end exactly where the byte DFA's target changes: at each
    # range's edges the next code point goes elsewhere, and no two ranges of a state overlap
    for pattern in ("^[\u00c0-\u07ff]x$", "^[^\u0300\u0800]{1,3}$", "^(?:[\u0100-\u017f]|[\U00010000-\U0001ffff]|\\S)*$", "^\\S+\\s$"):
        dfa = regular_dfa(pattern_language(pattern))
        for q, by_target in enumerate(char_transitions(dfa)):
            spans = sorted((lo, hi, t) for t, ranges in by_target.items() for lo, hi in ranges)
            for (_, hi, _), (lo, _, _) in zip(spans, spans[1:]):
                assert hi < lo, (pattern, q)
            for lo, hi, t in spans:
                for cp in (lo, hi, (lo + hi) // 2):
                    if 0xD800 <= cp <= 0xDFFF:
                        continue
                    assert dfa.step(q, chr(cp).encode("utf-8")) == t, (pattern, q, hex(cp))
                for cp in (lo - 1, hi + 1):  # a neighbour going to t too would belong to this range
                    if 0 <= cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF:
                        assert dfa.step(q, chr(cp).encode("utf-8")) != t, (pattern, q, hex(cp))


def test_lengths_agree_with_a_search():
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randint(1, 6)
        succ = [set(rng.sample(range(n), rng.randint(0, min(2, n)))) for _ in range(n)]
        accepting = frozenset(rng.sample(range(n), rng.randint(1, n)))
        lengths = _Lengths(succ, accepting)
        for q in range(n):
            exact, layer = set(), set(accepting)  # the k <= 40 after which q can accept
            for k in range(41):
                if q in layer:
                    exact.add(k)
                layer = {p for p in range(n) if succ[p] & layer}
            for lo, hi in ((0, 0), (0, 5), (3, 9), (7, 40), (12, 13), (-2, 1)):
                assert lengths.possible(q, lo, hi) == any(lo <= k <= hi for k in exact), (succ, accepting, q, lo, hi)


def test_members_are_handed_out_only_when_they_can_finish():
    """a{3}(bb)* within 8 characters: after "aaabb" (5) one more pair fits, after "aaabbbb" none."""
    dfa = regular_dfa(pattern_language("^a{3}(?:bb)*$"))
    family = LengthProduct(dfa, 0, 8)
    assert family.alive((dfa.step(0, b"aaabb"), 5)) and family.alive((dfa.step(0, b"aaab"), 4))
    assert not family.alive((dfa.step(0, b"aaabbbbb"), 8))  # would need a 9th character
    assert not _lazy_nodes(family.body((dfa.step(0, b"aaabbbb"), 7)))  # b would lead nowhere
    assert [n.key for n in _lazy_nodes(family.body((dfa.step(0, b"aaabbb"), 6)))] == [(dfa.step(0, b"aaabbbb"), 7)]
