"""IR → core automata, and the language questions front ends ask (grammar/automata.py), against a
direct interpreter of the IR (intersection and difference included) on random expressions."""

from __future__ import annotations

import copy
import functools
import itertools
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictgen.errors import StrictgenError
from strictgen.grammar.automata import Language, NFABuilder, dfa_size, regular_dfa, shared_nodes, table_key
from strictgen.grammar.build_memo import BuildMemo
from strictgen.grammar.ir import (
    Alt,
    ByteSet,
    Difference,
    Expr,
    Grammar,
    Intersect,
    Lazy,
    LazyFamily,
    Literal,
    Repeat,
    RuleRef,
    Spelled,
    Seq,
    alt,
    children,
    intersect,
    lit,
    repeat,
    seq,
)

ALPHABET = b"abc"
WORDS = [bytes(w) for n in range(6) for w in itertools.product(ALPHABET, repeat=n)]


def matches(expr: Expr, data: bytes) -> bool:
    """Reference: positions where a match of expr starting at i can end (memoised per call)."""

    def step(e: Expr, starts) -> frozenset[int]:
        return frozenset(j for p in starts for j in ends(e, p))

    @functools.lru_cache(maxsize=None)
    def ends(e: Expr, i: int) -> frozenset[int]:
        if isinstance(e, Literal):
            return frozenset([i + len(e.data)]) if data.startswith(e.data, i) else frozenset()
        if isinstance(e, ByteSet):
            return frozenset([i + 1]) if i < len(data) and any(lo <= data[i] <= hi for lo, hi in e.ranges) else frozenset()
        if isinstance(e, Seq):
            cur = frozenset([i])
            for item in e.items:
                cur = step(item, cur)
            return cur
        if isinstance(e, Alt):
            return frozenset(j for item in e.items for j in ends(item, i))
        if isinstance(e, Repeat):
            cur = frozenset([i])
            for _ in range(e.min):
                cur = step(e.item, cur)
            out = set(cur)
            if e.max is None:
                frontier = set(cur)
                while frontier:
                    frontier = step(e.item, frontier) - out
                    out |= frontier
            else:
                for _ in range(e.max - e.min):
                    cur = step(e.item, cur)
                    out |= cur
            return frozenset(out)
        if isinstance(e, Intersect):
            sets = [ends(item, i) for item in e.items]
            return frozenset.intersection(*sets)
        if isinstance(e, Difference):
            return ends(e.base, i) - ends(e.minus, i)
        raise TypeError(e)

    return len(data) in ends(expr, 0)


leaves = st.one_of(
    st.sampled_from([lit("a"), lit("b"), lit("ab"), lit(""), ByteSet(((0x61, 0x62),)), ByteSet(((0x61, 0x63),))]),
)


def _combine(children):
    return st.one_of(
        st.lists(children, min_size=1, max_size=3).map(lambda xs: seq(*xs)),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: alt(*xs)),
        st.tuples(children, st.integers(0, 2), st.one_of(st.none(), st.integers(0, 3))).map(lambda t: repeat(t[0], t[1], t[2])),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: intersect(*xs)),
        st.tuples(children, children).map(lambda t: Difference(t[0], t[1])),
    )


exprs = st.recursive(leaves, _combine, max_leaves=8)
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def reference_table_key(dfa) -> tuple[bytes, bytes, bytes]:
    """table_key's definition, byte by byte: each byte's column of the 256-wide table, the
    distinct columns numbered in the order bytes first meet them."""
    wide = dfa.table256()
    n = dfa.num_states
    rows = [wide[s * 1024 : (s + 1) * 1024] for s in range(n)]  # int32 cells
    columns: dict[bytes, int] = {}
    canonical = bytearray(256)
    for b in range(256):
        column = b"".join(row[4 * b : 4 * b + 4] for row in rows)
        canonical[b] = columns.setdefault(column, len(columns))
    return b"".join(columns), bytes(canonical), dfa.accepting()


