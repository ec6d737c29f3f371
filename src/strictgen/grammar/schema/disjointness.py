"""Disjointness of schemas: "no value satisfies both", a sufficient check (never wrong when it says
True), which oneOf asks of its branches pairwise (schema.applicators) and the algebra's pruning
asks of member schemas (schema.algebra: `_implies`, `obj_contradicts`).

Functions of the compile's formula algebra (schema.formulas.FormulaAlgebra, `alg`): they ask it
for normal forms (`alg.dnf`), member value schemas (`alg.value_formula`), the jsonschema judge
(`alg.satisfies`) and its string-language service, and keep their memo and counters in its tables
(schema.algebra.AlgebraTables), so this module never imports the algebra that imports it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .ir import FALSE, TRUE, AmongStrings, ArrayConstraints, Conjunct, Formula, Matches, ObjectConstraints, conjunct_meet, objects_only, str_meet
from .patterns import literal_pattern
from .key_space import objects_keys_disjoint
from .values import RefLoop, json_equal

if TYPE_CHECKING:
    from .formulas import FormulaAlgebra

__all__ = ["disjoint", "disjointness_memo", "dnfs_disjoint", "tag_disjoint_pairs"]


class disjointness_memo:
    """`with disjointness_memo(alg):` around a loop that asks `disjoint` of many pairs (oneOf's
    pairwise proofs: o17072's 41 branches ask the same pair of member schemas hundreds of times).
    Inside it, an answer is kept and reused only at the `active` depth and nesting the loop runs
    at, which the loop's own proofs return to (the normalisations inside a proof run deeper, and
    do not use it), and only when it asked nothing that depends on more than the formulas (the
    jsonschema judge, whose checks are counted against MAX_ENUM_FILTER; a $ref loop): a kept
    answer is the one the same call would compute again. Nested loops keep their own."""

    def __init__(self, alg: FormulaAlgebra):
        self.tables = alg.tables

    def __enter__(self) -> None:
        t = self.tables
        self.saved = t.disjoint_memo
        t.disjoint_memo = (len(t.active), t.disjoint_nesting, {})

    def __exit__(self, *exc) -> None:
        self.tables.disjoint_memo = self.saved


def disjoint(alg: FormulaAlgebra, f: Formula, g: Formula, depth: int = 0) -> bool:
    """True when no value satisfies both (a sufficient check, never wrong when it says True)."""
    if f is FALSE or g is FALSE:
        return True
    tables = alg.tables
    if f is TRUE or g is TRUE or depth > 6 or tables.disjoint_nesting > 3:
        return False
    memo = tables.disjoint_memo
    if memo is not None and (memo[0] != len(tables.active) or memo[1] != tables.disjoint_nesting):
        memo = None
    if memo is not None:
        got = memo[2].get((f, g, depth))
        if got is not None:
            return got
    impure = tables.disjoint_impure
    out = _disjoint(alg, f, g, depth)
    if memo is not None and impure == tables.disjoint_impure:
        memo[2][(f, g, depth)] = out
    return out


def _disjoint(alg: FormulaAlgebra, f: Formula, g: Formula, depth: int) -> bool:
    if f in alg.tables.active or g in alg.tables.active:
        # being normalised right now: only finite values of the other side can be checked
        alg.tables.disjoint_impure += 1
        other, busy = (g, f) if f in alg.tables.active else (f, g)
        if other in alg.tables.active:
            return False
        alg.tables.disjoint_nesting += 1
        try:
            d = alg.dnf(other)
        except RefLoop:
            return False
        finally:
            alg.tables.disjoint_nesting -= 1
        if d and all(c.values is not None for c in d):
            return not any(alg.satisfies(busy, v) for c in d for v in c.values)
        return False
    alg.tables.disjoint_nesting += 1
    try:
        a, b = alg.dnf(f), alg.dnf(g)
    except RefLoop:
        alg.tables.disjoint_impure += 1
        return False
    finally:
        alg.tables.disjoint_nesting -= 1
    return dnfs_disjoint(alg, a, b, f, g, depth)


def dnfs_disjoint(
    alg: FormulaAlgebra, a: list[Conjunct], b: list[Conjunct], f: Formula, g: Formula, depth: int,
    context: Conjunct | None = None, met: dict[int, Conjunct | None] | None = None,
) -> bool:
    """No value in both DNFs (and in the context conjunct, when given). Each conjunct is met
    with the context once, when first needed, and kept in `met` (by the conjunct's identity;
    the caller holds the conjuncts) for the other pairs the caller asks about with the same
    context: the same meets, in the same order, as one per pair, and a pair's proof then asks
    the same objects, whose value formulas are kept by identity."""
    met = {} if met is None else met
    for x in a:
        for y in b:
            if context is not None and x.values is None and y.values is None:
                x2, y2 = _in_context(alg, context, x, met), _in_context(alg, context, y, met)
                if x2 is None or y2 is None:
                    continue
                if not _conj_disjoint(alg, x2, y2, f, g, depth):
                    return False
            elif not _conj_disjoint(alg, x, y, f, g, depth):
                return False
    return True


def _in_context(alg: FormulaAlgebra, context: Conjunct, c: Conjunct, met: dict[int, Conjunct | None]) -> Conjunct | None:
    """`c` met with `context`, once per conjunct (kept in `met` by its identity)."""
    got = met.get(id(c), met)
    if got is met:
        got = met[id(c)] = conjunct_meet(context, c, alg)
    return got


def tag_disjoint_pairs(alg: FormulaAlgebra, dnfs: list[list[Conjunct]], context: Conjunct | None, met: dict[int, Conjunct | None]) -> set[tuple[int, int]]:
    """Pairs (i, j), i < j, of oneOf branches (their DNFs; `context` and `met` as dnfs_disjoint
    takes them) that dnfs_disjoint proves disjoint through a tag: a member every branch requires
    whose value is one of a few distinct strings, `^text$` patterns or string consts/enums
    (o17072's 41 modules, `"type": {"pattern": "^Abs$"}`: 820 pairs, each a proof over a few
    member schemas). Each branch's tags are read once here and the pairs told by set
    intersection. A pair found here is one its proof finds: the same meets with the context (a
    context without member rules: the meets then normalise nothing), member schemas normalised at
    the nesting `_disjoint` normalises them, and the checks _conj_disjoint and _str_disjoint make
    of their conjuncts; so the caller leaves it out of the proofs. Only branches of non-finite
    conjuncts holding objects only (after the meet) take part; empty where not all do."""
    tables = alg.tables
    if len(dnfs) < 3 or tables.disjoint_nesting > 3 or (context is not None and context.obj is not None and context.obj.rules):
        return set()
    branches: list[list[ObjectConstraints]] = []
    for d in dnfs:
        objs = []
        for c in d:
            if c.values is not None:
                return set()
            x = c if context is None else _in_context(alg, context, c, met)
            if x is None:
                continue  # (the proofs skip it too: it meets nothing)
            if not objects_only(x):
                return set()
            objs.append(x.obj)
        branches.append(objs)
    required = [o.required for objs in branches for o in objs]
    out: set[tuple[int, int]] = set()
    for k in sorted(frozenset.intersection(*required)) if required else ():
        tags = [_branch_tags(alg, objs, k) for objs in branches]
        for i, a in enumerate(tags):
            if a is None:
                continue
            for j in range(i + 1, len(tags)):
                b = tags[j]
                if b is not None and a[0] == b[0] and a[1].isdisjoint(b[1]):
                    out.add((i, j))
    return out


def _branch_tags(alg: FormulaAlgebra, objs: list[ObjectConstraints], key: str) -> tuple[str, frozenset] | None:
    """The tags of member `key` over a branch's objects (_member_tags of each, one kind), or None."""
    kind, texts = None, frozenset()
    for o in objs:
        got = _member_tags(alg, o, key)
        if got is None or (kind is not None and got[0] != kind):
            return None
        kind, texts = got[0], texts | got[1]
    return None if kind is None else (kind, texts)


