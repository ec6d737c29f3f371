"""The C lowering of IR to NFAs (`regular.lower`, from the flat program grammar/automata.py writes)
against the Python builder it replaces: on random rule sets (calls, inlined rules, shared nodes,
counted and unbounded repeats, character classes, intersections and differences) both build the
same NFA state by state, edge by edge, and the C side built every one of them (none fell back)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictgen import regular
from strictgen.errors import StrictgenError
from strictgen.grammar.automata import NFABuilder, forget_kept_automata, shared_nodes
from strictgen.grammar.build_memo import BuildMemo
from strictgen.grammar.ir import Alt, ByteSet, CharSet, Difference, Expr, Intersect, Literal, Repeat, RuleRef, Seq, Spelled

RULES = ("r0", "r1", "r2", "r3")

literals = st.binary(max_size=4).map(Literal)
bytesets = st.lists(st.tuples(st.integers(0x20, 0x7F), st.integers(0, 3)), min_size=1, max_size=3).map(
    lambda rs: ByteSet(tuple(sorted({(lo, min(lo + w, 0x7F)) for lo, w in rs})[:1])))
charsets = st.lists(st.integers(0, 0x10FFF0), min_size=1, max_size=3).map(
    lambda cs: CharSet(tuple((c, c + 9) for c in sorted(set(cs)) if not 0xD7F0 <= c <= 0xDFFF) or ((0x41, 0x5A),)))
regular_leaves = st.one_of(literals, bytesets, charsets)


def _regular_combine(children):
    return st.one_of(st.lists(children, max_size=3).map(lambda xs: Seq(tuple(xs))), st.lists(children, min_size=1, max_size=3).map(lambda xs: Alt(tuple(xs))),
                     st.tuples(children, st.integers(0, 2), st.none() | st.integers(0, 2)).map(lambda t: Repeat(t[0], t[1], None if t[2] is None else t[1] + t[2])))


regular_exprs = st.recursive(regular_leaves, _regular_combine, max_leaves=5)
products = st.one_of(st.tuples(regular_exprs, regular_exprs).map(lambda ab: Intersect(ab)), st.tuples(regular_exprs, regular_exprs).map(lambda ab: Difference(*ab)),
                     st.just(Spelled(Repeat(CharSet(((0x20, 0x7E), (0xE9, 0xE9))), 0, 3))))


@st.composite
def rule_sets(draw):
    """Rules r0..r3: r3 always a call (so that pieces around it are templates rather than embedded
    DFAs), r2 always inlined, r0 and r1 either; inlined rules are referred to from earlier rules
    only (they never recur). Every body draws from one pool of pieces, so nodes are shared within
    and across rules (templates written for one rule are copied into the next)."""
    called = {name: i for i, name in enumerate(n for n in RULES if n == "r3" or (n != "r2" and draw(st.booleans())))}
    common = draw(st.lists(st.one_of(regular_exprs, products), min_size=1, max_size=3))
    rules: dict[str, Expr] = {}
    for i, name in enumerate(RULES):
        refs = [RuleRef(n) for n in RULES if n in called or RULES.index(n) > i]
        pool = common + draw(st.lists(st.sampled_from(refs) if refs else regular_exprs, max_size=3))
        pieces = st.sampled_from(pool)

        def combine(children):
            return st.one_of(st.lists(children, max_size=4).map(lambda xs: Seq(tuple(xs))), st.lists(children, min_size=1, max_size=3).map(lambda xs: Alt(tuple(xs))),
                             st.tuples(children, st.integers(0, 3), st.none() | st.integers(0, 3)).map(lambda t: Repeat(t[0], t[1], None if t[2] is None else t[1] + t[2])))

        rules[name] = draw(st.recursive(pieces, combine, max_leaves=8))
    return rules, called


def _built(rules, called, in_c):
    """Every rule's NFA, the rules built one after another over one compile's memo (as
    compile/automaton.py builds them: templates and embedded pieces carry over)."""
    forget_kept_automata()  # each builder starts from the same caches
    shared, memo, out = shared_nodes(rules.values()), BuildMemo(), []
    for name in RULES:
        builder = NFABuilder(rules, called, shared, memo, in_c)
        start, final = builder.new(), builder.new()
        builder.build(rules[name], start, final)
        out.append((builder.nfa.num_states, builder.nfa.arrays()))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(rule_sets())
def test_the_c_lowering_builds_the_python_builders_nfa_state_by_state(case):
    rules, called = case
    statuses = []
    lower = regular.lower
    regular.lower = lambda *args: statuses.append(lower(*args)) or statuses[-1]  # every build's status
    try:
        in_c = _built(rules, called, True)
    finally:
        regular.lower = lower
    assert in_c == _built(rules, called, False)
    assert statuses and all(s == 0 for s in statuses), statuses  # C built every one: no fallback


def _refusal(rules, called, in_c):
    builder = NFABuilder(rules, called, shared_nodes(rules.values()), BuildMemo(), in_c)
    s, f = builder.new(), builder.new()
    try:
        builder.build(rules["a"], s, f)
    except StrictgenError as exc:
        return type(exc), str(exc), builder.nfa.num_states, builder.nfa.arrays()
    raise AssertionError("a rule inlined inside itself was built")


def test_a_rule_met_inside_itself_is_refused_as_before():
    """Where the Python builder meets an inlined rule inside itself, the lowering raises what the
    Python builder raises today."""
    rules = {"a": Seq((Literal(b"x"), RuleRef("b"))), "b": Alt((Literal(b"y"), Seq((Literal(b"z"), RuleRef("a")))))}
    got = _refusal(rules, {}, True)
    assert got[:2] == _refusal(rules, {}, False)[:2]
    assert "recursive" in got[1]


def test_literal_ops_are_made_once_for_every_compile_within_their_bounds():
    """A literal's LIT op is its bytes after (LIT, length), kept across compiles (the same array
    object for the same bytes) in a map bounded in entries and cells."""
    from strictgen.grammar import lowering

    op = lowering.literal_op(b"\x00lit\xff")
    assert list(op) == [lowering.LIT, 5, 0, *b"lit", 255] and lowering.literal_op(b"\x00lit\xff") is op
    assert lowering.known_literal(b"\x00lit\xff") is op and lowering.known_literal(b"never made \x01") is None
    # as many others, new to the map whatever ran before in this process: the least recently used goes
    for i in range(lowering.LITERAL_OPS):
        lowering.literal_op(b"\x00lit-bound %d" % i)
    assert lowering.known_literal(b"\x00lit\xff") is None and lowering.known_literal(b"\x00lit-bound %d" % (lowering.LITERAL_OPS - 1)) is not None
