"""Warm batch fills and linear draft fills run in C with the GIL released (compile/_mask_store.c),
and stay exact: draft rows equal a fresh matcher replayed on the accepted prefix, batch rows equal
row-by-row fills, whatever the grammars' stores hold (cold, warm, a store too small to keep them).

The GIL tests cannot pass by accident: with a switch interval of 1000 s, a Python thread that
counts can only run while the calling thread releases the GIL of its own accord; the count is read
just before and just after the C call (inside a wrapper around it, with no release point between),
so it moves only if that call released the GIL."""

from __future__ import annotations

import json
import random
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile import _mask_store
from strictgen.compile.token_mask import TokenMasker
from strictgen.runtime import batch as batch_module
from strictgen.runtime import drafts as drafts_module

from tests.helpers import canonical_ids, random_split
from tests.runtime.test_drafts import mask_after

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, "n": {"type": "integer"},
                                           "xs": {"type": "array", "items": {"type": "number"}}}, "required": ["name", "n"]}
SCHEMA_DOCS = [{"name": "Zoë", "n": 42, "xs": [1.5, -2]}, {"name": "a\"b", "n": -7}]
GBNF = 'root ::= expr\nexpr ::= term (("+" | "*") term)*\nterm ::= [0-9]+ | "(" expr ")"'
GBNF_DOCS = ["1+2*(3+44)", "((7))*8"]
CASES = [("schema", SCHEMA_DOCS), ("gbnf", GBNF_DOCS)]


def _compile(tok, kind, small: bool):
    c = sg.GrammarCompiler(tok, cache_size=1)
    g = c.compile_json_schema(SCHEMA) if kind == "schema" else c.compile_grammar(GBNF)
    if small:  # a store of 2 masks: the walk misses at almost every position
        g.masker = TokenMasker(g.machine, tok.trie, tok.vocab_size, tok.eos_token_ids, max_cached=2, markers=g.marker_tokens)
    return g


@given(seed=st.integers(0, 2**32 - 1), warm=st.booleans(), small=st.booleans(), extra_words=st.integers(0, 2))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_c_draft_walk_rows_equal_fresh_matchers(qwen, seed, warm, small, extra_words):
    """Property: on grammars without trackers (the C walk), from a random point of a valid
    document, a draft of its next tokens with random replacements (part refused, sometimes EOS,
    inside the draft or after the document's end, or a special token): validate_tokens is the accepted prefix, every row written equals a fresh
    matcher's mask after that prefix of the draft (words past the vocabulary zeroed), rows past
    it are untouched, and the matcher does not move; on a fresh grammar (every mask a miss), a warm
    one, and one whose store keeps 2 masks."""
    rnd = random.Random(seed)
    kind, docs = rnd.choice(CASES)
    g = _compile(qwen, kind, small)
    doc = rnd.choice(docs)
    text = json.dumps(doc, ensure_ascii=rnd.random() < 0.3) if kind == "schema" else doc
    ids = (canonical_ids("qwen", text) if rnd.random() < 0.5 else random_split(qwen, text.encode(), rnd)) + [qwen.eos_token_ids[0]]
    cut = rnd.randrange(len(ids))
    prefix, draft = ids[:cut], ids[cut : cut + rnd.randint(0, 10)]
    for _ in range(rnd.choice([0, 0, 1, 2])):
        if draft:
            draft[rnd.randrange(len(draft))] = rnd.choice([rnd.randrange(qwen.vocab_size), rnd.choice(ids), qwen.eos_token_ids[0], 151644, -3])
    if rnd.random() < 0.4:  # EOS anywhere (accepted where the grammar can end; refused elsewhere), tokens after it too
        draft.insert(rnd.randint(0, len(draft)), qwen.eos_token_ids[0])
    m = sg.GrammarMatcher(g)
    for t in prefix:
        assert m.accept_token(t)
    if warm:
        m.fill_draft_bitmasks(draft, sg.allocate_token_bitmask(len(draft) + 1, qwen.vocab_size))
    before = m.state
    kept = 0
    ref = sg.GrammarMatcher(g)
    for t in prefix:
        ref.accept_token(t)
    for t in draft:
        if not ref.accept_token(t):
            break
        kept += 1
    assert m.validate_tokens(draft) == kept
    width = (qwen.vocab_size + 31) // 32
    rows = np.full((len(draft) + 2, width + extra_words), 7, dtype=np.int32)
    assert m.fill_draft_bitmasks(draft, rows, start_row=1) == kept + 1
    assert m.state == before and not m.is_terminated()
    for k in range(kept + 1):
        assert np.array_equal(rows[1 + k, :width], mask_after(g, prefix + draft[:k])), (kind, k)
        assert (rows[1 + k, width:] == 0).all()
    assert (rows[0] == 7).all() and (rows[kept + 2 :] == 7).all()