@SETTINGS
@given(exprs, exprs)
def test_table_keys_are_the_byte_by_byte_key_and_tell_tables_apart(one, other):
    a, b = regular_dfa(one), regular_dfa(other)
    assert table_key(a) == reference_table_key(a)
    same_table = a.num_states == b.num_states and a.table256() == b.table256() and a.accepting() == b.accepting()
    assert (table_key(a) == table_key(b)) == same_table


@SETTINGS
@given(exprs)
def test_language_questions_agree_with_the_interpreter(expr):
    lang = Language(expr)
    dfa = regular_dfa(expr)
    inside = [w for w in WORDS if matches(expr, w)]
    for w in WORDS:
        want = w in inside
        assert lang.accepts(w) == want, w
        s = dfa.step(0, w)
        assert (s >= 0 and dfa.is_accepting(s)) == want, w
    got = lang.shortest()
    if got is None:
        assert not inside and dfa_size(expr) is None and lang.is_empty()
    else:
        assert matches(expr, got) and not lang.is_empty()
        assert not any(len(w) < len(got) for w in inside)  # a shortest member
        assert dfa_size(expr) == dfa.num_states


def test_difference_of_patterns_is_decided_without_text_matching():
    digits = repeat(ByteSet(((0x30, 0x39),)), 1)
    assert Language(Difference(digits, repeat(lit("0"), 1))).shortest() == b"1"
    assert Language(intersect(seq(lit("a"), repeat(lit("b"))), seq(repeat(lit("a")), lit("c")))).is_empty()
    # (ab)* minus everything of even length over {a, b}: empty
    even = repeat(seq(ByteSet(((0x61, 0x62),)), ByteSet(((0x61, 0x62),))))
    assert Language(Difference(repeat(lit("ab")), even)).is_empty()


def test_recursive_rules_are_refused_in_regular_questions():
    rules = {"p": alt(lit("x"), seq(lit("("), RuleRef("p"), lit(")")))}
    with pytest.raises(StrictgenError, match="only combine regular languages"):
        Language(intersect(RuleRef("p"), lit("x")), rules)
    assert Grammar(rules, "p").rules  # (the rules themselves are fine as a grammar)


def _accepted(grammar: Grammar, text: bytes) -> bool:
    from strictgen.compile.automaton import compile_automaton
    from strictgen.compile.machine import DEAD, PushdownMachine

    m = PushdownMachine(compile_automaton(grammar))
    s = m.step_bytes(m.start, text)
    return s != DEAD and bool(m.accepting[s])


def test_equal_rule_free_products_share_one_automaton_across_builds():
    """Intersections and differences that refer to no rule are kept by value: a second, equal
    expression (other objects) gets the same DFA, and that DFA is the product's language."""
    piece = lambda: intersect(repeat(ByteSet(((0x61, 0x63),)), 2, 5), seq(repeat(lit("a")), lit("c")))  # noqa: E731
    first, second = piece(), piece()
    assert first is not second
    assert regular_dfa(first) is regular_dfa(second)
    dfa = regular_dfa(second)
    for w in WORDS:
        s = dfa.step(0, w)
        assert (s >= 0 and dfa.is_accepting(s)) == matches(first, w), w


@pytest.mark.parametrize("body", [b"a", b"bb"])
def test_products_that_refer_to_rules_are_not_shared_between_grammars(body):
    """The same product, referring to a rule that two grammars define apart, means each grammar's
    own language: such products are never kept by value."""
    anything = repeat(ByteSet(((0, 255),)))
    product = intersect(seq(lit("["), repeat(alt(RuleRef("r"), lit("-")), 1, 3), lit("]")), anything)
    g = Grammar({"root": alt(product, lit("x")), "r": Literal(body)}, "root")
    other = b"bb" if body == b"a" else b"a"
    assert _accepted(g, b"[" + body + b"-]")
    assert not _accepted(g, b"[" + other + b"]")


