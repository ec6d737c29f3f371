"""The in-place applicators of one raw schema (its own keywords, `$ref`, `allOf`, `anyOf`, `oneOf`,
`not`, `if`/`then`/`else`, `dependencies`/`dependent*`, `enum`/`const`) combined into the
conjuncts of that schema.

Functions of the normaliser, not a mixin: `src_conjuncts(norm, f)` and `src_complement(norm, f)`
are the formula algebra's lazy step (it reaches them through `SchemaSource.conjuncts` /
`complement`, which it was handed: the algebra cannot import this module, which uses it). They use
the normaliser's view of a schema, its subschema formulas, references (schema.refs), formula
constructors, `dnf`, its jsonschema judge, its reporter and `trial` (refusals raised instead of
recorded); the boolean algebra's functions (schema.algebra) take the formula algebra
(`norm.formulas`)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from strictgen import deadline
from strictgen.errors import CompileTimeoutError, GrammarTooLargeError

from .algebra import MAX_ALTERNATIVES, negate, product, union
from .disjointness import disjoint, disjointness_memo, dnfs_disjoint, tag_disjoint_pairs
from .dialects import ALL_KEYWORDS, JSON_TYPES
from .ir import ALL_BOOLS, FALSE, TOP, TRUE, ArrayConstraints, Conjunct, Formula, KeyRule, NumberConstraints, ObjectConstraints, conjunct_meet, conjunct_of, eval_signature, objects_only
from .keywords import own_keywords, type_alone, unevaluated
from .refs import dynamic_ref, recursive_ref, ref
from .values import dedupe_values, escape_pointer, invalid, json_equal

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["src_complement", "src_conjuncts"]


# ---- one raw schema ----


def src_conjuncts(norm: Normalizer, f: Formula) -> list[Conjunct]:
    s = norm.view(f)
    out = _norm_core(norm, f)
    if "unevaluatedProperties" in s or "unevaluatedItems" in s:
        if not norm.tables.exact and any(c.loose_eval for c in out):
            norm.tables.exact = True
            try:
                out = _norm_core(norm, f)
            finally:
                norm.tables.exact = False
        out = unevaluated(norm, f, out)
    return out


def _norm_core(norm: Normalizer, f: Formula) -> list[Conjunct]:
    info = f.src
    s = norm.view(f)
    legacy = getattr(info.spec, "name", "") in ("draft-03", "draft-04", "draft-06", "draft-07")
    if "$ref" in s and legacy:
        return norm.dnf(ref(norm, f, s["$ref"], "$ref"))
    if "enum" in s or "const" in s:
        return _finite(norm, f)
    alone = type_alone(s)
    if alone is not None:  # a leaf with one type: its own keywords are all its factors
        return [alone]
    if _FACTOR_KEYWORDS.isdisjoint(s):  # its own keywords are its one factor: their conjunct
        local = own_keywords(norm, f)  # (what _factors and the product of one factor make of it)
        return [] if local is None else [local]
    factors = _factors(norm, f)
    if factors is None:
        return []
    return product(norm.formulas, [pos_dnf[1]() for pos_dnf in factors], f)


# the keywords that make a factor of their own beside a schema's own keywords (_factors, _dependencies)
_FACTOR_KEYWORDS = frozenset(
    ("$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf", "not", "if", "dependentRequired", "dependentSchemas", "dependencies")
)


def src_complement(norm: Normalizer, f: Formula) -> list[Conjunct]:
    """not f for a raw schema: by De Morgan, the union of the complements of its factors
    (its own keywords, $ref, each allOf branch, anyOf, oneOf, not, if, dependencies), which
    avoids negating the product of all of them."""
    info = f.src
    s = norm.view(f)
    legacy = getattr(info.spec, "name", "") in ("draft-03", "draft-04", "draft-06", "draft-07")
    if "$ref" in s and legacy:
        return norm.dnf(norm.not_(ref(norm, f, s["$ref"], "$ref")))
    if "enum" in s or "const" in s or "unevaluatedProperties" in s or "unevaluatedItems" in s:
        return negate(norm.formulas, norm.dnf(f), norm.not_(f))
    factors = _factors(norm, f)
    if factors is None:
        return [TOP]
    return union([neg() for _, _, neg in factors])


def _factors(norm: Normalizer, f: Formula):
    """The factors of a raw schema as (position, dnf(), complement()) in keyword order: the
    first appearance of a property name decides where its member is emitted. None when the
    schema's own keywords admit nothing."""
    info = f.src
    s = norm.view(f)
    ptr = info.pointer
    pos = {k: i for i, k in enumerate(s)}
    factors: list = []
    local = own_keywords(norm, f)
    if local is None:
        return None
    obj_kw = [pos[k] for k in ("properties", "required", "patternProperties", "additionalProperties") if k in pos]
    factors.append((min(obj_kw) if obj_kw else -1, lambda: [local], lambda: negate(norm.formulas, [local], f)))

    def formula_factor(position: int, g: Formula):
        factors.append((position, lambda: norm.dnf(g), lambda: norm.dnf(norm.not_(g))))

    if "$ref" in s:
        formula_factor(pos["$ref"], ref(norm, f, s["$ref"], "$ref"))
    if "$dynamicRef" in s:
        formula_factor(pos["$dynamicRef"], dynamic_ref(norm, f, s["$dynamicRef"]))
    if "$recursiveRef" in s:
        formula_factor(pos["$recursiveRef"], recursive_ref(norm, f, s["$recursiveRef"]))
    for kw in ("allOf", "anyOf", "oneOf"):
        if kw not in s:
            continue
        branches = s[kw]
        if not isinstance(branches, list) or not branches:
            raise invalid(f"{kw} must be a non-empty array of schemas", kw, ptr + "/" + kw)
        subs = [norm.sub(f, b, kw, i) for i, b in enumerate(branches)]
        if kw == "allOf":
            for g in subs:
                formula_factor(pos[kw], g)
        elif kw == "anyOf":
            factors.append(
                (
                    pos[kw],
                    lambda subs=subs: _any_of(norm, subs),
                    lambda subs=subs: _none_of(norm, subs),
                )
            )
        else:
            factors.append(
                (pos[kw], lambda subs=subs: _one_of(norm, subs, ptr + "/oneOf", local), lambda subs=subs: _not_one_of(norm, subs))
            )
    if "not" in s:
        g = norm.sub(f, s["not"], "not")
        factors.append((pos["not"], lambda: norm.dnf(norm.not_(g)), lambda: norm.dnf(g)))
    if "if" in s and ("then" in s or "else" in s):
        cond = norm.sub(f, s["if"], "if")
        then = norm.sub(f, s["then"], "then") if "then" in s else TRUE
        els = norm.sub(f, s["else"], "else") if "else" in s else TRUE

        def branch(c: Formula, t: Formula) -> list[Conjunct]:
            return product(norm.formulas, [norm.dnf(c), norm.dnf(t)], norm.and_(c, t))

        factors.append(
            (
                pos["if"],
                lambda: union([branch(cond, then), branch(norm.not_(cond), els)]),
                lambda: union([branch(cond, norm.not_(then)), branch(norm.not_(cond), norm.not_(els))]),
            )
        )
    elif "if" in s and norm.uses_unevaluated:
        # no then/else, but a successful `if` still evaluates members for unevaluated*
        cond = norm.sub(f, s["if"], "if")
        if any(eval_signature(c) != ((), ()) and c.values is None for c in norm.dnf(cond)):
            split = norm.trial(lambda: union([norm.dnf(cond), norm.dnf(norm.not_(cond))]))
            if split is not None:
                factors.append((pos["if"], lambda: split, lambda: []))
    for d, neg in _dependencies(norm, f):
        factors.append((len(s), lambda d=d: d, neg))
    factors.sort(key=lambda x: x[0])
    return factors


