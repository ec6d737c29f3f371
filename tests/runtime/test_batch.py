"""Batch mask filling: every row equals what the matcher fills alone, in any mix of grammars,
states and termination, synchronously and in the background."""

import json
import string
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg


@pytest.fixture(scope="module")
def matchers(qwen):
    compiler = sg.GrammarCompiler(qwen)
    grammars = [
        compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a", "b"]}),
        compiler.compile_regex(r"[0-9]{2,4}-[a-z]+"),
        compiler.compile_json(),
        compiler.compile_choice(["yes", "no", "maybe"]),
    ]
    prefixes = ['{"a": 12, "b": "x', "12", '[1, {"k": ', "", '{"a": ', "123-ab", "[", "ma"]
    out = []
    for i, prefix in enumerate(prefixes):
        m = sg.GrammarMatcher(grammars[i % len(grammars)])
        assert m.accept_string(prefix), prefix
        out.append(m)
    done = sg.GrammarMatcher(grammars[3])  # a terminated matcher allows only EOS
    assert done.accept_string("no") and done.accept_token(qwen.eos_token_ids[0]) and done.is_terminated()
    out.append(done)
    return out


def _alone(matchers, vocab_size):
    rows = sg.allocate_token_bitmask(len(matchers), vocab_size)
    flags = [m.fill_next_token_bitmask(rows, index=i) for i, m in enumerate(matchers)]
    return rows, flags


def test_batch_equals_one_by_one(qwen, matchers):
    want, want_flags = _alone(matchers, qwen.vocab_size)
    got = sg.allocate_token_bitmask(len(matchers), qwen.vocab_size)
    assert sg.fill_next_token_bitmask_batch(matchers, got) == want_flags
    assert np.array_equal(got, want)


def test_batch_with_indices_and_async(qwen, matchers):
    want, want_flags = _alone(matchers, qwen.vocab_size)
    n = len(matchers)
    got = sg.allocate_token_bitmask(n + 3, qwen.vocab_size)
    rows = [n + 2 - i for i in range(n)]  # reversed, leaving rows 0..2 alone
    flags = sg.fill_next_token_bitmask_batch_async(matchers, got, indices=rows).result(timeout=60)
    assert flags == want_flags
    for i, r in enumerate(rows):
        assert np.array_equal(got[r], want[i])
    assert (got[:2] == -1).all()


def test_batch_on_fresh_grammars_computes_in_parallel_correctly(qwen):
    """Cache misses on a pool: fresh grammars, so nothing is cached before the batch."""
    compiler, reference = sg.GrammarCompiler(qwen, cache_size=1), sg.GrammarCompiler(qwen, cache_size=1)
    schemas = [{"type": "object", "properties": {f"k{i}": {"type": "string", "maxLength": i + 1}}, "required": [f"k{i}"]} for i in range(6)]
    batch, alone = [], []
    for i, schema in enumerate(schemas):
        for c, out in ((compiler, batch), (reference, alone)):
            m = sg.GrammarMatcher(c.compile_json_schema(schema))
            assert m.accept_string(json.dumps({f"k{i}": ""})[:-2])  # inside the string value
            out.append(m)
    got = sg.allocate_token_bitmask(len(batch), qwen.vocab_size)
    sg.fill_next_token_bitmask_batch(batch, got)
    want, _ = _alone(alone, qwen.vocab_size)
    assert np.array_equal(got, want)


def test_batch_errors(qwen, matchers):
    with pytest.raises(ValueError, match="row indices"):
        sg.fill_next_token_bitmask_batch(matchers, sg.allocate_token_bitmask(len(matchers), qwen.vocab_size), indices=[0])
    with pytest.raises(ValueError, match="has no row"):
        sg.fill_next_token_bitmask_batch(matchers, sg.allocate_token_bitmask(2, qwen.vocab_size))


