"""Which keys an object's members may have: the key space of normalised `ObjectConstraints`.

Keys outside the listed names are partitioned into regions by the value schema that applies to
them (key pattern combinations; only the cells some key can fall into once there are many
patterns). Both stages ask this: the algebra to prove two objects disjoint (oneOf), the object
emitter to build the members of each region. These are functions of the compile's formula algebra
(schema.formulas: value formulas, their emptiness, the string-language service), or of the
emitter's value of its answers (schema.normalized), so neither stage calls the other."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir import NOTHING, Expr, alt, difference, intersect, lit, literal_trie
from .ir import Formula, KeyRule, ObjectConstraints
from .patterns import pattern_language
from .strings import ANY_STRING, pattern_region, string_language

if TYPE_CHECKING:
    from .formulas import FormulaAlgebra
    from .normalized import NormalizedSchema

    Questions = FormulaAlgebra | NormalizedSchema  # the algebra, or the emitter's value of its answers

__all__ = ["MAX_PATTERNS", "MAX_REGIONS", "allowed_keys", "key_regions", "key_set", "objects_keys_disjoint"]

MAX_PATTERNS = 4  # distinct key patterns per object taken in all 2**n combinations
MAX_REGIONS = 24  # beyond that: combinations some key can match


def key_set(r: KeyRule) -> Expr:
    """The raw language of the keys a key rule ranges over."""
    if r.kind == "name":
        return lit(r.name)
    if r.kind == "pattern":
        return pattern_language(r.pattern)
    if r.kind == "keys":
        return string_language(r.atoms)
    outs = [lit(k) for k in sorted(r.names)] + [pattern_language(p) for p in sorted(r.patterns)]
    return difference(ANY_STRING, alt(*outs)) if outs else ANY_STRING


def key_regions(schema: Questions, o: ObjectConstraints) -> list[tuple[Formula, Expr | None]]:
    """The keys outside the listed names, partitioned by the value schema that applies to them:
    (value formula, raw key language or None for every key). Names are not subtracted here.

    Too many overlapping patterns are refused to the compile's reporter (`schema.compile_reporter`),
    also when a normaliser's trial asks: the emission meets the same object and would refuse it."""
    pattern_rules = [r for r in o.rules if r.kind == "pattern"]
    other_rules = [r for r in o.rules if r.kind == "other"]
    patterns = sorted({r.pattern for r in pattern_rules} | {p for r in other_rules for p in r.patterns})
    masks = range(1 << len(patterns))
    if len(patterns) > MAX_PATTERNS:  # only the combinations some key can fall into
        found = schema.strings.key_cells(patterns, MAX_REGIONS)
        if found is None:
            ptr = next((r.pointer for r in pattern_rules), "")
            schema.compile_reporter.refuse(
                f"objects whose key patterns overlap in more than {MAX_REGIONS} ways are not supported", "patternProperties", ptr
            )
            patterns = patterns[:MAX_PATTERNS]
        else:
            masks = found
    regions: dict[Formula, list[int]] = {}
    for mask in masks:
        inside = {patterns[i] for i in range(len(patterns)) if mask >> i & 1}
        parts = [r.schema for r in pattern_rules if r.pattern in inside]
        parts += [r.schema for r in other_rules if not (r.patterns & inside)]
        vf = schema.and_(*parts)
        if schema.is_empty(vf):
            continue
        regions.setdefault(vf, []).append(mask)
    out: list[tuple[Formula, Expr | None]] = []
    for vf, ms in regions.items():
        keys = None if len(ms) == len(masks) else alt(*(pattern_region(patterns, m) for m in ms))
        if o.key_atoms is not None:
            names = string_language(o.key_atoms)
            keys = names if keys is None else intersect(keys, names)
        out.append((vf, keys))
    return out


def allowed_keys(schema: Questions, o: ObjectConstraints) -> Expr:
    """The raw language of the keys an object of `o` may have (for disjointness checks)."""
    names = o.listed
    allowed = [lit(k) for k in names if not schema.is_empty(schema.value_formula(o, k))]
    named = literal_trie(names)
    for vf, keys in key_regions(schema, o):
        allowed.append(difference(keys if keys is not None else ANY_STRING, named))
    return alt(*allowed) if allowed else NOTHING


def objects_keys_disjoint(schema: Questions, a: ObjectConstraints, b: ObjectConstraints) -> bool:
    """Both objects have a member and no key is allowed in both, or one needs a member
    (an existential constraint) with a key the other does not allow."""
    empty = schema.strings.raw_is_empty
    for x, y in ((a, b), (b, a)):
        for e in x.exists:
            if empty(intersect(key_set(e), allowed_keys(schema, y))):
                return True
    if not ((a.min > 0 or a.required) and (b.min > 0 or b.required)):
        return False
    if _allow_a_shared_name(schema, a, b):
        return False
    return empty(intersect(allowed_keys(schema, a), allowed_keys(schema, b)))


def _allow_a_shared_name(schema: Questions, a: ObjectConstraints, b: ObjectConstraints) -> bool:
    """A name both objects list and allow: then their key languages meet (each holds the name),
    so no language is built. oneOf branches that each require their own tag under one parent's
    `properties` (helm's 30 assertion kinds: 435 pairs) share every listed name."""
    b_names = b.listed_set
    for k in a.listed:
        if k in b_names and not schema.is_empty(schema.value_formula(a, k)) and not schema.is_empty(schema.value_formula(b, k)):
            return True
    return False
