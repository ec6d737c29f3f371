"""The C lowering of IR to NFAs (`regular.lower`, from the flat program grammar/automata.py writes)
against the Python builder it replaces: on random rule sets (calls, inlined rules, shared nodes,
counted and unbounded repeats, character classes, intersections and differences) both build the
same NFA state by state, edge by edge, and the C side built every one of them (none fell back).
And the program's two writers, `lowering.write_c` (C) against `lowering.Program` (the Python
reference): the same ops, the same memo left, the same errors, on those rule sets and on every
program the bench schemas' compiles write."""

from __future__ import annotations

import array
import contextlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen import regular
from strictgen.errors import GrammarTooLargeError, StrictgenError
from strictgen.grammar import automata, lowering
from strictgen.grammar.automata import NFABuilder, forget_kept_automata, shared_nodes
from strictgen.grammar.build_memo import BuildMemo
from strictgen.grammar.ir import Alt, ByteSet, CharSet, Difference, Expr, Intersect, Lazy, LazyFamily, Literal, Repeat, RuleRef, Seq, Spelled
from tests.shared_data import need_shared

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
    """And every program written on the way is the reference writer's (`_compared`)."""
    rules, called = case
    statuses, seen = [], []
    lower = regular.lower
    regular.lower = lambda *args: statuses.append(lower(*args)) or statuses[-1]  # every build's status
    try:
        with _compared(seen):
            in_c = _built(rules, called, True)
    finally:
        regular.lower = lower
    assert in_c == _built(rules, called, False)
    assert statuses and all(s == 0 for s in statuses), statuses  # C built every one: no fallback
    assert seen.count("ops") == len(seen) >= len(RULES)


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


class _Beside:
    """The builder as the reference writer sees it, with a copy of its lowering memo: the Python
    walk runs first on the copy, then C on the real one, from the same state."""

    def __init__(self, builder, memo):
        self._builder, self.lowering_memo = builder, memo

    def __getattr__(self, name):
        return getattr(self._builder, name)


def _memo_copy(memo: lowering.LoweringMemo) -> lowering.LoweringMemo:
    copy = lowering.LoweringMemo()
    copy.dfas, copy.dfa_index, copy.fragment_ids = list(memo.dfas), dict(memo.dfa_index), dict(memo.fragment_ids)
    copy.template_ids, copy.segments = dict(memo.template_ids), dict(memo.segments)
    return copy


def _memo_state(memo: lowering.LoweringMemo):
    return [id(d) for d in memo.dfas], memo.dfa_index, memo.fragment_ids, memo.template_ids, memo.segments


def _outcome(write):
    try:
        return "ops", bytes(write())
    except (lowering.Unlowerable, lowering.ProgramTooLong, StrictgenError, KeyError) as exc:
        return type(exc), exc.args


def _reference(builder, expr, shared, max_ops=None):
    program = lowering.Program(builder, max_ops)
    (program.build if shared else program.build_here)(expr)
    return program.ops.tobytes()


def _write(builder, expr, shared, max_ops=None) -> bytes:
    """The C writer's program for `expr`, as NFABuilder._lowered asks it (`lowering.write_c`)."""
    return lowering.write_c(builder, builder.lowering_memo, expr, shared, lowering.MAX_COPIES if max_ops is None else max_ops)


def _both(builder, expr, shared, max_ops=None):
    """The outcomes of both writers (Python first, on a copy of the memo) and the memos left. A
    first write on a copy of the memo that is dropped makes the pieces the builder is asked for
    (an embedded piece's own program, written meanwhile, may change the memo of a builder that
    calls nothing: its sub-builders share it): both writers then start from the same state."""
    _outcome(lambda: _write(_Beside(builder, _memo_copy(builder.lowering_memo)), expr, shared, max_ops))
    beside = _Beside(builder, _memo_copy(builder.lowering_memo))
    python = _outcome(lambda: _reference(beside, expr, shared, max_ops))
    c = _outcome(lambda: _write(builder, expr, shared, max_ops))
    return (python, _memo_state(beside.lowering_memo)), (c, _memo_state(builder.lowering_memo))


@contextlib.contextmanager
def _compared(seen: list):
    """Every program the builders write is written by both writers and compared (appended to `seen`)."""
    write_c = automata.write_c

    def compared(builder, memo, expr, shared, max_ops):
        assert memo is builder.lowering_memo
        python, c = _both(builder, expr, shared, max_ops)
        assert c == python
        seen.append(c[0][0])
        return write_c(builder, memo, expr, shared, max_ops) if c[0][0] != "ops" else c[0][1]

    automata.write_c = compared
    try:
        yield
    finally:
        automata.write_c = write_c