def _member_tags(alg: FormulaAlgebra, o: ObjectConstraints, key: str) -> tuple[str, frozenset] | None:
    """("values", the strings) when the value schema of member `key` of `o` is string consts only,
    ("patterns", the texts) when each of its conjuncts is strings under exactly one `^text$`
    pattern and no enum; None otherwise, or where `disjoint` would not reach the conjuncts (a
    schema being normalised, TRUE/FALSE, a $ref loop). Normalised as `_disjoint` normalises it."""
    tables = alg.tables
    f = alg.value_formula(o, key)
    if f is TRUE or f is FALSE or f in tables.active:
        return None
    tables.disjoint_nesting += 1
    try:
        d = alg.dnf(f)
    except RefLoop:
        return None
    finally:
        tables.disjoint_nesting -= 1
    if not d:
        return None
    if all(c.values is not None for c in d):
        values = [v for c in d for v in c.values]
        return ("values", frozenset(values)) if all(type(v) is str for v in values) else None
    texts: set[str] = set()
    for c in d:
        if c.values is not None or c.null or c.bools or c.num is not None or c.arr is not None or c.obj is not None or not c.str:
            return None
        found = set()
        for atom in c.str:
            if type(atom) is AmongStrings:
                return None
            if type(atom) is Matches:
                found.add(literal_pattern(atom.pattern))
        found.discard(None)
        if len(found) != 1:
            return None
        texts |= found
    return ("patterns", frozenset(texts))