def test_a_dfa_cache_knows_what_its_entries_keep_and_forgets_what_it_evicts():
    """kept_ids is how a compile tells which rule bodies an earlier compile built (it builds those
    ahead): it follows puts and evictions."""
    from strictgen.grammar.automata import DfaCache

    cache = DfaCache(2)
    a, b, c = (regular_dfa(lit(t)) for t in ("a", "b", "c"))
    ka, kb, kc = (object(), object()), (object(),), (object(),)
    cache.put("a", a, ka)
    assert cache.kept_ids() == {id(x) for x in ka}
    cache.put("b", b, kb)
    cache.put("c", c, kc)  # evicts a, the least recently used
    assert cache.kept_ids() == {id(x) for x in kb + kc}
    assert cache.get("a") is None and cache.get("c") is c
    kd = (object(), kc[0])  # replacing an entry forgets its old keep; an object kept twice stays until both go
    cache.put("b", b, kd)
    assert cache.kept_ids() == {id(x) for x in kc + kd}
    cache.put("e", a, ())  # evicts c: kc[0] is still kept by b's new entry
    assert cache.kept_ids() == {id(x) for x in kd}
    cache.clear()
    assert cache.kept_ids() == set()
    cache.put("a", a, ka)
    cache.put("b", b, kb)
    assert cache.get_kept("a") == (a, ka) and cache.get_kept("z") is None  # a hit (read after a lock-free miss check) ages a
    cache.put("c", c, kc)  # evicts b, now the least recently used
    assert cache.get("b") is None and cache.get("a") is a


def _rule_free_grammar_accepts(root: Expr, data: bytes) -> bool:
    from strictgen.compile.automaton import EmptyLanguageError

    try:
        return _accepted(Grammar({"root": root}, "root"), data)
    except EmptyLanguageError:
        return False


@SETTINGS
@given(exprs)
def test_pieces_kept_across_compiles_are_each_grammars_own_language(piece):
    """A rule-free piece used twice is embedded as its automaton, which later compiles reuse by the
    piece's identity (automata._pieces): a second grammar around the same object, the first built
    again, and one with the kept automata dropped all accept exactly the interpreter's language."""
    from strictgen.grammar import automata

    first = alt(seq(lit("x"), piece), piece)  # the piece twice: shared, so embedded
    second = seq(piece, lit("y"), piece)
    for _ in range(2):
        for w in WORDS[:120]:
            assert _rule_free_grammar_accepts(first, w) == matches(first, w), w
            assert _rule_free_grammar_accepts(second, w) == matches(second, w), w
    automata._pieces.clear()  # a cache only: later compiles keep pieces again as they come
    for w in WORDS[:120]:
        assert _rule_free_grammar_accepts(second, w) == matches(second, w), w


def test_a_piece_is_kept_for_its_own_object_only():
    """The identity cache answers for the very object put, never for an equal one (a new object
    may get a freed object's id; the entry holds its object, so that id cannot be reused)."""
    from strictgen.grammar import automata

    piece = repeat(alt(lit("ab"), lit("c")), 1, 4)
    twin = repeat(alt(lit("ab"), lit("c")), 1, 4)
    assert piece == twin and piece is not twin
    automata._pieces._offered.clear()  # ids offered once are plain ints: a new object may have an old id
    _accepted(Grammar({"root": alt(seq(lit("x"), piece), piece)}, "root"), b"ab")
    assert automata._pieces.get_same(piece) is None  # a piece one compile met is not held
    _accepted(Grammar({"root": alt(seq(lit("y"), piece), piece)}, "root"), b"ab")
    kept = automata._pieces.get_same(piece)  # the second compile that meets it keeps it
    assert kept is not None
    assert automata._pieces.get_same(twin) is None
    # the kept automaton is the piece's language
    for w in WORDS:
        s = kept.step(0, w)
        assert (s >= 0 and kept.is_accepting(s)) == matches(piece, w), w


