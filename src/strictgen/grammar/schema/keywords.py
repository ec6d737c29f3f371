"""The keywords of each JSON type (`type`, number bounds and multipleOf, string lengths, patterns
and formats, array and object keywords) read into the per-type parts of one conjunct, and
`unevaluatedProperties` / `unevaluatedItems`.

Functions of the normaliser, not a mixin: `own_keywords(norm, f)` (the conjunct of a raw schema's
own keywords) and `unevaluated(norm, f, conjuncts)` are what the applicators ask; they use the
normaliser's view of a schema (`view`), its subschema formulas (`sub`), formula constructors,
`dnf` (for propertyNames), its reporter and its dialects (`vocabularies`, for `format`)."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from strictgen.errors import RegexError

from .ir import (
    ALL_BOOLS, FALSE, TOP, TRUE, AmongStrings, ArrayConstraints, Conjunct, Contains, Format, Formula, KeyRule, Length, Matches, NotAll, NumberConstraints, ObjectConstraints,
    str_meet,
)
from .dialects import ALL_KEYWORDS
from .patterns import pattern_language
from .values import escape_pointer, invalid, is_number, nonneg_int, to_fraction

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["own_keywords", "type_alone", "unevaluated"]

_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
_INTEGERS = NumberConstraints(int_only=True)

# what own_keywords makes of a schema whose one assertion is `type` naming one type (most leaves
# of real schemas: {"type": "string", "description": ...}), made once
_TYPE_ALONE = {
    "null": Conjunct(True, frozenset(), None, None, None, None),
    "boolean": Conjunct(False, ALL_BOOLS, None, None, None, None),
    "integer": Conjunct(False, frozenset(), _INTEGERS, None, None, None),
    "number": Conjunct(False, frozenset(), TOP.num, None, None, None),
    "string": Conjunct(False, frozenset(), None, (), None, None),
    "array": Conjunct(False, frozenset(), None, None, TOP.arr, None),
    "object": Conjunct(False, frozenset(), None, None, None, TOP.obj),
}
_TYPE = frozenset(("type",))


def type_alone(s: dict) -> Conjunct | None:
    """The conjunct of the schema view `s` when no keyword of it asserts anything but a `type`
    naming one type (TOP when none asserts anything): what own_keywords makes of it, without
    reading each type's keywords (and what the applicators make of it: there are no others);
    None for any other schema. Keywords outside ALL_KEYWORDS are annotations."""
    asserting = ALL_KEYWORDS.intersection(s)
    if not asserting:
        return TOP
    if asserting == _TYPE and type(s["type"]) is str:
        return _TYPE_ALONE.get(s["type"])
    return None


# ---- local keywords ----


def own_keywords(norm: Normalizer, f: Formula) -> Conjunct | None:
    """The conjunct of a raw schema's own keywords (None: it admits nothing). The per-type parts
    are met as locals and the conjunct made once: a `dataclasses.replace` per part was a fifth of
    this function on the median schemas."""
    s = norm.view(f)
    alone = type_alone(s)
    if alone is not None:
        return alone
    ptr = f.src.pointer
    narrowed = "type" in s  # else TOP itself is returned where no keyword narrows it (algebra tests `is TOP`)
    if not narrowed:
        null, bools, num, st, arr, obj = TOP.null, TOP.bools, TOP.num, TOP.str, TOP.arr, TOP.obj
    else:
        t = s["type"]
        names = [t] if isinstance(t, str) else t
        if not isinstance(names, list) or not all(isinstance(x, str) and x in _TYPES for x in names):
            raise invalid(f"type must be one of {_TYPES} or an array of them, not {t!r}", "type", ptr + "/type")
        ts = set(names)
        null = "null" in ts
        bools = ALL_BOOLS if "boolean" in ts else frozenset()
        # the parts of TOP (frozen: shared, not made per schema) where a type is allowed
        num = TOP.num if "number" in ts else _INTEGERS if "integer" in ts else None
        st = () if "string" in ts else None
        arr = TOP.arr if "array" in ts else None
        obj = TOP.obj if "object" in ts else None
    if num is not None:
        n = _numeric(norm, f)
        if n is not None:
            num, narrowed = num.meet(n), True
    if st is not None:
        atoms = _string(norm, f)
        if atoms:
            st, narrowed = str_meet(st, atoms), True
    if arr is not None:  # (TOP.arr here: its meet with `a` is `a`, when `a`'s bounds admit an array)
        a = _array(norm, f)
        if a is not None:
            arr, narrowed = (a if a.max is None or a.min <= a.max else None), True
    if obj is not None:  # (TOP.obj here: its meet with `o` is `o`, when `o` admits an object)
        o = _object(norm, f)
        if o is not None:
            obj, narrowed = (o if o.meets(o) else None), True
    if not narrowed:
        return TOP
    if not null and not bools and num is None and st is None and arr is None and obj is None:
        return None
    return Conjunct(null, bools, num, st, arr, obj)


def _number_value(v: Any, kw: str, ptr: str) -> Fraction | float:
    if isinstance(v, bool) or not is_number(v):
        raise invalid(f"{kw} must be a number, not {v!r}", kw, ptr + "/" + kw)
    if isinstance(v, float) and math.isnan(v):
        raise invalid(f"{kw} must not be NaN", kw, ptr + "/" + kw)
    if isinstance(v, float) and math.isinf(v):
        return v
    return to_fraction(v)


def _numeric(norm: Normalizer, f: Formula) -> NumberConstraints | None:
    s = norm.view(f)
    ptr = f.src.pointer
    n = NumberConstraints()
    empty = False
    for kw, is_lo in (("minimum", True), ("maximum", False), ("exclusiveMinimum", True), ("exclusiveMaximum", False)):
        if kw not in s:
            continue
        v = s[kw]
        if isinstance(v, bool):  # draft-04: modifies minimum / maximum
            continue
        x = _number_value(v, kw, ptr)
        strict = kw.startswith("exclusive") or (kw == "minimum" and s.get("exclusiveMinimum") is True) or (
            kw == "maximum" and s.get("exclusiveMaximum") is True
        )
        if isinstance(x, float):  # ±inf
            if (is_lo and x > 0) or (not is_lo and x < 0):
                empty = True
            continue
        bound = NumberConstraints(lo=x, lo_strict=strict) if is_lo else NumberConstraints(hi=x, hi_strict=strict)
        m = n.meet(bound)
        if m is None:
            empty = True
        else:
            n = m
    if "multipleOf" in s:
        v = s["multipleOf"]
        x = _number_value(v, "multipleOf", ptr)
        if isinstance(x, float) or x <= 0:
            raise invalid(f"multipleOf must be a positive number, not {v!r}", "multipleOf", ptr + "/multipleOf")
        n = replace(n, mults=n.mults + (x,), where=n.where + (("multipleOf", ptr + "/multipleOf"),))
    if empty:
        n = NumberConstraints(int_only=True, nonint=True)  # empty, dropped by the caller's meet
    return None if n.trivial else n


def _string(norm: Normalizer, f: Formula) -> tuple:
    s = norm.view(f)
    ptr = f.src.pointer
    atoms: list = []
    lo = nonneg_int(s["minLength"], "minLength", ptr + "/minLength") if "minLength" in s else 0
    hi = nonneg_int(s["maxLength"], "maxLength", ptr + "/maxLength") if "maxLength" in s else None
    if lo or hi is not None:
        atoms.append(Length(lo, hi))
    if "pattern" in s:
        p = s["pattern"]
        if not isinstance(p, str):
            raise invalid("pattern must be a string", "pattern", ptr + "/pattern")
        if check_pattern(norm, p, ptr + "/pattern"):
            atoms.append(Matches(p))
    if "format" in s:
        atom = format_atom(norm, s["format"], ptr + "/format", f.src.spec)
        if atom is not None:
            atoms.append(atom)
    return tuple(atoms)


def check_pattern(norm: Normalizer, p: str, ptr: str) -> bool:
    try:
        pattern_language(p)
    except RegexError as e:
        norm.reporter.refuse(f"pattern {p!r} cannot be compiled: {e}", ptr.rsplit("/", 1)[-1], ptr)
        return False
    return True


def format_atom(norm: Normalizer, name: Any, ptr: str, spec: Any = None):
    from ..string_formats import SUPPORTED_FORMATS

    if not isinstance(name, str):
        raise invalid("format must be a string", "format", ptr)
    if not norm.vocabularies.format_asserted(spec):
        return None  # the 2020-12 default (formats="annotate"): format is only an annotation
    if name in SUPPORTED_FORMATS:
        return Format(name)
    if name in ("regex", "idn-email", "idn-hostname"):
        norm.reporter.refuse(f"format {name!r} is not a regular language and cannot be enforced", "format", ptr)
    return None  # unknown formats are annotations


def _array(norm: Normalizer, f: Formula) -> ArrayConstraints | None:
    s = norm.view(f)
    ptr = f.src.pointer
    a = ArrayConstraints()
    prefix: tuple = ()
    items: Formula = TRUE
    eval_prefix, eval_all = 0, False
    if "prefixItems" in s:
        if not isinstance(s["prefixItems"], list):
            raise invalid("prefixItems must be an array of schemas", "prefixItems", ptr + "/prefixItems")
        prefix = tuple(norm.sub(f, x, "prefixItems", i) for i, x in enumerate(s["prefixItems"]))
        eval_prefix = len(prefix)
    if "items" in s:
        it = s["items"]
        if isinstance(it, list):  # draft 4-2019: tuple validation
            prefix = tuple(norm.sub(f, x, "items", i) for i, x in enumerate(it))
            eval_prefix = len(prefix)
            if "additionalItems" in s:
                items = norm.sub(f, s["additionalItems"], "additionalItems")
                eval_all = True
        else:
            items = norm.sub(f, it, "items")
            eval_all = True
    lo = nonneg_int(s["minItems"], "minItems", ptr + "/minItems") if "minItems" in s else 0
    hi = nonneg_int(s["maxItems"], "maxItems", ptr + "/maxItems") if "maxItems" in s else None
    contains: tuple = ()
    if "contains" in s:
        x = norm.sub(f, s["contains"], "contains")
        cmin = nonneg_int(s["minContains"], "minContains", ptr + "/minContains") if "minContains" in s else 1
        cmax = nonneg_int(s["maxContains"], "maxContains", ptr + "/maxContains") if "maxContains" in s else None
        if cmax is not None and cmin > cmax:
            return ArrayConstraints(min=1, max=0)
        if cmin > 0 or cmax is not None:
            contains = (Contains(x, cmin, cmax, 0, True),)
        elif x is not FALSE:
            contains = (Contains(x, 0, None, 0, True),)  # vacuous, kept for unevaluatedItems
    unique = s.get("uniqueItems") is True
    if hi is not None and lo > hi:
        return ArrayConstraints(min=1, max=0)
    if hi is not None and len(prefix) > hi:
        prefix = prefix[:hi]
    where = ((("uniqueItems", ptr + "/uniqueItems"),) if unique else ()) + (
        (("contains", ptr + "/contains"),) if contains else ()
    )
    a = ArrayConstraints(prefix, items, lo, hi, contains, unique, eval_prefix, eval_all, where)
    return None if a.trivial else a


def _object(norm: Normalizer, f: Formula) -> ObjectConstraints | None:
    s = norm.view(f)
    ptr = f.src.pointer
    rules: list[KeyRule] = []
    order: list[str] = []
    props = s.get("properties", {})
    if not isinstance(props, dict):
        raise invalid("properties must be an object", "properties", ptr + "/properties")
    for name, sch in props.items():
        rules.append(KeyRule("name", norm.sub(f, sch, "properties", name), name=name, pointer=ptr + "/properties/" + escape_pointer(name)))
        order.append(name)
    pats = s.get("patternProperties", {})
    if not isinstance(pats, dict):
        raise invalid("patternProperties must be an object", "patternProperties", ptr + "/patternProperties")
    good_patterns = []
    for p, sch in pats.items():
        pp = ptr + "/patternProperties/" + escape_pointer(p)
        if not check_pattern(norm, p, pp):
            continue
        good_patterns.append(p)
        rules.append(KeyRule("pattern", norm.sub(f, sch, "patternProperties", p), pattern=p, pointer=pp))
    if "additionalProperties" in s:
        # a pattern that did not compile was refused above (or dropped under strict=False): it
        # takes no keys away from the "other keys" here
        sch = norm.sub(f, s["additionalProperties"], "additionalProperties")
        rules.append(
            KeyRule(
                "other",
                sch,
                names=frozenset(props),
                patterns=frozenset(good_patterns),
                pointer=ptr + "/additionalProperties",
            )
        )
    required = s.get("required", [])
    if isinstance(required, bool):  # draft-03 style, ignore
        required = []
    if not isinstance(required, list) or not all(isinstance(x, str) for x in required):
        raise invalid("required must be an array of strings", "required", ptr + "/required")
    listed = set(order)  # (a list scan per required name was quadratic in the properties)
    for r in required:
        if r not in listed:
            listed.add(r)
            order.append(r)
    lo = nonneg_int(s["minProperties"], "minProperties", ptr + "/minProperties") if "minProperties" in s else 0
    hi = nonneg_int(s["maxProperties"], "maxProperties", ptr + "/maxProperties") if "maxProperties" in s else None
    if hi is not None and lo > hi:
        return ObjectConstraints(min=1, max=0)
    key_atoms = None
    if "propertyNames" in s:
        g = norm.sub(f, s["propertyNames"], "propertyNames")
        key_atoms = key_language(norm, g, ptr + "/propertyNames")
    where = (("minProperties", ptr + "/minProperties"),) if lo > 1 else ()
    if hi is not None:  # under `not`, maxProperties becomes a minProperties
        where += (("maxProperties", ptr + "/maxProperties"),)
    o = ObjectConstraints(tuple(rules), frozenset(required), lo, hi, key_atoms, tuple(order), where=where)
    return None if o.trivial else o


def key_language(norm: Normalizer, g: Formula, ptr: str) -> tuple | None:
    """The string part of a propertyNames schema as string atoms (None: any key)."""
    dnf = norm.dnf(g)
    alts: list[tuple] = []
    for c in dnf:
        if c.values is not None:
            strs = frozenset(v for v in c.values if isinstance(v, str))
            alts.append((AmongStrings(strs),))
        elif c.str is not None:
            alts.append(c.str)
    if not alts:
        return (AmongStrings(frozenset()),)
    if any(a == () for a in alts):
        return None
    if len(alts) == 1:
        return alts[0]
    # a union of conjunctions: not (not a1 and not a2 ...)
    return (NotAll(tuple(NotAll(a) for a in alts)),)


# ---- unevaluated* ----


def unevaluated(norm: Normalizer, f: Formula, dnf: list[Conjunct]) -> list[Conjunct]:
    s = norm.view(f)
    ptr = f.src.pointer
    out: list[Conjunct] = []
    up = norm.sub(f, s["unevaluatedProperties"], "unevaluatedProperties") if "unevaluatedProperties" in s else None
    ui = norm.sub(f, s["unevaluatedItems"], "unevaluatedItems") if "unevaluatedItems" in s else None
    for c in dnf:
        if c.values is not None:
            out.append(c)  # filtered by the judge already
            continue
        if c.loose_eval and ((up is not None and c.obj is not None) or (ui is not None and c.arr is not None)):
            kw = "unevaluatedProperties" if up is not None and c.obj is not None else "unevaluatedItems"
            norm.reporter.refuse(
                f"{kw} after anyOf branches that may overlap and evaluate different members", kw, ptr + "/" + kw
            )
        obj, arr = c.obj, c.arr
        if up is not None and obj is not None:
            ev = [r for r in obj.rules if r.evaluates]
            if not any(r.kind == "other" for r in ev):
                names = frozenset(r.name for r in ev if r.kind == "name")
                pats = frozenset(r.pattern for r in ev if r.kind == "pattern")
                rule = KeyRule("other", up, names=names, patterns=pats, pointer=ptr + "/unevaluatedProperties")
                obj = replace(obj, rules=obj.rules + (rule,))
        if ui is not None and arr is not None and not arr.eval_all:
            xs = [x.schema for x in arr.contains if x.evaluates]
            allowed = norm.or_(ui, *xs)
            p = arr.eval_prefix
            prefix = tuple(it if i < p else norm.and_(it, allowed) for i, it in enumerate(arr.prefix))
            arr = replace(arr, prefix=prefix, items=norm.and_(arr.items, allowed), eval_all=True)
        out.append(replace(c, obj=obj, arr=arr, loose_eval=False))
    return out
