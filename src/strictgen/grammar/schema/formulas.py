"""The formula algebra service of one compile: the one place formulas are made (interned), combined
(`and_`, `or_`, `not_`, `const_`) and put in normal form (`dnf`, memoised), and where both stages
ask emptiness (`is_empty`), membership (`satisfies`), the value schema of an object member
(`value_formula`, `rule_applies`) and contradictions (`obj_contradicts`, which the IR's meets ask).

Why a service of its own: the normaliser builds the formulas of a schema and the emitter builds
more (contains bits, existential members, key regions); both ask the same questions of them, and
neither may ask the other (DESIGN.md §1: normalize → immutable schema IR → emit). So the algebra
holds the interning and memo tables, the string-language service and the reporter (swapped for a
strict one during a `trial`), and never refers to the `Normalizer`. The algebra's functions are
schema.algebra's, over this object.

Raw schemas (src formulas) are normalised lazily, when the algebra first reaches them. Normalising
every reachable subschema up front cannot serve the emitter: its own constructions (contains bits,
existential members, negations that put `not` of a raw schema in a member position) need normal
forms of raw schemas and of their complements that only the emission reveals, and computing the
complement of every reachable subschema ahead costs more than the whole lazy front end and fails
(GrammarTooLargeError) on schemas that compile today. So the lazy step is a value handed over at
construction: the `RawSchemas` of the compile (schema.normalize.SchemaSource: the documents, their
registry and jsonschema judge), which is given this algebra on each call and keeps no reference
to it, so no reference cycle holds a compile's tables after it ends."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

from strictgen.errors import GrammarTooLargeError, SchemaError

from . import algebra
from .ir import FALSE, TRUE, Conjunct, Formula, KeyRule, SrcInfo
from .values import RefLoop, Reporter, json_equal, value_key

if TYPE_CHECKING:
    from .strings import StringLanguages

__all__ = ["MAX_FORMULAS", "FormulaAlgebra", "RawSchemas"]

MAX_FORMULAS = 200_000  # formulas created while compiling one schema


class RawSchemas(Protocol):
    """The lazy step of src formulas (schema.normalize.SchemaSource): their conjuncts, the
    conjuncts of their negation, and the jsonschema judge of a value against one of them."""

    def conjuncts(self, formulas: FormulaAlgebra, f: Formula) -> list[Conjunct]: ...

    def complement(self, formulas: FormulaAlgebra, f: Formula) -> list[Conjunct]: ...

    def is_valid(self, f: Formula, value: Any) -> bool: ...


class FormulaAlgebra:
    """The formulas of one compile, their normal forms and the questions asked about them."""

    def __init__(self, raw: RawSchemas, reporter: Reporter, strings: StringLanguages, uses_unevaluated: bool):
        self.raw = raw  # the lazy step of src formulas (never the Normalizer)
        self.reporter = reporter  # swapped for a strict one during a trial
        self.compile_reporter = reporter  # never swapped: where the emitter's refusals go too
        self.strings = strings
        self.uses_unevaluated = uses_unevaluated  # the schema has unevaluated*: negations evaluate nothing
        self.tables = algebra.AlgebraTables()  # the memoised conjuncts, the formulas being normalised, ...
        self._formulas: dict[tuple, Formula] = {}
        self._const_values: dict[tuple, Any] = {}

    # ---- making formulas ----

    def interned(self, key: tuple) -> Formula | None:
        """The formula made for `key` already, if any."""
        return self._formulas.get(key)

    def intern(self, kind: str, key: tuple, args: tuple = (), src: SrcInfo | None = None) -> Formula:
        """The one formula of `key` (made now when it is new)."""
        got = self._formulas.get(key)
        if got is None:
            if len(self._formulas) >= MAX_FORMULAS:
                raise GrammarTooLargeError(f"schema too complex: more than {MAX_FORMULAS} subschema combinations")
            got = self._formulas[key] = Formula(kind, key, args, src)
        return got

    def and_(self, *items: Formula) -> Formula:
        return self._junction("and", FALSE, TRUE, items)

    def or_(self, *items: Formula) -> Formula:
        return self._junction("or", TRUE, FALSE, items)

    def _junction(self, kind: str, absorbing: Formula, neutral: Formula, items: tuple[Formula, ...]) -> Formula:
        """A flattened, deduplicated, canonically ordered `and`/`or` of `items`."""
        flat: dict[Formula, None] = {}
        for f in items:
            if f is absorbing:
                return absorbing
            if f is neutral:
                continue
            for g in f.args if f.kind == kind else (f,):
                flat[g] = None
        if not flat:
            return neutral
        if len(flat) == 1:
            return next(iter(flat))
        args = tuple(sorted(flat, key=lambda g: repr(g.key)))
        return self.intern(kind, (kind, frozenset(g.key for g in args)), args)

    def const_(self, value: Any) -> Formula:
        """The schema admitting exactly `value` (made by negating enum/const values)."""
        key = ("const", value_key(value))
        self._const_values.setdefault(key, value)
        return self.intern("const", key)

    def const_value(self, f: Formula) -> Any:
        """The value of a `const` formula (made by const_)."""
        return self._const_values[f.key]

    def not_(self, f: Formula) -> Formula:
        if f is TRUE:
            return FALSE
        if f is FALSE:
            return TRUE
        if f.kind == "not":
            return f.args[0]
        return self.intern("not", ("not", f.key), (f,))

    # ---- normal forms (schema.algebra's functions of this object) ----

    dnf = algebra.dnf  # the conjuncts of a formula (memoised)
    value_formula = algebra.value_formula  # the schema one object member must satisfy
    obj_contradicts = algebra.obj_contradicts  # (ir.conjunct_meet asks)

    def src_conjuncts(self, f: Formula) -> list[Conjunct]:
        """The conjuncts of a raw schema (the lazy step)."""
        return self.raw.conjuncts(self, f)

    def src_complement(self, f: Formula) -> list[Conjunct]:
        """The conjuncts of a raw schema's negation (the lazy step)."""
        return self.raw.complement(self, f)

    def rule_applies(self, r: KeyRule, key: str) -> bool:
        """Does key rule `r` range over the member named `key`?"""
        return algebra.rule_applies(self.strings, r, key)

    def is_empty(self, f: Formula) -> bool:
        """Does `f` admit no value at all? (False when it cannot be told yet: `f` is being
        normalised, as when a question is asked from inside its own normalisation.)"""
        if f is FALSE:
            return True
        tables = self.tables
        if not tables.exact:  # dnf's memo first: no formula being normalised is in it then (all
            got = tables.conjuncts.get((f, False))  # of them began without `exact`, and enter
            if got is not None:  # the memo when they end)
                return not got
        if f in tables.active:
            return False
        try:
            return not self.dnf(f)
        except RefLoop:
            if self.tables.active:  # asked from inside a normalisation: cannot tell
                return False
            raise

    def satisfies(self, f: Formula, value: Any) -> bool:
        """Does the JSON `value` satisfy `f`? (jsonschema is the judge of raw schemas)"""
        if f is TRUE:
            return True
        if f is FALSE:
            return False
        if f.kind == "and":
            return all(self.satisfies(g, value) for g in f.args)
        if f.kind == "or":
            return any(self.satisfies(g, value) for g in f.args)
        if f.kind == "not":
            return not self.satisfies(f.args[0], value)
        if f.kind == "const":
            return json_equal(self._const_values[f.key], value)
        return self.raw.is_valid(f, value)

    def trial(self, build: Callable[[], Any]) -> Any:
        """build() with refusals raised instead of recorded; None when it refuses (the
        applicators try an exact construction this way before refusing it to the compile)."""
        saved = self.reporter
        self.reporter = Reporter(True)
        try:
            return build()
        except SchemaError:
            return None
        finally:
            self.reporter = saved
