"""uniqueItems for arrays whose items can take more values than a construction of item sets could
hold (schema.emit_arrays.MAX_FINITE_DOMAIN).

The grammar keeps the array as it is without uniqueItems, as a called rule whose name carries
UNIQUE_MARK and, as JSON, one item spec per position (the prefixItems, then the items after
them). The matcher (compile/unique_items.py) follows such an array's items as text, keys each
finished item by its JSON value (1 == 1.0, every spelling of a string, objects whatever their key
order, true != 1) and refuses a token when the item it completes, or fixes the value of, is a copy
of an earlier one.

Why that leaves no dead end. Refusing a token is harmless as long as, right before it, the item
can still become some value not seen yet: the way to that value passes no refused token (a token
is refused only where every value left is seen). So the item kinds allowed here are the ones where
a refusal always has such an alternative:

* "infinite" kinds, which from every unfinished prefix can still become infinitely many values
  (and the seen values are finitely many); their value is fixed only by their last byte:
  - strings (`s`) whose raw-character language (the union of the position's string clauses)
    has a cycle reachable from every live state of its minimal DFA (`infinite_everywhere`: any
    string, minLength, most patterns and formats); the value is fixed by the closing quote;
  - numbers (`n`) and integers (`i`) without bounds or multipleOf: more digits always give more
    values; fixed by the byte after them, an integer already by `0` or `.` (then only zeros may
    follow);
  - canonical numbers (`d`, JsonStyle numbers="canonical"): the same, except that their fraction
    stops at MAX_FRACTION_DIGITS: with r fraction digits still free a prefix can become exactly
    10**r values (fewer than `-0.` plus zeros can), so the matcher also refuses a fraction digit
    after which all of them are seen (it lists them only when 10**r is at most the items seen);
  - open objects (`o`): no maxProperties or propertyNames, no key patterns, and additional
    members allowed under some value; a member with a fresh name fits before any `}` (in schema
    order additional members come last, in any order anywhere), so only the `}` fixes the value;
  - open arrays (`a`): no maxItems or contains, and every prefix position and the items after
    them allowed; another item fits before any `]` (with uniqueItems too when those items are of an infinite kind);
* kinds that can run out, fixed as soon as their candidates do: true/false/null (by their first
  letter); strings from an enum (the matcher keeps the enum values some spelling of the text can
  still be); strings of any other language (`r`: maxLength, `^#[0-9a-f]{6}$`, `date`, an enum
  beside a pattern), whose strings the text can still spell the matcher counts on the language's
  DFA (schema/unique_strings.py). A byte after which all of them are seen is refused. A position
  whose values can all run out must keep one unseen: the matcher refuses the `,` that would start
  it otherwise, and a position the array needs (index < minItems) must have more values than
  items before it (unique_position_ok).

Enum numbers or containers, bounded numbers, closed objects (their value can be fixed inside, by a
member's last byte) and `contains` are refused by the caller with a SchemaError naming uniqueItems.
"""

from __future__ import annotations

import json

import numpy as np

from strictgen.errors import CompileTimeoutError, StrictgenError

from ..automata import MAX_DFA_STATES, regular_dfa
from ..json_spelling import every_spelling
from ..ir import Expr, RuleRef
from .strings import string_language
from .key_sets import keep_called
from .unique_strings import StringCounter, atoms_to_json
from .ir import FALSE, AmongStrings, Formula

__all__ = ["UNIQUE_MARK", "INFINITE_KINDS", "infinite_everywhere", "unique_array_rule", "unique_item_spec", "unique_position_ok"]

UNIQUE_MARK = "~unique:"
INFINITE_KINDS = frozenset("sindao")


def unique_item_spec(emitter, f: Formula, depth: int = 0) -> dict | None:
    """The matcher's spec of an item position: {"k": infinite kinds, "s": enum strings (or None),
    "l": the literals true/false/null it may be, "r": [string clause atoms, enum strings] of
    strings that are counted}; None when an item there may be something this cannot follow
    exactly (see the module docstring)."""
    kinds: set[str] = set()
    strings: set[str] = set()
    literals: set = set()
    languages: list[tuple] = []  # the atoms of each string clause not an enum
    dnf = [] if f is FALSE else emitter.normalized.dnf(f)
    for c in dnf:
        if c.values is not None:
            for v in c.values:
                if isinstance(v, bool) or v is None:
                    literals.add(v)
                elif isinstance(v, str):
                    strings.add(v)
                else:
                    return None
            continue
        if c.str is not None:
            ins = [a.values for a in c.str if type(a) is AmongStrings]
            if ins:
                rest = tuple(a for a in c.str if type(a) is not AmongStrings)
                strings.update(s for s in frozenset.intersection(*ins) if not rest or emitter.strings.member(rest, s))
            else:
                languages.append(c.str)
                if _infinite_strings(c.str):
                    kinds.add("s")
        n = c.num
        if n is not None:
            if n.nonint or n.lo is not None or n.hi is not None or n.mults or n.not_mults or n.excluded:
                return None
            kinds.add("i" if n.int_only else "d" if emitter.canonical_numbers else "n")
        if c.arr is not None:
            a = c.arr
            if a.max is not None or a.contains or any(emitter.is_empty(x) for x in a.prefix + (a.items,)) or (a.unique and not _grows(emitter, a.items, depth)):
                return None
            kinds.add("a")
        if c.obj is not None:
            if not _open_object(emitter, c.obj):
                return None
            kinds.add("o")
        literals.update(c.bools)
        if c.null:
            literals.add(None)
    if kinds & {"n", "d"}:
        kinds.discard("i")
    spec = {"k": "".join(sorted(kinds)), "s": sorted(strings) if strings else None, "l": sorted(literals, key=json.dumps)}
    if languages and (strings or len(languages) > 1 or "s" not in kinds):
        # strings that can run out, or an enum beside a language: counted (schema.unique_strings)
        counter = _counter(languages, spec["s"])
        if counter is None:
            return None
        everywhere = counter.total() is None and infinite_everywhere(counter.dfa)
        if not everywhere and not all(_every_spelling(a) for a in languages):
            return None  # the text could start an escape of a character no spelling allows
        if everywhere:
            spec["k"], spec["s"] = "".join(sorted(kinds | {"s"})), None
        else:
            spec["k"], spec["s"] = spec["k"].replace("s", ""), None
            spec["r"] = [[atoms_to_json(a) for a in languages], sorted(strings)]
    return spec