def test_a_warm_draft_is_one_c_call(qwen, monkeypatch):
    """A draft whose states' masks are stored and rows computed is walked and filled by one C call
    (no accept_token, no rollback); a cold one needs Python only where C stops."""
    g = sg.GrammarCompiler(qwen, cache_size=1).compile_grammar(GBNF)
    draft = canonical_ids("qwen", "1+2*(3+44)")
    m = sg.GrammarMatcher(g)
    rows = sg.allocate_token_bitmask(len(draft) + 1, qwen.vocab_size)
    calls = []
    walk = _mask_store.walk_draft
    monkeypatch.setattr(_mask_store, "walk_draft", lambda *a: calls.append(walk(*a)) or calls[-1])
    assert m.fill_draft_bitmasks(draft, rows) == len(draft) + 1  # cold: C stops at each miss
    assert len(calls) > 1 and {c[0] for c in calls} == {_mask_store.MISS}  # each miss computed in Python, then C goes on
    calls.clear()
    monkeypatch.setattr(sg.GrammarMatcher, "accept_token", lambda *a: pytest.fail("a warm draft is stepped in C"))
    again = sg.allocate_token_bitmask(len(draft) + 1, qwen.vocab_size)
    assert m.fill_draft_bitmasks(draft, again) == len(draft) + 1 and m.validate_tokens(draft) == len(draft)
    assert [c[0] for c in calls] == [_mask_store.DONE, _mask_store.DONE] and np.array_equal(again, rows)


@pytest.mark.parametrize("kind", ["schema", "gbnf", "unique"])
def test_a_single_fill_hit_is_one_c_call(qwen, monkeypatch, kind):
    """`fill_next_token_bitmask` into a 2-D int32 bitmask copies a stored mask in one C call
    (`_mask_store.fill_row`) and writes what the Python path writes: the same words (those past the
    vocabulary's left alone), the same return, into the row asked; a miss computes the mask into the
    store and copies it the same way (a second call); an ended matcher and a tracked one
    (uniqueItems) take the Python path, and a row out of range fails as numpy's does."""
    if kind == "unique":
        g = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema({"type": "array", "items": {"type": "integer"}, "uniqueItems": True})
        ids = canonical_ids("qwen", "[1, 3]") + list(qwen.eos_token_ids[:1])
    else:
        g = _compile(qwen, kind, small=False)
        doc = json.dumps(SCHEMA_DOCS[0]) if kind == "schema" else GBNF_DOCS[0]
        ids = canonical_ids("qwen", doc) + list(qwen.eos_token_ids[:1])
    words = sg.allocate_token_bitmask(1, qwen.vocab_size).shape[1]
    codes = []
    fill_row = _mask_store.fill_row
    monkeypatch.setattr(_mask_store, "fill_row", lambda *a: codes.append(fill_row(*a)) or codes[-1])
    for warm in (False, True):
        m = sg.GrammarMatcher(g)
        for token in ids + [None]:  # None: one more fill once the matcher has ended
            junk = np.random.default_rng(token).integers(-2**31, 2**31, (3, words + 1), dtype=np.int64).astype(np.int32)
            fast, slow = junk.copy(), junk.copy()
            codes.clear()
            stored = g.masker.cached(m.state) is not None
            got = m.fill_next_token_bitmask(fast, 2)
            row = m.next_token_mask()
            slow[2, : len(row)] = row
            assert np.array_equal(fast, slow) and got == bool((row != -1).any())
            plain = kind != "unique" and not m.is_terminated()
            assert stored or not warm or not plain  # the warm pass has every mask stored
            # a plain miss computes the mask into the store and copies it with a second call
            assert codes == ([int(got)] if stored and plain else [_mask_store.NOT_PLAIN] if not plain else [_mask_store.MISSED, int(got)])
            if token is not None:
                assert m.accept_token(token)
    with pytest.raises(IndexError):
        sg.GrammarMatcher(g).fill_next_token_bitmask(np.zeros((1, words), dtype=np.int32), 1)


