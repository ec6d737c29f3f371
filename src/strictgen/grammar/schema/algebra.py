"""The boolean algebra on DNFs (lists of conjuncts): normal forms of formulas (`dnf`, products of
factors), negation (complements of every per-type part) and the value schema of an object member;
disjointness (which oneOf needs, and `_implies` and `obj_contradicts` here) is schema.disjointness.

Functions of the compile's formula algebra (schema.formulas.FormulaAlgebra, `alg`) and its tables
(`AlgebraTables`: the memoised conjuncts, the formulas being normalised, ...): they ask it for its
formula constructors (`and_`, `not_`, `const_`), its jsonschema judge (`satisfies`), its reporter
and string-language service, and the conjuncts of one raw schema and of its complement
(`src_conjuncts`, `src_complement`: its lazy step). `FormulaAlgebra.dnf`, `value_formula` and
`obj_contradicts` are this module's functions; nothing here refers to the normaliser."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from strictgen import deadline
from strictgen.errors import GrammarTooLargeError

from .disjointness import disjoint
from .ir import (
    ALL_BOOLS, FALSE, TOP, TRUE, AmongStrings, ArrayConstraints, Conjunct, Contains, Formula, KeyRule, Length, Matches, NotAll, NumberConstraints, ObjectConstraints,
    conjunct_meet, conjunct_of, eval_signature, without_evaluation,
)
from .values import RefLoop, dedupe_values, is_number, json_type, to_fraction

if TYPE_CHECKING:
    from .formulas import FormulaAlgebra
    from .strings import StringLanguages

__all__ = [
    "MAX_ALTERNATIVES", "MAX_APPLICATOR_NESTING", "AlgebraTables", "disjoint", "dnf", "negate",
    "obj_contradicts", "product", "rule_applies", "union", "value_formula",
]

MAX_ALTERNATIVES = 512  # conjuncts of one normalised (sub)schema
MAX_APPLICATOR_NESTING = 128  # formulas normalised inside one another (each is a few Python frames)


@dataclass
class AlgebraTables:
    """The memo tables and stacks of one normaliser's algebra (mutable: they fill as it works)."""

    conjuncts: dict = field(default_factory=dict)  # (formula, exact) -> its DNF
    active: list = field(default_factory=list)  # formulas being normalised, outermost first
    exact: bool = False  # anyOf expanded into exactly-which-branches alternatives (unevaluated*)
    contradictions: dict = field(default_factory=dict)  # (formula, formula) -> disjoint?
    disjoint_nesting: int = 0  # disjointness proofs asked inside one another
    rules_by_name: dict = field(default_factory=dict)  # value_formula's index of an object's key rules
    value_formulas: dict = field(default_factory=dict)  # (id(object), key) -> (object, its value formula)
    # disjointness answers kept while one pairwise loop asks them (`disjointness_memo`): (the
    # depth of `active` and the nesting they hold at, {(f, g, depth): answer}); and a count of the
    # answers that depend on more than that (the judge's counted checks, a $ref loop)
    disjoint_memo: tuple | None = None
    disjoint_impure: int = 0


# ---- normalisation ----


def dnf(alg: FormulaAlgebra, f: Formula) -> list[Conjunct]:
    """The conjuncts of `f` (memoised; the deadline is checked where they are computed: over
    half the calls are answered from the memo)."""
    tables = alg.tables
    ck = (f, tables.exact)
    got = tables.conjuncts.get(ck)
    if got is not None:
        return got
    deadline.check()
    if f is TRUE:
        return [TOP]
    if f is FALSE:
        return []
    active = tables.active
    if f in active:
        ptr = f.src.pointer if f.src else "?"
        raise RefLoop("the schema refers to itself without consuming any input (a $ref loop)", keyword="$ref", pointer=ptr)
    if len(active) > MAX_APPLICATOR_NESTING:
        ptr = f.src.pointer if f.src else "?"
        raise GrammarTooLargeError(
            f"schema nested too deeply: in-place applicators ($ref, allOf, anyOf, oneOf, not, if) nested more "
            f"than {MAX_APPLICATOR_NESTING} levels (MAX_APPLICATOR_NESTING) at #{ptr.lstrip('#')}"
        )
    active.append(f)
    try:
        if f.kind == "src":
            out = alg.src_conjuncts(f)
        elif f.kind == "const":
            out = [Conjunct(values=(alg.const_value(f),))]
        elif f.kind == "and":
            out = product(alg, [dnf(alg, g) for g in f.args], f)
        elif f.kind == "or":
            out = union([dnf(alg, g) for g in f.args])
        elif f.args[0].kind == "src":
            out = _evaluating_nothing(alg, alg.src_complement(f.args[0]))
        else:
            out = _evaluating_nothing(alg, negate(alg, dnf(alg, f.args[0]), f))
    finally:
        active.pop()
    tables.conjuncts[ck] = out
    return out