def test_batch_into_a_wider_mask_with_consecutive_rows(qwen, matchers):
    """A mask padded past the vocabulary (a model's vocab_size): the rows land in place, consecutive
    rows through one copy, and words past the vocabulary are left as they were."""
    want, want_flags = _alone(matchers, qwen.vocab_size)
    n = len(matchers)
    got = np.full((n + 3, want.shape[1] + 5), 7, dtype=np.int32)
    assert sg.fill_next_token_bitmask_batch(matchers, got, indices=range(2, n + 2)) == want_flags
    assert np.array_equal(got[2 : n + 2, : want.shape[1]], want)
    assert (got[:2] == 7).all() and (got[n + 2 :] == 7).all() and (got[:, want.shape[1] :] == 7).all()


def test_batch_into_torch_mask(qwen, matchers):
    torch = pytest.importorskip("torch", reason="torch is a test dependency; absent only outside `make test`")
    want, want_flags = _alone(matchers, qwen.vocab_size)
    got = torch.from_numpy(sg.allocate_token_bitmask(len(matchers), qwen.vocab_size))
    assert sg.fill_next_token_bitmask_batch(matchers, got) == want_flags
    assert np.array_equal(got.numpy(), want)


def test_batch_of_one_is_the_matchers_own_fill(qwen, matchers):
    """The one-row fast path: same row, same flag, into numpy or torch, at any row index."""
    for m in matchers:
        want = sg.allocate_token_bitmask(1, qwen.vocab_size)
        flag = m.fill_next_token_bitmask(want)
        got = np.full((3, want.shape[1]), 7, dtype=np.int32)
        assert sg.fill_next_token_bitmask_batch([m], got, indices=np.array([2])) == [flag]
        assert np.array_equal(got[2], want[0]) and (got[:2] == 7).all()
    with pytest.raises(ValueError, match="has no row 3"):
        sg.fill_next_token_bitmask_batch(matchers[:1], sg.allocate_token_bitmask(3, qwen.vocab_size), indices=[3])


def _word_vocab():
    """96 tokens in 3 mask words: word 0 lowercase tokens, word 1 tokens with digits, word 2
    lowercase tokens and EOS, so a state's mask can have its first and last words full and still
    disallow tokens (the middle word), or allow every token."""
    lower = string.ascii_lowercase
    words = [[c.encode() for c in lower] + [f"a{c}".encode() for c in "bcdefg"],
             [c.encode() for c in string.digits] + [f"{d}{c}".encode() for d in "01" for c in lower[:11]],
             [f"b{c}".encode() for c in lower] + [f"c{c}".encode() for c in lower[:5]] + [b"</s>"]]
    return sg.TokenizerInfo.from_vocab([t for w in words for t in w], eos_token_ids=[95], special_token_ids=[95])


def test_large_batch_flags_when_first_and_last_words_allow_all():
    """The "needs apply" flags (found in C when a mask is stored) read every word: a row that
    disallows only middle tokens still needs applying, one that allows every token does not;
    rows equal and flags equal the matchers' own fills, on consecutive and scattered rows."""
    tok = _word_vocab()
    compiler = sg.GrammarCompiler(tok)
    letters, anything, digits = (compiler.compile_regex(p) for p in ("[a-z]*", "[a-z0-9]*", "[0-9]+"))
    rows = [sg.GrammarMatcher(g) for g in (letters, anything, digits)] * 12
    want, want_flags = _alone(rows, tok.vocab_size)
    assert want_flags[:3] == [True, False, True] and (want[0, [0, 2]] == -1).all() and want[0, 1] != -1
    got = sg.allocate_token_bitmask(len(rows), tok.vocab_size)
    assert sg.fill_next_token_bitmask_batch(rows, got) == want_flags
    assert np.array_equal(got, want)
    spread = sg.allocate_token_bitmask(2 * len(rows), tok.vocab_size)  # rows not consecutive: stacked, then scattered
    assert sg.fill_next_token_bitmask_batch(rows, spread, indices=range(0, 2 * len(rows), 2)) == want_flags
    assert np.array_equal(spread[::2], want) and (spread[1::2] == -1).all()  # as allocated