def test_a_fill_hit_takes_the_c_copy_for_any_int32_dtype_instance(qwen, monkeypatch):
    """The single fill's C copy is chosen by dtype equality, not identity: an int32 bitmask whose
    dtype is another instance (metadata, as a caller's or an unpickled array may have) takes it too,
    and a big-endian int32 one, equal in item size but not in dtype, takes the Python path and
    gets the same mask in its own byte order."""
    g = _compile(qwen, "schema", small=False)
    words = sg.allocate_token_bitmask(1, qwen.vocab_size).shape[1]
    m = sg.GrammarMatcher(g)
    native = np.zeros((1, words), dtype=np.int32)
    m.fill_next_token_bitmask(native)  # the mask is stored from here on
    calls = []
    fill_row = _mask_store.fill_row
    monkeypatch.setattr(_mask_store, "fill_row", lambda *a: calls.append(1) or fill_row(*a))
    other = np.dtype(np.int32, metadata={"from": "a caller"})
    assert other == np.dtype(np.int32) and other is not np.dtype(np.int32)
    for dtype, through_c in ((other, True), (np.dtype(">i4"), False)):
        calls.clear()
        target = np.zeros((1, words), dtype=dtype)
        m.fill_next_token_bitmask(target)
        assert bool(calls) == through_c and np.array_equal(target.astype(np.int32), native)