def _evaluating_nothing(alg: FormulaAlgebra, conjs: list[Conjunct]) -> list[Conjunct]:
    """The conjuncts of a negated schema, which evaluates nothing (for unevaluated*)."""
    return without_evaluation(conjs) if alg.uses_unevaluated else conjs


def union(dnfs: list[list[Conjunct]]) -> list[Conjunct]:
    out: dict[Conjunct, None] = {}
    finite: list[Conjunct] = []  # value sets may hold lists and dicts: merged by JSON equality below
    for d in dnfs:
        for c in d:
            if c.values is None:
                out[c] = None
            else:
                finite.append(c)
    if len(out) + min(len(finite), 1) > MAX_ALTERNATIVES:
        raise GrammarTooLargeError(f"schema too complex: more than {MAX_ALTERNATIVES} alternatives")
    return _merge_finite(list(out) + finite)


def _merge_finite(conjs: list[Conjunct]) -> list[Conjunct]:
    finite = [c for c in conjs if c.values is not None]
    if len(finite) <= 1:
        return conjs
    values = dedupe_values(v for c in finite for v in c.values)
    return [c for c in conjs if c.values is None] + [Conjunct(values=values)]


def product(alg: FormulaAlgebra, factors: list[list[Conjunct]], whole: Formula | None) -> list[Conjunct]:
    """The conjunction of DNFs. Finite conjuncts meet everything through `whole` (the formula
    equal to the whole conjunction): their values are kept when the jsonschema judge accepts them."""
    values: list = []
    has_finite = False
    finite_factors = 0
    others_true = True  # every factor without values is true (checks nothing)
    acc: list[Conjunct] = [TOP]
    for d in factors:
        fin = [c for c in d if c.values is not None]
        non = [c for c in d if c.values is None]
        if fin:
            has_finite = True
            finite_factors += 1
        elif not (len(non) == 1 and non[0].is_top):
            others_true = False
        if fin:
            for c in fin:
                values.extend(c.values)
        prunable = len(non) > 1 and (
            not alg.uses_unevaluated or all(eval_signature(b) == ((), ()) for b in non)
        )
        acc = _meet_each(alg, acc, non, prunable, "")
    out = acc
    if has_finite:
        if whole is None:
            raise AssertionError("finite conjuncts need the whole formula to filter them")
        if finite_factors == 1 and others_true and alg.reporter.strict and not alg.uses_unevaluated:
            # the values come from one factor, which holds for them, and no other factor
            # asserts anything (strict: none dropped a keyword): no need to ask the judge
            # (an anyOf of 2,000 consts would check every value against every branch)
            kept = dedupe_values(values)
        else:
            kept = tuple(v for v in dedupe_values(values) if alg.satisfies(whole, v))
        if kept:
            out = out + [Conjunct(values=kept)]
    return out


def obj_contradicts(alg: FormulaAlgebra, o: ObjectConstraints, a: ObjectConstraints, b: ObjectConstraints) -> bool:
    """A required member whose value schemas from the two sides cannot both hold."""
    if not o.required:
        return False
    a_rules, a_names, _ = _rules_index(alg, a.rules)
    b_rules, b_names, _ = _rules_index(alg, b.rules)
    for k in o.required:
        for x in [a_rules[i].schema for i in a_names.get(k, ())]:
            for y in [b_rules[i].schema for i in b_names.get(k, ())]:
                if x is TRUE or y is TRUE or x == y:
                    continue
                key = (x, y)
                got = alg.tables.contradictions.get(key)
                if got is None:
                    got = alg.tables.contradictions[key] = disjoint(alg, x, y)
                if got:
                    return True
    return False


def _is_false(alg: FormulaAlgebra, f: Formula) -> bool:
    if f is FALSE:
        return True
    if f in alg.tables.active or alg.tables.disjoint_nesting > 3:
        return False
    try:
        return not dnf(alg, f)
    except RefLoop:
        return False