def test_async_fills_started_together_do_not_wait_on_each_other(qwen):
    """More background batch fills than the mask pool has threads, each with first-time masks for
    the pool: none may hold a thread its own mask work needs (they finish, and fill right)."""
    import os

    compiler = sg.GrammarCompiler(qwen, cache_size=1)
    fills = []
    for k in range(max(2, os.cpu_count() or 2) + 2):
        batch = [sg.GrammarMatcher(compiler.compile_regex(f"[a-z]{{{k + 1},{k + 9}}}-{i}")) for i in range(3)]
        mask = sg.allocate_token_bitmask(len(batch), qwen.vocab_size)
        fills.append((batch, mask, sg.fill_next_token_bitmask_batch_async(batch, mask)))
    for batch, mask, future in fills:
        assert future.result(timeout=120) == [True] * len(batch)
        want, _ = _alone(batch, qwen.vocab_size)
        assert np.array_equal(mask, want)


def _walkers(qwen, documents):
    compiler = sg.GrammarCompiler(qwen)
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}, "required": ["name", "n"]}
    grammars = [compiler.compile_json_schema(schema), compiler.compile_regex(r"(ab|cd)+!"), compiler.compile_choice(["yes", "no"])]
    return [sg.GrammarMatcher(grammars[i % len(grammars)]) for i in range(len(documents))]


def test_accept_token_batch_equals_row_by_row(qwen):
    """The batch call and one accept_token per row give the same answers and leave the same states,
    over valid documents to EOS, with refused tokens (state unchanged) and terminated rows mixed in."""
    from strictgen.tokenizer.info import load_qwen_encoding

    enc = load_qwen_encoding()
    documents = ['{"name": "Ann", "n": 12}', "abcdab!", "yes", '{"name": "\\u00e9t\\u00e9", "n": -3}', "cd!", "no"]
    eos = qwen.eos_token_ids[0]
    batch, alone = _walkers(qwen, documents), _walkers(qwen, documents)
    streams = [[*enc.encode(doc), eos] for doc in documents]
    wrong = enc.encode("}")[0]  # refused at the start of every one of these grammars
    steps = [[s[k] if k < len(s) else eos for s in streams] for k in range(max(map(len, streams)))]
    steps.insert(1, [wrong] * len(streams))
    for k, tokens in enumerate(steps):
        got = sg.accept_token_batch(batch, np.asarray(tokens))
        want = [m.accept_token(t) for m, t in zip(alone, tokens)]
        assert got == want
        if k == 1:
            assert not any(got)  # refused everywhere, states unchanged
        assert [m.state for m in batch] == [m.state for m in alone]
        assert [m.is_terminated() for m in batch] == [m.is_terminated() for m in alone]
        assert sg.find_jump_forward_string_batch(batch) == [m.find_jump_forward_string() for m in alone]
    assert all(m.is_terminated() for m in batch)


def test_accept_token_batch_errors(qwen):
    m = sg.GrammarMatcher(sg.GrammarCompiler(qwen).compile_choice(["yes", "no"]))
    with pytest.raises(ValueError, match="token ids"):
        sg.accept_token_batch([m], [1, 2])
    assert sg.accept_token_batch([], []) == []


def test_rules_built_in_batch_fills_are_built_once(monkeypatch):
    """Rows of one fresh grammar at different places of a document, teacher-forced step by step:
    the rules the compile deferred are built inside the batch fills (their states computed by
    several threads at once), and each exactly once; every mask equals a row-by-row fill."""
    from pathlib import Path

    from strictgen.bench import load_vocab
    from strictgen.compile.lazy_rules import LazyRules
    from strictgen.runtime.prefetch import PREFETCHER

    path = Path("../shared/data/bench/Github_medium---o55361.json")
    if not path.is_file():
        pytest.skip(f"benchmark data {path} is absent (run from the repository root next to ../shared)")
    builds, in_fill, filling = {}, set(), threading.Event()
    build = LazyRules.dfa

    def counted(self, index):
        builds[id(self), index] = builds.get((id(self), index), 0) + 1
        if filling.is_set():
            in_fill.add((id(self), index))
        return build(self, index)

    monkeypatch.setattr(LazyRules, "dfa", counted)
    monkeypatch.setattr(PREFETCHER, "enabled", False)  # the rules built inside the fills, not ahead (test_prefetch.py)
    vocab = load_vocab("qwen")
    info = vocab.build_info()
    data = json.loads(path.read_text())
    ids = [*vocab.encode(json.dumps(next(t["data"] for t in data["tests"] if t["valid"]))), info.eos_token_ids[0]]
    positions = [7 * r for r in range(6)]
    rows, reference = [], []  # the batch's rows, and the same rows of a grammar of their own
    for out in (rows, reference):
        grammar = sg.GrammarCompiler(info, cache_size=1).compile_json_schema(data["schema"])
        for start in positions:
            m = sg.GrammarMatcher(grammar)
            assert all(m.accept_token(t) for t in ids[:start])
            out.append(m)
    mask = sg.allocate_token_bitmask(len(rows), info.vocab_size)
    while positions[-1] < len(ids):
        filling.set()
        sg.fill_next_token_bitmask_batch(rows, mask)
        filling.clear()
        want, _ = _alone(reference, info.vocab_size)
        assert np.array_equal(mask, want)
        tokens = [ids[p] for p in positions]
        assert all(sg.accept_token_batch(rows, tokens)) and all(sg.accept_token_batch(reference, tokens))
        positions = [p + 1 for p in positions]
    assert in_fill, "no rule was built inside a fill: the test no longer exercises it"
    assert set(builds.values()) == {1}, builds