def reference_shared_nodes(rules, kept, kept_regular=lambda i: None) -> set[int]:
    """shared_nodes' definition: a depth-first walk from the rules, a child met a second time
    shared; a node whose kept entry holds it is not walked into, nor an intersection,
    difference or spelled string whose entry in `kept_regular` holds it."""
    seen: set[int] = set()
    shared: set[int] = set()
    work = list(rules)
    while work:
        e = work.pop()
        if isinstance(e, (Seq, Alt, Intersect)):
            kids = e.items
        elif isinstance(e, (Repeat, Spelled)):
            kids = (e.item,)
        elif isinstance(e, Difference):
            kids = (e.base, e.minus)
        else:
            continue
        got = kept(id(e))
        if got is None and isinstance(e, (Intersect, Difference, Spelled)):
            got = kept_regular(id(e))
        if got is not None and got[1][0] is e:
            continue
        for child in kids:
            if id(child) in seen:
                shared.add(id(child))
            else:
                seen.add(id(child))
                work.append(child)
    return shared


@st.composite
def ir_dags(draw):
    """Roots over a DAG of IR nodes: each node made of earlier ones (so pieces recur), some of
    the composite ones kept as if an earlier compile had built them."""
    nodes: list[Expr] = [lit("a"), lit("b"), ByteSet(((0x61, 0x62),)), RuleRef("r")]
    for _ in range(draw(st.integers(1, 14))):
        pick = st.integers(0, len(nodes) - 1).map(nodes.__getitem__)
        kind = draw(st.sampled_from(["seq", "alt", "repeat", "intersect", "difference", "spelled"]))
        if kind in ("seq", "alt", "intersect"):
            items = tuple(draw(st.lists(pick, min_size=1, max_size=4)))
            nodes.append({"seq": Seq, "alt": Alt, "intersect": Intersect}[kind](items))
        elif kind == "repeat":
            nodes.append(Repeat(draw(pick), draw(st.integers(0, 2)), draw(st.sampled_from([None, 3]))))
        elif kind == "spelled":
            nodes.append(Spelled(draw(pick)))
        else:
            nodes.append(Difference(draw(pick), draw(pick)))
    roots = draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=4))
    kept = draw(st.lists(st.sampled_from(nodes[4:]), max_size=3))
    kept_minimal = draw(st.lists(st.sampled_from(nodes[4:]), max_size=3))
    return roots, kept, kept_minimal


@SETTINGS
@given(ir_dags())
def test_shared_nodes_are_the_nodes_met_twice(dag):
    from strictgen.grammar import automata

    roots, kept, kept_minimal = dag
    automata.forget_kept_automata()
    some_dfa = regular_dfa(lit("a"))
    try:
        for node in kept:
            automata._pieces.put(id(node), some_dfa, (node,))
        for node in kept_minimal:  # walked into unless an intersection, difference or spelled string
            automata._minimal_pieces.put(id(node), some_dfa, (node,))
        got = automata.shared_nodes(roots)
        assert got == reference_shared_nodes(roots, automata._pieces.same_lookup(), automata._minimal_pieces.same_lookup())
    finally:
        automata.forget_kept_automata()


def test_shared_nodes_skip_the_regular_pieces_whose_minimal_automata_are_kept():
    """A spelled string whose minimal DFA an earlier compile kept is embedded whole, so what it
    shares inside is not looked for (a date-time's ~12,000 nodes were walked every compile); a
    sequence kept there is walked into (the builder walks it: only `_pieces` spare a Seq)."""
    from strictgen.grammar import automata

    automata.forget_kept_automata()
    twice = Seq((lit("ab"), ByteSet(((48, 57),))))
    inner = Spelled(Alt((twice, Seq((lit("c"), twice)))))
    outer = Seq((lit("c"), twice))
    try:
        assert automata.shared_nodes([inner]) == {id(twice)}
        automata._minimal_pieces.put(id(inner), regular_dfa(lit("a")), (inner,))
        assert automata.shared_nodes([inner]) == set()
        automata._minimal_pieces.put(id(outer), regular_dfa(lit("a")), (outer,))
        assert automata.shared_nodes([outer, outer]) == {id(twice), id(outer.items[0])}
    finally:
        automata.forget_kept_automata()