def _implies(alg: FormulaAlgebra, a: Conjunct, y: Conjunct) -> bool:
    """Every value of `a` is a value of `y` (a sufficient check for the shapes negation makes)."""
    if a.values is not None or y.values is not None:
        return False
    if (a.null and not y.null) or not a.bools <= y.bools:
        return False
    if a.num is not None and (y.num is None or not y.num.trivial):
        return False
    if a.str is not None and y.str != ():
        return False
    if a.arr is not None and (y.arr is None or not y.arr.trivial):
        return False
    if a.obj is None:
        return True
    yo = y.obj
    if yo is None:
        return False
    if yo.trivial:
        return True
    if yo.min or yo.max is not None or yo.key_atoms is not None or yo.exists:
        return False
    ao = a.obj
    if not yo.required <= ao.required:
        return False
    for r in yo.rules:
        if r.kind != "name":
            return False
        if r.schema is TRUE:
            continue
        va = value_formula(alg, ao, r.name)
        if r.schema is FALSE:
            if not _is_false(alg, va):
                return False
        elif r.schema.kind == "not":
            if not disjoint(alg, va, r.schema.args[0]):
                return False
        else:
            return False
    for clause in yo.clauses:
        if len(clause) != 1:
            return False
        (k, pos), = clause
        if pos and k not in ao.required:
            return False
        if not pos and not _is_false(alg, value_formula(alg, ao, k)):
            return False
    return True


# ---- negation ----


def negate(alg: FormulaAlgebra, conjs: list[Conjunct], f: Formula | None = None) -> list[Conjunct]:
    """The complement of a DNF (as a DNF); annotations of negated schemas are dropped."""
    if not conjs:
        return [TOP]
    factors = [_negate_conj(alg, c, f) for c in conjs]
    # the product of negated conjuncts never holds finite parts
    acc: list[Conjunct] = [TOP]
    for d in factors:
        acc = _meet_each(alg, acc, d, len(d) > 1, " (in a negation)")  # negations evaluate nothing
    return acc


def _meet_each(alg: FormulaAlgebra, acc: list[Conjunct], d: list[Conjunct], prunable: bool, where: str) -> list[Conjunct]:
    """The conjuncts of (acc_1 or acc_2 ...) and (d_1 or d_2 ...), without repeats. With
    `prunable`, an a that already implies some d_j stays as it is: a and (d_1 or ...) = a."""
    nxt: dict[Conjunct, None] = {}
    for a in acc:
        if a is not TOP and prunable and any(_implies(alg, a, b) for b in d):
            nxt[a] = None
            continue
        for b in d:
            m = b if a is TOP else (a if b is TOP else conjunct_meet(a, b, alg))
            if m is not None:
                nxt[m] = None
        if len(nxt) > MAX_ALTERNATIVES:  # as soon as it is certain: the rest of acc only adds
            break
    if len(nxt) > MAX_ALTERNATIVES:
        raise GrammarTooLargeError(f"schema too complex: more than {MAX_ALTERNATIVES} alternatives{where}")
    return list(nxt)


def _ptr(f: Formula | None) -> str:
    while f is not None and f.kind in ("not", "and", "or"):
        f = f.args[0]
    return f.src.pointer if f is not None and f.src is not None else ""


def _negate_conj(alg: FormulaAlgebra, c: Conjunct, f: Formula | None) -> list[Conjunct]:
    ptr = _ptr(f)
    if c.values is not None:
        return _negate_values(alg, c.values, ptr)
    out: list[Conjunct] = []
    if not c.null:
        out.append(conjunct_of(null=True))
    if c.bools != ALL_BOOLS:
        out.append(conjunct_of(bools=ALL_BOOLS - c.bools))
    if c.num is None:
        out.append(conjunct_of(num=NumberConstraints()))
    else:
        out.extend(conjunct_of(num=n) for n in c.num.negate())
    if c.str is None:
        out.append(conjunct_of(str=()))
    elif len(c.str) == 1 and type(c.str[0]) is Length:
        # a length bound's complement is two length bounds, which stay arithmetic (NotAll
        # would be decided on automata, and a long bound unrolls into ~10^5 states)
        lo, hi = c.str[0].lo, c.str[0].hi
        if lo:
            out.append(conjunct_of(str=(Length(0, lo - 1),)))
        if hi is not None:
            out.append(conjunct_of(str=(Length(hi + 1, None),)))
    elif c.str:
        out.append(conjunct_of(str=(NotAll(c.str),)))
    if c.arr is None:
        out.append(conjunct_of(arr=ArrayConstraints()))
    else:
        out.extend(conjunct_of(arr=a) for a in _negate_arr(alg, c.arr, ptr))
    if c.obj is None:
        out.append(conjunct_of(obj=ObjectConstraints()))
    else:
        out.extend(conjunct_of(obj=o) for o in _negate_obj(alg, c.obj, ptr))
    return out


