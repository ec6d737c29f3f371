"""VocabTrie (built in C, _vocab.c): the walk's node records spell the tokens, the levels are the sorted prefixes, and a sub-trie equals a trie built from scratch."""

import numpy as np
import pytest

import strictgen as sg
from strictgen.tokenizer.trie import VocabTrie, pack_bits


def _same(a: VocabTrie, b: VocabTrie) -> None:
    assert a.depth == b.depth and a.num_nodes == b.num_nodes
    for d in range(a.depth):
        assert np.array_equal(a.bytes[d], b.bytes[d]) and np.array_equal(a.parent[d], b.parent[d])
    for d in range(a.depth - 1):
        assert np.array_equal(a.child_start[d], b.child_start[d]) and np.array_equal(a.child_end[d], b.child_end[d])
    assert np.array_equal(a.token_node, b.token_node)
    assert np.array_equal(a.node_byte, b.node_byte) and np.array_equal(a.roots, b.roots)
    assert np.array_equal(a.walk_nodes, b.walk_nodes) and np.array_equal(a.node_tokens, b.node_tokens)


def test_walk_records_spell_every_token(vocab):
    """Following the walk's child ranges from the roots spells each token's bytes down to its end
    node, whose token slice holds the token."""
    _, tok = vocab
    trie = tok.trie
    rng = np.random.default_rng(0)
    for tid in rng.choice(np.flatnonzero(trie.token_node < trie.num_nodes), 300):
        data = tok.token_bytes(int(tid))
        lo, hi = 0, len(trie.roots)
        node = -1
        for b in data:
            kids = [c for c in range(lo, hi) if trie.node_byte[c] == b]
            assert len(kids) == 1
            node = kids[0]
            lo, hi = (int(x) for x in trie.walk_nodes[4 * node : 4 * node + 2])
        assert node == trie.token_node[tid]
        start, end = trie.walk_nodes[4 * node + 2 : 4 * node + 4]
        assert tid in trie.node_tokens[start:end]


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


def _reference_levels(token_bytes, excluded):
    """Obviously right: depth d holds the sorted distinct (d+1)-byte prefixes of the text tokens."""
    texts = {t for i, t in enumerate(token_bytes) if t and not excluded[i]}
    prefixes = sorted({t[: d + 1] for t in texts for d in range(len(t))})
    by_depth: dict[int, list[bytes]] = {}
    for p in prefixes:
        by_depth.setdefault(len(p) - 1, []).append(p)
    index = {p: i for ps in by_depth.values() for i, p in enumerate(ps)}
    levels = [by_depth[d] for d in range(len(by_depth))]
    return levels, index


@pytest.mark.parametrize("which", ["synthetic", "smollm2"])
def test_trie_levels_equal_sorted_prefixes(which):
    """The C construction (groups split byte by byte, breadth first) against the prefixes of the tokens, on a real
    vocabulary and on one with duplicates, NUL bytes, prefixes of prefixes and excluded tokens."""
    if which == "smollm2":
        import strictgen as sg

        tok = sg.TokenizerInfo.from_name("smollm2")
        token_bytes, excluded = list(tok.all_token_bytes), tok.is_special
    else:
        token_bytes = [b"ab", b"a", b"\x00", b"a\x00", b"abc", b"ab", b"", b"b\xff", b"zz", b"a\x00\x00", b"abd", b"q"]
        excluded = np.zeros(len(token_bytes), dtype=bool)
        excluded[[6, 11]] = True  # the empty token and an excluded one
    trie = VocabTrie(token_bytes, excluded)
    levels, index = _reference_levels(token_bytes, excluded)
    assert trie.depth == len(levels)
    for d, prefixes in enumerate(levels):
        assert trie.bytes[d].tolist() == [p[-1] for p in prefixes]
        assert trie.parent[d].tolist() == [index[p[:-1]] if d else -1 for p in prefixes]
    for tid, data in enumerate(token_bytes):
        if data and not excluded[tid]:
            assert trie.token_node[tid] == trie.offsets[len(data) - 1] + index[data]
        else:
            assert trie.token_node[tid] == trie.num_nodes  # never live


