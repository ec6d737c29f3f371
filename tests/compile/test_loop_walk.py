"""The walk that reads what comes back to a loop state unseen (`TokenMasker._live_loop_bits`,
`_walk.walk_loop_bits`): from a key's start, the tokens beginning with a known name's first letters
mostly come back to "any other key" a byte later, and below such a node the walk reads the
subtree's tokens from their lexicographic slice instead of visiting its nodes; a loop that takes
all but a few characters reads the tokens of the characters that loop so too (`_char_inside`). Its masks must be
the plain definition's: a token is allowed iff the machine accepts its bytes from the state."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile import _walk, token_mask
from strictgen.compile.machine import DEAD

from .walk_spy import spy_walk


@pytest.fixture
def loop_walks(monkeypatch):
    """The loop states of the loop walks the test ran."""
    return spy_walk(monkeypatch, "walk_loop_bits", 8)


def _definition(grammar, state: int, ids) -> set[int]:
    """The tokens of `ids` whose bytes the machine accepts from `state`, one by one."""
    step, tokens = grammar.machine.step_bytes, grammar.masker.trie.token_bytes
    return {i for i in ids if tokens[i] and step(state, tokens[i]) != DEAD}


def _bits(packed: np.ndarray, ids) -> set[int]:
    return {i for i in ids if packed[i >> 5] >> (i & 31) & 1}


KEYED = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "nickname": {"type": "string"},
                                          "city": {"type": "string"}, "tags": {"type": "array"}}}


@pytest.mark.parametrize("prefix", ['{"', '{"name": "x", "', '{"n', '{"ni', '{"c'])
def test_key_starts_walk_the_loop_and_equal_the_plain_walk(qwen, loop_walks, prefix):
    grammar = sg.GrammarCompiler(qwen).compile_json_schema(KEYED)
    m = sg.GrammarMatcher(grammar)
    assert m.accept_string(prefix)
    got = grammar.masker._allowed(m.state)
    if prefix.endswith('"'):  # from a key's start the letters of known names are walked with the loop
        assert loop_walks, prefix
    assert np.array_equal(got, grammar.masker._live_bits(m.state)), prefix
    rng = np.random.default_rng(len(prefix))
    sample = rng.choice(np.flatnonzero(qwen.trie.token_node < qwen.trie.num_nodes), 400).tolist()
    assert _bits(got, sample) == _definition(grammar, m.state, sample)


# a small vocabulary over a few bytes: letters of the names, quotes, escapes, a colon, a space,
# whole characters of 2-4 bytes, two of them spaces (which leave `[^:\s]`), lone lead and
# continuation bytes (byte-fallback pieces)
PIECES = [b"n", b"a", b"m", b"e", b"x", b'"', b"\\", b":", b" ", b"\xc3\xa9", b"\xc3", b"}", b",", "中".encode(), "😀".encode(),
          "\u00a0".encode(), "\u3000".encode(), b"\xe4\xb8", b"\x80"]


@st.composite
def vocabularies(draw) -> list[bytes]:
    words = draw(st.lists(st.lists(st.sampled_from(PIECES), min_size=1, max_size=5).map(b"".join), min_size=20, max_size=120, unique=True))
    letters = [p for p in PIECES if p.isalpha()]
    # many tokens made of letters only, so that the string shortcuts pay (a fifth of the vocabulary)
    words += draw(st.lists(st.lists(st.sampled_from(letters), min_size=1, max_size=6).map(b"".join), min_size=40, max_size=80, unique=True))
    return [b"<eos>"] + sorted(set(words) - {b"<eos>"})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tokens=vocabularies(), names=st.lists(st.text("namex", min_size=1, max_size=5), min_size=1, max_size=4, unique=True), data=st.data())
def test_random_key_states_on_random_vocabularies_follow_the_definition(tokens, names, data):
    """Random vocabularies and objects with random known names (any other key allowed): at a
    random point of a key, the mask with its shortcuts is the definition's, token by token, and
    every token it allows leads to a live state."""
    info = sg.TokenizerInfo(tokens, special_token_ids=[0], eos_token_ids=[0])
    schema = {"type": "object", "properties": {n: {"type": "string"} for n in names}}
    grammar = sg.GrammarCompiler(info).compile_json_schema(schema)
    key = data.draw(st.sampled_from(names) | st.text("namexé", max_size=4))
    m = sg.GrammarMatcher(grammar)
    assert m.accept_string('{"' + json.dumps(key)[1:-1][: data.draw(st.integers(0, len(key)))])
    got = grammar.masker._allowed(m.state)
    ids = range(1, len(tokens))
    assert _bits(got, ids) == _definition(grammar, m.state, ids)


LETTERS = bytes(range(ord("a"), ord("z") + 1))


def test_walk_loop_bits_refuses_arrays_that_do_not_fit(qwen):
    grammar = sg.GrammarCompiler(qwen).compile_json_schema(KEYED)
    m = sg.GrammarMatcher(grammar)
    assert m.accept_string('{"')
    masker, trie = grammar.masker, qwen.trie
    facts = trie.facts
    lex, bounds = trie.lex_order
    packed = np.zeros_like(masker.eos_only)
    inside = np.zeros_like(packed)
    args = masker._walk_args(m.state, trie, None)
    with pytest.raises(ValueError, match="do not match the trie"):
        _walk.walk_loop_bits(*args, packed, m.state, LETTERS, inside, lex, bounds[:-2], facts.flat, facts.starts, facts.lengths, True)
    with pytest.raises(ValueError, match="loop state out of range"):
        _walk.walk_loop_bits(*args, packed, grammar.machine.num_states + 5, LETTERS, inside, lex, bounds, facts.flat, facts.starts, facts.lengths, True)
    bad = bounds.copy()
    bad[1::2] = len(lex) + 1  # every slice runs past the tokens
    state_after_n = grammar.machine.step_bytes(m.state, b"nx")
    with pytest.raises(ValueError, match="outside the trie"):
        _walk.walk_loop_bits(*args, packed, state_after_n, LETTERS, inside, lex, bad, facts.flat, facts.starts, facts.lengths, True)


STRING_SCHEMAS = [
    {"type": "string"},
    {"type": "string", "pattern": "^[a-z\\s]+$"},
    {"type": "string", "pattern": "^[^:\\s]+$"},
    {"type": "string", "pattern": "^(na|[xé])*$"},
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(tokens=vocabularies(), schema=st.sampled_from(STRING_SCHEMAS), data=st.data())
def test_whole_vocabulary_loop_walks_follow_the_definition(monkeypatch, tokens, schema, data):
    """Every string-like state walked whole with its loop (as wide loops are, whose suffixes are
    too many for a trie: here any number is too many): on random vocabularies and random points
    of a string, the mask is the definition's, token by token."""
    monkeypatch.setattr(token_mask, "MAX_SUFFIX_TOKENS", -1)
    info = sg.TokenizerInfo(tokens, special_token_ids=[0], eos_token_ids=[0])
    grammar = sg.GrammarCompiler(info).compile_json_schema(schema)
    text = data.draw(st.text("namexé :中\u00a0", max_size=6))
    m = sg.GrammarMatcher(grammar)
    m.accept_string('"')
    for char in json.dumps(text, ensure_ascii=data.draw(st.booleans()))[1:-1]:
        if not m.accept_string(char):
            break
    got = grammar.masker._allowed(m.state)
    ids = range(1, len(tokens))
    assert _bits(got, ids) == _definition(grammar, m.state, ids)
    if m.state != DEAD and grammar.machine.group(m.state, m.state):
        _check_char_inside(grammar, m.state, ids)


