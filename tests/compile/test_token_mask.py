"""Token masks: the loop shortcut (tokens made only of bytes a state loops on) equals a full walk."""

import numpy as np
import pytest

import strictgen as sg
from strictgen.compile.machine import DEAD
from strictgen.tokenizer.trie import pack_bits


@pytest.mark.parametrize("prefix", ['{"key": "va', '["x", "', '{"a": [1, {"b": "\\u00e9 ', '"'])
def test_loop_split_equals_full_trie_walk(qwen, prefix):
    grammar = sg.GrammarCompiler(qwen).compile_json()
    m = sg.GrammarMatcher(grammar)
    assert m.accept_string(prefix)
    masker, state = grammar.masker, m.state
    loop = np.flatnonzero(grammar.machine.compute_row(state) == state)
    assert len(loop) > 90  # inside a string: the state loops on every ASCII byte but quote and backslash
    key = bytes(loop.astype(np.uint8))
    inside, count = qwen.trie.loop_inside(key), qwen.trie.loop_inside_count(key)
    assert count == inside.sum() > 50_000
    shortcut = masker._allowed(state)
    assert np.array_equal(shortcut, pack_bits(_token_by_token(grammar, qwen, state), qwen.vocab_size))


def _token_by_token(grammar, tok, state) -> np.ndarray:
    """The obviously correct mask (without EOS): run the machine over every text token's bytes."""
    machine = grammar.machine
    return np.array(
        [bool(b) and not tok.is_special[i] and machine.step_bytes(state, b) != DEAD for i, b in enumerate(tok.all_token_bytes)]
    )


