"""JSON Schema → grammar IR whose language is exactly the JSON documents valid under the schema.

Entry point: `json_schema_grammar(schema, strict=..., any_order=..., style=...)` returns
`(Grammar, unenforced)` (`strictgen.grammar.json_schema` re-exports it);
`GrammarCompiler.compile_json_schema` wraps it with caching.

Two steps, data flowing one way (DESIGN.md §1): `normalize.Normalizer` resolves `$ref` (with the
`referencing` library), merges `allOf` and distributes `anyOf`/`oneOf`/`not`/`if`/`dependent*`
into conjuncts (a DNF per subschema, the schema IR of `ir`); `emitter.SchemaEmitter` turns every
subschema formula into one grammar rule, dispatching each type to its emitter function
(emit_numbers, _strings, _arrays, _objects; counting constructions in counting) with the size
control of rule_sizes. The questions both steps ask about string languages go to one
string-language service per compile (`strings.StringLanguages`), which calls neither step; which
keys an object may have is `key_space`, asked by both. The normaliser hands the emitter an
immutable value (`normalized.NormalizedSchema`: the root formula and the answers of the compile's
formula algebra, `formulas.FormulaAlgebra`) and is dropped; neither step calls the other.
Recursive schemas become recursive rules; the automaton compiler inlines the others.

What the grammar produces and accepts (documented restrictions; each one only narrows the
accepted spellings, never admits an invalid document):

* Whitespace follows `JsonStyle` (bounded; "compact" = none), after the top-level value too.
* Object members come in a fixed order: the listed properties (in the order the schema lists them,
  first appearance across `allOf`/`$ref` merges), each at most once, then any additional members.
  With ``any_order=True`` the listed properties may come in any order (each at most once,
  interleaved with additional members); past nine properties the sets of keys seen are rules
  built at run time (schema.key_sets), refused there only with presence clauses or `not` member rules.
* Strings are accepted in every JSON spelling (DESIGN.md §4 property 7; `json_escapes`): each
  character raw where JSON allows, as a short escape (``\\n``, ``\\/``...), as ``\\uXXXX`` in either
  hex case, or as a surrogate pair above U+FFFF, so const/enum values, patterns, formats, lengths
  (in code points) and object keys hold whatever the spelling. The spelled view of a string
  language is the inverse image of decoding, so it commutes with the intersections and
  differences the constraints are built from (``"\\u0061"`` cannot smuggle in an excluded key ``"a"``).
* Integers: ``-?(0|[1-9][0-9]*)`` optionally followed by ``.0+`` (JSON Schema counts 1.0 as an
  integer), plus ``-0`` when 0 is admitted; numbers with bounds, multipleOf or exclusions are plain
  decimals (no exponent); unconstrained numbers accept the whole JSON number syntax.
* enum/const values: each value's own serialization (members in the value's key order; in any
  order with ``any_order=True``), numbers in every plain spelling of their value (``1``, ``1.0``, ``1.00``...) plus ``json.dumps``'s text.
* ``JsonStyle(numbers="canonical")`` (what generation uses) narrows numbers: integers as
  ``json.dumps`` writes them (no fraction, no exponent, no ``-0``), other numbers plain decimals
  without exponent or ``-0`` and with at most 17 fraction digits (json_value.py says why trailing
  zeros stay), enum/const numbers as ``json.dumps(value)``. A non-regular ``multipleOf``
  construction keeps its own spellings. The default ("any") accepts every spelling, as a validator must.
* Duplicate member keys among *additional* members are not prevented (a context-free grammar
  cannot); RFC 8259 says names SHOULD be unique, and `json.dumps` never writes duplicates.
* `pattern` uses ECMA-262 semantics (regex.py), as JSON Schema specifies; Python's `re` (which
  the jsonschema package uses) differs on Unicode classes such as ``\\d`` and ``\\w``.
* `format` is enforced as an assertion by default (string_formats.py; ``formats="annotate"`` makes it the
  annotation 2020-12 specifies): the formats in `formats.SUPPORTED_FORMATS`;
  ``hostname`` additionally limited to 253 characters; unknown format names are annotations;
  ``regex``, ``idn-email``, ``idn-hostname`` are refused (not regular).
* A schema that admits no value at all (``false``, ``{"not": {}}``, an empty enum...) raises
  SchemaError: there is nothing to generate, and the automaton compiler refuses empty languages.

Dialects: keywords follow the schema's `$schema` (drafts 4, 6, 7, 2019-09; a keyword the declared
draft does not define is an annotation there, as jsonschema treats it; drafts up to 7 ignore the
siblings of `$ref`; a supplied metaschema's `$vocabulary` drops the keywords of the vocabularies it
leaves out, schema.vocabularies). Without `$schema`, 2020-12 applies plus the legacy forms real schemas use:
`definitions`, array-form `items` + `additionalItems`, boolean `exclusiveMinimum`/`Maximum`,
`dependencies`. `$dynamicRef` follows the dynamic scope (resources entered on the way, outermost
first). Unknown keywords are annotations (spec-conformant, so a typo'd keyword is silently
ignored).

How the hard keywords are enforced exactly: oneOf is the union of its branches when they are
provably disjoint (different types, disjoint const/enum/ranges/patterns, a member required on one
side with disjoint value schemas, disjoint key sets), "at least one / not two" presence clauses for
branches that only list required members, else branch_i ∧ ¬branch_j for every j ≠ i whose branch
may overlap branch_i (a disjoint one is inside the complement already); `not` is
pushed down by De Morgan onto each keyword (per-type complements, numeric intervals, Difference for
strings, absent/violating members and existential member constraints for objects, length/item
complements for arrays); dependentRequired and anyOf/oneOf of `required` lists become presence
clauses checked by the object construction; unevaluated* use the evaluated keys/items recorded on
each alternative (anyOf branches are split by exactly which branches hold when they differ).

Size control: big subschemas used several times (or as array items under maxItems) are kept as
called rules rather than inlined (`schema.rule_sizes.call_big_rules`); long length bounds count characters through
a called character rule; a pattern/format combined with a long length bound whose raw-character
product automaton exceeds `MAX_LENGTH_PRODUCT` states has its (pattern state, count) rules built at
run time (length_product).

Refused (SchemaError naming keyword and pointer under strict=True; recorded in `unenforced`
and dropped under strict=False): uniqueItems unless the item domain is small and finite, at most
one item is allowed, or the items are values the matcher can follow exactly (schema/unique.py), `not` of uniqueItems, `not multipleOf` with a step p / 10**n whose p exceeds
`multiple_of.MAX_MODULUS` (its remainder automaton has p states; a plain multipleOf that large is a
GrammarTooLargeError), oneOf whose
branches may overlap when the complement is too large (more than `MAX_ALTERNATIVES` alternatives:
GrammarTooLargeError), key patterns of one object that overlap in more than `MAX_REGIONS` ways, more than 3
`contains` constraints on one array, more than `MAX_EXISTS` existential member constraints (from
`not`) on one object, unevaluatedProperties/Items after
anyOf branches that may overlap (more than 5), $recursiveRef with $recursiveAnchor, patterns
regex.py cannot translate (lookaround other than a leading ``^(?!...)``, backreferences), and
references that cannot be resolved (other documents are never fetched: `documents=` supplies them,
see schema.documents).
"""

