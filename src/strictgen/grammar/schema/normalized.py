"""What the normaliser hands the emitter: an immutable value, the root formula and the answers of the
compile's formula algebra (schema.formulas) to the questions the emitter asks.

The emitter turns formulas into grammar rules and needs, for each, its conjuncts (`dnf`), the
formulas it builds for positions the schema IR does not name (`and_`/`not_` for `contains` bits,
existential members and key regions), the jsonschema judge (`satisfies`), the value schema of one
object member (`value_formula`, `rule_applies`) and emptiness (`is_empty`). `NormalizedSchema`
holds exactly these: the algebra's own methods, so the emitter asks the algebra directly and
cannot reach the normaliser (the algebra never refers to it; raw schemas reach their normal form
through the algebra's lazy step, schema.formulas says why it is lazy). Data flows one way
(DESIGN.md §1): the normaliser builds the algebra and the root, hands this value over, and can be
dropped before the emission starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from .ir import Conjunct, Formula, KeyRule, ObjectConstraints

if TYPE_CHECKING:
    from .formulas import FormulaAlgebra
    from .strings import StringLanguages
    from .values import Reporter

__all__ = ["NormalizedSchema"]


@dataclass(frozen=True, slots=True, eq=False)
class NormalizedSchema:
    """The root formula of one compile and the questions the emitter asks about formulas."""

    root: Formula  # the formula of the whole schema
    strings: StringLanguages  # the compile's string-language service (shared by both stages)
    compile_reporter: Reporter  # where the compile's refusals go (never swapped for a trial's)
    dnf: Callable[[Formula], list[Conjunct]]  # the conjuncts of a formula (memoised)
    and_: Callable[..., Formula]  # the conjunction of formulas (an interned formula)
    not_: Callable[[Formula], Formula]  # the negation of a formula (an interned formula)
    satisfies: Callable[[Formula, Any], bool]  # does a JSON value satisfy a formula? (jsonschema judges raw schemas)
    value_formula: Callable[[ObjectConstraints, str], Formula]  # the schema of the member named key
    rule_applies: Callable[[KeyRule, str], bool]  # does a key rule range over the member named key?
    is_empty: Callable[[Formula], bool]  # does a formula admit no value at all?

    @classmethod
    def of(cls, root: Formula, formulas: FormulaAlgebra) -> NormalizedSchema:
        """The value for `root`, answered by the algebra `formulas`."""
        f = formulas
        return cls(root, f.strings, f.compile_reporter, f.dnf, f.and_, f.not_, f.satisfies, f.value_formula, f.rule_applies, f.is_empty)