def test_states_sharing_a_horizon_key_compute_one_mask(qwen, monkeypatch):
    """Rows in different states of a long counted string (no token tells them apart) compute one
    mask in a batch fill, and every row equals a row-by-row fill of a fresh grammar."""
    from strictgen.compile.token_mask import TokenMasker

    schema = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 4000}}, "required": ["s"]}
    computed = []
    compute = TokenMasker._compute
    monkeypatch.setattr(TokenMasker, "_compute", lambda self, state: computed.append(state) or compute(self, state))
    rows, alone = [], []
    for out in (rows, alone):
        grammar = sg.GrammarCompiler(qwen, cache_size=1).compile_json_schema(schema)
        for text in ("abc", "abcd", "abcdefgh"):
            m = sg.GrammarMatcher(grammar)
            assert m.accept_string('{"s": "' + text)
            out.append(m)
    masker = rows[0].compiled.masker
    assert len({m.state for m in rows}) == 3 and len({masker.horizon_key(m.state) for m in rows}) == 1
    got = sg.allocate_token_bitmask(len(rows), qwen.vocab_size)
    sg.fill_next_token_bitmask_batch(rows, got, threads=2)
    assert len(computed) == 1
    want, _ = _alone(alone, qwen.vocab_size)
    assert np.array_equal(got, want)


def test_thread_counts_give_the_same_masks(qwen):
    """threads=1 computes every miss in place; more threads share them: the same bits either
    way, on fresh grammars (every state a miss); a bad count is a clear error."""
    schemas = [{"type": "object", "properties": {f"k{i}": {"type": "integer"}, "t": {"type": "string", "maxLength": 3}}, "required": [f"k{i}"]}
               for i in range(4)]
    prefixes = ['{"k', '{"', "{", ""]
    fills = []
    for threads in (1, 2, 3, None):
        compiler = sg.GrammarCompiler(qwen, cache_size=1)
        batch = []
        for i, schema in enumerate(schemas):
            for prefix in prefixes:
                m = sg.GrammarMatcher(compiler.compile_json_schema(schema))
                assert m.accept_string(prefix)
                batch.append(m)
        got = sg.allocate_token_bitmask(len(batch), qwen.vocab_size)
        flags = sg.fill_next_token_bitmask_batch(batch, got, threads=threads)
        fills.append((got, flags, _alone(batch, qwen.vocab_size)))
    for got, flags, (want, want_flags) in fills:
        assert np.array_equal(got, want) and flags == want_flags
        assert np.array_equal(got, fills[0][0])
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="threads"):
            sg.fill_next_token_bitmask_batch(batch, got, threads=bad)
        with pytest.raises(ValueError, match="threads"):
            sg.fill_next_token_bitmask_batch_async(batch, got, threads=bad)


