"""A counted repeat past the NFA state limit is refused as soon as its second copy shows what each
costs (NFABuilder._refuse_early), with the error the size checks would raise once every copy had
been built, and never where the whole build fits: the outcome is the same as without the early
refusal, on both sides of the limit."""

from __future__ import annotations

import pytest

from strictgen.errors import GrammarTooLargeError
from strictgen.grammar import automata
from strictgen.grammar.automata import MAX_NFA_STATES, NFABuilder, shared_nodes
from strictgen.grammar.build_memo import BuildMemo
from strictgen.grammar.ir import Repeat, charset, lit, seq

ITEMS = {
    "any character": charset([(0, 0x10FFFF)]),  # a piece built per copy
    "a composite piece": seq(lit("ab"), charset([(0x61, 0x7A), (0x400, 0x4FF)])),  # spliced from its template
}


def _outcome(item, copies: int, early: bool, monkeypatch) -> str:
    if not early:
        monkeypatch.setattr(NFABuilder, "_refuse_early", lambda self, per_copy, left: None)
    expr = Repeat(item, 0, copies)
    builder = NFABuilder({"r": expr}, {}, shared_nodes([expr]), BuildMemo(), False)
    s, f = builder.new(), builder.new()
    try:
        builder.build(expr, s, f)
    except GrammarTooLargeError as exc:
        return str(exc)
    finally:
        monkeypatch.undo()
    return "built"


def _per_copy(item) -> int:
    """States one more copy adds, measured on small repeats."""
    sizes = []
    for copies in (8, 9):
        expr = Repeat(item, 0, copies)
        builder = NFABuilder({"r": expr}, {}, shared_nodes([expr]), BuildMemo(), False)
        s, f = builder.new(), builder.new()
        builder.build(expr, s, f)
        sizes.append(builder.nfa.num_states)
    return sizes[1] - sizes[0]


@pytest.mark.parametrize("name", ITEMS)
def test_counted_repeat_refused_early_exactly_where_the_build_would_be(name, monkeypatch):
    automata.forget_kept_automata()
    item = ITEMS[name]
    per_copy = _per_copy(item)
    refusal = f"grammar too large: more than {MAX_NFA_STATES} automaton states"
    fits = (MAX_NFA_STATES - 2048) // per_copy  # ends under the limit: must be built
    over = (MAX_NFA_STATES + 4096) // per_copy + 1  # ends past it: refused either way
    edge = (MAX_NFA_STATES + 2048) // per_copy  # about where the early refusal starts
    assert _outcome(item, fits, True, monkeypatch) == "built"
    assert _outcome(item, over, True, monkeypatch) == _outcome(item, over, False, monkeypatch) == refusal
    for copies in (edge - 1, edge + 1):
        assert _outcome(item, copies, True, monkeypatch) == _outcome(item, copies, False, monkeypatch), copies
    assert _outcome(item, 40 * edge, True, monkeypatch) == refusal  # at once, not after 40x the limit


@pytest.mark.parametrize("bounds", [(0, 2**31), (2**31, None), (3, 10**18)])
def test_a_repeat_bound_past_int32_is_a_clear_refusal(bounds):
    """A lowering program's cells are int32: a bound past them was an OverflowError out of the
    compile (a schema's `maxLength: 1e18` with a pattern reached it); it is the state limit's refusal."""
    expr = Repeat(lit("ab"), *bounds)
    builder = NFABuilder({"r": expr}, {}, shared_nodes([expr]), BuildMemo())
    with pytest.raises(GrammarTooLargeError, match="grammar too large: a repeat of"):
        builder.regular_dfa(expr)


def test_a_huge_max_length_with_a_pattern_compiles_or_is_refused_clearly(qwen):
    import strictgen as sg

    compiler = sg.GrammarCompiler(qwen)
    schema = {"type": "string", "pattern": "^[a-z]+( [a-z]+)*$", "maxLength": 1e18}
    try:
        grammar = compiler.compile_json_schema(schema)
    except sg.StrictgenError as exc:
        assert "too large" in str(exc)
    else:
        assert sg.GrammarMatcher(grammar).accept_string('"ab cd"')