def _not_one_of(norm: Normalizer, subs: list[Formula]) -> list[Conjunct]:
    """Not exactly one branch: none, or at least two."""
    alts = [_none_of(norm, subs)]
    for i in range(len(subs)):
        for j in range(i + 1, len(subs)):
            alts.append(product(norm.formulas, [norm.dnf(subs[i]), norm.dnf(subs[j])], norm.and_(subs[i], subs[j])))
    return union(alts)


def _none_of(norm: Normalizer, subs: list[Formula]) -> list[Conjunct]:
    """No branch holds: the product of the branches' complements, unless a discriminator
    tells the branches apart (then linear in them, see `_discriminated_none`)."""
    split = _discriminated_none(norm, subs)
    if split is not None:
        return split
    return product(norm.formulas, [norm.dnf(norm.not_(g)) for g in subs], norm.and_(*(norm.not_(g) for g in subs)))


def _discriminated_none(norm: Normalizer, subs: list[Formula]) -> list[Conjunct] | None:
    """None of the branches, when every branch is objects that require a member `k` whose
    values are disjoint across branches (`"type": {"enum": [...]}` tagged unions): not an
    object, or no `k`, or a `k` no branch allows, or `k` picks branch j and branch j fails.
    x[k] in branch j's values rules out every other branch, so this is exact, and it has
    about as many alternatives as the complements together, where their product (the
    general way) grows as the product of their sizes. None when there is no such member."""
    if len(subs) < 3:
        return None  # the product of two complements stays small
    dnfs = [norm.dnf(g) for g in subs]
    conjs = [c for d in dnfs for c in d]
    if not all(d for d in dnfs) or not all(objects_only(c) for c in conjs):
        return None
    for key in sorted(frozenset.intersection(*(c.obj.required for c in conjs))):
        values = [norm.or_(*(norm.value_formula(c.obj, key) for c in d)) for d in dnfs]
        if all(disjoint(norm.formulas, values[i], values[j]) for i in range(len(values)) for j in range(i + 1, len(values))):
            break
    else:
        return None

    def member(schema: Formula, required: bool) -> Conjunct:
        rule = KeyRule("name", schema, name=key, evaluates=False)
        return conjunct_of(obj=ObjectConstraints(rules=(rule,), required=frozenset((key,)) if required else frozenset(), order=(key,)))

    out = [conjunct_of(null=True), conjunct_of(bools=ALL_BOOLS), conjunct_of(num=NumberConstraints()), conjunct_of(str=()), conjunct_of(arr=ArrayConstraints())]
    out += [member(FALSE, False), member(norm.not_(norm.or_(*values)), True)]
    for g, v in zip(subs, values):
        pick = member(v, True)
        out += [m for m in (conjunct_meet(pick, c, norm.formulas) for c in norm.dnf(norm.not_(g))) if m is not None]
    return union([out])