def test_c_build_ignores_the_order_of_ids_and_refuses_tokens_it_cannot_hold():
    """_vocab.trie numbers nodes by prefix order whatever order the tokens come in; an empty or
    out-of-range token is a ValueError, not a crash."""
    from strictgen.tokenizer import _vocab

    token_bytes = [b"ab", b"a", b"\x00", b"a\x00", b"abc", b"ab", b"b\xff", b"zz", b"a\x00\x00", b"abd", b""]
    lengths = np.array([len(t) for t in token_bytes], dtype=np.int64)
    flat = np.frombuffer(b"".join(token_bytes), dtype=np.uint8)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    ids = np.arange(10, dtype=np.int64)
    first = _vocab.trie(flat, starts, lengths, ids)
    rng = np.random.default_rng(1)
    for _ in range(5):
        assert _vocab.trie(flat, starts, lengths, rng.permutation(ids)) == first
    for bad in ([10], [11], [-1]):  # the empty token, then ids outside the vocabulary
        with pytest.raises(ValueError):
            _vocab.trie(flat, starts, lengths, np.array(bad, dtype=np.int64))


@pytest.mark.parametrize("name", ["qwen", "deepseek"])
def test_loop_entries_are_the_inside_tokens_that_enter_by_their_first_byte_or_character(name):
    """loop_entries takes the groups of first bytes left out away from the loop's inside tokens
    (C, `_loops.drop_entries`); it must equal the definition: inside & (first byte enters, or
    with by_char a whole first character), for any set of first bytes."""
    info = sg.TokenizerInfo.from_name(name)
    trie = info.trie
    rng = np.random.default_rng(7)
    string_body = bytes(b for b in range(32, 127) if b not in (34, 92))
    for loop_bytes in (string_body, bytes(range(48, 58)), bytes(b for b in range(32, 256) if b not in (34, 92))):
        for multibyte in (False, True):
            for share in (0.1, 0.6, 0.97):
                first = rng.random(256) < share
                for by_char in (False, True):
                    inside = trie.loop_inside(loop_bytes, multibyte)
                    want = pack_bits(inside & trie.entering(first, by_char), info.vocab_size)
                    got = trie.loop_entries(loop_bytes, multibyte, first, by_char)
                    assert np.array_equal(got, want), (loop_bytes[:4], multibyte, share, by_char)
                    assert not got.flags.writeable  # shared by every grammar


@pytest.mark.parametrize("name", ["qwen", "deepseek"])
def test_loop_suffix_entries_are_the_empty_suffixes_that_enter(name):
    """loop_suffix_entries groups a loop's empty-suffix tokens by first byte once and drops the
    groups left out (as loop_entries does); it must equal the definition: the tokens of `empty`
    that enter (`entering`), packed, for any set of first bytes, from the loop or entering it."""
    info = sg.TokenizerInfo.from_name(name)
    trie = info.trie
    rng = np.random.default_rng(11)
    string_body = bytes(b for b in range(32, 127) if b not in (34, 92))
    whole = np.flatnonzero(trie.starts_whole_char)  # no real loop's empty suffixes start with a whole character:
    planted = np.union1d(rng.choice(whole, 500), rng.choice(info.vocab_size - 300, 3000))  # a set that does, under a key of its own
    cases = [(loop_bytes, multibyte, skip_first, trie.loop_suffixes(loop_bytes, multibyte, skip_first)[2])
             for loop_bytes, multibyte in ((string_body, True), (bytes(range(48, 58)), False)) for skip_first in (False, True)]
    for loop_bytes, multibyte, skip_first, empty in cases + [(b"\x01planted", True, True, planted)]:
        for share in (0.05, 0.6, 1.0):
            first = rng.random(256) < share
            for by_char in (False, True):
                want = np.zeros(info.vocab_size, dtype=bool)
                want[empty[trie.entering(first, by_char, empty)]] = True
                got = trie.loop_suffix_entries(loop_bytes, multibyte, skip_first, first, by_char, empty)
                assert np.array_equal(got, pack_bits(want, info.vocab_size)), (loop_bytes[:4], skip_first, share, by_char)
                assert not got.flags.writeable  # shared by every grammar