def test_eos_in_a_warm_draft_is_decided_in_c(qwen, monkeypatch):
    """EOS inside a linear draft is decided in the C walk, as accept_token decides it: accepted
    where the grammar can end (the row after it EOS only, nothing after it accepted), refused where
    it cannot; a warm draft with EOS is still one C call, with no accept_token."""
    g = sg.GrammarCompiler(qwen, cache_size=1).compile_grammar(GBNF)
    eos = qwen.eos_token_ids[0]
    doc = canonical_ids("qwen", "1+2*(3+44)")
    drafts = {  # draft -> tokens accepted
        tuple(doc + [eos]): len(doc) + 1,  # ends with EOS
        tuple(doc + [eos, doc[0]]): len(doc) + 1,  # a token after EOS: refused
        tuple(doc + [eos, eos]): len(doc) + 1,  # EOS again: refused
        tuple(doc[:2] + [eos] + doc[2:]): 2,  # "1+" cannot end: EOS refused
    }
    m = sg.GrammarMatcher(g)
    want = {draft: [mask_after(g, list(draft[:k])) for k in range(kept + 1)] for draft, kept in drafts.items()}  # fresh matchers
    for draft, kept in drafts.items():  # cold: masks computed where C misses
        rows = sg.allocate_token_bitmask(len(draft) + 1, qwen.vocab_size)
        assert m.fill_draft_bitmasks(list(draft), rows) == kept + 1 and m.validate_tokens(list(draft)) == kept
    monkeypatch.setattr(sg.GrammarMatcher, "accept_token", lambda *a: pytest.fail("EOS in a warm draft is decided in C"))
    calls = []
    walk = _mask_store.walk_draft
    monkeypatch.setattr(_mask_store, "walk_draft", lambda *a: calls.append(walk(*a)) or calls[-1])
    for draft, kept in drafts.items():
        calls.clear()
        rows = np.full((len(draft) + 2, (qwen.vocab_size + 31) // 32 + 1), 7, dtype=np.int32)
        assert m.fill_draft_bitmasks(list(draft), rows) == kept + 1
        assert len(calls) == 1 and calls[0][0] in (_mask_store.DONE, _mask_store.REFUSED)
        for k in range(kept + 1):
            assert np.array_equal(rows[k, :-1], want[draft][k]) and rows[k, -1] == 0
        assert (rows[kept + 1 :] == 7).all()
        assert m.validate_tokens(list(draft)) == kept and m.state == m._history[0]


def test_a_warm_tree_is_one_c_call(qwen, monkeypatch):
    """A draft tree whose nodes' masks are stored is walked by one C call, the rows equal the
    first (cold) walk's, which needed Python only where C stopped."""
    g = sg.GrammarCompiler(qwen, cache_size=1).compile_grammar(GBNF)
    ids = canonical_ids("qwen", "1+2*(3+44)")
    # root: ids[0] accepted already; a chain of the document's next tokens, with a refused side branch
    n = len(ids)
    tokens = ids + [ids[0]]
    first = [i + 1 if i + 1 < n else -1 for i in range(n)] + [-1]
    sibling = [-1] * n + [-1]
    sibling[2] = n  # node n: a second child of node 1, the first token again
    m = sg.GrammarMatcher(g)
    assert m.accept_token(ids[0])
    rows = np.zeros((n + 1, (qwen.vocab_size + 31) // 32), dtype=np.int32)
    calls = []
    walk = _mask_store.walk_tree
    monkeypatch.setattr(_mask_store, "walk_tree", lambda *a: calls.append(walk(*a)) or calls[-1])
    visited = m.fill_draft_tree_bitmasks(tokens, first, sibling, rows)
    assert len(calls) > 1 and calls[-1][0] == _mask_store.DONE
    for k in range(1, n):
        assert np.array_equal(rows[k], mask_after(g, ids[: k + 1]))
    calls.clear()
    monkeypatch.setattr(sg.GrammarMatcher, "accept_token", lambda *a: pytest.fail("a warm tree is stepped in C"))
    again = np.zeros_like(rows)
    assert m.fill_draft_tree_bitmasks(tokens, first, sibling, again) == visited and len(calls) == 1
    assert np.array_equal(again, rows)


class _Counter:
    """A Python thread counting while it holds the GIL (sleep(0) hands the GIL back each turn)."""

    def __init__(self):
        self.count = 0
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop:
            self.count += 1
            time.sleep(0)

    def __enter__(self):
        self.interval = sys.getswitchinterval()
        sys.setswitchinterval(1000.0)  # no forced switch: the counter runs only when the GIL is let go
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop = True
        sys.setswitchinterval(self.interval)
        self.thread.join(timeout=30)


def _spy(module, name, counter, moved):
    """Wrap module.name so that each call records whether the counter moved across the C call alone."""
    real = getattr(module, name)

    def spied(*args):
        before = counter.count
        out = real(*args)
        moved.append(counter.count != before)
        return out

    return spied


def _letters_vocab():
    letters = [bytes([c]) for c in range(ord("a"), ord("z") + 1)]
    return sg.TokenizerInfo.from_vocab(letters + [b"ab", b"</s>"], eos_token_ids=[27], special_token_ids=[27])


def test_warm_batch_fill_releases_the_gil(qwen, monkeypatch):
    """A warm batch (one stored state, 60,000 rows copied into 4 bitmask rows of the 151k-token
    vocabulary, ~1 GB of copies): another Python thread counts during the C call."""
    g = sg.GrammarCompiler(qwen).compile_regex("[a-z]+")
    m = sg.GrammarMatcher(g)
    rows = 60_000
    matchers, indices = [m] * rows, [i % 4 for i in range(rows)]
    mask = sg.allocate_token_bitmask(4, qwen.vocab_size)
    sg.fill_next_token_bitmask_batch(matchers[:2], mask)  # warm: the state's mask is stored
    moved = []
    with _Counter() as counter:
        monkeypatch.setattr(batch_module._mask_store, "fill_rows", _spy(_mask_store, "fill_rows", counter, moved))
        for _ in range(5):
            moved.clear()
            assert sg.fill_next_token_bitmask_batch(matchers, mask, indices=indices) == [True] * rows
            assert len(moved) == 1  # warm: the whole batch in one C call
            if moved[0]:
                break
    assert any(moved), "no other thread ran while the warm batch fill was in C: the GIL was held"
    assert np.array_equal(mask[0], mask_after(g, []))


def test_warm_draft_fill_releases_the_gil(monkeypatch):
    """A warm draft of 400,000 tokens (`a` again and again, one state, its mask stored): another
    Python thread counts during the one C call that walks and fills it."""
    tok = _letters_vocab()
    g = sg.GrammarCompiler(tok).compile_regex("[a-z]+")
    m = sg.GrammarMatcher(g)
    draft = np.zeros(400_000, dtype=np.int64)  # token 0 is "a"
    rows = sg.allocate_token_bitmask(len(draft) + 1, tok.vocab_size)
    assert m.fill_draft_bitmasks(draft[:3], rows) == 4  # warm: the states' masks stored
    moved = []
    with _Counter() as counter:
        monkeypatch.setattr(drafts_module._mask_store, "walk_draft", _spy(_mask_store, "walk_draft", counter, moved))
        for _ in range(5):
            moved.clear()
            assert m.fill_draft_bitmasks(draft, rows) == len(draft) + 1
            assert len(moved) == 1  # the whole draft in one C call
            if moved[0]:
                break
    assert moved[0], "no other thread ran while the draft was walked in C: the GIL was held"
    assert np.array_equal(rows[-1], mask_after(g, [0, 0]))


def test_warm_tree_fill_releases_the_gil(monkeypatch):
    """A warm draft tree of 300,000 nodes (a chain of `a`): another Python thread counts during the
    one C call that walks it."""
    tok = _letters_vocab()
    g = sg.GrammarCompiler(tok).compile_regex("[a-z]+")
    m = sg.GrammarMatcher(g)
    n = 300_000
    tokens, first, sibling = np.zeros(n, dtype=np.int64), np.arange(1, n + 1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    first[-1] = -1
    rows = np.zeros((n, 1), dtype=np.int32)
    assert m.fill_draft_tree_bitmasks(tokens[:3], [1, 2, -1], [-1, -1, -1], rows[:3]) == 3  # warm
    moved = []
    with _Counter() as counter:
        monkeypatch.setattr(drafts_module._mask_store, "walk_tree", _spy(_mask_store, "walk_tree", counter, moved))
        for _ in range(5):
            moved.clear()
            assert m.fill_draft_tree_bitmasks(tokens, first, sibling, rows) == n
            assert len(moved) == 1
            if moved[0]:
                break
    assert moved[0], "no other thread ran while the tree was walked in C: the GIL was held"


def test_a_miss_whose_mask_is_not_kept_still_fills_the_row(qwen):
    """A plain miss computes the mask into the store and copies it from there (a second
    `fill_row`); where the store does not keep it (a store of no entries here, an eviction by
    another thread in general) the fill writes the computed row itself: the same words and the
    same return as with a store that keeps every mask."""
    kept = _compile(qwen, "schema", small=False)
    bare = _compile(qwen, "schema", small=False)
    bare.masker = TokenMasker(bare.machine, qwen.trie, qwen.vocab_size, qwen.eos_token_ids, max_cached=0, markers=bare.marker_tokens)
    ids = canonical_ids("qwen", json.dumps(SCHEMA_DOCS[0])) + list(qwen.eos_token_ids[:1])
    a, b = sg.GrammarMatcher(kept), sg.GrammarMatcher(bare)
    words = sg.allocate_token_bitmask(1, qwen.vocab_size).shape[1]
    for token in ids:
        fa, fb = np.full((2, words), -5, dtype=np.int32), np.full((2, words), -5, dtype=np.int32)
        assert a.fill_next_token_bitmask(fa, 1) == b.fill_next_token_bitmask(fb, 1)
        assert np.array_equal(fa, fb) and bare.masker.cached(b.state) is None
        assert a.accept_token(token) and b.accept_token(token)