def _finite(norm: Normalizer, f: Formula) -> list[Conjunct]:
    s = norm.view(f)
    values: list = []
    if "enum" in s:
        if not isinstance(s["enum"], list):
            raise invalid("enum must be an array", "enum", f.src.pointer + "/enum")
        values.extend(s["enum"])
        if "const" in s:
            values = [v for v in values if json_equal(v, s["const"])]
    else:
        values.append(s["const"])
    for v in values:
        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
            raise invalid("enum/const values must be JSON values (no NaN or Infinity)", "enum", f.src.pointer)
    values = list(dedupe_values(values))
    others = [k for k in s if k in ALL_KEYWORDS and k not in ("enum", "const")]
    types = s.get("type")
    types = [types] if isinstance(types, str) else types
    if not others:  # nothing but enum/const (and annotations): every listed value holds
        kept = tuple(values)
    elif others == ["type"] and isinstance(types, list) and types and all(t in JSON_TYPES for t in types):
        # the common `type` + `enum`: the judge's type check alone, not its O(n) enum scan per value
        has_type = norm.type_judge(f)
        kept_: list = []
        for n, v in enumerate(values):
            if not n & 4095:
                deadline.check()
            if has_type(v, types):
                kept_.append(v)
        kept = tuple(kept_)
    else:
        kept = tuple(v for v in values if norm.satisfies(f, v))
    return [Conjunct(values=kept)] if kept else []