def _check_char_inside(grammar, t: int, ids) -> None:
    """The character inside set of loop state t (`TokenMasker._char_inside`: `[^:\\s]+` loops on
    every character but a few spaces), against its definition: the tokens each of whose
    characters (or, where not UTF-8, bytes) steps t back to t."""
    inside = grammar.masker._char_inside(t, grammar.machine.group(t, t))
    if inside is None:
        return
    step, tokens = grammar.machine.step_bytes, grammar.masker.trie.token_bytes

    def stays(data: bytes) -> bool:
        try:
            parts = [c.encode() for c in data.decode()]
        except UnicodeDecodeError:
            parts = [bytes([b]) for b in data]
        return all(step(t, p) == t for p in parts)

    assert _bits(inside, ids) == {i for i in ids if stays(tokens[i])}


def test_a_loop_left_by_a_few_spaces_reads_its_characters_unseen_and_equals_the_plain_walk(qwen):
    """`[^:\\s]+` loops on every character but a few Unicode spaces: its inside set holds the
    tokens made of the characters that loop (`_char_inside`), read as slices by the walk."""
    grammar = sg.GrammarCompiler(qwen).compile_json_schema({"type": "string", "pattern": "^[^:\\s]+$"})
    m = sg.GrammarMatcher(grammar)
    assert m.accept_string('"ab')
    masker, loop_key = grammar.masker, grammar.machine.group(m.state, m.state)
    inside = masker._char_inside(m.state, loop_key)
    assert inside is not None
    chars = qwen.trie.char_table[0].reshape(-1, 4)
    left = {bytes(c).rstrip(b"\0").decode() for c in chars[masker._leaving(m.state)]}
    assert "\u00a0" in left and "\u3000" in left and "é" not in left and len(left) < 40  # spaces leave, letters loop
    assert np.array_equal(masker._allowed(m.state), masker._live_bits(m.state))
    # far more tokens inside than the bytes alone give: the non-ASCII ones that loop
    assert int(np.unpackbits(inside.view(np.uint8)).sum()) > qwen.trie.loop_inside_count(loop_key) + 20_000


def test_a_loop_most_characters_leave_takes_no_character_shortcut(qwen):
    grammar = sg.GrammarCompiler(qwen).compile_json_schema({"type": "string", "pattern": "^[a-z]+$"})
    m = sg.GrammarMatcher(grammar)
    assert m.accept_string('"ab')
    assert grammar.masker._char_inside(m.state, grammar.machine.group(m.state, m.state)) is None
