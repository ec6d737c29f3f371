"""The trie walk's steps without rows (`_walk.c` FEW_CHILDREN, the machine's C API `step`): at a
node with a few children, in a state whose row is not computed, the walk steps only those
children's bytes, and computes the state's row only once walks have asked it of that state
STEPS_WITHOUT_ROW times. Whichever way a target is found, the mask is the same: here it is checked
token by token on fresh machines (nothing computed but the prefix's path), on first, second and
third walks, with rules deferred so that a step meets rules not built yet (NeedRule, resolved
where it is met, as a row does)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile.automaton import compile_automaton
from strictgen.compile.machine import DEAD, PushdownMachine
from strictgen.compile.token_mask import TokenMasker
from strictgen.grammar.ir import Grammar, RuleRef, alt, lit, repeat, seq
from strictgen.tokenizer.trie import pack_bits

ALPHABET = b"abxy()[] \t"
EOS = b"</s>"


def nested() -> Grammar:
    """x and y recursive, so calls (and, compiled with nothing built ahead, built when entered);
    `"a" x | "a" y`-like overlaps give states of several stacks. New objects each time."""
    return Grammar({
        "root": alt(seq(lit("a"), RuleRef("x")), seq(lit("a"), RuleRef("y")), seq(lit("bb"), RuleRef("y"))),
        "x": alt(lit("x"), seq(lit("("), RuleRef("x"), lit(")")), seq(lit("["), RuleRef("x"), lit("]"))),
        "y": alt(seq(lit("y"), repeat(RuleRef("ws"))), seq(lit("["), RuleRef("y"), lit("]"))),
        "ws": alt(lit(" "), seq(lit("\t"), RuleRef("ws"))),
    })


def vocabulary(pieces: list[bytes]) -> sg.TokenizerInfo:
    tokens = [EOS] + [bytes((b,)) for b in ALPHABET] + sorted(set(pieces) - {bytes((b,)) for b in ALPHABET})
    return sg.TokenizerInfo.from_vocab(tokens, eos_token_ids=[0], special_token_ids=[0])


def fresh(tok: sg.TokenizerInfo, prefix: bytes) -> tuple[PushdownMachine, TokenMasker, int]:
    """A new machine (every rule but the root deferred) and masker, and the state after `prefix`."""
    machine = PushdownMachine(compile_automaton(nested(), 0))
    masker = TokenMasker(machine, tok.trie, tok.vocab_size, tok.eos_token_ids)
    return machine, masker, machine.step_bytes(machine.start, prefix)


def token_by_token(machine: PushdownMachine, tok: sg.TokenizerInfo, state: int) -> np.ndarray:
    allowed = np.array([i != 0 and machine.step_bytes(state, tok.token_bytes(i)) != DEAD for i in range(tok.vocab_size)])
    return pack_bits(allowed, tok.vocab_size)


def rows_computed(machine: PushdownMachine) -> int:
    index, _ = machine._core.tables
    return int((np.frombuffer(index, dtype=np.int32) >= 0).sum())


@settings(max_examples=60, deadline=None)
@given(
    pieces=st.lists(st.lists(st.sampled_from(ALPHABET), min_size=2, max_size=5).map(bytes), max_size=60),
    prefix=st.lists(st.sampled_from(b"ab([xy"), max_size=8).map(bytes),
)
def test_first_walks_equal_token_by_token(pieces, prefix):
    tok = vocabulary(pieces)
    machine, masker, state = fresh(tok, prefix)
    if state == DEAD:
        return
    walks = [masker._allowed(state) for _ in range(3)]  # stepped, stepped again, then from rows
    expected = token_by_token(machine, tok, state)
    for got in walks:
        assert np.array_equal(got, expected)


def test_a_first_walk_leaves_rows_of_states_met_once_uncomputed():
    """Deep tokens below `a((`: the first walk steps the few children of each node it meets
    instead of computing rows (a walk computing every row it needs has computed them all by its
    end), and later walks of the same state compute the rows of the states asked most; the masks
    agree whichever way."""
    pieces = [b"(" * k + b"x" + b")" * j for k in range(1, 5) for j in range(0, 5)] + [b"[[(", b"([x", b"(x])"]
    tok = vocabulary(pieces)
    machine, masker, state = fresh(tok, b"a((")
    first = masker._allowed(state)
    after_first = rows_computed(machine)
    second = masker._allowed(state)
    third = masker._allowed(state)
    assert rows_computed(machine) > after_first
    expected = token_by_token(machine, tok, state)
    for got in (first, second, third):
        assert np.array_equal(got, expected)
