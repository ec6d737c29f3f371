"""Wide loops whose other tokens are too many for a trie of their suffixes (a URI's `[^ "#%<>]`
leaves 100k tokens that hold a space or a quote; `[^:\\s]+` leaves every non-ASCII token, since a
few Unicode spaces leave the loop): one walk of the vocabulary that reads the subtrees coming back
to the loop unseen (`TokenMasker._live_loop_bits`, `_walk.walk_loop_bits`), nothing built per loop
kind but its inside tokens. The masks must equal the plain full trie walk bit for bit, on the
states decoding meets and on random ones."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from .walk_spy import spy_walk

WIDE_LOOPS = [
    ({"type": "string", "format": "uri"}, ['"https://www', '"https://example.com/pa', '"mailto:a']),
    ({"type": "string", "pattern": "^[^:\\s]+$"}, ['"ab', '"', '"x.y']),
    ({"type": "string", "pattern": "^[A-Za-z0-9._~:/?#@!$&'()*+,;=-]+$"}, ['"ab', '"a/b?c=']),
    # non-ASCII bytes leave the loop for a character rule: the lead bytes' groups are live
    ({"type": "string", "pattern": "^[!-~]*(é[!-~]*)*$"}, ['"ab', '"abé']),
]


@pytest.fixture
def loop_walks(monkeypatch):
    """The loop states the masks of the test walked the vocabulary with."""
    return spy_walk(monkeypatch, "walk_loop_bits", 8)


def _full_walk(grammar, state) -> np.ndarray:
    """The plain mask: the whole vocabulary trie walked from `state`, no shortcut."""
    return grammar.masker._live_bits(state)


@pytest.mark.parametrize("schema,prefixes", WIDE_LOOPS)
def test_wide_loop_masks_walk_with_the_loop_and_equal_the_full_walk(qwen, loop_walks, schema, prefixes):
    grammar = sg.GrammarCompiler(qwen).compile_json_schema(schema)
    for prefix in prefixes:
        m = sg.GrammarMatcher(grammar)
        assert m.accept_string(prefix)
        before = len(loop_walks)
        got = grammar.masker._allowed(m.state)
        assert len(loop_walks) > before, prefix  # the walk with the loop ran
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
