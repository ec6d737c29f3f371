"""parse_partial(): every prefix of a JSON document parses without raising, and results are monotone."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.reliability import parse_partial


def leq(a, b) -> bool:
    """`a` shows no more than `b` and nothing that contradicts it."""
    if a is None:
        return True
    if isinstance(a, dict):
        return isinstance(b, dict) and all(k in b and leq(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) <= len(b) and all(leq(x, y) for x, y in zip(a, b))
    if isinstance(a, str):
        return isinstance(b, str) and b.startswith(a)
    return type(a) is type(b) and a == b


scalars = st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)
containers = st.lists(values, max_size=4) | st.dictionaries(st.text(max_size=6), values, max_size=4)


def check_stream(doc, text):
    prev = None
    for i in range(len(text) + 1):
        cur = parse_partial(text[:i])
        assert leq(prev, cur), (text[:i], prev, cur)
        prev = cur
    assert prev == doc


@settings(max_examples=120, deadline=None)
@given(containers, st.booleans(), st.sampled_from([None, 1]))
def test_every_prefix_parses_and_is_monotone(doc, ascii_only, indent):
    check_stream(doc, json.dumps(doc, ensure_ascii=ascii_only, indent=indent))


@settings(max_examples=60, deadline=None)
@given(scalars)
def test_scalar_prefixes_never_raise(value):
    text = json.dumps(value)
    for i in range(len(text) + 1):
        parse_partial(text[:i])
    assert parse_partial(text) == value


def test_known_stream():
    text = '{"city": "北京", "temp_c": -12.5, "tags": ["a", true], "ok": null}'
    seen = [parse_partial(text[:i]) for i in range(len(text) + 1)]
    assert seen[0] is None and seen[1] == {}
    assert {"city": "北"} in seen  # a partial string shows its characters so far
    assert not any(isinstance(s, dict) and s.get("temp_c") in (-1, -12) for s in seen)  # numbers wait until complete
    assert seen[-1] == json.loads(text)
    assert parse_partial(text[:20], partial_strings=False) == {"city": "北京"}
    assert parse_partial(text.encode("utf-8")[:12]) == {"city": ""}  # a cut UTF-8 character is dropped


def test_not_a_prefix_raises_strictgen_error():
    assert sg.parse_partial is parse_partial
    with pytest.raises(sg.StrictgenError):
        parse_partial('{"a" true')
    with pytest.raises(sg.StrictgenError):
        parse_partial("[1,,")
