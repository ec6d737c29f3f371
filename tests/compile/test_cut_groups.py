"""Wide loops whose other tokens are too many for a trie of their suffixes (a URI's `[^ "#%<>]`
leaves 100k tokens that hold a space or a quote): those suffixes are walked as slices grouped by
first byte (`VocabTrie.loop_cut_groups`, `_walk.walk_cuts`). The masks must equal the plain full
trie walk bit for bit, on the states decoding meets and on random ones."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile import _walk

from .walk_spy import spy_walk

WIDE_LOOPS = [
    ({"type": "string", "format": "uri"}, ['"https://www', '"https://example.com/pa', '"mailto:a']),
    ({"type": "string", "pattern": "^[^:\\s]+$"}, ['"ab', '"', '"x.y']),
    ({"type": "string", "pattern": "^[A-Za-z0-9._~:/?#@!$&'()*+,;=-]+$"}, ['"ab', '"a/b?c=']),
    # non-ASCII bytes leave the loop for a character rule: the lead bytes' groups are live
    ({"type": "string", "pattern": "^[!-~]*(é[!-~]*)*$"}, ['"ab', '"abé']),
]


@pytest.fixture
def walk_cuts_calls(monkeypatch):
    """The states the masks of the test ran the grouped-suffix walk from."""
    return spy_walk(monkeypatch, "walk_cuts", -2)


def _full_walk(grammar, state) -> np.ndarray:
    """The plain mask: the whole vocabulary trie walked from `state`, no shortcut."""
    return grammar.masker._live_bits(state)


@pytest.mark.parametrize("schema,prefixes", WIDE_LOOPS)
def test_wide_loop_masks_walk_cut_groups_and_equal_the_full_walk(qwen, walk_cuts_calls, schema, prefixes):
    grammar = sg.GrammarCompiler(qwen).compile_json_schema(schema)
    for prefix in prefixes:
        m = sg.GrammarMatcher(grammar)
        assert m.accept_string(prefix)
        before = len(walk_cuts_calls)
        got = grammar.masker._allowed(m.state)
        assert len(walk_cuts_calls) > before, prefix  # the grouped-suffix path ran
        assert np.array_equal(got, _full_walk(grammar, m.state)), prefix


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_random_states_of_wide_loops_equal_the_full_walk(qwen, data):
    """Random prefixes of valid strings (of each wide-loop schema): the mask with its shortcuts
    equals the full walk, and is not empty."""
    schema, _ = data.draw(st.sampled_from(WIDE_LOOPS))
    grammar = _compiled(qwen, schema)
    pattern = schema.get("pattern", "^[a-z]{1,8}://[a-z0-9./?=&#%-]{0,30}$")
    text = data.draw(st.from_regex(pattern, fullmatch=True).filter(lambda s: '"' not in s and "\\" not in s))
    m = sg.GrammarMatcher(grammar)
    for char in '"' + text[: data.draw(st.integers(0, len(text)))]:
        if not m.accept_string(char):  # the URI stand-in regex is wider than the format: stop where it parts
            break
    assert np.array_equal(grammar.masker._allowed(m.state), _full_walk(grammar, m.state))
    assert grammar.masker._allowed(m.state).any()  # every prefix of a valid string can go on


_COMPILED = {}


def _compiled(tok, schema):
    key = repr(schema)
    if key not in _COMPILED:
        _COMPILED[key] = sg.GrammarCompiler(tok).compile_json_schema(schema)
    return _COMPILED[key]


def test_walk_cuts_refuses_arrays_that_do_not_fit(qwen):
    """Bad input to the grouped-suffix walk is a ValueError, never a read outside an array."""
    grammar = sg.GrammarCompiler(qwen).compile_json_schema({"type": "string", "format": "uri"})
    m = sg.GrammarMatcher(grammar)
    assert m.accept_string('"https://a')
    machine, state = grammar.machine, m.state
    (t, _), *_ = machine.widest(state, 1)
    groups = qwen.trie.loop_cut_groups(machine.group(t, t), False, t != state)
    assert groups is not None
    flat, starts, ends, owners, bounds, _ = groups
    out = np.empty(len(owners), dtype=np.int64)

    def run(*arrays):
        return _walk.walk_cuts(*machine.walk_source(), *arrays, t, out)

    n = run(flat, starts, ends, owners, bounds)
    assert 0 < n < len(owners)
    with pytest.raises(ValueError, match="do not fit"):
        run(flat, starts, ends, owners, bounds[:-1])  # 256 bounds
    with pytest.raises(ValueError, match="do not fit"):
        run(flat, starts, ends[:-1], owners, bounds)
    quote = ord('"')
    assert bounds[quote] < bounds[quote + 1]  # suffixes starting with a quote: read from t
    bad_ends = ends.copy()
    bad_ends[bounds[quote]] = len(flat) + 5
    with pytest.raises(ValueError, match="outside flat"):
        run(flat, starts, bad_ends, owners, bounds)
    bad_starts = starts.copy()
    bad_starts[bounds[quote]] = starts[0] if flat[starts[0]] != quote else starts[-1]  # another group's suffix
    with pytest.raises(ValueError, match="outside its first byte's group"):
        run(flat, bad_starts, ends, owners, bounds)


def test_cut_groups_hold_each_tokens_suffix_and_refuse_bad_cuts(qwen):
    """The grouped suffixes are exactly each outside token's bytes after its loop run (checked
    against the suffix trie's own cut), and a cut outside a token is a ValueError."""
    from strictgen.tokenizer import _loops

    trie, facts = qwen.trie, qwen.trie.facts
    key = bytes(b for b in range(0x21, 0x7F) if b not in b'"#%<>')
    flat, starts, ends, owners, bounds, empty = trie.loop_cut_groups(key, False, True)
    data = flat.tobytes()
    by_owner = {int(o): data[a:e] for o, a, e in zip(owners.tolist(), starts.tolist(), ends.tolist())}
    rng = np.random.default_rng(1)
    for tid in rng.choice(owners, size=300, replace=False).tolist():
        token = qwen.token_bytes(tid)
        cut = 1
        while cut < len(token) and token[cut] in key:
            cut += 1
        assert by_owner[tid] == token[cut:] and by_owner[tid]
    _, owner, trie_empty = trie.loop_suffixes(key, False, True)  # the suffix trie's own split
    assert np.array_equal(np.sort(empty), np.sort(trie_empty)) and len(owners) + len(empty) == len(owner)
    for b in range(256):  # each group holds the suffixes of its first byte
        assert all(data[a] == b for a in starts[bounds[b] : bounds[b + 1]].tolist())
    ids, cuts = np.array([5, 6], dtype=np.int64), np.array([0, 999], dtype=np.int64)
    with pytest.raises(ValueError, match="cut"):
        _loops.cut_groups(facts.flat, facts.starts, facts.lengths, ids, cuts)
