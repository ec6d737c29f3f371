"""The schema IR: formulas (interned references to subschemas and their boolean combinations),
the per-type parts of a conjunct (NumberConstraints, string atoms, ArrayConstraints with Contains, ObjectConstraints with KeyRule) and
the conjunct `Conjunct` itself. The regular languages of `pattern`s are schema.patterns'."""

from __future__ import annotations

import math
from dataclasses import field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .records import record
from .values import json_type

if TYPE_CHECKING:
    from .formulas import FormulaAlgebra

__all__ = [
    "Formula", "TRUE", "FALSE", "SrcInfo", "NumberConstraints", "Length", "Matches", "Format", "AmongStrings", "NotAll", "str_meet", "Contains", "ArrayConstraints", "KeyRule",
    "ObjectConstraints", "ALL_BOOLS", "Conjunct", "TOP", "NONE", "conjunct_of", "conjunct_meet",
    "keyword_pointer", "eval_signature", "without_evaluation", "objects_only",
]


# ---- formulas -------------------------------------------------------------------------------------


class Formula:
    """An interned, lazily normalised schema: src / and / or / not / true / false. Immutable (it
    is a key of the formula algebra's and the emitter's tables); its normal form is the algebra's
    answer to `dnf(formula)`, never stored on it."""

    __slots__ = ("kind", "key", "args", "src", "_hash")

    def __init__(self, kind: str, key: tuple, args: tuple = (), src: "SrcInfo | None" = None):
        set_ = object.__setattr__
        set_(self, "kind", kind)
        set_(self, "key", key)
        set_(self, "args", args)
        set_(self, "src", src)
        set_(self, "_hash", hash(key))

    def __setattr__(self, name, value):
        raise AttributeError(f"Formula is immutable (setting {name!r})")

    def __delattr__(self, name):
        raise AttributeError(f"Formula is immutable (deleting {name!r})")

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return self is other or (isinstance(other, Formula) and self.key == other.key)

    def __repr__(self) -> str:
        if self.kind == "src":
            return f"Src({self.src.pointer or '#'})"
        if self.kind in ("true", "false"):
            return self.kind.upper()
        return f"{self.kind.capitalize()}{list(self.args)!r}"


TRUE = Formula("true", ("true",))
FALSE = Formula("false", ("false",))


@record(eq=False)
class SrcInfo:
    """Where a src formula's schema object sits: the object itself (never modified), how its
    references resolve, its dialect, its JSON pointer and its dynamic scope."""

    schema: dict
    resolver: Any  # referencing.Resolver for this location
    spec: Any  # referencing Specification (dialect)
    pointer: str  # JSON pointer of the schema object in the root document ("" = root)
    scope: tuple = ()  # dynamic scope: resources (with $dynamicAnchors) entered on the way here


# ---- per-type parts ---------------------------------------------------------------------------------