def test_shared_nodes_walk_deep_and_wide_irs():
    """Chains 100,000 deep (no recursion in C to overflow) and a node used 10,000 times."""
    from strictgen.grammar import automata

    automata.forget_kept_automata()
    leaf = lit("x")
    deep = leaf
    for _ in range(100_000):
        deep = Seq((deep, lit("y")))
    wide = Alt(tuple(Seq((leaf, lit("z"))) for _ in range(10_000)))
    assert automata.shared_nodes([deep]) == set()
    assert automata.shared_nodes([wide]) == {id(leaf)}
    twice = automata.shared_nodes([deep, deep])  # a root met twice: its children are met twice
    assert len(twice) == 2 and twice == reference_shared_nodes([deep, deep], lambda i: None)
    assert automata._refers_to_no_rule(deep, {}) is True
    refers = RuleRef("r")
    for _ in range(100_000):
        refers = Seq((lit("y"), refers))
    known: dict[int, bool] = {}
    assert automata._refers_to_no_rule(refers, known) is False
    assert len(known) == 100_000 and not any(known.values())


def reference_refers_to_no_rule(expr, known: dict[int, bool]) -> bool:
    """automata._refers_to_no_rule's definition, as it was written in Python: a depth-first walk
    that marks a composite node True once its children are, and on a rule reference (or a node
    known False) marks every node on the way to it False and stops."""
    if type(expr) is RuleRef:
        return False
    got = known.get(id(expr))
    if got is not None:
        return got
    stack = [(expr, iter(children(expr)))]
    while stack:
        node, parts = stack[-1]
        for part in parts:
            if type(part) is RuleRef or known.get(id(part)) is False:
                for above, _ in stack:
                    known[id(above)] = False
                return False
            if id(part) not in known and children(part):
                stack.append((part, iter(children(part))))
                break
        else:
            known[id(node)] = True
            stack.pop()
    return True


@SETTINGS
@given(ir_dags(), st.data())
def test_rule_freedom_is_its_definition_with_the_same_memo(dag, data):
    """The C walk answers as the Python one and leaves the same entries, in the same order, in
    the memo that later questions of the compile read (asked of several nodes in turn)."""
    from strictgen.grammar import automata

    roots, kept, _ = dag
    asked = data.draw(st.lists(st.sampled_from(roots + kept), min_size=1, max_size=5))
    known_c: dict[int, bool] = {}
    known_py: dict[int, bool] = {}
    for node in asked:
        assert automata._refers_to_no_rule(node, known_c) == reference_refers_to_no_rule(node, known_py)
        assert list(known_c.items()) == list(known_py.items())


def _twin(expr: Expr) -> Expr:
    """An equal expression made of other objects (every node new)."""
    twin = copy.deepcopy(expr)
    assert twin == expr and twin is not expr
    return twin


def _minimal_of(expr: Expr, memo: BuildMemo | None = None):
    return NFABuilder({}, {}, shared_nodes([expr]), memo).regular_dfa(expr)


def test_equal_spelled_strings_share_one_automaton_without_building_the_item():
    """A spelled string is kept by its IR value and looked up before anything is built: an equal
    one made of other objects gets the kept DFA, and its item is not lowered or determinised."""
    piece = Spelled(repeat(alt(lit("ab"), ByteSet(((0x61, 0x63),))), 1, 3))
    first = _minimal_of(piece)
    memo = BuildMemo()
    assert _minimal_of(_twin(piece), memo) is first
    assert len(memo.dfas) == 1  # the spelled string only: its item was never built
    for text, ok in ((b"ab", True), (b"\\u0061b", True), (b"\\u0062", True), (b"abab\\u0063", True), (b"d", False), (b"", False)):
        s = first.step(0, text)
        assert (s >= 0 and first.is_accepting(s)) == ok, text