def test_arrays_round_trip_and_refuse_what_the_walk_cannot_read(vocab):
    """VocabTrie.from_arrays(trie.arrays()) is the same trie with the same facts, sharing the
    arrays; an array of another type or size, or an index out of range, is a ValueError (the C
    walk and loop scans read them unchecked)."""
    _, tok = vocab
    trie = tok.trie
    arrays = trie.arrays()
    again = VocabTrie.from_arrays(arrays, tok.all_token_bytes, tok.is_special)
    _same(again, trie)
    for name in ("complete_utf8", "char_counts", "first_bytes", "starts_whole_char", "lengths"):
        assert np.array_equal(getattr(again.facts, name), getattr(trie.facts, name)), name
    assert np.array_equal(again.facts.byte_sets, trie.facts.byte_sets) and again.walk_nodes is arrays["walk_nodes"]
    assert again.max_multibyte_chars == trie.max_multibyte_chars  # a fact read through the loaded arrays

    def changed(name, change):
        out = dict(arrays)
        out[name] = change(arrays[name].copy())
        return out

    def at(i, value):
        def go(a):
            a[i] = value
            return a
        return go

    bad = [
        changed("walk_nodes", lambda a: a.astype(np.int64)),
        changed("offsets", lambda a: a[:-1]),
        changed("node_byte", lambda a: a[1:]),
        changed("walk_nodes", at(0, trie.num_nodes + 1)),  # a child past the last node
        changed("walk_nodes", at(2, -1)),
        changed("walk_nodes", at(3, trie.num_text_tokens + 1)),  # a token slice past the tokens
        changed("node_parent", at(1, trie.num_nodes)),
        changed("token_node", at(0, trie.num_nodes + 1)),
        changed("node_tokens", at(0, tok.vocab_size)),
        changed("facts.starts", at(len(arrays["facts.starts"]) - 1, 10**9)),
        changed("facts.lengths", at(0, -1)),
        changed("facts.byte_sets", lambda a: a[:-4]),
        changed("facts.flat", lambda a: a[:-1]),
        {k: a for k, a in arrays.items() if k != "facts.char_width"},
    ]
    for broken in bad:
        with pytest.raises(ValueError):
            VocabTrie.from_arrays(broken, tok.all_token_bytes, tok.is_special)
    with pytest.raises(ValueError):
        VocabTrie.from_arrays(arrays, tok.all_token_bytes[:-1], tok.is_special[:-1])  # another vocabulary's size


FIRST_FILL_TABLES = ("lex_order", "char_table", "max_multibyte_chars", "split_lead_trie", "bytes")


def test_the_first_fills_tables_are_built_with_the_vocabulary(vocab):
    """A vocabulary's trie, built or loaded from its arrays, holds the tables a first mask fill
    would otherwise build on first use (`_prepare_first_fill_tables`), with the values a fresh
    trie builds when asked."""
    _, tok = vocab
    built = tok.trie
    loaded = VocabTrie.from_arrays(built.arrays(), tok.all_token_bytes, tok.is_special)
    fresh = VocabTrie(tok.all_token_bytes, tok.is_special)
    for trie in (built, loaded):
        for name in FIRST_FILL_TABLES:
            assert name in trie.__dict__, name
        assert trie.max_multibyte_chars == fresh.max_multibyte_chars
        _same(trie.split_lead_trie, fresh.split_lead_trie)
    _same(built, fresh)  # `bytes` among the rest
