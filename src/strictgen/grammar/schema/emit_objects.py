"""Object emission: named members, key patterns, additional members, presence clauses and counts.

Keys outside the listed names are partitioned into regions by the value schema that applies to
them (schema.key_space), and each region's members are one variant of the additional members.
Members come in schema order by default (a key's slot decides it), or in any order with
``any_order=True``; presence clauses, member counts and existential member constraints (from
`not`) are tracked by a counting construction. A listed name is one slot, but other keys may
repeat a name: a minimum count that two such members could reach is enforced by the matcher,
which refuses a repeated name in such an object (compile/distinct_names.py; the object is a rule
named with DISTINCT_MARK), where every key those members may have can still become infinitely
many names, and refused otherwise, as is an existential member such a repeat could undo."""

from __future__ import annotations

from typing import TYPE_CHECKING

from strictgen.errors import CompileTimeoutError, GrammarTooLargeError, StrictgenError
from strictgen.lru import BoundedLRU

from ..automata import regular_dfa
from ..ir import NOTHING, Expr, Literal, RuleRef, Seq, difference, intersect, literal_trie, seq
from ..json_escapes import spelled_string
from ..json_value import json_container, json_string
from .counting import MAX_DP_STATES, counting_language, suffix_body
from .emit_strings import spelled
from .ir import TRUE, ObjectConstraints
from .key_sets import keep_called, key_set_object, submasks
from .key_space import key_regions, key_set
from .strings import ANY_STRING
from .unique import infinite_everywhere

if TYPE_CHECKING:
    from .emitter import SchemaEmitter

__all__ = ["DISTINCT_MARK", "KEY_SETS_AHEAD", "MAX_EXISTS", "emit_object", "other_keys"]

DISTINCT_MARK = "~distinct"  # in the name of an object's rule whose member names the matcher keeps distinct

MAX_EXISTS = 5  # existential member constraints per object: each member has a variant per subset
KEY_SETS_AHEAD = 5_000  # any_order: past (2**n) * n for n members (n > 9) the key sets are built at run time, which
# costs a few small rules per object a document holds instead of ~2**n states compiled ahead