def test_the_c_writer_writes_every_program_of_the_bench_schemas_compiles_as_the_reference(qwen):
    """Every bench schema compiled with a fresh compiler (as `strictgen bench` does): each program
    its rule builds write (kept pieces, templates across rules, calls, embedded products)."""
    seen = []
    with _compared(seen):
        for path in sorted(need_shared("bench").glob("*.json")):
            try:
                sg.GrammarCompiler(qwen).compile_json_schema(json.loads(path.read_text())["schema"])
            except sg.StrictgenError:
                pass
    assert len(seen) > 500 and seen.count("ops") == len(seen)


def _ops(*cells: int) -> bytes:
    return array.array("i", cells).tobytes()


def _one(expr, rules=None, called=None, max_ops=None, shared=False):
    roots = {id(x): x for x in (expr, *(rules or {}).values())}  # each once: a root met twice would share its items
    builder = NFABuilder(rules or {}, called or {}, shared_nodes(list(roots.values())), BuildMemo())
    python, c = _both(builder, expr, shared, max_ops)
    assert c == python
    return c[0]


def test_the_c_writer_refuses_as_the_reference():
    """Unlowerable (an undefined rule, an unknown node, a rule met inside itself), ProgramTooLong
    past max_ops, GrammarTooLargeError for a repeat past int32, KeyError for an unnumbered Lazy."""
    assert _one(Seq((Literal(b"a"), RuleRef("nowhere")))) == (lowering.Unlowerable, ("nowhere",))
    assert _one(Alt((Literal(b"a"), Expr()))) == (lowering.Unlowerable, ("Expr",))
    rules = {"a": Seq((Literal(b"x"), RuleRef("c"), RuleRef("b"))), "b": Alt((Literal(b"y"), Seq((Literal(b"z"), RuleRef("a"))))), "c": Literal(b"c")}
    assert _one(rules["a"], rules, {"c": 0}) == (lowering.Unlowerable, (("rule", "b"),))
    long = Seq(tuple(Seq((Literal(b"%d" % i), ByteSet(((48, 57),)))) for i in range(50)))
    assert _one(long, max_ops=100)[0] is lowering.ProgramTooLong
    assert _one(long)[0] == "ops"
    for lo, hi in ((0, 2**31), (2**40, None), (2**31, 2**35), (3, 2**31 - 1)):
        got = _one(Repeat(Seq((Literal(b"ab"), RuleRef("c"))), lo, hi), {"c": Literal(b"c")}, {"c": 0})
        assert got[0] is (GrammarTooLargeError if max(lo, hi or 0) > lowering.MAX_COPIES else "ops")
    lazy = Lazy(LazyFamily(), "k", ())
    assert _one(Seq((lazy,)))[0] is KeyError
    assert _one(Seq((lazy, Literal(b"q"))), called={lazy: 7}) == ("ops", _ops(lowering.SEQ, 2, lowering.CALL, 7, lowering.LIT, 1, ord("q")))


def test_the_c_writer_raises_recursion_error_on_ir_nested_past_the_recursion_limit():
    """A walk of IR nested deeper than the interpreter allows ends in RecursionError, as the
    Python walk's does (not a crash of the C stack)."""
    deep: Expr = Literal(b"x")
    for _ in range(100_000):
        deep = Seq((Literal(b"("), deep))
    builder = NFABuilder({}, {}, set(), BuildMemo())
    with pytest.raises(RecursionError):
        _write(builder, deep, False)


def test_the_c_writer_follows_the_builders_shared_set_over_one_memo():
    """The C writer indexes the builder's shared set once a compile (kept in the lowering memo):
    a builder over the same memo with another set, or the same set grown, is indexed again."""
    twice = Seq((Literal(b"ab"), ByteSet(((48, 57),))))
    expr = Alt((twice, Seq((Literal(b"c"), twice))))
    memo, shared = BuildMemo(), set()
    for ids in (shared, shared_nodes([expr])):
        builder = NFABuilder({}, {}, ids, memo)
        python, c = _both(builder, expr, False)
        assert c == python and (lowering.SHARED in array.array("i", c[0][1])) == bool(ids)
    shared.update(shared_nodes([expr]))  # the first set, grown in place
    python, c = _both(NFABuilder({}, {}, shared, memo), expr, False)
    assert c == python and lowering.SHARED in array.array("i", c[0][1])