def _presence_only(dnfs: list[list[Conjunct]]) -> list[ObjectConstraints] | None:
    """The object parts of branches that only constrain which members are present."""
    out = []
    for d in dnfs:
        if len(d) != 1 or d[0].values is not None:
            return None
        c = d[0]
        if not (c.null and c.bools == ALL_BOOLS and c.num == NumberConstraints() and c.str == () and c.arr == ArrayConstraints() and c.obj is not None):
            return None
        o = c.obj
        if o.rules or o.min or o.max is not None or o.key_atoms is not None or o.exists:
            return None
        out.append(o)
    return out


def _cnf(o: ObjectConstraints) -> list[frozenset]:
    return [frozenset(((k, True),)) for k in sorted(o.required)] + list(o.clauses)


def _presence_any(objs: list[ObjectConstraints], exactly_one: bool) -> Conjunct | None:
    """anyOf / oneOf of presence-only branches as one conjunct with CNF presence clauses."""
    branches = [_cnf(o) for o in objs]
    if any(not b for b in branches):
        if exactly_one:
            return None
        return TOP  # a branch without constraints: the anyOf always holds
    clauses: list[frozenset] = []
    # at least one branch: distribute the disjunction of CNFs
    combos = [frozenset()]
    for b in branches:
        combos = [c | cl for c in combos for cl in b]
        if len(combos) > 64:
            return None
    clauses.extend(c for c in combos if not any((k, not pos) in c for k, pos in c))
    if exactly_one:  # no two branches: not (B_i and B_j), B made of unit-literal clauses only
        if any(len(cl) != 1 for b in branches for cl in b):
            return None
        for i in range(len(branches)):
            for j in range(i + 1, len(branches)):
                lits = {next(iter(cl)) for cl in branches[i] + branches[j]}
                clauses.append(frozenset((k, not pos) for k, pos in lits))
    order = tuple(dict.fromkeys(k for o in objs for k in o.order + tuple(k for cl in o.clauses for k, _ in cl)))
    obj = ObjectConstraints(order=order, clauses=tuple(dict.fromkeys(clauses)))
    if exactly_one:
        return conjunct_of(obj=obj)  # every branch holds for non-objects, so oneOf fails there
    return replace(TOP, obj=obj)


def _any_of(norm: Normalizer, subs: list[Formula]) -> list[Conjunct]:
    dnfs = [norm.dnf(g) for g in subs]
    if len(subs) > 1:
        objs = _presence_only(dnfs)
        if objs is not None and not norm.uses_unevaluated:
            c = _presence_any(objs, exactly_one=False)
            if c is not None:
                return [c]
    out = union(dnfs)
    if len(subs) > 1 and norm.uses_unevaluated:  # (what branches evaluate is read by unevaluated* only)
        sigs = {eval_signature(c) for d in dnfs for c in d}
        if len(sigs) > 1:
            if norm.tables.exact and len(subs) <= 5:
                # which branches hold decides which members are evaluated: one alternative
                # per non-empty set T of branches (T hold, the others do not)
                n = len(subs)
                alts = []
                for t in range(1, 1 << n):
                    parts = [subs[i] if t >> i & 1 else norm.not_(subs[i]) for i in range(n)]
                    alts.append(product(norm.formulas, [norm.dnf(p) for p in parts], norm.and_(*parts)))
                return union(alts)
            out = [replace(c, loose_eval=True) if c.values is None else c for c in out]
    return out