def _conj_disjoint(alg: FormulaAlgebra, x: Conjunct, y: Conjunct, f: Formula, g: Formula, depth: int) -> bool:
    if x.values is not None and y.values is not None:
        return not any(json_equal(v, w) for v in x.values for w in y.values)
    if x.values is not None:
        alg.tables.disjoint_impure += 1  # the judge's checks are counted (disjointness_memo)
        return not any(alg.satisfies(g, v) for v in x.values)
    if y.values is not None:
        alg.tables.disjoint_impure += 1
        return not any(alg.satisfies(f, v) for v in y.values)
    if x.null and y.null:
        return False
    if x.bools & y.bools:
        return False
    if x.num is not None and y.num is not None and x.num.meet(y.num) is not None:
        return False
    if x.str is not None and y.str is not None and not _str_disjoint(alg, x.str, y.str):
        return False
    if x.arr is not None and y.arr is not None and not _arr_disjoint(alg, x.arr, y.arr, depth):
        return False
    if x.obj is not None and y.obj is not None and not _obj_disjoint(alg, x.obj, y.obj, depth):
        return False
    return True


def _str_disjoint(alg: FormulaAlgebra, a: tuple, b: tuple) -> bool:
    m = str_meet(a, b)
    if m is None:
        return True
    ins = [x.values for x in m if type(x) is AmongStrings]
    if ins:
        common = frozenset.intersection(*ins)
        return not common or not any(alg.strings.member(m, s) for s in common)
    if len({literal_pattern(x.pattern) for x in m if type(x) is Matches} - {None}) > 1:
        return True  # two `^text$` tags: no string is both (told without their languages)
    return alg.strings.is_empty(m)


def _arr_disjoint(alg: FormulaAlgebra, a: ArrayConstraints, b: ArrayConstraints, depth: int) -> bool:
    if a.meet(b, alg) is None:
        return True
    lo = max(a.min, b.min)
    n = max(len(a.prefix), len(b.prefix))
    for i in range(min(lo, n)):
        if disjoint(alg, a.item(i), b.item(i), depth + 1):
            return True
    if lo > n and disjoint(alg, a.items, b.items, depth + 1):
        return True
    return False


def _obj_disjoint(alg: FormulaAlgebra, a: ObjectConstraints, b: ObjectConstraints, depth: int) -> bool:
    if not a.meets(b):
        return True
    # a member required on one side must exist in a common instance: its value must satisfy
    # the schemas both sides give that key
    for k in sorted(a.required | b.required):
        if disjoint(alg, alg.value_formula(a, k), alg.value_formula(b, k), depth + 1):
            return True
    if objects_keys_disjoint(alg, a, b):
        return True
    return False
