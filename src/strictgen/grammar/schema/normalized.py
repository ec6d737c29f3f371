"""What the emitter may ask of a normalised schema: a read-only view of one compile's normaliser.

The emitter turns formulas into grammar rules and needs, for each, its conjuncts (`dnf`), the
formulas it builds for positions the schema IR does not name (`and_`/`not_` for `contains` bits,
existential members and key regions), the jsonschema judge (`satisfies`), the value schema of one
object member (`value_formula`, `rule_applies`) and emptiness (`is_empty`). `NormalizedSchema`
answers exactly these, so the emitter cannot reach the normaliser's tables, its reporter swaps or
its references (it holds this view, never the `Normalizer`); data flows one way (DESIGN.md §1).

The formulas are normalised on request, as the emitter reaches them (the conjuncts are memoised in
the normaliser): normalising everything up front would change which refusal `strict` raises first
and would normalise formulas no emitter uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ir import Conjunct, Formula, KeyRule, ObjectConstraints

if TYPE_CHECKING:
    from .normalize import Normalizer
    from .strings import StringLanguages
    from .values import Reporter

__all__ = ["NormalizedSchema"]


class NormalizedSchema:
    """The root formula of one compile and the questions the emitter asks about formulas."""

    __slots__ = ("_norm",)

    def __init__(self, norm: Normalizer):
        self._norm = norm

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, "_norm"):
            raise AttributeError("a NormalizedSchema is read-only")
        object.__setattr__(self, name, value)

    @property
    def root(self) -> Formula:
        """The formula of the whole schema."""
        return self._norm.root_formula

    @property
    def strings(self) -> StringLanguages:
        """The compile's string-language service (shared by the normaliser and the emitter)."""
        return self._norm.strings

    @property
    def compile_reporter(self) -> Reporter:
        """Where the compile's refusals go (never swapped for a normaliser trial's)."""
        return self._norm.compile_reporter

    def dnf(self, f: Formula) -> list[Conjunct]:
        """The conjuncts of `f` (memoised)."""
        return self._norm.dnf(f)

    def and_(self, *items: Formula) -> Formula:
        """The conjunction of `items` (an interned formula)."""
        return self._norm.and_(*items)

    def not_(self, f: Formula) -> Formula:
        """The negation of `f` (an interned formula)."""
        return self._norm.not_(f)

    def satisfies(self, f: Formula, value: Any) -> bool:
        """Does the JSON `value` satisfy `f`? (jsonschema is the judge of raw subschemas)"""
        return self._norm.satisfies(f, value)

    def value_formula(self, o: ObjectConstraints, key: str) -> Formula:
        """The schema the member named `key` of an object of `o` must satisfy."""
        return self._norm.value_formula(o, key)

    def rule_applies(self, r: KeyRule, key: str) -> bool:
        """Does key rule `r` range over the member named `key`?"""
        return self._norm.rule_applies(r, key)

    def is_empty(self, f: Formula) -> bool:
        """Does `f` admit no value at all? (False while `f` itself is being normalised)"""
        return self._norm.is_empty(f)