class _Counting(NFABuilder):
    """A builder that counts the questions the writers ask it (embedded_dfa, templated)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.asked = 0

    def embedded_dfa(self, expr):
        self.asked += 1
        return super().embedded_dfa(expr)

    def templated(self, key):
        self.asked += 1
        return super().templated(key)


def test_the_c_writer_reads_what_the_memo_settles_and_asks_the_rest():
    """The C writer reads the builder's memo (`memo_answers`) where it settles an answer, so a
    program written again asks nothing, and asks fewer questions than the reference, which asks
    at every shared node and copy; both write the same ops and leave the same answers."""
    rules = {"c": Literal(b"c")}
    piece = Seq((Literal(b"ab"), ByteSet(((48, 57),))))  # calls nothing: embedded
    calling = Seq((Literal(b"q"), RuleRef("c")))  # calls c: built
    expr = Alt((Seq((piece, calling)), Seq((Literal(b"z"), piece, calling)), Repeat(calling, 2, 3)))
    forget_kept_automata()
    python = _Counting(rules, {"c": 0}, shared_nodes([expr]), BuildMemo())
    c = _Counting(rules, {"c": 0}, shared_nodes([expr]), BuildMemo())
    for _ in range(2):
        python.asked = c.asked = 0
        assert _write(c, expr, False) == _reference(python, expr, False)
        assert c.asked < python.asked, (c.asked, python.asked)
    assert c.asked == 0 and python.asked > 0
    for mine, theirs in zip(c.memo_answers, python.memo_answers):  # the same pieces embedded, built, templated
        assert (mine.keys() if isinstance(mine, dict) else mine) == (theirs.keys() if isinstance(theirs, dict) else theirs)


def test_the_c_writer_settles_a_piece_that_reaches_a_call_without_asking():
    """A composite piece that reaches a call (through a rule it inlines) is built, not embedded:
    the C writer finds that with the call-freedom walk itself, the first time it meets the piece
    (the builder is not asked), and leaves the entries the builder's embedded_dfa would leave
    (`built`, `call_free`); the reference asks the builder and writes the same ops."""
    rules = {"c": Literal(b"c"), "i": Seq((Literal(b"i"), RuleRef("c")))}
    calling = Seq((Literal(b"q"), RuleRef("i")))  # reaches c through i, which is inlined
    expr = Alt((Seq((Literal(b"x"), calling)), Seq((Literal(b"y"), calling))))
    forget_kept_automata()
    python = _Counting(rules, {"c": 0}, shared_nodes([expr]), BuildMemo())
    c = _Counting(rules, {"c": 0}, shared_nodes([expr]), BuildMemo())
    assert id(calling) in c.shared_ids
    assert _write(c, expr, False) == _reference(python, expr, False)
    assert c.asked == 0 and python.asked > 0, (c.asked, python.asked)
    assert id(calling) in c.memo_answers[2] and c.memo_answers[5][id(calling)] is False  # built; reaches a call
    for mine, theirs in zip(c.memo_answers, python.memo_answers):
        assert (mine.items() if isinstance(mine, dict) else mine) == (theirs.items() if isinstance(theirs, dict) else theirs)


def test_the_c_writer_embeds_a_pieces_minimal_dfa_once_the_builder_has_made_it():
    """A piece's answer changes when `regular_dfa` stores its minimal DFA (it then takes the place
    of the determinised one): the C writer, which reads the memo live, embeds the new one, as the
    reference does."""
    piece = Seq((Literal(b"ab"), ByteSet(((48, 57),))))
    expr = Alt((piece, Seq((Literal(b"c"), piece))))
    builder = NFABuilder({}, {}, shared_nodes([expr]), BuildMemo())
    _write(builder, expr, False)
    determinised = builder.embedded_dfa(piece)
    minimal = builder.regular_dfa(piece)
    assert minimal is not determinised and builder.embedded_dfa(piece) is minimal
    python, c = _both(builder, expr, False)
    assert c == python
    ops = array.array("i", c[0][1])
    embedded = [builder.lowering_memo.dfas[ops[i + 1]] for i in range(len(ops) - 1) if ops[i] == lowering.EMBED and ops[i - 1] != lowering.LIT]
    assert minimal in embedded and determinised not in embedded
