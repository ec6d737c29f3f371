"""The trie's tokens in lexicographic order (`VocabTrie.lex_order`, built in C by
`_vocab.lex_order`): every node's subtree is one slice of them, which a walk reaching a loop state
reads instead of visiting the subtree's nodes (tests/compile/test_loop_walk.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.tokenizer import _vocab
from strictgen.tokenizer.trie import VocabTrie

# few byte values, so that tokens share prefixes, one of them a multi-byte character's lead
TOKENS = st.lists(st.binary(min_size=0, max_size=6).map(lambda b: bytes(b"ab\"\xc3"[x % 4] for x in b)), min_size=1, max_size=60)


def _prefix(trie: VocabTrie, node: int) -> bytes:
    out = []
    while node >= 0:
        out.append(int(trie.node_byte[node]))
        node = int(trie._node_parent[node])
    return bytes(reversed(out))


@settings(max_examples=200, deadline=None)
@given(TOKENS)
def test_lex_order_sorts_the_tokens_and_each_subtree_is_a_slice(tokens):
    trie = VocabTrie(tokens, np.zeros(len(tokens), dtype=bool))
    lex, bounds = trie.lex_order
    text = [i for i, b in enumerate(tokens) if b]
    assert sorted(lex.tolist()) == text  # every text token once
    assert [tokens[i] for i in lex.tolist()] == sorted(tokens[i] for i in text)
    for node in range(trie.num_nodes):
        lo, hi = bounds[2 * node], bounds[2 * node + 1]
        prefix = _prefix(trie, node)
        assert sorted(lex[lo:hi].tolist()) == [i for i in text if tokens[i].startswith(prefix)]


def test_lex_order_on_a_real_vocabulary(qwen):
    trie = qwen.trie
    lex, bounds = trie.lex_order
    assert len(lex) == trie.num_text_tokens and len(bounds) == 2 * trie.num_nodes
    data = [qwen.trie.token_bytes[i] for i in lex.tolist()]
    assert all(a <= b for a, b in zip(data, data[1:]))
    rng = np.random.default_rng(1)
    for node in rng.choice(trie.num_nodes, 50):
        prefix = _prefix(trie, int(node))
        inside = lex[bounds[2 * node] : bounds[2 * node + 1]]
        assert all(trie.token_bytes[i].startswith(prefix) for i in inside.tolist())
        # the slice is the whole subtree: its neighbours on both sides do not start with the prefix
        for at in (bounds[2 * node] - 1, bounds[2 * node + 1]):
            if 0 <= at < len(lex):
                assert not trie.token_bytes[int(lex[at])].startswith(prefix)


def test_lex_order_refuses_records_outside_the_trie():
    trie = VocabTrie([b"ab", b"b"], np.zeros(2, dtype=bool))
    walk = trie.walk_nodes.copy()
    walk[0] = 0  # node 0's children would start at itself
    walk[1] = 5
    with pytest.raises(ValueError, match="out of range"):
        _vocab.lex_order(walk, trie.node_tokens, len(trie.roots))
    with pytest.raises(ValueError, match="out of range"):
        _vocab.lex_order(trie.walk_nodes, trie.node_tokens, trie.num_nodes + 1)