def emit_object(em: SchemaEmitter, o: ObjectConstraints) -> Expr:
    """An object subschema (`em`'s `ref`, `rule_of` and separators build the members; its
    normalised schema (schema.normalized) and key_space give the value schemas of keys)."""
    normalized = em.normalized
    if o.trivial:
        return json_container("{", seq(json_string(), em.colon, em.any_value()), "}", em.style)
    exists = list(o.exists)
    if len(exists) > MAX_EXISTS:
        em.reporter.refuse(f"more than {MAX_EXISTS} existential member constraints (from 'not') on one object", "not", "")
        exists = exists[:MAX_EXISTS]
    full = (1 << len(exists)) - 1
    names = list(o.order)
    for r in o.rules + tuple(exists):
        if r.kind == "name" and r.name not in names:
            names.append(r.name)
    for clause in o.clauses:
        for k, _ in sorted(clause):
            if k not in names:
                names.append(k)
    # presence clauses (dependentRequired, anyOf/oneOf of required lists): the construction
    # tracks which clauses are satisfied; in the fixed order a literal is decided at its slot
    clauses = list(o.clauses)
    all_clauses = (1 << len(clauses)) - 1

    # named members: (variants [(member expr, satisfied exists mask)], required, dependency bit)
    slots: list[tuple[list[tuple[Expr, int]], bool, int]] = []
    for k in names:
        vf = normalized.value_formula(o, k)
        if em.is_empty(vf):
            if k in o.required:
                return NOTHING
            continue
        variants = [(_member(em, k, em.ref(vf)), 0)]
        if exists:
            applicable = [j for j, e in enumerate(exists) if normalized.rule_applies(e, k)]
            for mask in submasks(sum(1 << j for j in applicable), nonempty=True):
                f = normalized.and_(vf, *(exists[j].schema for j in applicable if mask >> j & 1))
                if not em.is_empty(f):
                    variants.append((_member(em, k, em.ref(f)), mask))
        slots.append((variants, k in o.required, k))
    extras = _additional(em, o, names, exists)
    open_, close_more, close_first = em.open_close("{", "}")
    lo, hi = o.min, o.max
    least = sum(req for _, req, _ in slots)  # members every document has
    distinct = lo - least > 1 and _unlisted_keys_exist(em, o, names)
    if distinct and (exists or not _names_tracked(em, o, names)):
        _refuse_repeatable_count(em, o)
    if hi is None or hi - least > 1:
        _refuse_undoable_exists(em, o, exists, names)
    n = len(slots)
    # any_order matters with two listed members, or one and additional members (which may come first)
    order_free = em.any_order and (n > 1 or (n == 1 and bool(extras)))
    if lo or hi is not None or exists or o.clauses or order_free:
        # members appear in many states of the construction: make them rules, so that big
        # ones can be compiled once and called (see schema.rule_sizes.call_big_rules)
        slots = [([(em.rule_of(m), b) for m, b in variants], req, k) for variants, req, k in slots]
        extras = [(em.rule_of(m), b) for m, b in extras]
    elif 2 * (n + 1) <= MAX_DP_STATES:  # no counts, presence clauses or existential members, in the fixed order
        return _named(em, distinct, seq(open_, em.ws, _members_in_order(em, slots, extras, close_first, close_more)))
    slot_keys = {sl[2] for sl in slots}
    take_sat = [sum(1 << i for i, cl in enumerate(clauses) if (sl[2], True) in cl) for sl in slots]
    skip_sat = [sum(1 << i for i, cl in enumerate(clauses) if (sl[2], False) in cl) for sl in slots]
    sat0 = sum(1 << i for i, cl in enumerate(clauses) if any(not pos and k not in slot_keys for k, pos in cl))

    def clauses_hold(used: int) -> bool:
        """any_order: the clauses, given the set of slots used."""
        present = {slots[j][2] for j in range(n) if used >> j & 1}
        return all(any((k in present) == pos for k, pos in cl) for cl in clauses)

    def count(c: int) -> int:
        return c + 1 if hi is not None else min(c + 1, lo)

    if order_free:
        required_mask = sum(1 << j for j in range(n) if slots[j][1])

        def trans(state):
            used, c, first, sat, present = state
            out = []
            if hi is not None and c >= hi:
                return out
            for j in range(n):
                if not used >> j & 1:
                    for m, bits in slots[j][0]:
                        nxt = (used | 1 << j, count(c), False, sat | bits, 0)
                        out.append((m if first else Seq((em.comma, m)), nxt))
            for m, bits in extras:
                out.append((m if first else Seq((em.comma, m)), (used, count(c), False, sat | bits, present)))
            return out

        def closing(state):
            used, c, first, sat, present = state
            if used & required_mask != required_mask or c < lo or sat != full or not clauses_hold(used):
                return None
            return close_first if first else close_more

        def progress(state):
            used, c, first, sat, present = state
            return (bin(used).count("1"), c, not first, bin(sat).count("1"))

        if (1 << n) * n <= KEY_SETS_AHEAD:
            try:
                return _named(em, distinct, seq(open_, em.ws, counting_language((0, 0, True, 0, 0), trans, closing, progress)))
            except CompileTimeoutError:
                raise
            except GrammarTooLargeError:
                if exists:  # the run-time key sets cannot follow those either
                    raise
        # too many key sets (or key sets x counts) to build ahead: built at run time
        pieces = [m for variants, _, _ in slots for m, _ in variants] + [m for m, _ in extras] + [em.comma, close_first, close_more]
        mentioned = {k for cl in clauses for k, _ in cl}
        return _named(em, distinct, seq(open_, em.ws, key_set_object(em.rules, (0, 0, True, 0, 0), trans, closing, required=[sl[1] for sl in slots],
                                                  lo=lo, hi=hi, extras=bool(extras), pieces=pieces, exact=not exists,
                                                  clauses_hold=clauses_hold if clauses else None,
                                                  clause_members=sum(1 << j for j in range(n) if slots[j][2] in mentioned))))

    def trans(state):
        k, c, first, sat, present = state
        out = []
        is_full = hi is not None and c >= hi
        if k < n:
            variants, req, _ = slots[k]
            if not is_full:
                for m, bits in variants:
                    out.append((m if first else Seq((em.comma, m)), (k + 1, count(c), False, sat | bits, present | take_sat[k])))
            if not req:
                out.append((None, (k + 1, c, first, sat, present | skip_sat[k])))
        elif not is_full:
            for m, bits in extras:
                out.append((m if first else Seq((em.comma, m)), (k, count(c), False, sat | bits, present)))
        return out

    def closing(state):
        k, c, first, sat, present = state
        if k < n or c < lo or sat != full or present != all_clauses:
            return None
        return close_first if first else close_more

    def progress(state):
        k, c, first, sat, present = state
        return (k, c, not first, bin(sat).count("1"))

    return _named(em, distinct, seq(open_, em.ws, counting_language((0, 0, True, 0, sat0), trans, closing, progress)))