TRACKED = [
    {"type": "array", "items": {"type": ["string", "integer"]}, "uniqueItems": True},
    {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 3},
    {"type": "object", "properties": {"s": {"type": "string", "maxLength": 300}}, "required": ["s"]},
]
DOCUMENTS = [['["ab", 1, "abc", 12, "a"]', '[2, "b", 21]', "[]"], ['{"x": 1, "y": 2}', '{"a": 3}'], ['{"s": "' + "z" * 40 + '"}', '{"s": ""}']]


@pytest.fixture(scope="module")
def tracked_grammars(qwen):
    compiler = sg.GrammarCompiler(qwen)
    return [compiler.compile_json_schema(s) for s in TRACKED]


@given(picks=st.lists(st.tuples(st.integers(0, len(TRACKED) - 1), st.integers(0, 9), st.integers(0, 60)), min_size=2, max_size=12),
       threads=st.sampled_from([1, 2, None]))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_batch_fill_equals_row_by_row_on_every_path(qwen, tracked_grammars, picks, threads):
    """Property: rows at random prefixes of valid documents (trackers, horizon-merged counted
    strings, hits and misses mixed, any thread count) fill exactly as each matcher fills alone."""
    batch = []
    for g, d, cut in picks:
        docs = DOCUMENTS[g]
        text = docs[d % len(docs)]
        m = sg.GrammarMatcher(tracked_grammars[g])
        assert m.accept_string(text[: min(cut, len(text))])
        batch.append(m)
    got = sg.allocate_token_bitmask(len(batch), qwen.vocab_size)
    flags = sg.fill_next_token_bitmask_batch(batch, got, threads=threads)
    want, want_flags = _alone(batch, qwen.vocab_size)
    assert flags == want_flags and np.array_equal(got, want)


@pytest.fixture(scope="module")
def mixed_grammars(qwen, tracked_grammars):
    """The tracked grammars, a regex, a choice (rows of it end with EOS), and a JSON grammar whose
    store keeps 3 masks: a batch's first C call misses there, and a miss may be dropped again
    before the second call copies it (read row by row then)."""
    from strictgen.compile.token_mask import TokenMasker

    compiler = sg.GrammarCompiler(qwen, cache_size=1)
    small = compiler.compile_json()
    small.masker = TokenMasker(small.machine, qwen.trie, qwen.vocab_size, qwen.eos_token_ids, max_cached=3, markers=small.marker_tokens)
    return [*tracked_grammars, sg.GrammarCompiler(qwen).compile_regex(r"[0-9]{2,6}-[a-z]+"),
            sg.GrammarCompiler(qwen).compile_choice(["yes", "no"]), small]


MIXED_DOCUMENTS = [*DOCUMENTS, ["1234-abc", "99-z"], ["yes", "no"], ['{"k": [1, {"a": "b"}], "x": null}', "[true, 1.5]"]]


@given(picks=st.lists(st.tuples(st.integers(0, len(MIXED_DOCUMENTS) - 1), st.integers(0, 9), st.integers(0, 60), st.booleans()),
                      min_size=2, max_size=14),
       extra_rows=st.integers(0, 3), extra_words=st.integers(0, 3), order=st.randoms(use_true_random=False),
       threads=st.sampled_from([1, 2, None]))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_batch_fill_with_indices_in_a_wider_bitmask_equals_row_by_row(qwen, mixed_grammars, picks, extra_rows, extra_words, order, threads):
    """Property: rows of several grammars (trackers, EOS-terminated rows, a store too small to hold
    the batch) written at shuffled indices into a bitmask with more rows and wider rows than the
    batch's vocabulary: each written row equals the matcher's own fill, its flag too, and every
    word the batch does not own keeps what it held."""
    batch = []
    for g, d, cut, end in picks:
        docs = MIXED_DOCUMENTS[g]
        text = docs[d % len(docs)]
        m = sg.GrammarMatcher(mixed_grammars[g])
        if end and m.accept_string(text) and m.can_end():
            assert m.accept_token(qwen.eos_token_ids[0]) and m.is_terminated()
        else:
            m = sg.GrammarMatcher(mixed_grammars[g])
            assert m.accept_string(text[: min(cut, len(text))])
        batch.append(m)
    want, want_flags = _alone(batch, qwen.vocab_size)
    rows = list(range(len(batch) + extra_rows))
    order.shuffle(rows)
    rows = rows[: len(batch)]
    got = np.full((len(batch) + extra_rows, want.shape[1] + extra_words), 7, dtype=np.int32)
    flags = sg.fill_next_token_bitmask_batch(batch, got, indices=rows, threads=threads)
    assert flags == want_flags
    for i, r in enumerate(rows):
        assert np.array_equal(got[r, : want.shape[1]], want[i])
    assert (got[:, want.shape[1] :] == 7).all()
    assert (np.delete(got, rows, axis=0) == 7).all()


