"""The loops a compile reads off its rule automata (compile/rule_loops.py) and prepares for its
string shortcuts (TokenMasker.prepare_loops): they must be the loops the masks then ask the
vocabulary for, built before the first fill, and never past the compile's deadline."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen import deadline
from strictgen.compile import _rule_loops
from strictgen.compile.rule_loops import rule_loops
from strictgen.compile.token_mask import TokenMasker
from strictgen.tokenizer.trie import VocabTrie

SCHEMAS = [
    ({"type": "string"}, '"héllo wörld, a plain string"'),
    ({"type": "string", "format": "uri"}, '"https://example.com/path?q=1"'),
    ({"type": "string", "format": "hostname"}, '"www.example-host.org"'),
    ({"type": "string", "pattern": "^[^:\\s]+$"}, '"some.thing-else/here"'),
    ({"type": "string", "format": "email"}, '"first.last+tag@example.com"'),
]


@pytest.fixture
def asked(monkeypatch):
    """The (loop bytes, multibyte) keys the string shortcuts ask about, in order."""
    keys = []
    count = VocabTrie.loop_inside_count

    def spy(self, loop_bytes, multibyte=False):
        keys.append((loop_bytes, multibyte))
        return count(self, loop_bytes, multibyte)

    monkeypatch.setattr(VocabTrie, "loop_inside_count", spy)
    return keys


@pytest.fixture
def builds(monkeypatch):
    """The splits built (kind, loop bytes, multibyte), whoever asked."""
    made = []
    cached = VocabTrie._cached

    def spy(self, key, build):
        def counted():
            made.append(key[:3])
            return build()

        return cached(self, key, counted)

    monkeypatch.setattr(VocabTrie, "_cached", spy)
    return made


def force(grammar: sg.CompiledGrammar, info: sg.TokenizerInfo, text: str) -> None:
    """Fill a mask before every byte of `text`, accepted byte by byte as single-byte tokens would be."""
    matcher = sg.GrammarMatcher(grammar)
    mask = sg.allocate_token_bitmask(1, info.vocab_size)
    for ch in text:
        matcher.fill_next_token_bitmask(mask)
        assert matcher.accept_string(ch)


@pytest.mark.parametrize("schema,document", SCHEMAS)
def test_the_loops_found_are_the_ones_masks_ask_for(qwen, asked, schema, document):
    grammar = sg.GrammarCompiler(qwen).compile_json_schema(schema)
    found = {(loop_bytes, multibyte) for loop_bytes, multibyte, _ in rule_loops(grammar.automaton.rules)}
    asked.clear()
    force(grammar, qwen, document)
    wide = {key for key in asked if len(key[0]) >= 32}  # narrow ones (digits) the bound rules out unbuilt
    assert wide, "the document meets no string loop"
    assert wide <= found


def test_a_compile_builds_its_loops_before_the_first_fill(qwen, builds):
    # a byte set no other test uses, so the vocabulary's splits of it are not cached yet
    schema = {"type": "string", "pattern": "^[ a-km-z0-9_.~!-]+$"}
    grammar = sg.GrammarCompiler(qwen).compile_json_schema(schema)
    in_compile = {kind for kind, *_ in builds}
    assert {"inside", "by_first", "cuts"} <= in_compile
    builds.clear()
    force(grammar, qwen, '"abc.def~ghi"')
    assert not {kind for kind, *_ in builds} & {"inside", "by_first", "cuts", "suffixes"}


def test_no_loop_is_prepared_past_the_deadline(qwen, builds, monkeypatch):
    with monkeypatch.context() as m:  # a compile that prepares nothing, to prepare by hand below
        m.setattr(TokenMasker, "prepare_loops", lambda self, loops: None)
        grammar = sg.GrammarCompiler(qwen).compile_json_schema({"type": "string", "pattern": "^[ a-jm-z0-9_.~!-]+$"})
    loops = rule_loops(grammar.automaton.rules)
    builds.clear()
    with deadline.compile_deadline(1e-6):
        time.sleep(0.001)
        grammar.masker.prepare_loops(loops)
    assert builds == []
    grammar.masker.prepare_loops(loops)  # without one, they are built
    assert builds


def test_characters_lead_where_the_machine_says(qwen):
    """A free string body loops on every non-ASCII character; a format's ASCII loop does not."""
    body = sg.GrammarCompiler(qwen).compile_json_schema({"type": "string", "minLength": 0})
    assert any(multibyte and self_loop for _, multibyte, self_loop in rule_loops(body.automaton.rules))
    host = sg.GrammarCompiler(qwen).compile_json_schema({"type": "string", "pattern": "^[a-z.-]+$"})
    assert (b"-.abcdefghijklmnopqrstuvwxyz", False, True) in rule_loops(host.automaton.rules)


def wide_groups_reference(rows: list[list[int]], classmap: list[int], min_bytes: int) -> set[tuple[bytes, int, int]]:
    """The definition `_rule_loops.wide_groups` follows, one state at a time: (bytes, target's
    distance kind, self_loop) per distinct group, the first state having it."""
    sizes = [classmap.count(c) for c in range(len(rows[0]))]

    def group(s: int, target: int) -> tuple[int, ...]:
        return tuple(c for c, t in enumerate(rows[s]) if t == target)

    def biggest(s: int) -> int:
        live = [c for c, t in enumerate(rows[s]) if t >= 0]
        return rows[s][max(live, key=lambda c: (sizes[c], -c))] if live else -1

    out, seen = set(), set()
    for s in range(len(rows)):
        for self_loop in (1, 0):
            target = s if self_loop else biggest(s)
            if target < 0 or (not self_loop and target == s):
                continue
            classes = group(s, target)
            if sum(sizes[c] for c in classes) < min_bytes:
                continue
            if not self_loop and (biggest(target) < 0 or group(target, biggest(target)) != classes):
                continue
            if (classes, self_loop) not in seen:
                seen.add((classes, self_loop))
                out.add((bytes(b for b in range(256) if classmap[b] in classes), s, target, self_loop))
    return out


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4).flatmap(lambda k: st.tuples(
    st.integers(1, 10).flatmap(lambda n: st.lists(st.lists(st.integers(-1, n - 1), min_size=k, max_size=k), min_size=n, max_size=n)),
    st.lists(st.integers(0, k - 1), min_size=256, max_size=256))), st.integers(1, 200))
def test_wide_groups_follow_their_definition(dfa, min_bytes):
    rows, classmap = dfa
    table = np.asarray(rows, dtype=np.int32).tobytes()
    got = _rule_loops.wide_groups(table, bytes(classmap), len(rows), min_bytes)
    assert len(got) == len(set(got))
    assert set(got) == wide_groups_reference(rows, classmap, min_bytes)


def test_wide_groups_refuse_a_table_out_of_range():
    with pytest.raises(ValueError):
        _rule_loops.wide_groups(np.asarray([[5]], dtype=np.int32).tobytes(), bytes(256), 1, 1)
    with pytest.raises(ValueError):
        _rule_loops.wide_groups(b"\0\0\0", bytes(256), 1, 1)