@record
class NumberConstraints:
    """A conjunction of numeric constraints (all Fractions exact)."""

    int_only: bool = False
    nonint: bool = False
    lo: Fraction | None = None
    lo_strict: bool = False
    hi: Fraction | None = None
    hi_strict: bool = False
    mults: tuple = ()
    not_mults: tuple = ()
    excluded: frozenset = frozenset()  # Fractions
    where: tuple = field(default=(), compare=False)  # (keyword, pointer) pairs, for error messages

    def meet(self, o: "NumberConstraints") -> "NumberConstraints | None":
        lo, ls = self.lo, self.lo_strict
        if o.lo is not None and (lo is None or o.lo > lo or (o.lo == lo and o.lo_strict)):
            lo, ls = o.lo, o.lo_strict
        hi, hs = self.hi, self.hi_strict
        if o.hi is not None and (hi is None or o.hi < hi or (o.hi == hi and o.hi_strict)):
            hi, hs = o.hi, o.hi_strict
        out = NumberConstraints(
            self.int_only or o.int_only,
            self.nonint or o.nonint,
            lo,
            ls,
            hi,
            hs,
            tuple(dict.fromkeys(self.mults + o.mults)),
            tuple(dict.fromkeys(self.not_mults + o.not_mults)),
            self.excluded | o.excluded,
            self.where + o.where,
        )
        return out if not out.is_empty() else None

    def is_empty(self) -> bool:
        if self.int_only and self.nonint:
            return True
        if self.lo is not None and self.hi is not None:
            if self.lo > self.hi or (self.lo == self.hi and (self.lo_strict or self.hi_strict)):
                return True
            if self.int_only:
                a = math.floor(self.lo) + 1 if self.lo_strict else math.ceil(self.lo)
                b = math.ceil(self.hi) - 1 if self.hi_strict else math.floor(self.hi)
                if a > b:
                    return True
        return False

    def contains(self, x: Fraction) -> bool:
        if self.int_only and x.denominator != 1:
            return False
        if self.nonint and x.denominator == 1:
            return False
        if self.lo is not None and (x < self.lo or (self.lo_strict and x == self.lo)):
            return False
        if self.hi is not None and (x > self.hi or (self.hi_strict and x == self.hi)):
            return False
        if any((x / m).denominator != 1 for m in self.mults):
            return False
        if any((x / m).denominator == 1 for m in self.not_mults):
            return False
        return x not in self.excluded

    def negate(self) -> list["NumberConstraints"]:
        out: list[NumberConstraints] = []
        if self.int_only:
            out.append(NumberConstraints(nonint=True))
        if self.nonint:
            out.append(NumberConstraints(int_only=True))
        if self.lo is not None:
            out.append(NumberConstraints(hi=self.lo, hi_strict=not self.lo_strict))
        if self.hi is not None:
            out.append(NumberConstraints(lo=self.hi, lo_strict=not self.hi_strict))
        for m in self.mults:
            out.append(NumberConstraints(not_mults=(m,), where=self.where))
        for m in self.not_mults:
            out.append(NumberConstraints(mults=(m,)))
        for v in self.excluded:
            out.append(NumberConstraints(lo=v, hi=v))
        return out

    @property
    def trivial(self) -> bool:
        # (made once: a new instance per call, here and in the other parts, was 1% of a compile; TOP's
        # parts are these objects, so most tests end at `is`, before the dataclass's field-by-field ==)
        return self is _ANY_NUMBER or self == _ANY_NUMBER


_ANY_NUMBER = NumberConstraints()


# String atoms: a string part is a tuple of atoms, read as their conjunction. Frozen dataclasses,
# so that equal constraints are equal keys of the emitters' caches and share one rule.


@record
class Length:
    """The string has lo..hi code points (hi None: unbounded)."""

    lo: int = 0
    hi: int | None = None


@record
class Matches:
    """The string contains a match of an ECMA-262 pattern (JSON Schema `pattern`)."""

    pattern: str


@record
class Format:
    """The string is a valid value of a `format`."""

    name: str


@record
class AmongStrings:
    """The string is one of `values` (from enum/const)."""

    values: frozenset


@record
class NotAll:
    """Not every one of `atoms` holds (negation, and through it union)."""

    atoms: tuple


def str_meet(a: tuple, b: tuple) -> tuple | None:
    """The conjunction of two string parts (None: empty), their length bounds merged into one."""
    lo, hi = 0, None
    rest: list = []
    for atom in a + b:
        if type(atom) is Length:
            lo = max(lo, atom.lo)
            if atom.hi is not None:
                hi = atom.hi if hi is None else min(hi, atom.hi)
        elif atom not in rest:
            rest.append(atom)
    if hi is not None and lo > hi:
        return None
    if lo or hi is not None:
        rest.insert(0, Length(lo, hi))
    return tuple(rest)


@record
class Contains:
    schema: Formula
    lo: int = 1
    hi: int | None = None
    start: int = 0  # only items at index >= start count
    evaluates: bool = True


