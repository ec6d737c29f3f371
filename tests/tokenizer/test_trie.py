"""VocabTrie: the numpy-built sub-trie equals a trie built from scratch over the same tokens."""

import numpy as np
import pytest

from strictgen.tokenizer.trie import VocabTrie


def _same(a: VocabTrie, b: VocabTrie) -> None:
    assert a.depth == b.depth and a.num_nodes == b.num_nodes
    for d in range(a.depth):
        assert np.array_equal(a.bytes[d], b.bytes[d]) and np.array_equal(a.parent[d], b.parent[d])
    for d in range(a.depth - 1):
        assert np.array_equal(a.child_start[d], b.child_start[d]) and np.array_equal(a.child_end[d], b.child_end[d])
    assert np.array_equal(a.token_node, b.token_node)
    for d in range(a.depth):
        assert np.array_equal(a.text_lo[d], b.text_lo[d]) and np.array_equal(a.text_hi[d], b.text_hi[d])
    assert np.array_equal(a.text_token, b.text_token)


def test_text_ranges_enumerate_each_subtree(vocab):
    """The texts numbered text_lo..text_hi under a node are exactly the token texts with its prefix."""
    _, tok = vocab
    trie = tok.trie
    texts = sorted({tok.token_bytes(t) for t in range(tok.vocab_size) if trie.token_node[t] < trie.num_nodes})
    assert [tok.token_bytes(int(t)) for t in trie.text_token] == texts
    rng = np.random.default_rng(0)
    for d in [0, 1, 2, 5]:
        for i in rng.choice(len(trie.bytes[d]), 20):
            k = int(trie.text_lo[d][i])
            prefix = texts[k][: d + 1]
            under = [t for t in texts if t.startswith(prefix)]
            assert texts[k : int(trie.text_hi[d][i])] == under


@pytest.mark.parametrize("seed", range(4))
def test_subtrie_equals_fresh_trie(vocab, seed):
    _, tok = vocab
    trie = tok.trie
    rng = np.random.default_rng(seed)
    keep = rng.random(tok.vocab_size) < [0.5, 0.05, 0.95, 0.001][seed]
    fresh = VocabTrie(tok.all_token_bytes, tok.is_special | ~keep)
    sub = trie.subtrie(keep)
    _same(sub, fresh)
    keep2 = keep & (rng.random(tok.vocab_size) < 0.5)  # a sub-trie of a sub-trie
    _same(sub.subtrie(keep2), VocabTrie(tok.all_token_bytes, tok.is_special | ~keep2))


def test_subtrie_of_nothing_is_empty(vocab):
    _, tok = vocab
    sub = tok.trie.subtrie(np.zeros(tok.vocab_size, dtype=bool))
    assert sub.depth == 0 and sub.num_nodes == 0 and (sub.token_node == 0).all()