from __future__ import annotations

import json
from typing import Any

from strictgen.errors import GrammarTooLargeError, SchemaError

from ..ir import Grammar
from ..json_value import JsonStyle
from .emitter import SchemaEmitter
from .normalize import Normalizer
from .strings import StringLanguages
from .values import LoadedSchema, Reporter, load_schema

__all__ = ["json_schema_grammar", "loaded_schema", "schema_cache_text"]


def schema_cache_text(schema: Any) -> str:
    """The content key of a schema: its JSON text (member order kept: it is the emission order)."""
    return loaded_schema(schema).text


def loaded_schema(schema: Any) -> LoadedSchema:
    """The schema read and checked once, with its content key (`schema_cache_text`): what the
    compiler keys its cache by and then gives `json_schema_grammar`, which reads it without
    parsing and checking the text again (the text was parsed twice per compile, ~2% of the front
    end on the bench's schemas). Parsed text keeps its value; a dict or model is read from the
    text when the grammar is built, as before."""
    parsed = isinstance(schema, (str, bytes, bytearray))
    value = load_schema(schema)
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
    return LoadedSchema(text, value if parsed else None)


def json_schema_grammar(
    schema: Any,
    *,
    strict: bool = True,
    any_order: bool = False,
    style: JsonStyle | None = None,
    formats: str = "assert",
    documents: Any = None,
) -> tuple[Grammar, list[tuple[str, str]]]:
    """The grammar of the JSON documents valid under `schema` (dict, bool, JSON text, a pydantic
    model class or a `loaded_schema`), and the (keyword, JSON pointer) pairs left unenforced (always [] when strict).
    formats="annotate" treats `format` as an annotation only (the 2020-12 default). `documents`:
    the other documents `$ref` may point to, a mapping of URI -> schema or a referencing.Registry
    (see schema.documents); nothing is fetched."""
    root_text = schema.text if type(schema) is LoadedSchema else None  # (the root's content is cut from it)
    schema = load_schema(schema)
    style = style or JsonStyle()
    reporter = Reporter(strict)
    # the normaliser hands over an immutable value: the emission cannot call it (the normaliser
    # only takes the algebra's lazy steps while the emission runs, and is dropped after it)
    normalizer = Normalizer(schema, reporter, formats=formats, documents=documents, strings=StringLanguages(), root_text=root_text)
    with normalizer.emitting() as normalized:
        emitter = SchemaEmitter(normalized, style, any_order, reporter)
        try:
            grammar = emitter.build(normalized.root)
            if not normalized.dnf(normalized.root):
                raise SchemaError("the schema admits no JSON value at all", keyword="", pointer="")
        except RecursionError:
            raise GrammarTooLargeError("schema nested too deeply") from None
    return grammar, list(reporter.unenforced)
