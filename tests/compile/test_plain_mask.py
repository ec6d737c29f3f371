"""`_walk.plain_mask`: a first-time mask of a state no string shortcut takes, in one C call (the
walk, the blocked tokens cleared, EOS set where the state accepts), equal to the token-by-token
reference; a state with a wide target is left to Python's shortcuts, its row untouched."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile import _mask_bits, _walk
from strictgen.compile.machine import DEAD
from strictgen.tokenizer.trie import pack_bits, words_for

SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "bc"]}}, "name": {"type": "string"}},
    "required": ["id"],
}
DOCUMENT = '{"id": -12, "tags": ["a", "bc"], "name": "x y"}'


@pytest.fixture(scope="module")
def smollm2():
    return sg.TokenizerInfo.from_name("smollm2")


@pytest.fixture(scope="module")
def grammar(smollm2):
    return sg.GrammarCompiler(smollm2).compile_json_schema(SCHEMA)


def _reference(grammar, tok, state, blocked) -> np.ndarray:
    """The obviously correct mask: every text token's bytes run through the machine, the blocked
    ones cleared, EOS where the root may end."""
    machine = grammar.machine
    allowed = np.array([bool(b) and not tok.is_special[i] and machine.step_bytes(state, b) != DEAD for i, b in enumerate(tok.all_token_bytes)])
    packed = pack_bits(allowed, tok.vocab_size) & blocked
    if machine.accepting[state]:
        eos = np.zeros(tok.vocab_size, dtype=bool)
        eos[list(tok.eos_token_ids)] = True
        packed |= pack_bits(eos, tok.vocab_size)
    return packed


@settings(max_examples=12, deadline=None)
@given(cut=st.integers(0, len(DOCUMENT)), seed=st.integers(0, 2**32 - 1))
def test_plain_mask_equals_the_reference_or_declines(grammar, smollm2, cut, seed):
    m = sg.GrammarMatcher(grammar)
    assert m.accept_string(DOCUMENT[:cut])
    state, masker = m.state, grammar.masker
    blocked = np.random.default_rng(seed).integers(-(2**31), 2**31, words_for(smollm2.vocab_size), dtype=np.int64).astype(np.int32)
    packed = np.full(len(blocked), 0x5A5A5A5A, dtype=np.int32)  # a used scratch row: zeroed when taken
    taken = _walk.plain_mask(*masker._walk_args(state, smollm2.trie, None), packed, blocked, masker.eos)
    widest = grammar.machine.widest(state, 1)
    assert taken == (not widest or widest[0][1] < _walk.PLAIN_WIDTH)
    if taken:
        assert np.array_equal(packed, _reference(grammar, smollm2, state, blocked))
    else:
        assert (packed == 0x5A5A5A5A).all()  # declined: out untouched
    # and what a matcher is served, whichever path made it, is the reference with nothing blocked
    all_tokens = np.full(len(blocked), -1, dtype=np.int32)
    assert np.array_equal(masker.mask(state), _reference(grammar, smollm2, state, all_tokens))


def test_both_paths_are_taken_along_a_document(grammar):
    """The document's states include plain ones (after a comma) and wide ones (a string body)."""
    m, taken = sg.GrammarMatcher(grammar), set()
    for ch in DOCUMENT:
        widest = grammar.machine.widest(m.state, 1)
        taken.add(not widest or widest[0][1] < _walk.PLAIN_WIDTH)
        assert m.accept_string(ch)
    assert taken == {True, False}


def test_plain_mask_refuses_arrays_that_do_not_fit(grammar, smollm2):
    """Bad input is a ValueError, never a write outside an array."""
    masker, state = grammar.masker, grammar.machine.start
    args = masker._walk_args(state, smollm2.trie, None)
    width = words_for(smollm2.vocab_size)
    with pytest.raises(ValueError, match="differ in length"):
        _walk.plain_mask(*args, np.zeros(width, dtype=np.int32), np.zeros(3, dtype=np.int32), masker.eos)
    with pytest.raises(ValueError, match="does not fit"):
        _walk.plain_mask(*args, np.zeros(4, dtype=np.int32), None, masker.eos)  # a bitmask of 128 tokens
    m = sg.GrammarMatcher(grammar)
    assert m.accept_string(DOCUMENT)  # accepting: the EOS ids are written
    args = masker._walk_args(m.state, smollm2.trie, None)
    with pytest.raises(ValueError, match="does not fit"):
        _walk.plain_mask(*args, np.zeros(width, dtype=np.int32), None, np.array([width * 32], dtype=np.int64))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), with_first=st.booleans(), by_char=st.booleans())
def test_set_owned_bits_equals_numpy(smollm2, seed, with_first, by_char):
    """`_mask_bits.set_owned_bits` (the suffix walk's owners, entering filter and bits in one call)
    sets what owner[...], VocabTrie.entering and set_bits set."""
    trie, rng = smollm2.trie, np.random.default_rng(seed)
    owner = rng.integers(0, smollm2.vocab_size, 5000)
    ids = rng.choice(len(owner), 700, replace=False).astype(np.int64)
    first = rng.random(256) < 0.3
    tokens = owner[ids]
    if with_first:
        tokens = tokens[trie.entering(first, by_char, tokens)]
    expected = np.zeros(words_for(smollm2.vocab_size), dtype=np.int32)
    _mask_bits.set_bits(expected, tokens)
    packed = np.zeros_like(expected)
    _mask_bits.set_owned_bits(packed, ids, owner, trie.first_bytes, first if with_first else None,
                         trie.starts_whole_char if with_first and by_char else None)
    assert np.array_equal(packed, expected)


def test_set_owned_bits_refuses_ids_out_of_range(smollm2):
    trie, packed = smollm2.trie, np.zeros(words_for(smollm2.vocab_size), dtype=np.int32)
    owner = np.array([3, 5, smollm2.vocab_size + 40], dtype=np.int64)
    for ids in ([3], [-1], [2]):  # past owner, negative, an owner past the bitmask
        with pytest.raises(ValueError, match="does not fit"):
            _mask_bits.set_owned_bits(packed, np.array(ids, dtype=np.int64), owner, trie.first_bytes, None, None)
    with pytest.raises(ValueError, match="per byte value"):
        _mask_bits.set_owned_bits(packed, np.array([0], dtype=np.int64), owner, trie.first_bytes, np.zeros(3, dtype=bool), None)