@record
class ArrayConstraints:
    prefix: tuple = ()  # Formulas for the first items
    items: Formula = TRUE  # the items after the prefix
    min: int = 0
    max: int | None = None
    contains: tuple = ()  # Contains
    unique: bool = False
    eval_prefix: int = 0  # unevaluatedItems bookkeeping: items evaluated by prefixItems
    eval_all: bool = False  # ... by items / additionalItems / unevaluatedItems
    where: tuple = field(default=(), compare=False)  # (keyword, pointer) of refused-later keywords

    def item(self, i: int) -> Formula:
        return self.prefix[i] if i < len(self.prefix) else self.items

    def meet(self, o: "ArrayConstraints", formulas: "FormulaAlgebra") -> "ArrayConstraints | None":
        n = max(len(self.prefix), len(o.prefix))
        prefix = tuple(formulas.and_(self.item(i), o.item(i)) for i in range(n))
        lo = max(self.min, o.min)
        hi = self.max if o.max is None else (o.max if self.max is None else min(self.max, o.max))
        if hi is not None and lo > hi:
            return None
        if hi is not None and len(prefix) > hi:
            prefix = prefix[:hi]
        return ArrayConstraints(
            prefix,
            formulas.and_(self.items, o.items),
            lo,
            hi,
            tuple(dict.fromkeys(self.contains + o.contains)),
            self.unique or o.unique,
            max(self.eval_prefix, o.eval_prefix),
            self.eval_all or o.eval_all,
            self.where + o.where,
        )

    @property
    def trivial(self) -> bool:
        return self is _ANY_ARRAY or self == _ANY_ARRAY


_ANY_ARRAY = ArrayConstraints()


@record
class KeyRule:
    """Members whose key is in the rule's key set must have a value valid under `schema`.

    kind "name": the key `name`; "pattern": keys containing a match of `pattern`; "other": keys
    that are none of `names` and match none of `patterns` (additionalProperties and friends);
    "keys": keys in the string language `atoms` (only in ObjectConstraints.exists, from 'not propertyNames')."""

    kind: str
    schema: Formula
    name: str = ""
    pattern: str = ""
    names: frozenset = frozenset()
    patterns: frozenset = frozenset()
    evaluates: bool = True
    pointer: str = field(default="", compare=False)
    atoms: tuple = ()
    # computed once, set on the instance (class defaults, not fields; read as attributes, not
    # through __dict__, which would turn the instance's inline values into a dict of its own)
    _hash = None

    def __hash__(self) -> int:
        """The dataclass hash (of the compared fields, in order), computed once: objects' rule
        tuples are deduplicated at every meet, and oneOf's disjointness proofs meet thousands."""
        got = self._hash
        if got is None:
            got = hash((self.kind, self.schema, self.name, self.pattern, self.names, self.patterns, self.evaluates, self.atoms))
            object.__setattr__(self, "_hash", got)
        return got