def unique_position_ok(spec: dict, index: int) -> bool:
    """Can an item at `index` (needed by minItems) always be new? Yes for infinite kinds; a
    finite position needs more values than the `index` items before it."""
    if set(spec["k"]) & INFINITE_KINDS:
        return True
    strings = len(spec["s"] or ())
    if "r" in spec:
        strings = StringCounter.of(*spec["r"]).total()
        if strings is None:
            return True
    return strings + len(spec["l"]) > index


def _counter(languages: list[tuple], strings) -> StringCounter | None:
    try:
        return StringCounter.of([atoms_to_json(a) for a in languages], sorted(strings or ()))
    except CompileTimeoutError:
        raise
    except StrictgenError:
        return None


def unique_array_rule(rules: dict[str, Expr], body: Expr, specs: list[dict]) -> RuleRef:
    """`body` (the whole array, brackets included) as a called rule the matcher recognises."""
    name = f"unique{len(rules)}{UNIQUE_MARK}{json.dumps(specs, separators=(',', ':'), sort_keys=True)}"
    rules[name] = body
    keep_called(rules, name)
    return RuleRef(name)


def _grows(emitter, items: Formula, depth: int) -> bool:
    """Can a unique array of `items` always take one more item? When the items are of an
    infinite kind (asked a few arrays deep at most)."""
    spec = unique_item_spec(emitter, items, depth + 1) if depth < 3 else None
    return spec is not None and bool(set(spec["k"]) & INFINITE_KINDS)


def _open_object(emitter, o) -> bool:
    """Does every object of `o` take another member before its `}`? Additional members under any
    name (no key patterns, no propertyNames) with some value, and no maxProperties."""
    if o.max is not None or o.key_atoms is not None:
        return False
    if any(r.kind == "pattern" or (r.kind == "other" and r.patterns) for r in o.rules):
        return False
    return not emitter.is_empty(emitter.normalized.and_(*(r.schema for r in o.rules if r.kind == "other")))


def _every_spelling(atoms: tuple) -> bool:
    """Does the grammar spell every character of these strings every JSON way? (json_spelling:
    a big automaton gets printable ASCII raw only; counting the strings an escape can still
    become assumes every character has its escapes.)"""
    dfa = _raw_dfa(atoms)
    return dfa is not None and every_spelling(dfa, MAX_DFA_STATES) is not None


def _infinite_strings(atoms: tuple) -> bool:
    """Can every live prefix of a string of `atoms` still become infinitely many strings? True
    when every live state of the raw-character DFA reaches a state on a cycle."""
    if not atoms:
        return True
    dfa = _raw_dfa(atoms)
    return dfa is not None and dfa.can_finish() and infinite_everywhere(dfa)


def _raw_dfa(atoms: tuple):
    """The minimal raw-UTF-8 DFA of the strings of `atoms` (None: too big to build)."""
    try:
        return regular_dfa(string_language(atoms))
    except CompileTimeoutError:
        raise
    except StrictgenError:
        return None


def infinite_everywhere(dfa) -> bool:
    """Linear: peel off the live states whose live successors are all peeled (they reach no
    cycle); what remains reaches one. Every live state reachable from the start must remain."""
    n = dfa.num_states
    table = np.frombuffer(dfa.table256(), dtype=np.int32).reshape(n, 256)
    src = np.repeat(np.arange(n, dtype=np.int64), 256)
    dst = table.ravel().astype(np.int64)
    keep = dst >= 0
    edges = np.unique(src[keep] * n + dst[keep])
    succ: list[list[int]] = [[] for _ in range(n)]
    pred: list[list[int]] = [[] for _ in range(n)]
    for e in edges.tolist():
        a, b = divmod(e, n)
        succ[a].append(b)
        pred[b].append(a)
    acc = dfa.accepting()
    live = _closure([s for s in range(n) if acc[s]], pred, None)
    reach = _closure([0] if 0 in live else [], succ, live)
    out = {s: sum(t in live for t in succ[s]) for s in live}
    todo = [s for s, k in out.items() if k == 0]
    peeled = set(todo)
    while todo:
        for p in pred[todo.pop()]:
            if p in live and p not in peeled:
                out[p] -= 1
                if out[p] == 0:
                    peeled.add(p)
                    todo.append(p)
    return not reach & peeled


def _closure(starts: list[int], edges: list[list[int]], within: set[int] | None) -> set[int]:
    out, todo = set(starts), list(starts)
    while todo:
        for t in edges[todo.pop()]:
            if t not in out and (within is None or t in within):
                out.add(t)
                todo.append(t)
    return out
