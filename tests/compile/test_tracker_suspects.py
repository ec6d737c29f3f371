"""The trackers' fast masks (tracked_rules.RuleTracker.suspects: DistinctNames from its names,
UniqueItems in a container item from its brackets) refuse exactly what the slow pass refused:
every token outside `passive` that the machine can read, read through `advance`. Checked on
random states of random documents (names raw and, one in five, \\u-escaped, with quotes, backslashes and
non-ASCII; values with brackets and quotes in strings; repeats), Qwen's vocabulary, a random
split so that states fall inside keys and strings, after an escape too."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile.machine import DEAD
from strictgen.compile.tracked_rules import VETO
from tests.helpers import allowed_ids, random_split

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
NAMES = ["a", "ab", "x", "\u00e9", 'q"', "b\\", "}]", "", "]", ":"]  # the last three: whole keys in some Qwen tokens (`"]"`...)
STRINGS = ["s", "}", "]", '"[', "\\\\", "{\"a\":1}"]
COUNTED = {"type": "object", "minProperties": 2}
SCHEMAS = [
    COUNTED,
    {"type": "object", "minProperties": 3, "additionalProperties": {"type": "integer"}},
    {"type": "object", "properties": {"o": COUNTED}},
    {"anyOf": [COUNTED, {"type": "object", "additionalProperties": {"type": "string"}}]},
    {"type": "array", "uniqueItems": True, "items": COUNTED},
    {"type": "array", "uniqueItems": True, "items": {"type": "array"}},
    {"type": "array", "uniqueItems": True, "items": {"type": "object"}},
]


@pytest.fixture(scope="module")
def compiled(qwen) -> list[sg.CompiledGrammar]:
    compiler = sg.GrammarCompiler(qwen)
    return [compiler.compile_json_schema(s) for s in SCHEMAS]


def _name(k: str, escaped: bool) -> str:
    return '"' + "".join(f"\\u{ord(c):04x}" for c in k) + '"' if escaped else json.dumps(k)


values = st.recursive(
    st.sampled_from([1, 2]) | st.sampled_from(STRINGS),
    lambda inner: st.lists(inner, max_size=3) | st.lists(st.tuples(st.sampled_from(NAMES), inner), max_size=3),
    max_leaves=6,
)


def _text(v, draw) -> str:
    """JSON text of `v` (a list of pairs is an object, names sometimes \\u-escaped: so repeats)."""
    if isinstance(v, list) and v and isinstance(v[0], tuple):
        return "{" + ",".join(f"{_name(k, draw(st.integers(0, 4)) == 0)}:{_text(x, draw)}" for k, x in v) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_text(x, draw) for x in v) + "]"
    return json.dumps(v)


@st.composite
def documents(draw):
    """(the schema's index, a document: an object of 2-5 members, maybe inside an array of 1-3, or
    under "o"), with repeated names and items now and then."""
    i = draw(st.integers(0, len(SCHEMAS) - 1))
    members = draw(st.lists(st.tuples(st.sampled_from(NAMES), values if i in (0, 3, 5, 6) else st.just(1)), min_size=2, max_size=5))
    obj = "{" + ",".join(f"{_name(k, draw(st.integers(0, 4)) == 0)}:{_text(v, draw)}" for k, v in members) + "}"
    if i == 2:
        return i, '{"o":' + obj + "}"
    if i >= 4:
        item = obj if i != 5 else "[" + obj + "," + obj + "]"
        return i, "[" + ",".join([item] * draw(st.integers(1, 2)) + [_text(v, draw) if i != 4 else obj for _, v in members[:1]]) + "]"
    return i, obj


def _vetoed(tracker, track, state: int, ids, tok: sg.TokenizerInfo) -> set[int]:
    """The tokens of `ids` the machine reads from `state` and the tracker refuses."""
    step = tracker.machine.step_bytes
    out = set()
    for t in ids:
        data = tok.token_bytes(t)
        if not tok.is_special[t] and step(state, data) != DEAD and tracker.advance(track, state, data) is VETO:
            out.add(t)
    return out


@SETTINGS
@given(documents(), st.integers(0, 2**32))
def test_suspects_refuse_what_the_slow_pass_refused(compiled, qwen, doc, seed):
    i, text = doc
    g = compiled[i]
    tracker = g.tracker
    assert tracker is not None
    rnd = random.Random(seed)
    ids = random_split(qwen, text.encode("utf-8"), rnd)
    m = sg.GrammarMatcher(g)
    track, checked = None, 0
    for t in ids:
        state = m.state
        suspects = tracker.suspects(track)
        if suspects.dtype != bool:  # the narrowed ones (a bool class is passive's complement: the slow pass)
            outside = np.flatnonzero(~tracker.passive(track))
            assert np.isin(suspects, outside).all()  # a narrowing of the slow pass
            slow = _vetoed(tracker, track, state, outside.tolist(), qwen)
            assert _vetoed(tracker, track, state, suspects.tolist(), qwen) == slow, (text, state)
            assert not slow & set(allowed_ids(m).tolist())  # the matcher's mask refuses them
            checked += 1
        got = tracker.advance(track, state, qwen.token_bytes(t))
        if not m.accept_token(t):
            assert got is VETO or tracker.machine.step_bytes(state, qwen.token_bytes(t)) == DEAD
            break
        assert got is not VETO
        track = got[0]