@pytest.mark.parametrize("piece", [
    Spelled(repeat(ByteSet(((0x61, 0x63),)), 2, 6)),
    Difference(repeat(ByteSet(((0x61, 0x63),)), 1, 6), seq(lit("a"), repeat(lit("b")))),
])
def test_a_smaller_state_limit_builds_a_kept_value_again(piece, monkeypatch):
    """The value caches are keyed with the state limit: under a limit a fresh build passes, an
    equal piece is built again and refused, not answered from what a larger limit kept."""
    from strictgen.errors import GrammarTooLargeError
    from strictgen.grammar import automata

    kept = _minimal_of(piece)
    assert kept.num_states > 3
    monkeypatch.setattr(automata, "MAX_DFA_STATES", 3)
    with pytest.raises(GrammarTooLargeError):
        _minimal_of(_twin(piece))
    monkeypatch.undo()
    assert _minimal_of(_twin(piece)) is kept


@SETTINGS
@given(exprs)
def test_a_piece_kept_by_value_is_the_automaton_a_fresh_build_gives(piece):
    """Spelled strings, intersections and differences kept by value (looked up before building)
    are the automata building them afresh gives: the same table, whatever byte classes."""
    from strictgen.grammar.automata import forget_kept_automata

    for expr in (Spelled(piece), piece):
        kept = _minimal_of(expr)
        assert table_key(_minimal_of(_twin(expr))) == table_key(kept)
        forget_kept_automata()
        assert table_key(_minimal_of(_twin(expr))) == table_key(kept)


def reference_free_of_calls(x: Expr, rules: dict, called: dict, memo: dict[int, bool]) -> bool:
    """NFABuilder._free_of_calls as it was written in Python: does x, with the rules it inlines,
    reach no call? Memo by node, composite nodes and rule references."""
    if type(x) is RuleRef:
        if x.name in called:
            memo[id(x)] = False
            return False
        parts = () if rules.get(x.name) is None else (rules[x.name],)
    elif type(x) is Lazy:
        memo[id(x)] = False
        return False
    else:
        parts = children(x)
        if not parts:
            return True
    free = True
    for part in parts:
        got = memo.get(id(part))
        if not (reference_free_of_calls(part, rules, called, memo) if got is None else got):
            free = False
            break
    memo[id(x)] = free
    return free


@SETTINGS
@given(ir_dags(), st.data())
def test_call_freedom_is_its_definition_with_the_same_memo(dag, data):
    """The C walk of `_calls_nothing` answers as the Python recursion did and leaves the same
    memo (asked of several nodes in turn), through inlined rules, calls, Lazy members and
    undefined rules."""
    roots, kept, _ = dag
    lazy = Lazy(LazyFamily(), 0, ())
    body = data.draw(st.sampled_from([lit("x"), RuleRef("c"), seq(lit("x"), RuleRef("c")), alt(lit("y"), lazy), repeat(RuleRef("d"), 0, 2), Seq(())]))
    rules = {"r": body, "c": lit("c")} if data.draw(st.booleans()) else {"c": lit("c")}  # "r" undefined, or inlined
    called = data.draw(st.sampled_from([{}, {"c": 0}, {"r": 0}, {"c": 0, "d": 1}]))
    called = dict(called)
    if data.draw(st.booleans()):
        called[lazy] = 2
    builder = NFABuilder(rules, called, set())
    asked = data.draw(st.lists(st.sampled_from(roots + kept + [body, RuleRef("r"), Seq(())]), min_size=1, max_size=5))
    memo_py: dict[int, bool] = {}
    for node in asked:
        want = True if not called else memo_py.get(id(node))
        if want is None:
            want = reference_free_of_calls(node, rules, called, memo_py)
        assert builder._calls_nothing(node) == want
        assert dict(builder._memo.call_free) == memo_py



