"""Token masks: the loop shortcut (tokens made only of bytes a state loops on) equals a full walk."""

import numpy as np
import pytest

import strictgen as sg


@pytest.mark.parametrize("prefix", ['{"key": "va', '["x", "', '{"a": [1, {"b": "\\u00e9 ', '"'])
def test_loop_split_equals_full_trie_walk(qwen, prefix):
    grammar = sg.GrammarCompiler(qwen).compile_json()
    m = sg.GrammarMatcher(grammar)
    assert m.accept_string(prefix)
    masker, state = grammar.masker, m.state
    loop = np.flatnonzero(grammar.machine.compute_row(state) == state)
    assert len(loop) > 90  # inside a string: the state loops on every ASCII byte but quote and backslash
    inside, rest = qwen.trie.loop_split(bytes(loop.astype(np.uint8)))
    assert rest is not None and inside.sum() > 50_000
    shortcut = masker._allowed(state)
    full = masker.live_nodes(state)[qwen.trie.token_node]
    assert np.array_equal(shortcut, full)


def test_byte_sets_match_token_bytes(qwen):
    sets = qwen.trie.byte_sets()
    rng = np.random.default_rng(0)
    for tid in rng.integers(0, 151643, size=300).tolist():
        expected = np.zeros(4, dtype=np.uint64)
        for b in qwen.token_bytes(tid):
            expected[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
        assert np.array_equal(sets[tid], expected)