def _negate_values(alg: FormulaAlgebra, values: tuple, ptr: str) -> list[Conjunct]:
    out: list[Conjunct] = []
    types = {json_type(v) for v in values}
    if "null" not in types:
        out.append(conjunct_of(null=True))
    bools = frozenset(v for v in values if isinstance(v, bool))
    if bools != ALL_BOOLS:
        out.append(conjunct_of(bools=ALL_BOOLS - bools))
    nums = frozenset(to_fraction(v) for v in values if is_number(v))
    out.append(conjunct_of(num=NumberConstraints(excluded=nums)))
    strs = frozenset(v for v in values if isinstance(v, str))
    out.append(conjunct_of(str=(NotAll((AmongStrings(strs),)),) if strs else ()))
    arrays = [v for v in values if isinstance(v, list)]
    objects = [v for v in values if isinstance(v, dict)]
    # arrays / objects other than the listed ones: the product of each value's complement
    for kind, listed in (("arr", arrays), ("obj", objects)):
        acc = [conjunct_of(**{kind: ArrayConstraints() if kind == "arr" else ObjectConstraints()})]
        for v in listed:
            alts = [conjunct_of(arr=a) for a in _array_complement(alg, v)] if kind == "arr" else [conjunct_of(obj=o) for o in _object_complement(alg, v)]
            nxt: dict[Conjunct, None] = {}
            for a in acc:
                for b in alts:
                    m = conjunct_meet(a, b, alg)
                    if m is not None:
                        nxt[m] = None
            if len(nxt) > MAX_ALTERNATIVES:
                raise GrammarTooLargeError(f"schema too complex: more than {MAX_ALTERNATIVES} alternatives (excluding enum values)")
            acc = list(nxt)
        out.extend(acc)
    return out


def _array_complement(alg: FormulaAlgebra, v: list) -> list[ArrayConstraints]:
    """Arrays other than `v`: another length, or some item different."""
    n = len(v)
    out = [ArrayConstraints(min=n + 1)] + ([ArrayConstraints(max=n - 1)] if n else [])
    for i, x in enumerate(v):
        out.append(ArrayConstraints(prefix=(TRUE,) * i + (alg.not_(alg.const_(x)),), min=i + 1))
    return out


def _object_complement(alg: FormulaAlgebra, v: dict) -> list[ObjectConstraints]:
    """Objects other than `v`: a member missing, a member with another value, or another key."""
    keys = tuple(v)
    out = [ObjectConstraints(exists=(KeyRule("other", TRUE, names=frozenset(keys), evaluates=False),))]
    for k in keys:
        out.append(ObjectConstraints(rules=(KeyRule("name", FALSE, name=k, evaluates=False),), order=(k,)))
        out.append(
            ObjectConstraints(
                rules=(KeyRule("name", alg.not_(alg.const_(v[k])), name=k, evaluates=False),),
                required=frozenset((k,)),
                order=(k,),
            )
        )
    return out


def _negate_arr(alg: FormulaAlgebra, a: ArrayConstraints, ptr: str) -> list[ArrayConstraints]:
    out: list[ArrayConstraints] = []
    if a.min > 0:
        out.append(ArrayConstraints(max=a.min - 1))
    if a.max is not None:
        out.append(ArrayConstraints(min=a.max + 1))
    for i, p in enumerate(a.prefix):
        if p is not TRUE:
            out.append(ArrayConstraints(prefix=(TRUE,) * i + (alg.not_(p),), min=i + 1))
    if a.items is not TRUE:
        out.append(ArrayConstraints(min=len(a.prefix) + 1, contains=(Contains(alg.not_(a.items), 1, None, len(a.prefix), False),)))
    for c in a.contains:
        if c.lo > 0:
            out.append(ArrayConstraints(contains=(Contains(c.schema, 0, c.lo - 1, c.start, False),)))
        if c.hi is not None:
            out.append(ArrayConstraints(contains=(Contains(c.schema, c.hi + 1, None, c.start, False),)))
    if a.unique:
        where = next((p for k, p in a.where if k == "uniqueItems"), ptr)
        alg.reporter.refuse("'not' of uniqueItems (arrays with a duplicate) cannot be expressed", "uniqueItems", where)
    return out