@record
class ObjectConstraints:
    rules: tuple = ()
    required: frozenset = frozenset()
    min: int = 0
    max: int | None = None
    key_atoms: tuple | None = None  # propertyNames: StrP every key must satisfy (None = any)
    order: tuple = ()  # names in order of first appearance (the order members are emitted in)
    exists: tuple = ()  # KeyRules read existentially: some member has a key in the set and a valid value
    clauses: tuple = ()  # presence constraints in CNF: frozensets of (key, present?) literals, one must hold
    where: tuple = field(default=(), compare=False)
    _forbidden = None  # found once (class defaults, not fields: see KeyRule._hash)
    _listed = None
    _listed_set = None

    def meet(self, o: "ObjectConstraints") -> "ObjectConstraints | None":
        lo, hi, required = self._common(o)
        if not self._admits(o, lo, hi, required):
            return None
        if self.key_atoms is None:
            keys = o.key_atoms
        elif o.key_atoms is None:
            keys = self.key_atoms
        else:
            keys = str_meet(self.key_atoms, o.key_atoms)
            if keys is None:
                keys = (AmongStrings(frozenset()),)
        return ObjectConstraints(
            tuple(dict.fromkeys(self.rules + o.rules)),
            required,
            lo,
            hi,
            keys,
            tuple(dict.fromkeys(self.order + o.order)),
            tuple(dict.fromkeys(self.exists + o.exists)),
            tuple(dict.fromkeys(self.clauses + o.clauses)),
            self.where + o.where,
        )

    def meets(self, o: "ObjectConstraints") -> bool:
        """Is `meet` an object (not None)? Its tests without building it: oneOf's disjointness
        proofs ask this of thousands of pairs, so each side's forbidden names are found once."""
        lo, hi, required = self._common(o)
        return _counts_fit(lo, hi, required) and required.isdisjoint(self.forbidden) and required.isdisjoint(o.forbidden)

    def _common(self, o: "ObjectConstraints") -> tuple[int, int | None, frozenset]:
        """The member count bounds and the required names of the meet."""
        hi = self.max if o.max is None else (o.max if self.max is None else min(self.max, o.max))
        return max(self.min, o.min), hi, self.required | o.required

    def _admits(self, o: "ObjectConstraints", lo: int, hi: int | None, required: frozenset) -> bool:
        # and no required member whose name is forbidden (scanned: most objects are met once)
        return _counts_fit(lo, hi, required) and not any(r.kind == "name" and r.schema is FALSE and r.name in required for r in self.rules + o.rules)

    @property
    def forbidden(self) -> frozenset:
        """The names a "name" rule forbids (schema FALSE), found once per object: oneOf's
        disjointness proofs ask `meets` of each object against every other branch's."""
        got = self._forbidden
        if got is None:
            got = frozenset(r.name for r in self.rules if r.kind == "name" and r.schema is FALSE)
            object.__setattr__(self, "_forbidden", got)
        return got

    @property
    def listed(self) -> tuple[str, ...]:
        """The member names this object lists (its order, then its name rules), each once; found
        once per object: oneOf's disjointness proofs ask it of each object against every other branch's."""
        got = self._listed
        if got is None:
            got = tuple(dict.fromkeys(self.order + tuple(r.name for r in self.rules if r.kind == "name")))
            object.__setattr__(self, "_listed", got)
        return got

    @property
    def listed_set(self) -> frozenset:
        """`listed` as a set, found once per object (for membership tests)."""
        got = self._listed_set
        if got is None:
            got = frozenset(self.listed)
            object.__setattr__(self, "_listed_set", got)
        return got

    @property
    def trivial(self) -> bool:
        return self is _ANY_OBJECT or self == _ANY_OBJECT


def _counts_fit(lo: int, hi: int | None, required: frozenset) -> bool:
    """Do the member count bounds of a meet admit an object with its required names?"""
    return hi is None or (lo <= hi and len(required) <= hi)


_ANY_OBJECT = ObjectConstraints()


ALL_BOOLS = frozenset((False, True))


@record
class Conjunct:
    """One alternative of a normalised schema: constraints per JSON type, or a finite value set."""

    null: bool = True
    bools: frozenset = ALL_BOOLS
    num: NumberConstraints | None = _ANY_NUMBER
    str: tuple | None = ()
    arr: ArrayConstraints | None = _ANY_ARRAY
    obj: ObjectConstraints | None = _ANY_OBJECT
    values: tuple | None = None  # a finite conjunct: exactly these values (other fields unused)
    loose_eval: bool = False  # from overlapping anyOf branches: evaluated keys may be incomplete
    _hash = None  # computed once (a class default, not a field: see KeyRule._hash)

    def __hash__(self) -> int:
        """The dataclass hash (of every field, in order), computed once: the algebra keeps
        conjuncts in dicts at every meet and union, and the hash of a conjunct hashes its parts."""
        got = self._hash
        if got is None:
            got = hash((self.null, self.bools, self.num, self.str, self.arr, self.obj, self.values, self.loose_eval))
            object.__setattr__(self, "_hash", got)
        return got

    def is_empty(self) -> bool:
        if self.values is not None:
            return not self.values
        return not self.null and not self.bools and self.num is None and self.str is None and self.arr is None and self.obj is None

    @property
    def is_top(self) -> bool:
        return (
            self.values is None
            and self.null
            and self.bools == ALL_BOOLS
            and self.num is not None
            and self.num.trivial
            and self.str == ()
            and self.arr is not None
            and self.arr.trivial
            and self.obj is not None
            and self.obj.trivial
        )

    def types(self) -> set[str]:
        if self.values is not None:
            return {json_type(v) for v in self.values}
        out = set()
        if self.null:
            out.add("null")
        if self.bools:
            out.add("boolean")
        if self.num is not None:
            out.add("number")
        if self.str is not None:
            out.add("string")
        if self.arr is not None:
            out.add("array")
        if self.obj is not None:
            out.add("object")
        return out


