"""The vocabulary's distinct multi-byte characters (`VocabTrie.char_table`, built in C by
`_vocab.chars`) and the tokens holding each: what a loop that takes all but a few characters
builds its inside set from (tests/compile/test_char_inside.py)."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.tokenizer import _vocab
from strictgen.tokenizer.trie import VocabTrie

# whole characters of every width, lone leads and continuations, invalid leads, ASCII
PIECES = [b"a", b":", "é".encode(), "\u00a0".encode(), "中".encode(), "😀".encode(), b"\xc3", b"\xe4\xb8", b"\x80", b"\xc0\xaf", b"\xf5\x80\x80\x80", b""]
TOKENS = st.lists(st.lists(st.sampled_from(PIECES), max_size=4).map(b"".join), min_size=1, max_size=60)

# a whole, valid multi-byte UTF-8 character (RFC 3629), as the vocabulary's facts find them
WHOLE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}|\xed[\x80-\x9f][\x80-\xbf]"
                   rb"|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2}")


def _holders(tokens: list[bytes]) -> dict[bytes, set[int]]:
    """Each whole character, the tokens holding it (read left to right, as a decoder would)."""
    out: dict[bytes, set[int]] = {}
    for i, data in enumerate(tokens):
        for match in WHOLE.finditer(data):
            out.setdefault(match.group(), set()).add(i)
    return out


@settings(max_examples=200, deadline=None)
@given(TOKENS)
def test_char_table_lists_every_character_and_the_tokens_holding_it(tokens):
    trie = VocabTrie(tokens, np.zeros(len(tokens), dtype=bool))
    chars, by_char, bounds = trie.char_table
    assert len(chars) % 4 == 0 and len(bounds) == len(chars) // 4 + 1 and bounds[0] == 0 and bounds[-1] == len(by_char)
    got = {}
    for i, raw in enumerate(chars.reshape(-1, 4)):
        char = bytes(raw).rstrip(b"\0")
        held = by_char[bounds[i] : bounds[i + 1]].tolist()
        assert held == sorted(set(held))  # each token once, by id
        got[char] = set(held)
    assert got == _holders(tokens)


def test_chars_refuses_arrays_that_do_not_fit():
    trie = VocabTrie([b"a\xc3\xa9", "中".encode()], np.zeros(2, dtype=bool))
    facts = trie.facts
    with pytest.raises(ValueError, match="char_width"):
        _vocab.chars(facts.flat, facts.starts, facts.lengths, facts.char_width[:-1])
    with pytest.raises(ValueError, match="out of flat"):
        _vocab.chars(facts.flat, facts.starts, facts.lengths + 1, facts.char_width)


def test_the_vocabularys_table_is_built_with_it(qwen):
    assert "char_table" in qwen.trie.__dict__  # no mask fill pays for it
    chars = qwen.trie.char_table[0].reshape(-1, 4)
    assert len(chars) > 10_000 and "é".encode() + b"\0\0" in {bytes(c) for c in chars}