# A named member's key and colon, per name and colon object (one per style): every object of a
# schema spells its keys again in every compile, and the same names recur across its objects.
MEMBER_HEADS_KEPT = 4096  # names ...
MEMBER_HEADS_CHARS = 1 << 18  # ... of at most this many characters among them all
# (name, id(colon)) -> (colon, key, items or None, len(name)); the colon held, so its id stays its own
_member_heads: BoundedLRU[tuple] = BoundedLRU(MEMBER_HEADS_KEPT, MEMBER_HEADS_CHARS, lambda got: got[3])


def _member(em: SchemaEmitter, name: str, value: Expr) -> Expr:
    """`seq(spelled_string(name), em.colon, value)`. For a rule reference, with a colon that
    begins and ends with a rule (the flexible style's whitespace), nothing joins at the seams
    (the spelled key's items are seq's output already: flat, no empty or adjacent literals), so
    seq's output is the key's and the colon's items, kept per name, and the reference: made at
    once (seq walks every character's spelling of the key twice)."""
    colon = em.colon
    # peek: no lock nor aging on the hit path (every named member); a name evicted while hot is spelled again
    got = _member_heads.peek((name, id(colon)))
    if got is None or got[0] is not colon:
        key = spelled_string(name)
        joins = type(key) is not Seq or type(colon) is not Seq or type(colon.items[0]) is Literal or type(colon.items[-1]) is Literal
        got = (colon, key, None if joins else key.items + colon.items, len(name))
        _member_heads.put((name, id(colon)), got)
    if got[2] is not None and type(value) is RuleRef:
        return Seq(got[2] + (value,))
    return seq(got[1], colon, value)


def _members_in_order(em: SchemaEmitter, slots: list, extras: list, close_first: Expr, close_more: Expr) -> Expr:
    """The members of an object without counts, presence clauses or existential members, in the
    fixed order: the counting construction's language (emit_object's `trans` from state
    (0, 0, True, 0, 0)), whose states are then only (slot k, no member yet?), so they are listed
    from the last slot back instead of explored: the same moves and `suffix_body`, hence the same
    expression, without the exploration's tuples and calls (most objects of real schemas are these).
    (k, True) is reached only while every slot before k is optional, (k, False) only after a member."""
    n, comma = len(slots), em.comma
    firsts = next((k for k, (_, req, _) in enumerate(slots) if req), n)  # slots (k, True) reaches: k <= firsts
    exprs: dict = {}
    for first in (False, True):
        if first and firsts < n:
            continue
        state = (n, first)
        moves = [(m if first else Seq((comma, m)), (n, False)) for m, _ in extras]
        exprs[state] = suffix_body(state, moves, close_first if first else close_more, exprs)
    for k in range(n - 1, -1, -1):
        variants, req, _ = slots[k]
        for first in (False, True):
            if (first and k > firsts) or (not first and k == 0):
                continue
            state = (k, first)
            moves = [(m if first else Seq((comma, m)), (k + 1, False)) for m, _ in variants]
            if not req:
                moves.append((None, (k + 1, first)))
            exprs[state] = suffix_body(state, moves, None, exprs)
    return exprs[(0, True)]


def _named(em: SchemaEmitter, distinct: bool, body: Expr) -> Expr:
    """The object `body`, as a called rule the matcher keeps the names of distinct in when
    `distinct` (compile/distinct_names.py), else as it is."""
    if not distinct:
        return body
    name = f"object{len(em.rules)}{DISTINCT_MARK}"
    em.rules[name] = body
    keep_called(em.rules, name)
    return RuleRef(name)


def _names_tracked(em: SchemaEmitter, o: ObjectConstraints, names: list[str]) -> bool:
    """Can the matcher keep the names of unlisted members distinct without a dead end? When the
    key of such a member can, from every prefix of its spelling, still become infinitely many
    names: then a key refused at its closing quote (it repeats a name) had another way on."""
    named = literal_trie(names)
    for _, keys in key_regions(em.normalized, o):
        lang = difference(ANY_STRING if keys is None else keys, named)
        if em.strings.raw_is_empty(lang):
            continue
        try:
            dfa = regular_dfa(spelled(lang))
        except CompileTimeoutError:
            raise
        except StrictgenError:
            return False  # too big to decide: refused as before
        if not infinite_everywhere(dfa):
            return False
    return True


def _unlisted_keys_exist(em: SchemaEmitter, o: ObjectConstraints, names: list[str]) -> bool:
    """Can a member have a key that is none of the listed names? Only such members can repeat a
    name: a listed name has one slot (fixed order) or one bit in the key set (any order)."""
    named = literal_trie(names)
    return any(not em.strings.raw_is_empty(difference(ANY_STRING if keys is None else keys, named)) for _, keys in key_regions(em.normalized, o))