def _negate_obj(alg: FormulaAlgebra, o: ObjectConstraints, ptr: str) -> list[ObjectConstraints]:
    out: list[ObjectConstraints] = []
    for r in sorted(o.required):
        out.append(ObjectConstraints(rules=(KeyRule("name", FALSE, name=r, evaluates=False),), order=(r,)))
    for r in o.rules:
        if r.schema is TRUE:
            continue
        if r.kind == "name":
            out.append(
                ObjectConstraints(
                    rules=(KeyRule("name", alg.not_(r.schema), name=r.name, evaluates=False),),
                    required=frozenset((r.name,)),
                    order=(r.name,),
                )
            )
        else:  # some member with a key in the set violates the schema
            out.append(ObjectConstraints(exists=(replace(r, schema=alg.not_(r.schema), evaluates=False),)))
    if o.min > 0:
        out.append(ObjectConstraints(max=o.min - 1))
    if o.max is not None:
        out.append(ObjectConstraints(min=o.max + 1, where=tuple(("not maxProperties", p) for k, p in o.where if k == "maxProperties")))
    if o.key_atoms is not None:  # some key outside the propertyNames language
        out.append(ObjectConstraints(exists=(KeyRule("keys", TRUE, atoms=(NotAll(o.key_atoms),), evaluates=False),)))
    for clause in o.clauses:  # every literal of the clause is false
        lits = sorted(clause)
        out.append(ObjectConstraints(order=tuple(k for k, _ in lits), clauses=tuple(frozenset(((k, not pos),)) for k, pos in lits)))
    for e in o.exists:  # every member with a key in the set violates the schema
        if e.kind == "keys":
            neg = (NotAll(e.atoms),)
            if e.schema is TRUE:
                out.append(ObjectConstraints(key_atoms=neg))
            else:
                alg.reporter.refuse("'not' of 'some key outside propertyNames' with a value schema", "not", ptr)
        else:
            out.append(ObjectConstraints(rules=(replace(e, schema=alg.not_(e.schema), evaluates=False),)))
    return out


# ---- the value schema of an object member ----


def value_formula(alg: FormulaAlgebra, o: ObjectConstraints, key: str) -> Formula:
    """The conjunction of the rules of `o` that apply to the member named `key` (in rule
    order; "name" rules are looked up by key, so an object's K properties cost O(K), not
    O(K^2) rule tests). Memoised by the object's identity (the entry holds the object): oneOf's
    disjointness proofs ask each branch's object for the same keys against every other branch."""
    memo = alg.tables.value_formulas
    got = memo.get((id(o), key))
    if got is not None and got[0] is o:
        return got[1]
    rules, by_name, others = _rules_index(alg, o.rules)
    picked = by_name.get(key, [])
    if others:
        picked = sorted(picked + [i for i in others if rule_applies(alg.strings, rules[i], key)])
    if o.key_atoms is not None and not alg.strings.member(o.key_atoms, key):
        out = FALSE
    elif len(picked) == 1:  # (most members: one property's schema, which and_ gives back as it is)
        out = rules[picked[0]].schema
    else:
        out = alg.and_(*(rules[i].schema for i in picked))
    memo[(id(o), key)] = (o, out)
    return out


def _rules_index(alg: FormulaAlgebra, rules: tuple[KeyRule, ...]) -> tuple[tuple[KeyRule, ...], dict[str, list[int]], list[int]]:
    """(rules, the positions of each name's "name" rules, the positions of the other rules),
    memoised by the tuple's identity: value_formula and obj_contradicts look names up in it
    rather than scanning an object's rules per name."""
    got = alg.tables.rules_by_name.get(id(rules))
    if got is None or got[0] is not rules:
        by_name: dict[str, list[int]] = {}
        others = []
        for i, r in enumerate(rules):
            if r.kind == "name":
                by_name.setdefault(r.name, []).append(i)
            else:
                others.append(i)
        got = alg.tables.rules_by_name[id(rules)] = (rules, by_name, others)  # holds the rules: their id stays their own
    return got


def rule_applies(strings: StringLanguages, r: KeyRule, key: str) -> bool:
    """Does key rule `r` range over the member named `key`?"""
    if r.kind == "name":
        return r.name == key
    if r.kind == "pattern":
        return strings.member((Matches(r.pattern),), key)
    if r.kind == "keys":
        return strings.member(r.atoms, key)
    return key not in r.names and not any(strings.member((Matches(p),), key) for p in r.patterns)