TOP = Conjunct()
NONE = Conjunct(False, frozenset(), None, None, None, None)


_NONE_PARTS = {f: getattr(NONE, f) for f in Conjunct.__dataclass_fields__}


def conjunct_of(**parts) -> Conjunct:
    """A conjunct admitting only the given types (parts): NONE with them replaced (made directly,
    not through dataclasses.replace, which reads every field again per call)."""
    return Conjunct(**{**_NONE_PARTS, **parts})


def objects_only(c: Conjunct) -> bool:
    """Does conjunct `c` admit objects and nothing else (no other type, no finite values)?"""
    return c.values is None and c.obj is not None and not c.null and not c.bools and c.num is None and c.str is None and c.arr is None


def conjunct_meet(a: Conjunct, b: Conjunct, formulas: "FormulaAlgebra") -> Conjunct | None:
    """Intersection of two non-finite conjuncts (None when empty)."""
    num = a.num.meet(b.num) if a.num is not None and b.num is not None else None
    st = str_meet(a.str, b.str) if a.str is not None and b.str is not None else None
    arr = a.arr.meet(b.arr, formulas) if a.arr is not None and b.arr is not None else None
    obj = a.obj.meet(b.obj) if a.obj is not None and b.obj is not None else None
    if obj is not None and formulas is not None and formulas.obj_contradicts(obj, a.obj, b.obj):
        obj = None
    c = Conjunct(a.null and b.null, a.bools & b.bools, num, st, arr, obj, None, a.loose_eval or b.loose_eval)
    return None if c.is_empty() else c


def eval_signature(c: Conjunct) -> tuple:
    """What a conjunct evaluates for unevaluated* (its evaluating member rules; evaluated prefix,
    all items, evaluating contains): alternatives with different signatures cannot be merged."""
    if c.values is not None:
        return ((), ())
    obj = tuple(sorted((r.kind, r.name, r.pattern) for r in c.obj.rules if r.evaluates)) if c.obj else ()
    arr = (c.arr.eval_prefix, c.arr.eval_all, tuple(x.schema.key for x in c.arr.contains if x.evaluates)) if c.arr else ()
    return obj, arr


def without_evaluation(conjs: list[Conjunct]) -> list[Conjunct]:
    """The same conjuncts without evaluation annotations (a negated schema evaluates nothing)."""
    out = []
    for c in conjs:
        if c.values is None:
            obj = c.obj
            if obj is not None and any(r.evaluates for r in obj.rules):
                obj = replace(obj, rules=tuple(replace(r, evaluates=False) for r in obj.rules))
            arr = c.arr
            if arr is not None and (arr.eval_prefix or arr.eval_all or any(x.evaluates for x in arr.contains)):
                arr = replace(arr, eval_prefix=0, eval_all=False, contains=tuple(replace(x, evaluates=False) for x in arr.contains))
            c = replace(c, obj=obj, arr=arr, loose_eval=False)
        out.append(c)
    return out


def keyword_pointer(part, keyword: str) -> str:
    """The JSON pointer of `keyword` recorded on a normalised part's `where` ("" if unknown), for
    the error that refuses it."""
    return next((p for k, p in getattr(part, "where", ()) if k == keyword), "")