def _one_of(norm: Normalizer, subs: list[Formula], ptr: str, context: Conjunct | None = None) -> list[Conjunct]:
    """oneOf: the union when the branches are disjoint (within `context`, the schema's own
    keywords), else branch i and not branch j for every other j."""
    n = len(subs)
    dnfs = [norm.dnf(g) for g in subs]
    if n == 1:
        return dnfs[0]
    objs = _presence_only(dnfs)
    if objs is not None:
        c = _presence_any(objs, exactly_one=True)
        if c is not None:
            return [c]
    met: dict = {}  # each branch conjunct met with the context, once for all pairs (dnfs holds the conjuncts)
    with disjointness_memo(norm.formulas):
        tagged = tag_disjoint_pairs(norm.formulas, dnfs, context, met)  # (the proofs they would take)
        overlaps = {
            (i, j)
            for i in range(n)
            for j in range(i + 1, n)
            if (i, j) not in tagged and not dnfs_disjoint(norm.formulas, dnfs[i], dnfs[j], subs[i], subs[j], 0, context, met)
        }
    if not overlaps:
        return union(dnfs)
    # exactly one branch: b_i and not b_j for every other j that b_i may overlap (a branch
    # disjoint from b_i lies inside its complement already, so b_i ∧ ¬b_j is b_i: leaving it
    # out keeps the product small when only a few branches overlap, as in tagged unions)

    def exact() -> list[Conjunct]:
        alts = []
        for i in range(n):
            others = [norm.not_(subs[j]) for j in range(n) if j != i and (min(i, j), max(i, j)) in overlaps]
            whole = norm.and_(subs[i], *others)
            ctx = [[context]] if context is not None else []
            alts.append(product(norm.formulas, ctx + [dnfs[i]] + [norm.dnf(o) for o in others], whole))
        return union(alts)

    try:
        out = None if norm.trial(lambda: _exact_overflows(norm, subs, overlaps, context)) else norm.trial(exact)
    except CompileTimeoutError:
        raise
    except GrammarTooLargeError:
        out = None
    if out is None:
        norm.reporter.refuse(
            "oneOf branches may overlap and the complement of a branch cannot be expressed "
            "(or is too large), so 'exactly one' cannot be enforced",
            "oneOf",
            ptr,
        )
        return union(dnfs)
    return out


def _exact_overflows(norm: Normalizer, subs: list[Formula], overlaps: set, context: Conjunct | None) -> bool:
    """Is `exact` in _one_of proven to pass MAX_ALTERNATIVES, without building it? (Tagged unions
    whose branches only require their own key, {"required": [k], "properties": {k: S}}, and do not
    say `type`: helm-testsuite's 26 built 512 alternatives, ~40 ms, only to give up.)

    Branch i's alternatives are the product of the context, branch i and the complements of the
    branches it may overlap. A complement that splits on a key k alone (objects without k; objects
    with k whose value fails: `_presence_split`) doubles every alternative of the other factors
    that says nothing about k (`_silent_on`): the half without k and the half with it both meet it
    (no required name is forbidden, no count bound, no rule on k to contradict), neither is implied
    by it (pruning), and the halves differ in their required names. So with m such splits on m
    distinct keys, and the other factors' product not empty, branch i has at least 2^m
    alternatives. False: not proven (the construction decides)."""
    n = len(subs)
    for i in range(n):
        others = [j for j in range(n) if j != i and (min(i, j), max(i, j)) in overlaps]
        if 1 << len(others) <= MAX_ALTERNATIVES:
            continue
        rest = [[context]] if context is not None else []
        rest.append(norm.dnf(subs[i]))
        keys: list[str] = []
        for j in others:
            d = norm.dnf(norm.not_(subs[j]))
            k = _presence_split(d)
            if k is None:
                rest.append(d)
            else:
                keys.append(k)
        split = frozenset(keys)
        if 1 << len(split) <= MAX_ALTERNATIVES or len(split) < len(keys):
            continue
        if not all(_silent_on(c, split) for d in rest for c in d):
            continue
        try:
            base = product(norm.formulas, rest, None)
        except GrammarTooLargeError:
            continue
        if base and all(_silent_on(c, split) for c in base):
            return True
    return False