OPEN_KEYS = {
    "type": "object",
    "properties": {"CloneRepository": {"type": "integer"}, "Checkout": {"type": "integer"}},
    "additionalProperties": {"type": "integer"},
}
SHORTCUT_CASES = [
    (OPEN_KEYS, '{"Clo'),  # a known key so far, or any other key: not a self-loop
    (OPEN_KEYS, '{"CloneRepository": 1, "C'),
    (OPEN_KEYS, '{"x'),
    ({"type": "string"}, '"中文 and '),  # a free string body: whole non-ASCII characters loop too
    ({"type": "string"}, b'"\xe4'),  # inside a character: a byte prefix
    ({"type": "string", "pattern": "^[a-zé]*$"}, '"aé'),  # loops on one non-ASCII character only
    ({"type": "object", "additionalProperties": {"type": "string"}}, '{"键": "值'),
    ({"type": "string", "pattern": "^[a-z]+(-[a-z0-9]+)*$"}, '"ab-'),
    ({"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}, '{"name": "ab'),
    ({"type": "string", "maxLength": 12}, '"'),  # a counted chain: tokens of up to 12 plain characters
    ({"type": "string", "minLength": 3, "maxLength": 300}, '"x'),  # long bounds count through a called character rule
    ({"type": "string", "pattern": "^[a-z]{3,8}$"}, '"ab'),
    ({"type": "string", "maxLength": 7}, '"中'),  # characters, not bytes, are counted
    ({"type": "string", "maxLength": 200}, '"ab中'),
    ({"type": "string", "maxLength": 20}, '"' + "x" * 17),  # three characters left
    ({"type": "object", "properties": {"k": {"type": "string", "maxLength": 64}}}, '{"k": "+1-'),
    ({"type": "array", "items": {"type": "string", "maxLength": 4}}, '["abc", "d'),
    ({"type": "array", "items": {"type": "number"}}, "[1.5, -"),
    ({"enum": ["alpha", "alphabet", "beta"]}, '"alph'),
    # wide loops whose other tokens are too many for a suffix trie: their suffixes are walked grouped by first byte
    ({"type": "string", "format": "uri"}, '"https://www'),
    ({"type": "string", "format": "uri"}, '"https://example.com/pa'),
    ({"type": "string", "pattern": "^[A-Za-z0-9._~:/?#@!$&'()*+,;=-]+$"}, '"ab'),
    ({}, ""),
]


@pytest.mark.parametrize("schema,prefix", SHORTCUT_CASES)
def test_mask_equals_token_by_token(qwen, schema, prefix):
    """Whatever shortcut `_allowed` takes (loop split, first-byte split, text tail), the tokens it
    allows are exactly those whose bytes the machine accepts."""
    grammar = sg.GrammarCompiler(qwen).compile_json_schema(schema)
    m = sg.GrammarMatcher(grammar)
    assert m.accept_string(prefix)
    assert np.array_equal(grammar.masker._allowed(m.state), pack_bits(_token_by_token(grammar, qwen, m.state), qwen.vocab_size))


def test_byte_sets_match_token_bytes(qwen):
    sets = qwen.trie.byte_sets()
    rng = np.random.default_rng(0)
    for tid in rng.integers(0, 151643, size=300).tolist():
        expected = np.zeros(4, dtype=np.uint64)
        for b in qwen.token_bytes(tid):
            expected[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
        assert np.array_equal(sets[tid], expected)


TWO_LONG_STRINGS = {
    "type": "object",
    "properties": {"a": {"type": "string", "maxLength": 400}, "b": {"type": "string", "maxLength": 400}},
    "required": ["a", "b"],
}


def _packed_reference(grammar, tok, state) -> np.ndarray:
    allowed = _token_by_token(grammar, tok, state)
    if grammar.machine.accepting[state]:
        allowed[list(tok.eos_token_ids)] = True
    return pack_bits(allowed, tok.vocab_size)


def test_horizon_keys_share_masks_only_where_no_token_can_tell(vocab):
    """Inside a long counted string, positions with more characters left than any token is long
    share one mask (one horizon key); near the end they do not, and every mask served, shared or
    not, equals the token-by-token reference."""
    _, tok = vocab
    grammar = sg.GrammarCompiler(tok).compile_json_schema(TWO_LONG_STRINGS)
    masker, horizon = grammar.masker, grammar.masker._horizon
    assert horizon.active
    depth = tok.trie.depth
    text = ("ab中c" * 200)[:400]
    keys = {}
    for counted in sorted({0, 1, 2, 7, 100, 400 - depth - 3, 400 - depth - 1, 400 - depth, 400 - depth + 1, 398, 399, 400}):
        for prefix in ('{"a": "', '{"a": "x", "b": "'):
            m = sg.GrammarMatcher(grammar)
            assert m.accept_string(prefix + text[:counted])
            keys[prefix, counted] = horizon.key(m.state)
            assert np.array_equal(masker.mask(m.state), _packed_reference(grammar, tok, m.state)), (prefix, counted)
    for prefix in ('{"a": "', '{"a": "x", "b": "'):
        far = [keys[prefix, c] for c in (1, 2, 7, 100)]
        assert len(set(far)) == 1  # all far from the end: one shared mask
        near = [keys[prefix, c] for c in (400 - depth + 1, 398, 399, 400)]  # a token can see the end
        assert len(set(near)) == len(near) and not set(near) & set(far)
    assert keys['{"a": "', 100] != keys['{"a": "x", "b": "', 100]  # what follows the string differs
    assert masker._shared is not None and len(masker._shared) >= 2  # the merging keys' masks, made on first use
    assert masker.num_cached() == len(masker.store) + len(masker._shared)


def test_a_masker_whose_keys_merge_nothing_makes_no_shared_map(qwen):
    """The map of masks by horizon key is made when a key first merges states (`_shared_masks`),
    not by every masker: a grammar without such keys serves its masks from the store alone."""
    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_regex("abc[0-9]+")
    masker = grammar.masker
    m = sg.GrammarMatcher(grammar)
    for ch in "abc12":
        assert np.array_equal(masker.mask(m.state), _packed_reference(grammar, qwen, m.state))
        assert m.accept_string(ch)
    assert masker._shared is None
    assert masker.num_cached() == len(masker.store) >= 5


def test_horizon_classes_of_a_counter():
    from strictgen.compile.automaton import compile_automaton, horizon_classes, nullable_rules
    from strictgen.grammar.ir import Grammar
    from strictgen.grammar.regex import parse_regex

    dfa = compile_automaton(Grammar({"root": parse_regex("[a-z]{0,60}!")})).rules[0]
    classes = horizon_classes(dfa, 10)
    # states with more than 10 letters left agree on every input of 10 steps; the last ones do not
    assert classes is not None and len(set(classes.tolist())) < dfa.num_states
    m = {}
    state = 0
    for i in range(61):
        m[i] = int(classes[state])
        state = next(t for t, bs in dfa.byte_groups[state] if ord("a") in bs) if i < 60 else state
    assert len({m[i] for i in range(0, 50)}) == 1
    assert len({m[i] for i in range(50, 61)}) == 11
    assert horizon_classes(dfa, 100) is None  # nothing merges within the whole counter
    json_rules = sg.GrammarCompiler(sg.TokenizerInfo.from_name("smollm2")).compile_json().automaton.rules
    assert 0 not in nullable_rules(json_rules)  # a JSON value reads at least one byte


def test_the_c_walk_refuses_arrays_that_do_not_fit(qwen):
    """Bad input to the C walk is a ValueError, never a write outside an array."""
    from strictgen.compile import _mask_bits, _walk

    grammar = sg.GrammarCompiler(qwen).compile_json_schema({"type": "string"})
    masker, trie, state = grammar.masker, qwen.trie, grammar.machine.start
    args = masker._walk_args(state, trie, None)
    with pytest.raises(ValueError, match="does not fit"):
        _walk.walk_bits(*args, np.zeros(4, dtype=np.int32))  # a bitmask of 128 tokens
    with pytest.raises(ValueError, match="does not fit"):
        _mask_bits.set_bits(np.zeros(4, dtype=np.int32), np.array([5, 500], dtype=np.int64))
    nodes = trie.walk_nodes.copy()
    nodes[4 * int(trie.roots[ord('"')]) + 1] = len(trie.node_byte) + 10  # children past the end
    bad = (args[0], args[1], nodes) + args[3:]
    with pytest.raises(ValueError, match="outside the trie"):
        _walk.walk_bits(*bad, np.zeros(len(masker.eos_only), dtype=np.int32))
    # and the good arrays give the mask
    packed = np.zeros(len(masker.eos_only), dtype=np.int32)
    _walk.walk_bits(*args, packed)
    assert np.array_equal(packed, pack_bits(_token_by_token(grammar, qwen, state), qwen.vocab_size))


def test_age_keeps_read_masks_from_eviction_once_half_full(qwen):
    """`TokenMasker.age` (a batch fill's one aging per state): once the cache is half full, an
    aged state outlives states computed before it; below half full it is a no-op by design."""
    from strictgen.compile.token_mask import TokenMasker

    grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_regex("abcdefgh")
    masker = TokenMasker(grammar.machine, qwen.trie, qwen.vocab_size, qwen.eos_token_ids, max_cached=4)
    m = sg.GrammarMatcher(grammar)
    states = [m.state]
    for ch in "abcd":
        assert m.accept_string(ch)
        states.append(m.state)
    assert len(set(states)) == 5
    masker.mask(states[0])
    masker.age([states[0]])  # 1 of 4: below half, nothing aged
    masker.mask(states[1])
    masker.age([states[0], states[0], DEAD])  # 2 of 4: states[0] now newer than states[1]; DEAD is not cached
    for s in states[2:]:
        masker.mask(s)  # the fifth entry evicts the oldest: states[1], not the aged states[0]
    assert masker.cached(states[0]) is not None and masker.cached(states[1]) is None


def test_restricted_walks_start_from_the_roots_of_their_first_bytes(qwen):
    """`_roots_from` (a restricted walk's roots, remembered per trie and set of first bytes) gives
    the depth-0 nodes whose byte is in the set, the same on a second ask (a memo hit) as on the
    first, per trie: a sub-trie with other roots gets its own; and a walk from them allows
    exactly the whole walk's tokens that start with those bytes."""
    from strictgen.compile import _walk
    from strictgen.tokenizer.trie import words_for

    grammar = sg.GrammarCompiler(qwen).compile_json_schema({"type": "string"})
    masker, trie = grammar.masker, qwen.trie
    state = sg.GrammarMatcher(grammar).state
    rng = np.random.default_rng(7)
    whole = np.zeros(words_for(qwen.vocab_size), dtype=np.int32)
    _walk.walk_bits(*masker._walk_args(state, trie, None), whole)
    allowed = np.flatnonzero(np.unpackbits(whole.view(np.uint8), bitorder="little"))
    first_of = np.array([qwen.token_bytes(int(t))[0] for t in allowed])
    sub = trie.split_lead_trie
    for _ in range(6):
        first = rng.random(256) < 0.3
        for t in (trie, sub):
            expected = np.flatnonzero(first[t.node_byte[: len(t.roots)]])
            assert np.array_equal(masker._roots_from(t, first), expected)
            assert np.array_equal(masker._roots_from(t, first.copy()), expected)  # asked again: the memo's
        packed = np.zeros_like(whole)
        _walk.walk_bits(*masker._walk_args(state, trie, first), packed)
        got = np.flatnonzero(np.unpackbits(packed.view(np.uint8), bitorder="little"))
        assert np.array_equal(got, allowed[first[first_of]])