_CYCLE = """
from strictgen.grammar.automata import NFABuilder
from strictgen.grammar.ir import Alt, Literal, Repeat, RuleRef, Seq
for called, want in (({"c": 0}, False), ({"d": 0}, True)):
    rules = {"a": Seq((Literal(b"x"), RuleRef("b"), Repeat(RuleRef("c"), 0, None))), "b": Alt((Literal(b"y"), Seq((Literal(b"z"), RuleRef("a"))))), "c": Literal(b"c")}
    builder = NFABuilder(rules, called, set())
    print([builder._calls_nothing(x) for x in (rules["a"], rules["b"], RuleRef("b"), rules["b"].items[1])] == [want] * 4)
"""


def test_call_freedom_ends_on_inlined_rules_on_a_cycle():
    """Inlined rules on a reference cycle with the only call after it (a: x b c*, b: y | z a, c
    called): the walk ends, and every node on the cycle reaches the call (none was marked free
    before the walk met it). The walk holds the GIL, so a hang is caught in a subprocess."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", _CYCLE], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0 and done.stdout.split() == ["True", "True"], done.stderr

@SETTINGS
@given(ir_dags(), exprs)
def test_piece_keys_hash_as_content_keys_do(dag, expr):
    """The builders' keys (build_memo.PieceKeys, hashed in C) are ir_keys.ContentKeys' keys: the
    same hash for every node asked (DAGs, leaves of every kind, repeats' bounds), equal keys for
    equal values made of other objects, unequal ones where the values differ."""
    from strictgen.grammar.build_memo import PieceKeys
    from strictgen.grammar.ir_keys import ContentKeys

    roots, kept, _ = dag
    piece_keys, content_keys = PieceKeys(), ContentKeys()
    for node in [*roots, *kept, expr, Spelled(expr), Repeat(expr, 1, None), Repeat(expr, 1, 2)]:
        assert piece_keys.key(node) == content_keys.key(node)
        assert hash(piece_keys.key(node)) == content_keys.hash_of(node)
        assert PieceKeys().key(_twin(node)) == piece_keys.key(node)
    assert piece_keys.key(Repeat(expr, 1, None)) != piece_keys.key(Repeat(expr, 1, 2))


def test_intersections_with_the_first_operands_in_common_build_their_product_once(monkeypatch):
    """The left fold of A ∩ B ∩ C is kept by the value of its first operands, so A ∩ B ∩ D (other
    objects) builds one product more, not two; and its automaton is the one a fresh build gives."""
    from strictgen import regular
    from strictgen.grammar.automata import forget_kept_automata

    def operands(last: Expr) -> tuple[Expr, ...]:
        return (repeat(ByteSet(((0x61, 0x64),)), 1, 9), seq(repeat(ByteSet(((0, 255),))), lit("b"), repeat(ByteSet(((0, 255),)))), last)

    forget_kept_automata()
    regular_dfa(Intersect(operands(seq(lit("a"), repeat(ByteSet(((0, 255),)))))))
    products = []
    real = regular.product
    monkeypatch.setattr(regular, "product", lambda *a: products.append(a) or real(*a))
    with_d = Intersect(operands(repeat(lit("ab"), 1, 3)))
    got = regular_dfa(with_d)
    assert len(products) == 1  # (a..d){1,9} ∩ .*b.* came from the first build
    forget_kept_automata()
    assert table_key(regular_dfa(Intersect(operands(repeat(lit("ab"), 1, 3))))) == table_key(got)
    for w in WORDS:
        s = got.step(0, w)
        assert (s >= 0 and got.is_accepting(s)) == matches(with_d, w), w