def _presence_split(d: list[Conjunct]) -> str | None:
    """The key k when the DNF `d` is exactly {objects without k, objects with k whose value is
    under some schema other than FALSE}, nothing else said; None otherwise."""
    if len(d) != 2 or not all(_bare_object(c) and len(c.obj.rules) == 1 for c in d):
        return None
    absent, present = sorted(d, key=lambda c: len(c.obj.required))
    a, p = absent.obj.rules[0], present.obj.rules[0]
    if a.kind != "name" or p.kind != "name" or a.name != p.name or a.schema is not FALSE or p.schema is FALSE:
        return None
    return a.name if not absent.obj.required and present.obj.required == frozenset((a.name,)) else None


def _bare_object(c: Conjunct) -> bool:
    """Objects only, with nothing but member rules and required names."""
    o = c.obj
    return (
        c.values is None and not c.null and not c.bools and c.num is None and c.str is None and c.arr is None
        and o is not None and o.min == 0 and o.max is None and o.key_atoms is None and not o.exists and not o.clauses
    )


def _silent_on(c: Conjunct, keys: frozenset) -> bool:
    """Does the non-finite conjunct `c` hold objects and say nothing that could decide or bound the
    members `keys` (no rule that may apply to them but TRUE ones, no requirement, count bound, key
    language, existential or presence clause), and forbid none of its own required names?"""
    o = c.obj
    if c.values is not None or o is None or o.max is not None or o.key_atoms is not None or o.exists or o.clauses:
        return False
    if not keys.isdisjoint(o.required):
        return False
    for r in o.rules:
        if r.kind == "name":
            if (r.name in keys and r.schema is not TRUE) or (r.schema is FALSE and r.name in o.required):
                return False
        elif r.schema is not TRUE and not (r.kind == "other" and keys <= r.names):
            return False
    return True


def _dependencies(norm: Normalizer, f: Formula) -> list[tuple[list[Conjunct], Callable[[], list[Conjunct]]]]:
    """dependentRequired / dependentSchemas / dependencies as (DNF, complement thunk) factors."""
    s = norm.view(f)
    ptr = f.src.pointer
    deps: list[tuple[str, Any, str, str]] = []  # (key, strings or schema, keyword, pointer)
    for kw in ("dependentRequired", "dependentSchemas", "dependencies"):
        v = s.get(kw)
        if v is None:
            continue
        if not isinstance(v, dict):
            raise invalid(f"{kw} must be an object", kw, ptr + "/" + kw)
        for key, dep in v.items():
            deps.append((key, dep, kw, ptr + "/" + kw + "/" + escape_pointer(key)))
    factors = []
    required_deps = []
    for key, dep, kw, p in deps:
        if isinstance(dep, list):
            if not all(isinstance(x, str) for x in dep):
                raise invalid(f"{kw} lists must hold strings", kw, p)
            for d in dep:
                if d != key:
                    required_deps.append((key, d))
            continue
        not_object = replace(TOP, obj=None)
        absent = conjunct_of(obj=ObjectConstraints(rules=(KeyRule("name", FALSE, name=key, evaluates=False),), order=(key,)))
        g = norm.sub(f, dep, kw, key)
        present_conj = conjunct_of(obj=ObjectConstraints(required=frozenset([key]), order=(key,)))
        present = product(norm.formulas, [[present_conj], norm.dnf(g)], g)
        factors.append(
            (
                [not_object, absent] + present,
                lambda present_conj=present_conj, g=g: product(norm.formulas, [[present_conj], norm.dnf(norm.not_(g))], norm.not_(g)),
            )
        )
    if required_deps:  # presence clauses "key absent or d present", enforced by the object construction
        order = tuple(dict.fromkeys(k for pair in required_deps for k in pair))
        clauses = tuple(frozenset(((key, False), (d, True))) for key, d in required_deps)
        c = replace(TOP, obj=ObjectConstraints(order=order, clauses=clauses))
        factors.append(([c], lambda c=c: negate(norm.formulas, [c])))
    return factors