MOVES = ["accept", "accept", "rollback", "jump", "eos", "reset"]


@given(picks=st.lists(st.tuples(st.integers(0, len(MIXED_DOCUMENTS) - 1), st.integers(0, 9), st.integers(0, 60)), min_size=2, max_size=8),
       moves=st.lists(st.tuples(st.integers(0, 7), st.sampled_from(MOVES), st.integers(1, 6)), min_size=1, max_size=8),
       threads=st.sampled_from([1, None]))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_matchers_moved_between_batch_fills_fill_as_alone(qwen, mixed_grammars, picks, moves, threads):
    """Property: the state a batch fill reads in C (the matcher's RowState) follows every move:
    after each accept, rollback (an EOS's too), jump-forward, EOS and reset of some row, the next
    batch fill equals each matcher's own fill, with trackers, ended rows and a small store."""
    batch, texts, steps = [], [], []  # steps: the bytes of each accepted step of each row (0 for EOS)
    for g, d, cut in picks:
        docs = MIXED_DOCUMENTS[g]
        text = docs[d % len(docs)].encode()
        m = sg.GrammarMatcher(mixed_grammars[g])
        assert m.accept_string(text[: min(cut, len(text))])
        batch.append(m), texts.append(text), steps.append([min(cut, len(text))])
    got = sg.allocate_token_bitmask(len(batch), qwen.vocab_size)
    sg.fill_next_token_bitmask_batch(batch, got, threads=threads)
    for i, move, k in moves:
        i %= len(batch)
        m, text, done = batch[i], texts[i], sum(steps[i])
        if move == "accept" and not m.is_terminated() and done < len(text):
            assert m.accept_string(text[done : done + k])
            steps[i].append(len(text[done : done + k]))
        elif move == "rollback":
            n = min(k, len(steps[i]))
            m.rollback(n)
            del steps[i][len(steps[i]) - n :]
        elif move == "jump":
            forced = m.find_jump_forward_bytes()
            if forced:
                assert text[done:].startswith(forced) and m.accept_string(forced)
                steps[i].append(len(forced))
        elif move == "eos" and m.can_end():
            assert m.accept_token(qwen.eos_token_ids[0])
            steps[i].append(0)
        elif move == "reset":
            m.reset()
            steps[i] = []
        flags = sg.fill_next_token_bitmask_batch(batch, got, threads=threads)
        want, want_flags = _alone(batch, qwen.vocab_size)
        assert flags == want_flags and np.array_equal(got, want)


def test_warm_batch_fill_runs_no_python_per_row(qwen, matchers):
    """A warm batch fill reads every row's state in C (RowState): the Python functions it calls
    are as many for 1,000 rows as for 4 (a `plain_row()` or attribute read per row would not be)."""
    import sys

    plain = [m for m in matchers if not m.is_terminated()]
    got = sg.allocate_token_bitmask(1000, qwen.vocab_size)
    sg.fill_next_token_bitmask_batch(plain, got)  # warm: every state's mask stored

    def calls(batch):
        count = [0]

        def profile(frame, event, arg):
            count[0] += event == "call"

        sys.setprofile(profile)
        try:
            sg.fill_next_token_bitmask_batch(batch, got)
        finally:
            sys.setprofile(None)
        return count[0]

    few, many = calls(plain[:4]), calls([plain[i % len(plain)] for i in range(1000)])
    assert few == many, (few, many)
    want, _ = _alone(plain, qwen.vocab_size)
    assert all(np.array_equal(got[i], want[i % len(plain)]) for i in range(1000))