def _refuse_repeatable_count(em: SchemaEmitter, o: ObjectConstraints) -> None:
    """minProperties counts distinct names, the construction counts members: a document that
    repeats an unlisted name (`{"a":0,"a":0}`, which every JSON parser reads as one member) would
    pass a count it does not reach. That needs two unlisted members, so it is refused only where
    the required listed members leave two or more to reach minProperties."""
    found = [(k, p) for k, p in o.where if k in ("minProperties", "not maxProperties")] or [("minProperties", "")]
    kw, ptr = found[0][0].removeprefix("not "), found[0][1]
    em.reporter.refuse(
        f"minProperties {o.min} could be reached by repeating a member name that no property lists "
        "(JSON parsers keep one member per name); it is enforced when the required properties leave at most one "
        "member to other names",
        kw,
        ptr,
    )


def _refuse_undoable_exists(em: SchemaEmitter, o: ObjectConstraints, exists: list, names: list[str]) -> None:
    """An existential member (from `not`) with a name no property lists can be followed by the
    same name with a value that does not witness it, which JSON parsers keep instead
    (`{"x":"s","x":1}` against `not: {additionalProperties: {type: integer}}`): refused where
    some allowed key of its set can hold both kinds of value. (The listed names' trie is built
    only for such a member: most objects have none, and the trie was ~a quarter of emit_object
    on objects with many properties.)"""
    normalized, named = em.normalized, None
    for e in exists:
        if e.kind == "name" or e.schema is TRUE:
            continue
        if named is None:  # (emit_object asked key_regions already: asking again refuses nothing new)
            named, regions = literal_trie(names), key_regions(normalized, o)
        keys = difference(key_set(e), named)
        if any(
            not em.is_empty(normalized.and_(vf, e.schema))
            and not em.is_empty(normalized.and_(vf, normalized.not_(e.schema)))
            and not em.strings.raw_is_empty(keys if region is None else intersect(keys, region))
            for vf, region in regions
        ):
            kw = "patternProperties" if e.kind == "pattern" else e.pointer.rsplit("/", 1)[-1] or "not"
            em.reporter.refuse(
                f"'not' of {kw} needs a member it could be undone by: a later member of the same name "
                "(which JSON parsers keep instead) may hold another value",
                kw,
                e.pointer.rsplit("/", 1)[0] if e.kind == "pattern" else e.pointer,
            )


OTHER_KEYS_KEPT = 256  # name tuples ...
OTHER_KEYS_NAMES = 1 << 16  # ... of at most this many names among them all
_other_keys: BoundedLRU[tuple[Expr, int]] = BoundedLRU(OTHER_KEYS_KEPT, OTHER_KEYS_NAMES, lambda got: got[1])


def other_keys(names: tuple[str, ...]) -> Expr:
    """Any quoted key but `names`, in every spelling: the keys of an object's additional members
    where no pattern divides them (most objects with properties). A function of the names alone,
    kept for the process (the names' trie and its difference were a third of `_additional`, in
    every compile)."""
    got = _other_keys.peek(names)
    if got is None:
        got = (json_string(spelled(difference(ANY_STRING, literal_trie(names)))), len(names))
        _other_keys.put(names, got)
    return got[0]


def _additional(em: SchemaEmitter, o: ObjectConstraints, names: list[str], exists: list) -> list[tuple[Expr, int]]:
    """Members whose key is none of the listed names, as (member, satisfied exists mask) variants."""
    normalized = em.normalized
    members: list[tuple[Expr, int]] = []
    named = None  # the listed names' trie, built when a region needs it (none do under additionalProperties: false)
    for vf, keys in key_regions(em.normalized, o):
        if keys is None and not names:
            key_expr = json_string()
        elif keys is None:
            key_expr = other_keys(tuple(names))
        else:
            named = literal_trie(names) if named is None else named
            key_expr = json_string(spelled(difference(keys if keys is not None else ANY_STRING, named)))
        members.append((seq(key_expr, em.colon, em.ref(vf)), 0))
        for sub in submasks((1 << len(exists)) - 1, nonempty=True):
            chosen = [exists[j] for j in range(len(exists)) if sub >> j & 1]
            f = normalized.and_(vf, *(e.schema for e in chosen))
            if em.is_empty(f):
                continue
            lang = intersect(keys if keys is not None else ANY_STRING, *(key_set(e) for e in chosen))
            named = literal_trie(names) if named is None else named
            key_expr = json_string(spelled(difference(lang, named)))
            members.append((seq(key_expr, em.colon, em.ref(f)), sub))
    return members
