"""The boolean algebra of the normaliser, on DNFs (lists of conjuncts): normal forms of formulas
(`dnf`, products of factors), negation (complements of every per-type part) and disjointness
(which oneOf needs). A mixin of `Normalizer`: it works on the normaliser's memo tables."""

from __future__ import annotations

from dataclasses import replace

from strictgen import deadline
from strictgen.errors import GrammarTooLargeError

from .ir import (
    ALL_BOOLS, FALSE, TOP, TRUE, AmongStrings, ArrayConstraints, Conjunct, Contains, Formula, KeyRule, Length, Matches, NotAll, NumberConstraints, ObjectConstraints,
    conjunct_meet, conjunct_of, str_meet,
)
from .key_space import objects_keys_disjoint
from .values import RefLoop, dedupe_values, is_number, json_equal, json_type, to_fraction

__all__ = ["BooleanAlgebra", "MAX_ALTERNATIVES", "MAX_APPLICATOR_NESTING"]

MAX_ALTERNATIVES = 512  # conjuncts of one normalised (sub)schema
MAX_APPLICATOR_NESTING = 128  # formulas normalised inside one another (each is a few Python frames)


class BooleanAlgebra:
    """dnf, product, negate and disjoint, for Normalizer."""

    # ---- normalisation ----

    def dnf(self, f: Formula) -> list[Conjunct]:
        """The conjuncts of `f` (memoised)."""
        deadline.check()
        ck = (f, self._exact)
        got = self._dnf.get(ck)
        if got is not None:
            return got
        if f is TRUE:
            return [TOP]
        if f is FALSE:
            return []
        if f in self._active:
            ptr = f.src.pointer if f.src else "?"
            raise RefLoop("the schema refers to itself without consuming any input (a $ref loop)", keyword="$ref", pointer=ptr)
        if len(self._active) > MAX_APPLICATOR_NESTING:
            ptr = f.src.pointer if f.src else "?"
            raise GrammarTooLargeError(
                f"schema nested too deeply: in-place applicators ($ref, allOf, anyOf, oneOf, not, if) nested more "
                f"than {MAX_APPLICATOR_NESTING} levels (MAX_APPLICATOR_NESTING) at #{ptr.lstrip('#')}"
            )
        self._active.append(f)
        try:
            if f.kind == "src":
                out = self._norm_src(f)
            elif f.kind == "const":
                out = [Conjunct(values=(self._const_values[f.key],))]
            elif f.kind == "and":
                out = self.product([self.dnf(g) for g in f.args], f)
            elif f.kind == "or":
                out = self._union([self.dnf(g) for g in f.args])
            elif f.args[0].kind == "src":
                out = self._drop_eval(self._negate_src(f.args[0]))
            else:
                out = self._drop_eval(self.negate(self.dnf(f.args[0]), f))
        finally:
            self._active.pop()
        self._dnf[ck] = out
        return out

    def _union(self, dnfs: list[list[Conjunct]]) -> list[Conjunct]:
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
        return self._merge_finite(list(out) + finite)

    def _merge_finite(self, conjs: list[Conjunct]) -> list[Conjunct]:
        finite = [c for c in conjs if c.values is not None]
        if len(finite) <= 1:
            return conjs
        values = dedupe_values(v for c in finite for v in c.values)
        return [c for c in conjs if c.values is None] + [Conjunct(values=values)]

    def product(self, factors: list[list[Conjunct]], whole: Formula | None) -> list[Conjunct]:
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
                not self._uses_unevaluated or all(self._eval_signature(b) == ((), ()) for b in non)
            )
            acc = self._meet_each(acc, non, prunable, "")
        out = acc
        if has_finite:
            if whole is None:
                raise AssertionError("finite conjuncts need the whole formula to filter them")
            if finite_factors == 1 and others_true and self.reporter.strict and not self._uses_unevaluated:
                # the values come from one factor, which holds for them, and no other factor
                # asserts anything (strict: none dropped a keyword): no need to ask the judge
                # (an anyOf of 2,000 consts would check every value against every branch)
                kept = dedupe_values(values)
            else:
                kept = tuple(v for v in dedupe_values(values) if self.satisfies(whole, v))
            if kept:
                out = out + [Conjunct(values=kept)]
        return out

    def obj_contradicts(self, o: ObjectConstraints, a: ObjectConstraints, b: ObjectConstraints) -> bool:
        """A required member whose value schemas from the two sides cannot both hold."""
        for k in o.required:
            fa = [r.schema for r in a.rules if r.kind == "name" and r.name == k]
            fb = [r.schema for r in b.rules if r.kind == "name" and r.name == k]
            for x in fa:
                for y in fb:
                    if x is TRUE or y is TRUE or x == y:
                        continue
                    key = (x, y)
                    got = self._contradictions.get(key)
                    if got is None:
                        got = self._contradictions[key] = self.disjoint(x, y)
                    if got:
                        return True
        return False

    def _is_false(self, f: Formula) -> bool:
        if f is FALSE:
            return True
        if f in self._active or self._disjoint_nesting > 3:
            return False
        try:
            return not self.dnf(f)
        except RefLoop:
            return False

    def _implies(self, a: Conjunct, y: Conjunct) -> bool:
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
            va = self.value_formula(ao, r.name)
            if r.schema is FALSE:
                if not self._is_false(va):
                    return False
            elif r.schema.kind == "not":
                if not self.disjoint(va, r.schema.args[0]):
                    return False
            else:
                return False
        for clause in yo.clauses:
            if len(clause) != 1:
                return False
            (k, pos), = clause
            if pos and k not in ao.required:
                return False
            if not pos and not self._is_false(self.value_formula(ao, k)):
                return False
        return True

    # ---- negation ----

    def negate(self, dnf: list[Conjunct], f: Formula | None = None) -> list[Conjunct]:
        """The complement of a DNF (as a DNF); annotations of negated schemas are dropped."""
        if not dnf:
            return [TOP]
        factors = [self._negate_conj(c, f) for c in dnf]
        # the product of negated conjuncts never holds finite parts
        acc: list[Conjunct] = [TOP]
        for d in factors:
            acc = self._meet_each(acc, d, len(d) > 1, " (in a negation)")  # negations evaluate nothing
        return acc

    def _meet_each(self, acc: list[Conjunct], d: list[Conjunct], prunable: bool, where: str) -> list[Conjunct]:
        """The conjuncts of (acc_1 or acc_2 ...) and (d_1 or d_2 ...), without repeats. With
        `prunable`, an a that already implies some d_j stays as it is: a and (d_1 or ...) = a."""
        nxt: dict[Conjunct, None] = {}
        for a in acc:
            if a is not TOP and prunable and any(self._implies(a, b) for b in d):
                nxt[a] = None
                continue
            for b in d:
                m = b if a is TOP else (a if b is TOP else conjunct_meet(a, b, self))
                if m is not None:
                    nxt[m] = None
        if len(nxt) > MAX_ALTERNATIVES:
            raise GrammarTooLargeError(f"schema too complex: more than {MAX_ALTERNATIVES} alternatives{where}")
        return list(nxt)

    def _ptr(self, f: Formula | None) -> str:
        while f is not None and f.kind in ("not", "and", "or"):
            f = f.args[0]
        return f.src.pointer if f is not None and f.src is not None else ""

    def _negate_conj(self, c: Conjunct, f: Formula | None) -> list[Conjunct]:
        ptr = self._ptr(f)
        if c.values is not None:
            return self._negate_values(c.values, ptr)
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
            out.extend(conjunct_of(arr=a) for a in self._negate_arr(c.arr, ptr))
        if c.obj is None:
            out.append(conjunct_of(obj=ObjectConstraints()))
        else:
            out.extend(conjunct_of(obj=o) for o in self._negate_obj(c.obj, ptr))
        return out

    def _negate_values(self, values: tuple, ptr: str) -> list[Conjunct]:
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
                alts = [conjunct_of(arr=a) for a in self._array_complement(v)] if kind == "arr" else [conjunct_of(obj=o) for o in self._object_complement(v)]
                nxt: dict[Conjunct, None] = {}
                for a in acc:
                    for b in alts:
                        m = conjunct_meet(a, b, self)
                        if m is not None:
                            nxt[m] = None
                if len(nxt) > MAX_ALTERNATIVES:
                    raise GrammarTooLargeError(f"schema too complex: more than {MAX_ALTERNATIVES} alternatives (excluding enum values)")
                acc = list(nxt)
            out.extend(acc)
        return out

    def _array_complement(self, v: list) -> list[ArrayConstraints]:
        """Arrays other than `v`: another length, or some item different."""
        n = len(v)
        out = [ArrayConstraints(min=n + 1)] + ([ArrayConstraints(max=n - 1)] if n else [])
        for i, x in enumerate(v):
            out.append(ArrayConstraints(prefix=(TRUE,) * i + (self.not_(self.const_(x)),), min=i + 1))
        return out

    def _object_complement(self, v: dict) -> list[ObjectConstraints]:
        """Objects other than `v`: a member missing, a member with another value, or another key."""
        keys = tuple(v)
        out = [ObjectConstraints(exists=(KeyRule("other", TRUE, names=frozenset(keys), evaluates=False),))]
        for k in keys:
            out.append(ObjectConstraints(rules=(KeyRule("name", FALSE, name=k, evaluates=False),), order=(k,)))
            out.append(
                ObjectConstraints(
                    rules=(KeyRule("name", self.not_(self.const_(v[k])), name=k, evaluates=False),),
                    required=frozenset((k,)),
                    order=(k,),
                )
            )
        return out

    def _negate_arr(self, a: ArrayConstraints, ptr: str) -> list[ArrayConstraints]:
        out: list[ArrayConstraints] = []
        if a.min > 0:
            out.append(ArrayConstraints(max=a.min - 1))
        if a.max is not None:
            out.append(ArrayConstraints(min=a.max + 1))
        for i, p in enumerate(a.prefix):
            if p is not TRUE:
                out.append(ArrayConstraints(prefix=(TRUE,) * i + (self.not_(p),), min=i + 1))
        if a.items is not TRUE:
            out.append(ArrayConstraints(min=len(a.prefix) + 1, contains=(Contains(self.not_(a.items), 1, None, len(a.prefix), False),)))
        for c in a.contains:
            if c.lo > 0:
                out.append(ArrayConstraints(contains=(Contains(c.schema, 0, c.lo - 1, c.start, False),)))
            if c.hi is not None:
                out.append(ArrayConstraints(contains=(Contains(c.schema, c.hi + 1, None, c.start, False),)))
        if a.unique:
            where = next((p for k, p in a.where if k == "uniqueItems"), ptr)
            self.reporter.refuse("'not' of uniqueItems (arrays with a duplicate) cannot be expressed", "uniqueItems", where)
        return out

    def _negate_obj(self, o: ObjectConstraints, ptr: str) -> list[ObjectConstraints]:
        out: list[ObjectConstraints] = []
        for r in sorted(o.required):
            out.append(ObjectConstraints(rules=(KeyRule("name", FALSE, name=r, evaluates=False),), order=(r,)))
        for r in o.rules:
            if r.schema is TRUE:
                continue
            if r.kind == "name":
                out.append(
                    ObjectConstraints(
                        rules=(KeyRule("name", self.not_(r.schema), name=r.name, evaluates=False),),
                        required=frozenset((r.name,)),
                        order=(r.name,),
                    )
                )
            else:  # some member with a key in the set violates the schema
                out.append(ObjectConstraints(exists=(replace(r, schema=self.not_(r.schema), evaluates=False),)))
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
                    self.reporter.refuse("'not' of 'some key outside propertyNames' with a value schema", "not", ptr)
            else:
                out.append(ObjectConstraints(rules=(replace(e, schema=self.not_(e.schema), evaluates=False),)))
        return out

    # ---- disjointness (for oneOf) ----

    def disjoint(self, f: Formula, g: Formula, depth: int = 0) -> bool:
        """True when no value satisfies both (a sufficient check, never wrong when it says True)."""
        if f is FALSE or g is FALSE:
            return True
        if f is TRUE or g is TRUE or depth > 6 or self._disjoint_nesting > 3:
            return False
        if f in self._active or g in self._active:
            # being normalised right now: only finite values of the other side can be checked
            other, busy = (g, f) if f in self._active else (f, g)
            if other in self._active:
                return False
            self._disjoint_nesting += 1
            try:
                d = self.dnf(other)
            except RefLoop:
                return False
            finally:
                self._disjoint_nesting -= 1
            if d and all(c.values is not None for c in d):
                return not any(self.satisfies(busy, v) for c in d for v in c.values)
            return False
        self._disjoint_nesting += 1
        try:
            a, b = self.dnf(f), self.dnf(g)
        except RefLoop:
            return False
        finally:
            self._disjoint_nesting -= 1
        return self._dnfs_disjoint(a, b, f, g, depth)

    def _dnfs_disjoint(self, a: list[Conjunct], b: list[Conjunct], f: Formula, g: Formula, depth: int, context: Conjunct | None = None) -> bool:
        """No value in both DNFs (and in the context conjunct, when given)."""
        for x in a:
            for y in b:
                if context is not None and x.values is None and y.values is None:
                    x2, y2 = conjunct_meet(context, x, self), conjunct_meet(context, y, self)
                    if x2 is None or y2 is None:
                        continue
                    x, y = x2, y2
                if not self._conj_disjoint(x, y, f, g, depth):
                    return False
        return True

    def _conj_disjoint(self, x: Conjunct, y: Conjunct, f: Formula, g: Formula, depth: int) -> bool:
        if x.values is not None and y.values is not None:
            return not any(json_equal(v, w) for v in x.values for w in y.values)
        if x.values is not None:
            return not any(self.satisfies(g, v) for v in x.values)
        if y.values is not None:
            return not any(self.satisfies(f, v) for v in y.values)
        if x.null and y.null:
            return False
        if x.bools & y.bools:
            return False
        if x.num is not None and y.num is not None and x.num.meet(y.num) is not None:
            return False
        if x.str is not None and y.str is not None and not self._str_disjoint(x.str, y.str):
            return False
        if x.arr is not None and y.arr is not None and not self._arr_disjoint(x.arr, y.arr, depth):
            return False
        if x.obj is not None and y.obj is not None and not self._obj_disjoint(x.obj, y.obj, depth):
            return False
        return True

    def _str_disjoint(self, a: tuple, b: tuple) -> bool:
        m = str_meet(a, b)
        if m is None:
            return True
        ins = [x.values for x in m if type(x) is AmongStrings]
        if ins:
            common = frozenset.intersection(*ins)
            return not common or not any(self.strings.member(m, s) for s in common)
        return self.strings.is_empty(m)

    def _arr_disjoint(self, a: ArrayConstraints, b: ArrayConstraints, depth: int) -> bool:
        if a.meet(b, self) is None:
            return True
        lo = max(a.min, b.min)
        n = max(len(a.prefix), len(b.prefix))
        for i in range(min(lo, n)):
            if self.disjoint(a.item(i), b.item(i), depth + 1):
                return True
        if lo > n and self.disjoint(a.items, b.items, depth + 1):
            return True
        return False

    def _obj_disjoint(self, a: ObjectConstraints, b: ObjectConstraints, depth: int) -> bool:
        if a.meet(b) is None:
            return True
        # a member required on one side must exist in a common instance: its value must satisfy
        # the schemas both sides give that key
        for k in sorted(a.required | b.required):
            if self.disjoint(self.value_formula(a, k), self.value_formula(b, k), depth + 1):
                return True
        if objects_keys_disjoint(self, a, b):
            return True
        return False

    def value_formula(self, o: ObjectConstraints, key: str) -> Formula:
        """The conjunction of the rules of `o` that apply to the member named `key` (in rule
        order; "name" rules are looked up by key, so an object's K properties cost O(K), not
        O(K^2) rule tests)."""
        got = self._rules_by_name.get(id(o.rules))
        if got is None or got[0] is not o.rules:
            by_name: dict[str, list[int]] = {}
            others = []
            for i, r in enumerate(o.rules):
                if r.kind == "name":
                    by_name.setdefault(r.name, []).append(i)
                else:
                    others.append(i)
            got = self._rules_by_name[id(o.rules)] = (o.rules, by_name, others)  # holds o.rules: its id stays its own
        rules, by_name, others = got
        picked = by_name.get(key, [])
        if others:
            picked = sorted(picked + [i for i in others if self.rule_applies(rules[i], key)])
        if o.key_atoms is not None and not self.strings.member(o.key_atoms, key):
            return FALSE
        return self.and_(*(rules[i].schema for i in picked))

    def rule_applies(self, r: KeyRule, key: str) -> bool:
        if r.kind == "name":
            return r.name == key
        if r.kind == "pattern":
            return self.strings.member((Matches(r.pattern),), key)
        if r.kind == "keys":
            return self.strings.member(r.atoms, key)
        return key not in r.names and not any(self.strings.member((Matches(p),), key) for p in r.patterns)
