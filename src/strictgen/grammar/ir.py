"""Grammar IR: rules over bytes and Unicode code points.

Every front end (GBNF, regex, choice, JSON, JSON Schema) produces a `Grammar`; `strictgen.compile`
turns it into byte-level automata. Expressions are immutable and hashable so front ends can share
and deduplicate sub-expressions. `CharSet` holds code point ranges: the compiler expands them to
UTF-8 byte sequences, so the automaton always runs on bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from strictgen import deadline
from strictgen.lru import BoundedLRU

from .graphs import cyclic_rules, post_order, post_order_and_cycles, states_on_cycles  # noqa: F401 (the IR's graphs, named here too)

MAX_CODEPOINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)


class Expr:
    """Base of grammar expressions."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Literal(Expr):
    """An exact byte string (the empty string matches the empty input)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class ByteSet(Expr):
    """One byte from sorted, disjoint, inclusive ranges within 0..255."""

    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class CharSet(Expr):
    """One Unicode scalar value (UTF-8 encoded) from sorted, disjoint, inclusive code point ranges.

    Surrogates (U+D800..U+DFFF) are never matched: they have no UTF-8 encoding.
    """

    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Seq(Expr):
    """Concatenation; Seq(()) matches the empty string."""

    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Alt(Expr):
    """Alternation; Alt(()) matches nothing."""

    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Repeat(Expr):
    """`item` repeated between `min` and `max` times (max None = unbounded)."""

    item: Expr
    min: int = 0
    max: int | None = None


@dataclass(frozen=True, slots=True)
class RuleRef(Expr):
    """A reference to a named rule of the grammar (may be recursive)."""

    name: str


@dataclass(frozen=True, slots=True)
class Intersect(Expr):
    """Strings matched by every item. Items must be regular: no references to recursive rules."""

    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Difference(Expr):
    """Strings matched by `base` and not by `minus`. Both must be regular."""

    base: Expr
    minus: Expr


@dataclass(frozen=True, slots=True)
class Spelled(Expr):
    """The JSON string bodies (between the quotes) that decode to a string of `item`'s language, in
    every spelling: raw, short escapes, ``\\uXXXX`` in either case, surrogate pairs. `item` must be
    regular, over whole characters."""

    item: Expr


@dataclass(frozen=True, slots=True)
class SpecialToken(Expr):
    """One token of the vocabulary, read as that token and never as its text: named by its text
    (`<|im_end|>`) or by inclusive id ranges. GBNF and Lark write `<|name|>` / `<[id]>`; the
    vocabulary is known only when the grammar is compiled (compile/special_tokens.py resolves it)."""

    name: str = ""
    ids: tuple[tuple[int, int], ...] = ()


class LazyFamily:
    """Rules indexed by keys, each built the first time a compiled machine's input reaches it
    (compile/lazy_rules.py): a family stands for more rules than could be built ahead (the key
    sets of an object whose properties may come in any order). `body(key)` is rule `key`'s
    expression; it refers to the grammar's rules only through `uses` and to other members of the
    family through `Lazy` nodes, and must read a byte before any of them (no left recursion)."""

    uses: tuple[RuleRef, ...] = ()

    def body(self, key) -> Expr:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Lazy(Expr):
    """A call of member `key` of `family` (a `LazyFamily`), built at run time. `uses` are the
    family's rule references as this grammar names them (renaming a grammar renames them; the
    body is renamed to match when it is built)."""

    family: LazyFamily
    key: object
    uses: tuple[Expr, ...]


def lazy_body(node: Lazy) -> Expr:
    """The expression of the rule `node` calls, in the names of the grammar holding `node`."""
    body = node.family.body(node.key)
    names = {a.name: b.name for a, b in zip(node.family.uses, node.uses) if a.name != b.name}
    return rename(body, names) if names else body


def rename(expr: Expr, names: dict[str, str]) -> Expr:
    """`expr` with rule references renamed (IR nodes are frozen dataclasses)."""
    if isinstance(expr, RuleRef):
        return RuleRef(names.get(expr.name, expr.name))
    fields = getattr(expr, "__dataclass_fields__", {})
    changes = {}
    for f in fields:
        v = getattr(expr, f)
        if isinstance(v, Expr):
            changes[f] = rename(v, names)
        elif isinstance(v, tuple) and v and isinstance(v[0], Expr):
            changes[f] = tuple(rename(x, names) for x in v)
    return type(expr)(**{f: changes.get(f, getattr(expr, f)) for f in fields}) if changes else expr


_LEAVES = (Literal, ByteSet, CharSet, RuleRef, Lazy, SpecialToken)
MAX_TRIE_NESTING = 64  # nested Alt levels literal_trie builds; deeper, it is a flat Alt

EMPTY = Seq(())
NOTHING = Alt(())


@dataclass
class Grammar:
    """Named rules plus the root rule's name.

    `markers`: fixed texts of the format (a tool call's delimiters) inside which a vocabulary's
    special tokens may stand for their own text: such a token is allowed where the grammar can
    read its text, and advances by it; the text spelled by ordinary tokens stays allowed too.

    `special_tokens`: set by the front ends that wrote a SpecialToken, so that grammars without
    any are not walked to look for one.

    `captures`: rule name -> capture name, for the rules whose matched text a matcher reports
    (runtime/captures.py); they never change the language, and the compiler ignores them.
    `written`: for captured rules a front end rewrote (Lark's direct left recursion), the body as
    written, whose nest of spans the capture parse reports; the compiler never reads it."""

    rules: dict[str, Expr] = field(default_factory=dict)
    root: str = "root"
    markers: tuple[str, ...] = ()
    special_tokens: bool = False  # whether some rule holds a SpecialToken (compile/special_tokens.py binds them)
    captures: dict[str, str] = field(default_factory=dict)
    written: dict[str, Expr] = field(default_factory=dict)


# ---- small constructors that keep expressions flat -------------------------------------------


def lit(text: str | bytes) -> Literal:
    return Literal(text.encode("utf-8") if isinstance(text, str) else bytes(text))


def seq(*items: Expr) -> Expr:
    flat: list[Expr] = []
    for item in items:
        t = type(item)
        if t is Seq:
            flat.extend(item.items)
        elif t is Literal:
            if item.data:
                flat.append(item)
        elif t is Alt and not item.items:
            return NOTHING
        else:
            flat.append(item)
    merged: list[Expr] = []
    for item in flat:  # join adjacent literals
        if merged and type(item) is Literal and type(merged[-1]) is Literal:
            merged[-1] = Literal(merged[-1].data + item.data)
        else:
            merged.append(item)
    return merged[0] if len(merged) == 1 else Seq(tuple(merged))


def _shallow_key(e: Expr):
    """A hashable key, equal for equal expressions whose children are equal leaves or the same
    objects: it looks one level down only. The dataclass hash is not cached and recomputes every
    shared sub-expression of a DAG (exponential); equality is quadratic over many alternatives."""
    if isinstance(e, _LEAVES):
        return e
    if isinstance(e, Repeat):
        return (Repeat, _child_key(e.item), e.min, e.max)
    if isinstance(e, Difference):
        return (Difference, _child_key(e.base), _child_key(e.minus))
    if isinstance(e, Spelled):
        return (Spelled, _child_key(e.item))
    return (type(e), tuple(_child_key(c) for c in e.items))


def _child_key(e: Expr):
    return e if isinstance(e, _LEAVES) else id(e)


def alt(*items: Expr) -> Expr:
    """Alternation, flattened and without repeats (first occurrence kept), in linear time: a
    repeat is found by `_shallow_key` (every equal leaf, every equal composite built from equal
    leaves or shared parts; a deeply equal copy may stay, which changes no language)."""
    if len(items) == 1 and not isinstance(items[0], Alt):  # one alternative (most schemas' conjuncts): itself
        return items[0]
    flat: dict = {}
    for n, item in enumerate(items):
        if not n & 4095:
            deadline.check()
        for sub in item.items if isinstance(item, Alt) else (item,):
            flat.setdefault(_shallow_key(sub), sub)
    out = tuple(flat.values())
    return out[0] if len(out) == 1 else Alt(out)


def disjoint_alt(*items: Expr) -> Expr:
    """`alt` of alternatives the caller knows to be pairwise disjoint (a literal trie's branches
    and their spellings, a table's distinct entries): flattened as `alt` flattens, without its
    check for repeats, which hashes every item and would drop none of these."""
    flat: list[Expr] = []
    for n, item in enumerate(items):
        if not n & 4095:
            deadline.check()
        if type(item) is Alt:
            flat.extend(item.items)
        else:
            flat.append(item)
    return flat[0] if len(flat) == 1 else Alt(tuple(flat))


def literal_trie(strings) -> Expr:
    """Exactly one of `strings` (str as UTF-8, or bytes), as a tree of shared prefixes: each
    alternative of an Alt starts with its own byte, so the automaton built from it has one state
    per trie node and determinising it is linear in the total length, where a flat Alt of n
    literals makes every early DFA state a set of n NFA states. Built from the sorted strings
    with an explicit stack (no recursion, however long a shared prefix is). Where choices nest in
    one another more than MAX_TRIE_NESTING deep it stays a flat Alt."""
    words = sorted({s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in strings})
    if not words:
        return NOTHING
    stack: list[tuple[int, list[Expr]]] = [(0, [])]  # open nodes on the path of `prev`: (depth, alternatives)

    def close_above(level: int, prev: bytes) -> None:
        """Close the open nodes deeper than `level`, adding a node at `level` where the next
        string branches off inside an edge."""
        while stack[-1][0] > level:
            depth, alts = stack.pop()
            if stack[-1][0] < level:
                stack.append((level, []))
            parent = stack[-1][0]
            stack[-1][1].append(seq(Literal(prev[parent:depth]), alts[0] if len(alts) == 1 else Alt(tuple(alts))))

    prev = b""
    for n, word in enumerate(words):
        if not n & 4095:
            deadline.check()
        if not word:  # sorts first: the root itself accepts
            stack[0][1].append(EMPTY)
            continue
        common = 0
        limit = min(len(prev), len(word))
        while common < limit and prev[common] == word[common]:
            common += 1
        while common and common < len(word) and 0x80 <= word[common] <= 0xBF:
            common -= 1  # branch between characters: every Literal stays whole UTF-8 (json_escaped decodes them)
        close_above(common, prev)
        if len(stack) > MAX_TRIE_NESTING:  # choices nested in each other hundreds deep: the
            return Alt(tuple(Literal(w) for w in words))  # automaton builder recurses per level
        stack.append((len(word), [EMPTY]))
        prev = word
    close_above(0, prev)
    alts = stack[0][1]
    return alts[0] if len(alts) == 1 else Alt(tuple(alts))


def repeat(item: Expr, lo: int = 0, hi: int | None = None) -> Expr:
    if hi is not None and hi < lo:
        return NOTHING
    if hi == 0:
        return EMPTY
    if lo == 1 and hi == 1:
        return item
    return Repeat(item, lo, hi)


def intersect(*items: Expr) -> Expr:
    """Strings matched by every item (a single item is returned as is)."""
    flat: list[Expr] = []
    for item in items:
        for sub in item.items if isinstance(item, Intersect) else (item,):
            if sub == NOTHING:
                return NOTHING
            if sub not in flat:
                flat.append(sub)
    if not flat:
        raise ValueError("intersect() needs at least one item")
    return flat[0] if len(flat) == 1 else Intersect(tuple(flat))


def difference(base: Expr, minus: Expr) -> Expr:
    """Strings of `base` that are not strings of `minus`."""
    if minus == NOTHING or base == NOTHING:
        return base
    return Difference(base, minus)


_CALLED: BoundedLRU[tuple[Expr, Expr]] = BoundedLRU(256)  # (name, id(body)) -> (body, kept alive; the rule's body)


def called_body(name: str, body: Expr) -> Expr:
    """`body` as the body of rule `name` kept as a call: an unproductive self-reference (NOTHING
    followed by the rule) puts it on a reference cycle without changing its language.

    The same object for the same name and body object, in every grammar of the process: the
    compiler's cache of rule automata is keyed by the identity of rule bodies, so a body shared
    across compiles (a format's string, one spelled character) that a front end makes a call is
    built and minimised once, not in every compile (an email under maxLength: ~2.9 ms each)."""
    got = _CALLED.get((name, id(body)))
    if got is not None and got[0] is body:
        return got[1]
    rule = Alt((body, Seq((NOTHING, RuleRef(name)))))
    _CALLED.put((name, id(body)), (body, rule))
    return rule


def opt(item: Expr) -> Expr:
    return repeat(item, 0, 1)


def normalize_ranges(ranges, limit: int = MAX_CODEPOINT) -> tuple[tuple[int, int], ...]:
    """Sort and merge inclusive ranges, clipping to 0..limit."""
    out: list[list[int]] = []
    for lo, hi in sorted((max(0, a), min(limit, b)) for a, b in ranges):
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((a, b) for a, b in out)


def negate_ranges(ranges, limit: int = MAX_CODEPOINT) -> tuple[tuple[int, int], ...]:
    """The complement of `ranges` within 0..limit."""
    out = []
    nxt = 0
    for lo, hi in normalize_ranges(ranges, limit):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= limit:
        out.append((nxt, limit))
    return tuple(out)


def without_surrogates(ranges) -> tuple[tuple[int, int], ...]:
    """Normalized ranges minus U+D800..U+DFFF, which have no UTF-8 encoding."""
    lo_s, hi_s = SURROGATES
    out: list[tuple[int, int]] = []
    for lo, hi in normalize_ranges(ranges):
        if lo < lo_s:
            out.append((lo, min(hi, lo_s - 1)))
        if hi > hi_s:
            out.append((max(lo, hi_s + 1), hi))
    return tuple(out)


def charset(ranges) -> Expr:
    """A CharSet (surrogates removed), or a ByteSet when every code point is ASCII (one byte each)."""
    norm = without_surrogates(ranges)
    if not norm:
        return NOTHING
    if norm[-1][1] < 0x80:
        return ByteSet(norm)
    return CharSet(norm)


def chars(text: str) -> Expr:
    """One character out of `text`."""
    return charset((ord(c), ord(c)) for c in text)


# ---- reference analysis -------------------------------------------------------------------------


_REFERENCES: dict[int, tuple[Expr, frozenset[str]]] = {}  # id -> (the expression, kept alive; its references)
_REFERENCES_KEPT = 4096


def rule_references(expr: Expr) -> frozenset[str]:
    """Names of the rules that `expr` refers to (the IR may be a DAG: each node is visited once).

    Remembered by identity (expressions are immutable): a compile asks this of each rule several
    times (the front end's call planning, then the automaton's cycle search)."""
    got = _REFERENCES.get(id(expr))
    if got is not None and got[0] is expr:
        return got[1]
    refs = frozenset(_walk_references(expr))
    remember_references(expr, refs)
    return refs


def children(x: Expr) -> tuple[Expr, ...]:
    """The sub-expressions of a node (none for leaves, rule references and run-time calls)."""
    t = type(x)
    if t is Seq or t is Alt or t is Intersect:
        return x.items
    if t is Repeat or t is Spelled:
        return (x.item,)
    if t is Difference:
        return (x.base, x.minus)
    return ()


def _walk_references(expr: Expr) -> set[str]:
    out: set[str] = set()
    stack = [expr]
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if not len(seen) & 4095:
            deadline.check()
        if isinstance(e, RuleRef):
            out.add(e.name)
        elif isinstance(e, (Seq, Alt)):
            stack.extend(e.items)
        elif isinstance(e, Repeat):
            stack.append(e.item)
        elif isinstance(e, Intersect):
            stack.extend(e.items)
        elif isinstance(e, Difference):
            stack.extend((e.base, e.minus))
        elif isinstance(e, Spelled):
            stack.append(e.item)
        elif isinstance(e, Lazy):
            stack.extend(e.uses)
    return out


def remember_references(expr: Expr, refs: frozenset[str]) -> None:
    """Tell `rule_references` what `expr` refers to, found by a walk of its own (the rule-size
    planning of schema grammars reads every rule's references off its size terms)."""
    if len(_REFERENCES) >= _REFERENCES_KEPT:
        _REFERENCES.clear()
    _REFERENCES[id(expr)] = (expr, refs)


def recursive_rules(grammar: Grammar) -> set[str]:
    """Names of the rules that lie on a reference cycle."""
    return cyclic_rules({name: rule_references(expr) for name, expr in grammar.rules.items()})
