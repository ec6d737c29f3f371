"""Frames merged by equal futures (compile/_futures.c): a call's return pushes the first frame with
the same future, which keeps the stacks of grammars where two rules close the same bracket few
(fuzz finding D). Merging must change nothing a user sees: the machine with it accepts exactly what
the machine without it accepts, with the same masks, and the rules whose frames a run-time tracker
reads keep their own."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile import _machine
from strictgen.compile.machine import DEAD, PushdownMachine, keeps_identity
from strictgen.compile.token_mask import TokenMasker

from tests.fuzz.languages import gbnf_text, random_gbnf, random_node

FINDING_D = 'root ::= a | "(" root ")"\na ::= "x" | "(" root ")"\n'


@pytest.fixture(scope="module")
def tok() -> sg.TokenizerInfo:
    return sg.TokenizerInfo.from_name("smollm2")


@pytest.fixture(scope="module")
def compiler(tok) -> sg.GrammarCompiler:
    return sg.GrammarCompiler(tok, compile_timeout=10.0)


def shared_tail_gbnf(rnd: random.Random) -> dict[str, list]:
    """Finding D's shape with random parts: two rules that open the same bracket around `root`,
    mostly with the same random tail after it (merged frames), sometimes with another."""
    tail = random_node(rnd, 2, regex=False)
    other = tail if rnd.random() < 0.7 else random_node(rnd, 2, regex=False)
    opener = ["lit", rnd.choice("([{<")]
    return {
        "root": ["alt", [["ref", "a"], ["seq", [opener, ["ref", "root"], tail]]]],
        "a": ["alt", [random_node(rnd, 2, regex=False), ["seq", [opener, ["ref", "root"], other]]]],
    }


def _walk_both(merged: PushdownMachine, plain: PushdownMachine, rnd: random.Random, steps: int):
    """Step both machines along one random walk (mostly live bytes, some dead ones), asserting at
    each state that they agree on acceptance and on which bytes live; yields the state pairs."""
    a, b = merged.start, plain.start
    for _ in range(steps):
        assert merged.accepting[a] == plain.accepting[b]
        live_a, live_b = merged.compute_row(a) != DEAD, plain.compute_row(b) != DEAD
        assert np.array_equal(live_a, live_b)
        yield a, b
        live = np.flatnonzero(live_b)
        if not len(live):
            return
        byte = int(rnd.choice(live.tolist())) if rnd.random() < 0.9 else rnd.randrange(256)
        a, b = merged.step(a, byte), plain.step(b, byte)
        if (a == DEAD) != (b == DEAD):
            raise AssertionError(f"byte {byte}: one machine died and the other did not")
        if a == DEAD:
            return


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_merging_accepts_what_the_plain_machine_accepts_with_the_same_masks(seed, compiler, tok):
    """On random small GBNF grammars (the fuzz campaign's generator, and finding D's shape with
    random parts, where frames do merge): along random walks, the
    machine with merged frames and the one without agree on acceptance and live bytes at every
    state (so on every byte string along the walk), and on the token masks of sampled states."""
    rnd = random.Random(seed)
    try:
        g = compiler.compile_grammar(gbnf_text(random_gbnf(rnd) if seed % 2 else shared_tail_gbnf(rnd)))
    except sg.StrictgenError:
        return  # a refused grammar (left recursion, an empty language): nothing to compare
    plain = PushdownMachine(g.automaton, merge_frames=False)
    plain_masks = TokenMasker(plain, tok.trie, tok.vocab_size, tok.eos_token_ids)
    for walk in range(3):
        for i, (a, b) in enumerate(_walk_both(g.machine, plain, rnd, 30)):
            assert len(g.machine.stacks(a)) <= len(plain.stacks(b))
            if i % 7 == walk:
                assert np.array_equal(g.masker.mask(a), plain_masks.mask(b))


def test_finding_d_keeps_two_stacks_merged_and_doubles_without(compiler):
    g = compiler.compile_grammar(FINDING_D)
    plain = PushdownMachine(g.automaton, merge_frames=False)
    data = b"(" * 10
    assert len(g.machine.stacks(g.machine.step_bytes(g.machine.start, data))) == 2
    assert len(plain.stacks(plain.step_bytes(plain.start, data))) == 2 * 2**10  # each `(` doubles them


def test_a_kept_rule_is_never_merged(compiler):
    """keep[r]: rule r's frames are its own and no other frame becomes one of them. In finding D's
    grammar, keeping `a` alone leaves the two return frames apart again."""
    g = compiler.compile_grammar(FINDING_D)
    names = [r.name for r in g.automaton.rules]
    parts = [(r.dfa.compact()[0], r.dfa.compact()[1], r.dfa.accepting(), *r.dfa.call_arrays()) for r in g.automaton.rules]
    kept = _machine.Machine(parts, bytes(name == "a" for name in names))
    state = kept.step_bytes(kept.start_state(), b"(" * 6)
    assert len(kept.stacks(state)) == 2 * 2**6
    merged = _machine.Machine(parts)
    assert len(merged.stacks(merged.step_bytes(merged.start_state(), b"(" * 6))) == 2


def test_tracked_rules_keep_identity():
    assert keeps_identity("obj~distinct") and keeps_identity('arr~unique:[{"k": 1}]')
    assert not keeps_identity("root") and not keeps_identity("value")


def test_unique_items_still_vetoes_repeats_inside_merged_grammars(compiler):
    """A uniqueItems array inside nested arrays: the tracker reads its rule's frames, which stay
    its own while the machine merges others."""
    schema = {"type": "array", "items": {"type": "array", "uniqueItems": True, "items": {"enum": [1, 2, 3]}}}
    g = compiler.compile_json_schema(schema)
    assert sg.GrammarMatcher(g).accept_string("[[1,2],[3]]")
    assert not sg.GrammarMatcher(g).accept_string("[[1,2],[3,3]]")


def test_frames_merge_in_big_rules_with_ranged_tails(compiler):
    """Futures are signed from byte ranges read off each rule's classes, only for the states near
    return frames (_futures.c): a rule of 200+ states whose return tails read a class with gaps
    (`[0-9a-f]`, several byte runs in one class) still merges its frames with root's, and the
    merged machine reads the same language as the plain one."""
    tail = '")" [0-9a-f] [0-9a-f]?'
    long = "y" * 200
    g = compiler.compile_grammar(f'root ::= a | "(" root {tail}\na ::= "x{long}" | "(" root {tail}\n')
    assert any(r.num_states > 200 for r in g.automaton.rules)
    plain = PushdownMachine(g.automaton, merge_frames=False)
    data = b"(" * 8
    assert len(g.machine.stacks(g.machine.step_bytes(g.machine.start, data))) == 2
    assert len(plain.stacks(plain.step_bytes(plain.start, data))) == 2 * 2**8
    for text in [b"((x" + long.encode() + b")a)9f", b"(x" + long.encode() + b")0", b"((x" + long.encode() + b")g)1", b"(x)0"]:
        got = [m.step_bytes(m.start, text) for m in (g.machine, plain)]
        assert (got[0] == DEAD) == (got[1] == DEAD)
        assert (got[0] != DEAD and g.machine.accepting[got[0]]) == (got[1] != DEAD and plain.accepting[got[1]])
    ok = g.machine.step_bytes(g.machine.start, b"((x" + long.encode() + b")a)9f")
    assert ok != DEAD and g.machine.accepting[ok]


def _parts(g) -> list[tuple]:
    return [(r.dfa.compact()[0], r.dfa.compact()[1], r.dfa.accepting(), *r.dfa.call_arrays()) for r in g.automaton.rules]


def test_a_rule_built_at_run_time_merges_with_the_frames_before_it(compiler):
    """Futures are signed when a call first returns to a frame, not when its rule is appended
    (_futures.c): finding D's rule `a` appended at run time (a lazy rule: the root's calls name
    it as one not built yet) still merges its return frame with root's, its callee read as a rule
    built at run time; and before `a` is appended the start asks for it."""
    g = compiler.compile_grammar(FINDING_D)
    names = [r.name for r in g.automaton.rules]
    parts = _parts(g)
    later = names.index("a")
    assert later > 0  # the root is rule 0
    static = parts[:later]
    machine = _machine.Machine(static)
    with pytest.raises(_machine.NeedRule):
        machine.step_bytes(machine.start_state(), b"(")
    for r in range(later, len(parts)):
        machine.add_rule(r, parts[r])
    state = machine.step_bytes(machine.start_state(), b"(" * 8)
    assert len(machine.stacks(state)) == 2
    closed = machine.step_bytes(state, b"x" + b")" * 8)
    assert closed != DEAD and machine.is_accepting(closed)
    assert machine.step_bytes(state, b"x" + b")" * 9) == DEAD


@pytest.mark.parametrize("first", [b"((x))", b"(((((x)))))"])
def test_merged_stacks_do_not_depend_on_which_document_came_first(compiler, first):
    """A frame's stand-in is the first frame with its future that a closure asked for, so two
    machines of one grammar may pick different ones; what they accept, and how few stacks they
    keep, are the same whatever was stepped before."""
    g = compiler.compile_grammar(FINDING_D)
    parts = _parts(g)
    fresh, warmed = _machine.Machine(parts), _machine.Machine(parts)
    assert warmed.step_bytes(warmed.start_state(), first) != DEAD
    for text in (b"(" * 9, b"(" * 9 + b"x" + b")" * 9, b"(" * 9 + b"x" + b")" * 10, b"((x)"):
        a, b = fresh.step_bytes(fresh.start_state(), text), warmed.step_bytes(warmed.start_state(), text)
        assert (a == DEAD) == (b == DEAD)
        if a != DEAD:
            assert len(fresh.stacks(a)) == len(warmed.stacks(b)) <= 2
            assert fresh.is_accepting(a) == warmed.is_accepting(b)
