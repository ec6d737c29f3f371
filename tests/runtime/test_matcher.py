"""GrammarMatcher and bitmask helpers on a small explicit vocabulary (exact expectations)."""

import numpy as np
import pytest

import strictgen as sg

# ids:      0     1     2      3      4     5      6        7        8      9        10        11
TOKENS = [b"a", b"b", b"ab", b"abc", b"c", b"\"", b"\xe4", b"\xbd\xa0", b"", "你".encode(), b"<eos>", b"<pad>"]
EOS, PAD = 10, 11


@pytest.fixture(scope="module")
def tok():
    return sg.TokenizerInfo.from_vocab(TOKENS, eos_token_ids=[EOS], special_token_ids=[EOS, PAD], vocab_size=40)


def allowed(matcher) -> set[int]:
    mask = sg.allocate_token_bitmask(1, matcher.compiled.tokenizer_info.vocab_size)
    matcher.fill_next_token_bitmask(mask)
    bits = np.unpackbits(mask[0].view(np.uint8), bitorder="little")
    return set(np.flatnonzero(bits).tolist())


def test_mask_accept_and_eos(tok):
    g = sg.GrammarCompiler(tok).compile_regex("ab+c?")
    m = sg.GrammarMatcher(g)
    assert allowed(m) == {0, 2, 3}  # a, ab, abc
    assert not m.accept_token(1) and m.state == m.compiled.machine.start
    assert m.accept_token(2)  # "ab"
    assert allowed(m) == {1, 4, EOS}  # b, c, or stop
    assert not m.is_terminated()
    assert m.accept_token(EOS) and m.is_terminated()
    assert allowed(m) == {EOS} and not m.accept_token(1)


def test_specials_padding_and_empty_tokens_never_match_text(tok):
    g = sg.GrammarCompiler(tok).compile_regex(".*")
    got = allowed(sg.GrammarMatcher(g))
    assert EOS in got and PAD not in got and 8 not in got  # the empty token makes no progress
    assert all(i < len(TOKENS) for i in got)  # padding ids past the tokenizer are never allowed
    assert not sg.GrammarMatcher(g).accept_token(PAD)
    assert not sg.GrammarMatcher(g).accept_token(39) and not sg.GrammarMatcher(g).accept_token(40)


def test_partial_utf8_tokens(tok):
    g = sg.GrammarCompiler(tok).compile_choice(["你", "c"])
    m = sg.GrammarMatcher(g)
    assert allowed(m) == {4, 6, 9}  # "c", the first byte of 你, 你 itself
    assert m.accept_token(6)
    assert allowed(m) == {7}  # only the bytes that complete 你
    assert m.accept_token(7) and allowed(m) == {EOS}


def test_rollback_restores_exactly(tok):
    g = sg.GrammarCompiler(tok).compile_grammar('root ::= "a" inner "c"\ninner ::= "b" inner | ""')
    m = sg.GrammarMatcher(g)
    seen = [(m.state, allowed(m))]
    for t in [0, 1, 1, 4, EOS]:
        assert m.accept_token(t)
        seen.append((m.state, allowed(m)))
    assert m.is_terminated()
    for back in range(len(seen) - 1):
        m.rollback(1)
        state, mask = seen[-2 - back]
        assert m.state == state and allowed(m) == mask and not m.is_terminated()
    with pytest.raises(sg.StrictgenError):
        m.rollback(1)
    m.accept_string("abb")
    m.reset()
    assert m.state == seen[0][0]


def test_accept_string_is_all_or_nothing(tok):
    m = sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_regex("[a-c]{2}x"))
    assert not m.accept_string("abc")
    assert m.state == m.compiled.machine.start
    assert m.accept_string("ab") and m.accept_string(b"x")
    m.rollback(1)
    assert m.accept_string("x") and m.can_end()


