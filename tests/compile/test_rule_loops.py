"""The loops a compile reads off its rule automata (compile/rule_loops.py) and prepares for its
string shortcuts (TokenMasker.prepare_loops): they must be the loops the masks then ask the
vocabulary for, built before the first fill, and never past the compile's deadline."""

import time

import pytest

import strictgen as sg
from strictgen import deadline
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
