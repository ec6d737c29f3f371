"""The machine's questions about a counted string answered by stepping bytes without rows
(`_byte_steps.c`): `chain`, `utf8_target` and `utf8_chain` against their definitions read off
full rows (`compute_row`), on random counted patterns and `maxLength` strings (the frame path:
one stack reads lead bytes; the general path: calls or alternatives inside a character)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile.machine import DEAD

# (lead range, first continuation range, continuation bytes in all): RFC 3629's multi-byte forms
UTF8_FORMS = [
    ((0xC2, 0xDF), (0x80, 0xBF), 1), ((0xE0, 0xE0), (0xA0, 0xBF), 2), ((0xE1, 0xEC), (0x80, 0xBF), 2),
    ((0xED, 0xED), (0x80, 0x9F), 2), ((0xEE, 0xEF), (0x80, 0xBF), 2), ((0xF0, 0xF0), (0x90, 0xBF), 3),
    ((0xF1, 0xF3), (0x80, 0xBF), 3), ((0xF4, 0xF4), (0x80, 0x8F), 3),
]


def reference_utf8_target(machine, state):
    """The one state every valid multi-byte character leads to from `state`, or None: each form's
    byte ranges spread over full rows."""
    reached = set()
    for (lo, hi), (clo, chi), follow in UTF8_FORMS:
        states = {state}
        for lo_b, hi_b in [(lo, hi), (clo, chi)] + [(0x80, 0xBF)] * (follow - 1):
            states = {int(t) for s in states for t in machine.compute_row(s)[lo_b:hi_b + 1]}
            if DEAD in states:
                return None
        reached |= states
    return reached.pop() if len(reached) == 1 else None


def reference_chain(machine, state, loop, limit):
    chain = [state]
    while len(chain) <= limit:
        targets = {int(machine.compute_row(chain[-1])[b]) for b in loop}
        if targets == {DEAD}:
            break
        if len(targets) > 1:
            return None
        chain.append(targets.pop())
    return chain


def check_counter(machine, state):
    """chain, utf8_chain and utf8_target from `state` (asked first, before any row is computed
    along them) against the references."""
    widest = machine.widest(state, 1)
    if not widest:
        return
    loop = machine.group(state, widest[0][0])
    chain = machine.chain(state, loop, 40)
    targets = [machine.utf8_target(s) for s in chain] if chain else []
    in_a_row = machine.utf8_chain(chain) if chain else 0
    assert chain == reference_chain(machine, state, loop, 40)
    if chain:
        expected = [reference_utf8_target(machine, s) for s in chain]
        assert targets == expected
        steps = [expected[j] == chain[j + 1] for j in range(len(chain) - 1)] + [False]
        assert in_a_row == steps.index(False)
        assert machine.utf8_chain(chain[:1]) == 0


CHARS = [r'[^"\\]', ".", "[a-zé]", "[a-z\u00e9-\u00ff]", r"\w", "[^a]", "(a|é|中|😀)", "[\u4e00-\u9fff]", "(é|ab)", "([^\x00-\x7f]|x)"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(char=st.sampled_from(CHARS), low=st.integers(0, 3), extra=st.integers(1, 12), quoted=st.booleans())
def test_counted_patterns_agree_with_their_rows(qwen, char, low, extra, quoted):
    pattern = f'"{char}{{{low},{low + extra}}}"' if quoted else f"{char}{{{low},{low + extra}}}x"
    machine = sg.GrammarCompiler(qwen).compile_regex(pattern).machine
    state = machine.step_bytes(machine.start, b'"') if quoted else machine.start
    check_counter(machine, state)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(max_length=st.integers(1, 60), min_length=st.integers(0, 3), in_object=st.booleans())
def test_max_length_strings_agree_with_their_rows(qwen, max_length, min_length, in_object):
    schema = {"type": "string", "maxLength": max_length, "minLength": min(min_length, max_length)}
    prefix = b'{"k": "' if in_object else b'"'
    if in_object:
        schema = {"type": "object", "properties": {"k": schema}, "required": ["k"]}
    machine = sg.GrammarCompiler(qwen).compile_json_schema(schema).machine
    state = machine.step_bytes(machine.start, prefix)
    assert state != DEAD
    check_counter(machine, state)
    # where each place has its next one as every character's target, the whole chain is in a row
    chain = machine.chain(state, machine.group(state, machine.widest(state, 1)[0][0]), 40)
    assert machine.utf8_chain(chain) == len(chain) - 1


def test_utf8_chain_refuses_bad_states(qwen):
    machine = sg.GrammarCompiler(qwen).compile_regex("[a-z]{0,3}").machine
    with pytest.raises(ValueError):
        machine.utf8_chain([machine.start, 10**9])
    with pytest.raises(TypeError):
        machine.utf8_chain(3)


@pytest.mark.parametrize("pattern,prefix", [
    ("(ab[a-z]{0,6}|ba[a-z]{0,6}y)z", b"ab"),  # the rule's classes split the loop bytes: each byte stepped
    ("(ab[a-z]{0,6}|ba[a-z]{0,6}y)z", b"ba"),
    ("[a-z]{0,9}z", b""),  # the loop's bytes in one class: one byte stepped for all
    ("([a-y]{2,7}|[c-z]{3,8}0)", b""),  # two stacks whose frames split the bytes differently
    ("[a-z]{2}(q|[a-z]r)", b""),  # together for two places, then "q" parts from the others: None
])
def test_chains_over_split_and_whole_byte_classes(qwen, pattern, prefix):
    machine = sg.GrammarCompiler(qwen).compile_regex(pattern).machine
    state = machine.step_bytes(machine.start, prefix)
    assert state != DEAD
    check_counter(machine, state)