def test_jump_forward(tok):
    compiler = sg.GrammarCompiler(tok)
    m = sg.GrammarMatcher(compiler.compile_grammar('root ::= "{\\"name\\": \\"" [a-z]+ "\\", \\"n\\": 你" [0-9]'))
    assert m.find_jump_forward_string() == '{"name": "'
    assert m.accept_string('{"name": "x')
    assert m.find_jump_forward_string() == ""
    assert m.accept_string('"')
    assert m.find_jump_forward_string() == ', "n": 你'
    # forced bytes that stop inside a character are cut back to whole characters
    m2 = sg.GrammarMatcher(compiler.compile_choice(["你a", "你b"]))
    assert m2.find_jump_forward_string() == "你"
    m3 = sg.GrammarMatcher(compiler.compile_choice(["你", "好"]))
    assert m3.find_jump_forward_string() == "" and m3.find_jump_forward_bytes() == b""
    m4 = sg.GrammarMatcher(compiler.compile_choice(["你a", "你b"]))
    assert m4.accept_token(6) and m4.find_jump_forward_bytes() == b"\xbd\xa0"


def test_compiler_caches_by_content(tok):
    compiler = sg.GrammarCompiler(tok)
    assert compiler.compile_regex("a+") is compiler.compile_regex("a+")
    assert compiler.compile_json() is compiler.compile_json()
    assert compiler.compile_json() is not compiler.compile_json(whitespace="compact")


def test_apply_bitmask_numpy(tok):
    m = sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_regex("ab+c?"))
    mask = sg.allocate_token_bitmask(2, tok.vocab_size)
    m.fill_next_token_bitmask(mask, index=1)
    logits = np.zeros((2, tok.vocab_size), dtype=np.float32)
    sg.apply_token_bitmask_inplace(logits, mask)
    assert np.isfinite(logits[0]).all()  # row 0 is the all-allowed mask
    assert set(np.flatnonzero(np.isfinite(logits[1]))) == {0, 2, 3}
    one = np.zeros(tok.vocab_size, dtype=np.float32)
    sg.apply_token_bitmask_inplace(one, mask[1])
    assert set(np.flatnonzero(np.isfinite(one))) == {0, 2, 3}


def test_apply_bitmask_torch(tok):
    torch = pytest.importorskip("torch", reason="torch is a test dependency; absent only outside `make test`")
    m = sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_regex("ab+c?"))
    mask = torch.from_numpy(sg.allocate_token_bitmask(3, tok.vocab_size))
    m.fill_next_token_bitmask(mask, index=2)
    logits = torch.randn(2, tok.vocab_size)
    sg.apply_token_bitmask_inplace(logits, mask[1:], indices=[0, 1])
    assert torch.isfinite(logits[0]).all()
    assert set(torch.nonzero(torch.isfinite(logits[1])).flatten().tolist()) == {0, 2, 3}


def test_fill_says_whether_the_mask_needs_applying():
    """The flag of a row whose first word allows every token comes from the store (found once
    when the row was kept), and agrees with a scan of the row: on the computing fill and a hit."""
    letters = [bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyzABCDEF"]  # ids 0..31: the whole first word
    others = [bytes([c]) for c in b"0123456789GHIJKLMNOPQRSTUVWXYZ!"]  # ids 32..62
    tok = sg.TokenizerInfo.from_vocab(letters + others + [b"<eos>"], eos_token_ids=[63], special_token_ids=[63])
    assert tok.vocab_size == 64
    compiler = sg.GrammarCompiler(tok)
    for pattern, needs in (("[a-zA-F]*", True), ("[!-~]*", False)):
        m = sg.GrammarMatcher(compiler.compile_regex(pattern))
        for _ in range(2):  # the miss that computes the row, then a hit
            mask = sg.allocate_token_bitmask(1, 64)
            assert m.fill_next_token_bitmask(mask) is needs
            assert mask[0, 0] == -1 and bool((mask[0] != -1).any()) is needs
        assert m._row_store.needs_apply(m.state) is needs
        assert m._row_store.needs_apply(10**9) is None  # a state never stored
