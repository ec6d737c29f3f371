"""JSON Schema normalisation: raw schemas → a small schema IR in disjunctive normal form.

The JSON Schema front end works in two steps (DESIGN.md §1): this module resolves references,
merges `allOf`, distributes `anyOf`/`oneOf`/`not`/`if`/`dependent*` and produces, for every
(sub)schema, a list of *conjuncts* (`Conj`, the alternatives of a DNF); `json_schema.py` turns
conjuncts into grammar IR.

Formulas
    Subschemas are referred to lazily through interned `Formula` objects: a raw schema at a
    location (`src`), or `and` / `or` / `not` of formulas, or `true` / `false`. Nested positions
    (property values, array items) hold formulas, not normalised schemas, so recursive schemas
    stay finite: the emitter turns each formula into one grammar rule, and references to a
    formula that is being emitted become rule references (recursion in the grammar).

Conjuncts
    A `Conj` constrains each JSON type separately: `null` (allowed or not), `bools` (the allowed
    booleans), `num` (`NumP`: bounds, integer-ness, multipleOf, excluded values), `str` (`StrP`:
    a conjunction of regular string atoms, negation included), `arr` (`ArrP`) and `obj` (`ObjP`);
    a part set to None excludes its type. A conjunct can instead be *finite* (`values`): the
    exact set of JSON values it admits (from `enum`/`const`, filtered with the jsonschema
    validator of the subschema they appear in, so every other keyword there is honoured).

Objects are described by *key rules* (name / pattern / "other keys" → value formula), which makes
merging schemas a concatenation: a member must satisfy every rule whose key set contains its key.

Keywords: the 2020-12 vocabulary plus the older forms real schemas use (`definitions`, `id`,
array-form `items` + `additionalItems`, boolean `exclusiveMinimum`/`exclusiveMaximum`,
`dependencies`). Drafts 4-7 ignore the siblings of `$ref` (as those drafts say). Unknown keywords
are annotations (spec-conformant: a typo'd keyword is ignored, not an error), and so is `format`
with a name this package does not know (jsonschema ignores those too).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field, replace
from decimal import Decimal
from fractions import Fraction
from typing import Any, Callable, Iterable

from strictgen import deadline
from strictgen.errors import CompileTimeoutError, GrammarTooLargeError, RegexError, SchemaError, StrictgenError

from .schema_dialects import legacy_items_2020_validator
from .schema_documents import SchemaDocuments, dialect_of
from .schema_limits import MAX_SCHEMA_DEPTH, check_schema_bounds, malformed_subschema

__all__ = [
    "Formula",
    "Conj",
    "NumP",
    "ArrP",
    "ObjP",
    "KeyRule",
    "Normalizer",
    "Reporter",
    "TRUE",
    "FALSE",
    "json_equal",
    "to_fraction",
    "load_schema",
    "MAX_ALTERNATIVES",
]

MAX_ALTERNATIVES = 512  # conjuncts of one normalised (sub)schema
MAX_FORMULAS = 200_000  # formulas created while compiling one schema
MAX_ENUM_FILTER = 20_000  # enum values checked per schema (enum filtering runs jsonschema on each)
MAX_APPLICATOR_NESTING = 128  # formulas normalised inside one another (each is a few Python frames)

ANNOTATIONS = frozenset(
    """$schema $id id $anchor $dynamicAnchor $recursiveAnchor $defs definitions $vocabulary $comment
    title description default examples example deprecated readOnly writeOnly contentMediaType
    contentEncoding contentSchema discriminator nullable""".split()
)

# annotations that do not change what a schema object validates (its own $id, $schema, anchors and
# $defs still count: they change resolution); ignored when deciding that two subschemas are the same
_NO_CONTENT = frozenset(
    "title description default examples example $comment deprecated readOnly writeOnly".split()
)

_DRAFT4_KEYWORDS = frozenset(
    """$ref additionalItems additionalProperties allOf anyOf dependencies enum format items maxItems
    maxLength maxProperties maximum minItems minLength minProperties minimum multipleOf not oneOf
    pattern patternProperties properties required type uniqueItems exclusiveMinimum exclusiveMaximum""".split()
)
_DRAFT6_KEYWORDS = _DRAFT4_KEYWORDS | {"const", "contains", "propertyNames"}
_DRAFT7_KEYWORDS = _DRAFT6_KEYWORDS | {"if", "then", "else"}
_DRAFT201909_KEYWORDS = (_DRAFT7_KEYWORDS - {"dependencies"}) | {
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedItems",
    "unevaluatedProperties",
    "minContains",
    "maxContains",
    "$recursiveRef",
}
_JSON_TYPES = frozenset("null boolean object array number string integer".split())
_ALL_KEYWORDS = _DRAFT201909_KEYWORDS | {"dependencies", "prefixItems", "$dynamicRef"}
_DIALECT_KEYWORDS = {
    "draft-03": _DRAFT4_KEYWORDS,
    "draft-04": _DRAFT4_KEYWORDS,
    "draft-06": _DRAFT6_KEYWORDS,
    "draft-07": _DRAFT7_KEYWORDS,
    "draft2019-09": _DRAFT201909_KEYWORDS,
}

# ---- errors -------------------------------------------------------------------------------------


FORMAT_MODES = ("assert", "annotate")  # `format` enforced (default), or only an annotation


class Reporter:
    """Collects keywords that cannot be enforced: raises SchemaError (strict) or records them."""

    def __init__(self, strict: bool = True):
        self.strict = strict
        self.unenforced: list[tuple[str, str]] = []

    def refuse(self, message: str, keyword: str, pointer: str) -> None:
        if self.strict:
            raise SchemaError(message + " (use strict=False to compile without it)", keyword=keyword, pointer=pointer)
        item = (keyword, pointer)
        if item not in self.unenforced:
            self.unenforced.append(item)


class RefLoop(SchemaError):
    """A schema that refers to itself in place (without consuming input)."""


def invalid(message: str, keyword: str, pointer: str) -> SchemaError:
    """An error for a schema that is not valid JSON Schema (raised in every mode)."""
    return SchemaError(message, keyword=keyword, pointer=pointer)


def _escape_pointer(token: str) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


# ---- JSON values --------------------------------------------------------------------------------


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def to_fraction(v: Any) -> Fraction:
    """The exact value of a JSON number (floats read as the decimal text they came from)."""
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            raise ValueError("not a finite number")
        return Fraction(Decimal(repr(v)))
    if isinstance(v, Decimal):
        return Fraction(v)
    return Fraction(v)


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, booleans differ from numbers, objects compare regardless of key order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        try:
            return to_fraction(a) == to_fraction(b)
        except ValueError:
            return a == b
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False


def json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if is_number(v):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    raise TypeError(f"not a JSON value: {v!r}")


def dedupe_values(values: Iterable[Any]) -> tuple:
    """The values without JSON-equal repeats, first occurrence kept; by `value_key`, so linear
    (an enum of 50,000 values is 50,000 look-ups, not 10^9 comparisons)."""
    out: dict[str, Any] = {}
    for n, v in enumerate(values):
        if not n & 4095:
            deadline.check()
        out.setdefault(value_key(v), v)
    return tuple(out.values())


def value_key(v: Any) -> str:
    """A hashable key equal for JSON-equal values."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return json.dumps(v)
    if is_number(v):
        try:
            f = to_fraction(v)
            return f"n:{f.numerator}/{f.denominator}"
        except ValueError:
            return f"n:{v!r}"
    if isinstance(v, list):
        return "[" + ",".join(value_key(x) for x in v) + "]"
    return "{" + ",".join(json.dumps(k) + ":" + value_key(v[k]) for k in sorted(v)) + "}"


def load_schema(schema: Any) -> Any:
    """dict / bool / JSON text / pydantic model class → a JSON Schema (dict or bool)."""
    if isinstance(schema, (bytes, bytearray)):
        schema = schema.decode("utf-8")
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as e:
            raise SchemaError(f"schema text is not valid JSON: {e}") from None
        except RecursionError:
            raise GrammarTooLargeError(f"schema text nested too deeply to parse (limit MAX_SCHEMA_DEPTH = {MAX_SCHEMA_DEPTH} levels)") from None
    elif isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        schema = schema.model_json_schema()
    elif hasattr(schema, "model_json_schema") and callable(schema.model_json_schema):
        schema = schema.model_json_schema()
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"a JSON Schema is an object or a boolean, not {type(schema).__name__}")
    check_schema_bounds(schema)
    return schema


# ---- patterns -------------------------------------------------------------------------------------


def _structure(p: str, start: int = 0):
    """(index, char, depth before it) for each `(`, `)` and `|` of regex `p` outside escapes and classes."""
    depth, i, in_class = 0, start, False
    while i < len(p):
        c = p[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c in "()|":
            yield i, c, depth
            depth += {"(": 1, ")": -1, "|": 0}[c]
        i += 1


def _split_leading_lookahead(p: str) -> tuple[str, str] | None:
    """`^(?!A)B` with no alternation at the top level of B → (A, B); otherwise None."""
    if not p.startswith("^(?!"):
        return None
    close = next((i for i, c, d in _structure(p, 4) if c == ")" and d == 0), None)
    if close is None:
        return None
    a, b = p[4:close], p[close + 1 :]
    if any(c == "|" and d == 0 for _, c, d in _structure(b)):
        return None
    return a, b


@functools.lru_cache(maxsize=4096)
def pattern_language(p: str):
    """Strings containing a match of the ECMA-262 pattern `p` (JSON Schema `pattern`).

    Beyond regex.py: a leading negative lookahead `^(?!A)B` is the difference of two searches,
    strings with a prefix matching B minus strings with a prefix matching A."""
    from .ir import difference
    from .regex import parse_regex_search

    try:
        return parse_regex_search(p)
    except RegexError:
        split = _split_leading_lookahead(p)
        if split is None:
            raise
        a, b = split
        return difference(parse_regex_search("^(?:" + b + ")"), parse_regex_search("^(?:" + a + ")"))


# ---- formulas -------------------------------------------------------------------------------------


class Formula:
    """An interned, lazily normalised schema: src / and / or / not / true / false."""

    __slots__ = ("kind", "key", "args", "src", "_hash")

    def __init__(self, kind: str, key: tuple, args: tuple = (), src: "SrcInfo | None" = None):
        self.kind = kind
        self.key = key
        self.args = args
        self.src = src
        self._hash = hash(key)

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


@dataclass
class SrcInfo:
    schema: dict
    resolver: Any  # referencing.Resolver for this location
    spec: Any  # referencing Specification (dialect)
    pointer: str  # JSON pointer of the schema object in the root document ("" = root)
    scope: tuple = ()  # dynamic scope: resources (with $dynamicAnchors) entered on the way here


# ---- per-type parts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class NumP:
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

    def meet(self, o: "NumP") -> "NumP | None":
        lo, ls = self.lo, self.lo_strict
        if o.lo is not None and (lo is None or o.lo > lo or (o.lo == lo and o.lo_strict)):
            lo, ls = o.lo, o.lo_strict
        hi, hs = self.hi, self.hi_strict
        if o.hi is not None and (hi is None or o.hi < hi or (o.hi == hi and o.hi_strict)):
            hi, hs = o.hi, o.hi_strict
        out = NumP(
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

    def negate(self) -> list["NumP"]:
        out: list[NumP] = []
        if self.int_only:
            out.append(NumP(nonint=True))
        if self.nonint:
            out.append(NumP(int_only=True))
        if self.lo is not None:
            out.append(NumP(hi=self.lo, hi_strict=not self.lo_strict))
        if self.hi is not None:
            out.append(NumP(lo=self.hi, lo_strict=not self.hi_strict))
        for m in self.mults:
            out.append(NumP(not_mults=(m,), where=self.where))
        for m in self.not_mults:
            out.append(NumP(mults=(m,)))
        for v in self.excluded:
            out.append(NumP(lo=v, hi=v))
        return out

    @property
    def trivial(self) -> bool:
        return self == NumP()


# String atoms (a StrP is a tuple of atoms, read as their conjunction):
#   ("len", lo, hi)        code point count (hi None = unbounded)
#   ("re", pattern)        contains a match of the ECMA-262 pattern (JSON Schema `pattern`)
#   ("fmt", name)          a valid `format` value
#   ("in", frozenset)      one of these strings
#   ("not", atoms)         not all of the atoms


def str_meet(a: tuple, b: tuple) -> tuple | None:
    lo, hi = 0, None
    rest: list = []
    for atom in a + b:
        if atom[0] == "len":
            lo = max(lo, atom[1])
            if atom[2] is not None:
                hi = atom[2] if hi is None else min(hi, atom[2])
        elif atom not in rest:
            rest.append(atom)
    if hi is not None and lo > hi:
        return None
    if lo or hi is not None:
        rest.insert(0, ("len", lo, hi))
    return tuple(rest)


@dataclass(frozen=True)
class Contains:
    schema: Formula
    lo: int = 1
    hi: int | None = None
    start: int = 0  # only items at index >= start count
    evaluates: bool = True


@dataclass(frozen=True)
class ArrP:
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

    def meet(self, o: "ArrP", norm: "Normalizer") -> "ArrP | None":
        n = max(len(self.prefix), len(o.prefix))
        prefix = tuple(norm.and_(self.item(i), o.item(i)) for i in range(n))
        lo = max(self.min, o.min)
        hi = self.max if o.max is None else (o.max if self.max is None else min(self.max, o.max))
        if hi is not None and lo > hi:
            return None
        if hi is not None and len(prefix) > hi:
            prefix = prefix[:hi]
        return ArrP(
            prefix,
            norm.and_(self.items, o.items),
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
        return self == ArrP()


@dataclass(frozen=True)
class KeyRule:
    """Members whose key is in the rule's key set must have a value valid under `schema`.

    kind "name": the key `name`; "pattern": keys containing a match of `pattern`; "other": keys
    that are none of `names` and match none of `patterns` (additionalProperties and friends);
    "keys": keys in the string language `atoms` (only in ObjP.exists, from 'not propertyNames')."""

    kind: str
    schema: Formula
    name: str = ""
    pattern: str = ""
    names: frozenset = frozenset()
    patterns: frozenset = frozenset()
    evaluates: bool = True
    pointer: str = field(default="", compare=False)
    atoms: tuple = ()


@dataclass(frozen=True)
class ObjP:
    rules: tuple = ()
    required: frozenset = frozenset()
    min: int = 0
    max: int | None = None
    key_atoms: tuple | None = None  # propertyNames: StrP every key must satisfy (None = any)
    order: tuple = ()  # names in order of first appearance (the order members are emitted in)
    exists: tuple = ()  # KeyRules read existentially: some member has a key in the set and a valid value
    clauses: tuple = ()  # presence constraints in CNF: frozensets of (key, present?) literals, one must hold
    where: tuple = field(default=(), compare=False)

    def meet(self, o: "ObjP") -> "ObjP | None":
        lo = max(self.min, o.min)
        hi = self.max if o.max is None else (o.max if self.max is None else min(self.max, o.max))
        if hi is not None and lo > hi:
            return None
        if self.key_atoms is None:
            keys = o.key_atoms
        elif o.key_atoms is None:
            keys = self.key_atoms
        else:
            keys = str_meet(self.key_atoms, o.key_atoms)
            if keys is None:
                keys = (("in", frozenset()),)
        required = self.required | o.required
        rules = tuple(dict.fromkeys(self.rules + o.rules))
        if hi is not None and len(required) > hi:
            return None
        for r in rules:  # a required member whose name is forbidden
            if r.kind == "name" and r.schema is FALSE and r.name in required:
                return None
        return ObjP(
            rules,
            required,
            lo,
            hi,
            keys,
            tuple(dict.fromkeys(self.order + o.order)),
            tuple(dict.fromkeys(self.exists + o.exists)),
            tuple(dict.fromkeys(self.clauses + o.clauses)),
            self.where + o.where,
        )

    @property
    def trivial(self) -> bool:
        return self == ObjP()


_ALL_BOOLS = frozenset((False, True))


@dataclass(frozen=True)
class Conj:
    """One alternative of a normalised schema: constraints per JSON type, or a finite value set."""

    null: bool = True
    bools: frozenset = _ALL_BOOLS
    num: NumP | None = NumP()
    str: tuple | None = ()
    arr: ArrP | None = ArrP()
    obj: ObjP | None = ObjP()
    values: tuple | None = None  # a finite conjunct: exactly these values (other fields unused)
    loose_eval: bool = False  # from overlapping anyOf branches: evaluated keys may be incomplete

    def is_empty(self) -> bool:
        if self.values is not None:
            return not self.values
        return not self.null and not self.bools and self.num is None and self.str is None and self.arr is None and self.obj is None

    @property
    def is_top(self) -> bool:
        return (
            self.values is None
            and self.null
            and self.bools == _ALL_BOOLS
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


TOP = Conj()
NONE = Conj(False, frozenset(), None, None, None, None)


def only(**parts) -> Conj:
    """A conjunct admitting only the given types (parts)."""
    return replace(NONE, **parts)


def conj_meet(a: Conj, b: Conj, norm: "Normalizer") -> Conj | None:
    """Intersection of two non-finite conjuncts (None when empty)."""
    num = a.num.meet(b.num) if a.num is not None and b.num is not None else None
    st = str_meet(a.str, b.str) if a.str is not None and b.str is not None else None
    arr = a.arr.meet(b.arr, norm) if a.arr is not None and b.arr is not None else None
    obj = a.obj.meet(b.obj) if a.obj is not None and b.obj is not None else None
    if obj is not None and norm is not None and norm.obj_contradicts(obj, a.obj, b.obj):
        obj = None
    c = Conj(a.null and b.null, a.bools & b.bools, num, st, arr, obj, None, a.loose_eval or b.loose_eval)
    return None if c.is_empty() else c


# ---- the normaliser -------------------------------------------------------------------------------------


_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")


def _nonneg_int(value: Any, keyword: str, pointer: str) -> int:
    if isinstance(value, bool) or not is_number(value) or value < 0 or (isinstance(value, float) and not value.is_integer()):
        raise invalid(f"{keyword} must be a non-negative integer, not {value!r}", keyword, pointer)
    return int(value)


class Normalizer:
    """Resolves and normalises one root schema; formulas and conjuncts are memoised per instance."""

    def __init__(self, root: Any, reporter: Reporter | None = None, formats: str = "assert", documents: Any = None):
        """`documents`: the other documents `root` may refer to (SchemaDocuments.of takes a mapping
        of URI -> schema or a referencing.Registry); nothing else is ever fetched."""
        import referencing.jsonschema as rj

        if formats not in FORMAT_MODES:
            raise StrictgenError(f"formats must be one of {FORMAT_MODES}, not {formats!r}")
        self.reporter = reporter or Reporter(True)
        self.formats = formats
        self.root = root
        self._rj = rj
        self._formulas: dict[tuple, Formula] = {}
        self._dnf: dict[Formula, list[Conj]] = {}
        self._active: list[Formula] = []
        self._validators: dict[Formula, Any] = {}
        self._enum_checks = 0
        self._contents: dict[int, str] = {}
        self._views: dict[int, dict] = {}
        self._const_values: dict[tuple, Any] = {}
        self._keep: list = []  # keeps schema objects alive while their ids are cache keys
        self._disjoint_nesting = 0
        self._contradictions: dict[tuple, bool] = {}
        self._exact = False  # anyOf expanded into exactly-which-branches alternatives (unevaluated*)
        self.pointers: dict[int, str] = {}
        self.documents = SchemaDocuments.of(documents)
        self.documents.check_bounds()
        self._dicts: list[dict] = []
        self._index(root, "")
        for uri, contents, _ in self.documents.items:
            self._index(contents, uri + "#")
        self._uses_unevaluated = any("unevaluatedProperties" in d or "unevaluatedItems" in d for d in self._dicts)
        if isinstance(root, dict):
            spec = dialect_of(root)  # 2020-12 by default, also with an array-form `items`
            resource = spec.create_resource(root)
            if not isinstance(root.get("$id", ""), str):
                raise invalid("$id must be a string (a URI reference)", "$id", "")
            uri = resource.id() or ""
            try:
                self.registry = self.documents.registry(uri, resource)
            except Exception as e:  # malformed $id and the like
                raise self._malformed(root, "", e, "cannot index the schema's resources", "$id") from None
            self.resolver = self.registry.resolver(base_uri=uri)
            self.spec = spec
            self._dynamic = any("$dynamicRef" in d for d in self._dicts)
            self._anchors_of: dict[str, frozenset] = {}
            self.root_formula = self.src(root, self.resolver, spec, "", self._enter((), self.resolver))
        else:
            self.registry = None
            self.resolver = None
            self.spec = rj.DRAFT202012
            self.root_formula = TRUE if root else FALSE

    def _index(self, root: Any, prefix: str) -> None:
        """JSON pointers of every object of a document (for error messages): "/a/b" in the root
        document, "URI#/a/b" in another one."""
        work = [(root, prefix)]
        while work:
            node, ptr = work.pop()
            if isinstance(node, dict):
                if id(node) in self.pointers:
                    continue
                self.pointers[id(node)] = ptr
                self._dicts.append(node)
                for k, v in node.items():
                    if isinstance(v, (dict, list)):
                        work.append((v, f"{ptr}/{_escape_pointer(k)}"))
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    if isinstance(v, (dict, list)):
                        work.append((v, f"{ptr}/{i}"))

    # ---- formula constructors ----

    def _intern(self, kind: str, key: tuple, args: tuple = (), src: SrcInfo | None = None) -> Formula:
        got = self._formulas.get(key)
        if got is None:
            if len(self._formulas) >= MAX_FORMULAS:
                raise GrammarTooLargeError(f"schema too complex: more than {MAX_FORMULAS} subschema combinations")
            got = self._formulas[key] = Formula(kind, key, args, src)
        return got

    def src(self, schema: Any, resolver: Any, spec: Any, pointer: str | None = None, scope: tuple = ()) -> Formula:
        if schema is True:
            return TRUE
        if schema is False:
            return FALSE
        if not isinstance(schema, dict):
            raise invalid(f"a schema must be an object or a boolean, not {schema!r}", "", pointer or "")
        key = ("src", self._content(schema), getattr(resolver, "_base_uri", ""), scope)
        got = self._formulas.get(key)
        if got is not None:
            return got
        ptr = self.pointers.get(id(schema), pointer if pointer is not None else "?")
        return self._intern("src", key, (), SrcInfo(schema, resolver, spec, ptr, scope))

    def _content(self, schema: dict) -> str:
        """Subschemas with the same content (and base URI and dynamic scope) share one formula,
        hence one grammar rule: generated schemas repeat inline definitions a lot."""
        got = self._contents.get(id(schema))
        if got is None:
            try:
                kept = {k: v for k, v in schema.items() if k not in _NO_CONTENT}
                got = json.dumps(kept, ensure_ascii=False, separators=(",", ":"))
            except (TypeError, ValueError):
                got = f"id:{id(schema)}"
            self._contents[id(schema)] = got
            self._keep.append(schema)
        return got

    def view(self, f: Formula) -> dict:
        """The schema object of `f` without the keywords its dialect ($schema) does not define:
        a draft-04 schema's `const` or `if` are annotations there, as jsonschema treats them.
        Without a declared older draft, 2020-12 applies plus the legacy forms real schemas use
        (`dependencies`, array-form `items` + `additionalItems`, boolean exclusive bounds)."""
        got = self._views.get(id(f.src.schema))
        if got is None:
            vocab = _DIALECT_KEYWORDS.get(getattr(f.src.spec, "name", ""))
            schema = f.src.schema
            if vocab is None:
                got = schema
            else:
                got = {k: v for k, v in schema.items() if k in vocab or k not in _ALL_KEYWORDS}
            self._views[id(schema)] = got
        return got

    # ---- dynamic scope ($dynamicRef) ----

    def _dynamic_anchor_names(self, uri: str) -> frozenset:
        """The $dynamicAnchor names defined in the resource at `uri` (not in its subresources)."""
        got = self._anchors_of.get(uri)
        if got is None:
            names: set[str] = set()
            try:
                root = self.registry.contents(uri)
            except Exception:
                root = None
            work = [root]
            while work:
                node = work.pop()
                if isinstance(node, dict):
                    if node is not root and "$id" in node:
                        continue
                    if isinstance(node.get("$dynamicAnchor"), str):
                        names.add(node["$dynamicAnchor"])
                    work.extend(v for v in node.values() if isinstance(v, (dict, list)))
                elif isinstance(node, list):
                    work.extend(v for v in node if isinstance(v, (dict, list)))
            got = self._anchors_of[uri] = frozenset(names)
        return got

    def _enter(self, scope: tuple, resolver: Any) -> tuple:
        """The dynamic scope after entering the resource of `resolver` (kept only when it matters)."""
        if not self._dynamic:
            return ()
        uri = getattr(resolver, "_base_uri", "")
        if uri in scope or not self._dynamic_anchor_names(uri):
            return scope
        return scope + (uri,)

    def sub(self, f: Formula, schema: Any, *path: Any) -> Formula:
        """The formula of a subschema of the src formula `f` (reached by `path` from it)."""
        info = f.src
        ptr = info.pointer + "".join("/" + _escape_pointer(p) for p in path)
        if not isinstance(schema, dict):
            return self.src(schema, info.resolver, info.spec, ptr)
        spec = info.spec
        dialect = schema.get("$schema")
        if isinstance(dialect, str):
            spec = self._rj.specification_with(dialect, default=spec)
        resolver = self._entered(info.resolver, schema, spec)
        return self.src(schema, resolver, spec, ptr, self._enter(info.scope, resolver))

    @staticmethod
    def _entered(resolver: Any, schema: dict, spec: Any) -> Any:
        """The resolver inside `schema`: its `$id` (`id` in old drafts) is the base URI of the
        references in it. An `$id` that is not a URI string is ignored, as referencing's crawl does."""
        if not any(k in schema for k in ("$id", "id")):
            return resolver
        try:
            return resolver.in_subresource(spec.create_resource(schema))
        except (TypeError, ValueError, AttributeError):
            return resolver

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
        return self._intern(kind, (kind, frozenset(g.key for g in args)), args)

    def const_(self, value: Any) -> Formula:
        """The schema admitting exactly `value` (made by negating enum/const values)."""
        key = ("const", value_key(value))
        self._const_values.setdefault(key, value)
        return self._intern("const", key)

    def not_(self, f: Formula) -> Formula:
        if f is TRUE:
            return FALSE
        if f is FALSE:
            return TRUE
        if f.kind == "not":
            return f.args[0]
        return self._intern("not", ("not", f.key), (f,))

    # ---- membership (the jsonschema validator is the judge) ----

    def holds(self, f: Formula, value: Any) -> bool:
        if f is TRUE:
            return True
        if f is FALSE:
            return False
        if f.kind == "and":
            return all(self.holds(g, value) for g in f.args)
        if f.kind == "or":
            return any(self.holds(g, value) for g in f.args)
        if f.kind == "not":
            return not self.holds(f.args[0], value)
        if f.kind == "const":
            return json_equal(self._const_values[f.key], value)
        deadline.check()
        self._enum_checks += 1
        if self._enum_checks > MAX_ENUM_FILTER:
            raise GrammarTooLargeError(f"schema too large: more than {MAX_ENUM_FILTER} enum/const checks")
        validator = self._validators.get(f)
        if validator is None:
            validator = self._validators[f] = self._validator(f)
        try:
            return validator.is_valid(value)
        except RecursionError:
            raise invalid("the schema refers to itself without end", "$ref", f.src.pointer) from None
        except Exception as e:  # unresolvable reference, bad regex in the judge, ...
            raise self._malformed(f.src.schema, f.src.pointer, e, "jsonschema cannot evaluate this subschema", "enum") from None

    @staticmethod
    def _malformed(schema: Any, pointer: str, exc: Exception, what: str, keyword: str) -> SchemaError:
        """The error for a library failing on (part of) the schema: the keyword of the wrong shape
        when there is one; the library's own message only when it is not a Python slip inside it."""
        bad = malformed_subschema(schema)
        if bad is not None:
            kw, where, shape = bad
            return invalid(f"{kw} must be {shape}", kw, pointer + where.lstrip("#"))
        if isinstance(exc, (AttributeError, TypeError, KeyError, IndexError, RecursionError)):
            return invalid(f"{what}: a keyword has a value of the wrong type", keyword, pointer)
        return invalid(f"{what}: {exc}", keyword, pointer)

    def _validator(self, f: Formula):
        import jsonschema.validators as jv

        info = f.src
        name = getattr(info.spec, "name", "")
        cls = {
            "draft-03": jv.Draft3Validator,
            "draft-04": jv.Draft4Validator,
            "draft-06": jv.Draft6Validator,
            "draft-07": jv.Draft7Validator,
            "draft2019-09": jv.Draft201909Validator,
        }.get(name) or legacy_items_2020_validator()
        checker = cls.FORMAT_CHECKER if self.formats == "assert" else None
        base = cls(self.root if isinstance(self.root, dict) else {}, registry=self.registry, format_checker=checker)
        return base.evolve(schema=info.schema, _resolver=info.resolver)

    # ---- normalisation ----

    def dnf(self, f: Formula) -> list[Conj]:
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
                out = [Conj(values=(self._const_values[f.key],))]
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

    def _union(self, dnfs: list[list[Conj]]) -> list[Conj]:
        out: dict[Conj, None] = {}
        finite: list[Conj] = []  # value sets may hold lists and dicts: merged by JSON equality below
        for d in dnfs:
            for c in d:
                if c.values is None:
                    out[c] = None
                else:
                    finite.append(c)
        if len(out) + min(len(finite), 1) > MAX_ALTERNATIVES:
            raise GrammarTooLargeError(f"schema too complex: more than {MAX_ALTERNATIVES} alternatives")
        return self._merge_finite(list(out) + finite)

    def _merge_finite(self, conjs: list[Conj]) -> list[Conj]:
        finite = [c for c in conjs if c.values is not None]
        if len(finite) <= 1:
            return conjs
        values = dedupe_values(v for c in finite for v in c.values)
        return [c for c in conjs if c.values is None] + [Conj(values=values)]

    def product(self, factors: list[list[Conj]], whole: Formula | None) -> list[Conj]:
        """The conjunction of DNFs. Finite conjuncts meet everything through `whole` (the formula
        equal to the whole conjunction): their values are kept when the jsonschema judge accepts them."""
        values: list = []
        has_finite = False
        finite_factors = 0
        others_true = True  # every factor without values is true (checks nothing)
        acc: list[Conj] = [TOP]
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
            nxt: dict[Conj, None] = {}
            prunable = len(non) > 1 and (
                not self._uses_unevaluated or all(self._eval_signature(b) == ((), ()) for b in non)
            )
            for a in acc:
                if a is not TOP and prunable and any(self._implies(a, b) for b in non):
                    nxt[a] = None  # a already implies one alternative: a and (b or ...) = a
                    continue
                for b in non:
                    m = b if a is TOP else (a if b is TOP else conj_meet(a, b, self))
                    if m is not None:
                        nxt[m] = None
            if len(nxt) > MAX_ALTERNATIVES:
                raise GrammarTooLargeError(f"schema too complex: more than {MAX_ALTERNATIVES} alternatives")
            acc = list(nxt)
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
                kept = tuple(v for v in dedupe_values(values) if self.holds(whole, v))
            if kept:
                out = out + [Conj(values=kept)]
        return out

    def obj_contradicts(self, o: ObjP, a: ObjP, b: ObjP) -> bool:
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

    def _implies(self, a: Conj, y: Conj) -> bool:
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

    def negate(self, dnf: list[Conj], f: Formula | None = None) -> list[Conj]:
        """The complement of a DNF (as a DNF); annotations of negated schemas are dropped."""
        if not dnf:
            return [TOP]
        factors = [self._negate_conj(c, f) for c in dnf]
        # the product of negated conjuncts never holds finite parts
        acc: list[Conj] = [TOP]
        for d in factors:
            nxt: dict[Conj, None] = {}
            for a in acc:
                if a is not TOP and len(d) > 1 and any(self._implies(a, b) for b in d):  # negations evaluate nothing
                    nxt[a] = None
                    continue
                for b in d:
                    m = b if a is TOP else (a if b is TOP else conj_meet(a, b, self))
                    if m is not None:
                        nxt[m] = None
            if len(nxt) > MAX_ALTERNATIVES:
                raise GrammarTooLargeError(f"schema too complex: more than {MAX_ALTERNATIVES} alternatives (in a negation)")
            acc = list(nxt)
        return acc

    def _ptr(self, f: Formula | None) -> str:
        while f is not None and f.kind in ("not", "and", "or"):
            f = f.args[0]
        return f.src.pointer if f is not None and f.src is not None else ""

    def _negate_conj(self, c: Conj, f: Formula | None) -> list[Conj]:
        ptr = self._ptr(f)
        if c.values is not None:
            return self._negate_values(c.values, ptr)
        out: list[Conj] = []
        if not c.null:
            out.append(only(null=True))
        if c.bools != _ALL_BOOLS:
            out.append(only(bools=_ALL_BOOLS - c.bools))
        if c.num is None:
            out.append(only(num=NumP()))
        else:
            out.extend(only(num=n) for n in c.num.negate())
        if c.str is None:
            out.append(only(str=()))
        elif c.str:
            out.append(only(str=(("not", c.str),)))
        if c.arr is None:
            out.append(only(arr=ArrP()))
        else:
            out.extend(only(arr=a) for a in self._negate_arr(c.arr, ptr))
        if c.obj is None:
            out.append(only(obj=ObjP()))
        else:
            out.extend(only(obj=o) for o in self._negate_obj(c.obj, ptr))
        return out

    def _negate_values(self, values: tuple, ptr: str) -> list[Conj]:
        out: list[Conj] = []
        types = {json_type(v) for v in values}
        if "null" not in types:
            out.append(only(null=True))
        bools = frozenset(v for v in values if isinstance(v, bool))
        if bools != _ALL_BOOLS:
            out.append(only(bools=_ALL_BOOLS - bools))
        nums = frozenset(to_fraction(v) for v in values if is_number(v))
        out.append(only(num=NumP(excluded=nums)))
        strs = frozenset(v for v in values if isinstance(v, str))
        out.append(only(str=(("not", (("in", strs),)),) if strs else ()))
        arrays = [v for v in values if isinstance(v, list)]
        objects = [v for v in values if isinstance(v, dict)]
        # arrays / objects other than the listed ones: the product of each value's complement
        for kind, listed in (("arr", arrays), ("obj", objects)):
            acc = [only(**{kind: ArrP() if kind == "arr" else ObjP()})]
            for v in listed:
                alts = [only(arr=a) for a in self._array_complement(v)] if kind == "arr" else [only(obj=o) for o in self._object_complement(v)]
                nxt: dict[Conj, None] = {}
                for a in acc:
                    for b in alts:
                        m = conj_meet(a, b, self)
                        if m is not None:
                            nxt[m] = None
                if len(nxt) > MAX_ALTERNATIVES:
                    raise GrammarTooLargeError(f"schema too complex: more than {MAX_ALTERNATIVES} alternatives (excluding enum values)")
                acc = list(nxt)
            out.extend(acc)
        return out

    def _array_complement(self, v: list) -> list[ArrP]:
        """Arrays other than `v`: another length, or some item different."""
        n = len(v)
        out = [ArrP(min=n + 1)] + ([ArrP(max=n - 1)] if n else [])
        for i, x in enumerate(v):
            out.append(ArrP(prefix=(TRUE,) * i + (self.not_(self.const_(x)),), min=i + 1))
        return out

    def _object_complement(self, v: dict) -> list[ObjP]:
        """Objects other than `v`: a member missing, a member with another value, or another key."""
        keys = tuple(v)
        out = [ObjP(exists=(KeyRule("other", TRUE, names=frozenset(keys), evaluates=False),))]
        for k in keys:
            out.append(ObjP(rules=(KeyRule("name", FALSE, name=k, evaluates=False),), order=(k,)))
            out.append(
                ObjP(
                    rules=(KeyRule("name", self.not_(self.const_(v[k])), name=k, evaluates=False),),
                    required=frozenset((k,)),
                    order=(k,),
                )
            )
        return out

    def _negate_arr(self, a: ArrP, ptr: str) -> list[ArrP]:
        out: list[ArrP] = []
        if a.min > 0:
            out.append(ArrP(max=a.min - 1))
        if a.max is not None:
            out.append(ArrP(min=a.max + 1))
        for i, p in enumerate(a.prefix):
            if p is not TRUE:
                out.append(ArrP(prefix=(TRUE,) * i + (self.not_(p),), min=i + 1))
        if a.items is not TRUE:
            out.append(ArrP(min=len(a.prefix) + 1, contains=(Contains(self.not_(a.items), 1, None, len(a.prefix), False),)))
        for c in a.contains:
            if c.lo > 0:
                out.append(ArrP(contains=(Contains(c.schema, 0, c.lo - 1, c.start, False),)))
            if c.hi is not None:
                out.append(ArrP(contains=(Contains(c.schema, c.hi + 1, None, c.start, False),)))
        if a.unique:
            where = next((p for k, p in a.where if k == "uniqueItems"), ptr)
            self.reporter.refuse("'not' of uniqueItems (arrays with a duplicate) cannot be expressed", "uniqueItems", where)
        return out

    def _negate_obj(self, o: ObjP, ptr: str) -> list[ObjP]:
        out: list[ObjP] = []
        for r in sorted(o.required):
            out.append(ObjP(rules=(KeyRule("name", FALSE, name=r, evaluates=False),), order=(r,)))
        for r in o.rules:
            if r.schema is TRUE:
                continue
            if r.kind == "name":
                out.append(
                    ObjP(
                        rules=(KeyRule("name", self.not_(r.schema), name=r.name, evaluates=False),),
                        required=frozenset((r.name,)),
                        order=(r.name,),
                    )
                )
            else:  # some member with a key in the set violates the schema
                out.append(ObjP(exists=(replace(r, schema=self.not_(r.schema), evaluates=False),)))
        if o.min > 0:
            out.append(ObjP(max=o.min - 1))
        if o.max is not None:
            out.append(ObjP(min=o.max + 1))
        if o.key_atoms is not None:  # some key outside the propertyNames language
            out.append(ObjP(exists=(KeyRule("keys", TRUE, atoms=(("not", o.key_atoms),), evaluates=False),)))
        for clause in o.clauses:  # every literal of the clause is false
            lits = sorted(clause)
            out.append(ObjP(order=tuple(k for k, _ in lits), clauses=tuple(frozenset(((k, not pos),)) for k, pos in lits)))
        for e in o.exists:  # every member with a key in the set violates the schema
            if e.kind == "keys":
                neg = (("not", e.atoms),)
                if e.schema is TRUE:
                    out.append(ObjP(key_atoms=neg))
                else:
                    self.reporter.refuse("'not' of 'some key outside propertyNames' with a value schema", "not", ptr)
            else:
                out.append(ObjP(rules=(replace(e, schema=self.not_(e.schema), evaluates=False),)))
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
                return not any(self.holds(busy, v) for c in d for v in c.values)
            return False
        self._disjoint_nesting += 1
        try:
            a, b = self.dnf(f), self.dnf(g)
        except RefLoop:
            return False
        finally:
            self._disjoint_nesting -= 1
        return self._dnfs_disjoint(a, b, f, g, depth)

    def _dnfs_disjoint(self, a: list[Conj], b: list[Conj], f: Formula, g: Formula, depth: int, context: Conj | None = None) -> bool:
        """No value in both DNFs (and in the context conjunct, when given)."""
        for x in a:
            for y in b:
                if context is not None and x.values is None and y.values is None:
                    x2, y2 = conj_meet(context, x, self), conj_meet(context, y, self)
                    if x2 is None or y2 is None:
                        continue
                    x, y = x2, y2
                if not self._conj_disjoint(x, y, f, g, depth):
                    return False
        return True

    def _conj_disjoint(self, x: Conj, y: Conj, f: Formula, g: Formula, depth: int) -> bool:
        if x.values is not None and y.values is not None:
            return not any(json_equal(v, w) for v in x.values for w in y.values)
        if x.values is not None:
            return not any(self.holds(g, v) for v in x.values)
        if y.values is not None:
            return not any(self.holds(f, v) for v in y.values)
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
        ins = [x[1] for x in m if x[0] == "in"]
        if ins:
            common = frozenset.intersection(*ins)
            return not common or not any(self.str_member(m, s) for s in common)
        if self.str_language_empty is not None:
            return self.str_language_empty(m)
        return False

    str_language_empty: Callable[[tuple], bool] | None = None  # installed by the emitter
    str_member_hook: Callable[[tuple, str], bool] | None = None

    def str_member(self, atoms: tuple, s: str) -> bool:
        assert self.str_member_hook is not None
        return self.str_member_hook(atoms, s)

    def _arr_disjoint(self, a: ArrP, b: ArrP, depth: int) -> bool:
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

    obj_keys_disjoint: Callable[[ObjP, ObjP], bool] | None = None  # installed by the emitter

    def _obj_disjoint(self, a: ObjP, b: ObjP, depth: int) -> bool:
        if a.meet(b) is None:
            return True
        # a member required on one side must exist in a common instance: its value must satisfy
        # the schemas both sides give that key
        for k in sorted(a.required | b.required):
            if self.disjoint(self.value_formula(a, k), self.value_formula(b, k), depth + 1):
                return True
        if self.obj_keys_disjoint is not None and self.obj_keys_disjoint(a, b):
            return True
        return False

    def value_formula(self, o: ObjP, key: str) -> Formula:
        """The conjunction of the rules of `o` that apply to the member named `key`."""
        parts = []
        for r in o.rules:
            if self.rule_applies(r, key):
                parts.append(r.schema)
        if o.key_atoms is not None and not self.str_member(o.key_atoms, key):
            return FALSE
        return self.and_(*parts)

    def rule_applies(self, r: KeyRule, key: str) -> bool:
        if r.kind == "name":
            return r.name == key
        if r.kind == "pattern":
            return self.str_member((("re", r.pattern),), key)
        if r.kind == "keys":
            return self.str_member(r.atoms, key)
        return key not in r.names and not any(self.str_member((("re", p),), key) for p in r.patterns)

    # ---- one raw schema ----

    def _norm_src(self, f: Formula) -> list[Conj]:
        s = self.view(f)
        out = self._norm_core(f)
        if "unevaluatedProperties" in s or "unevaluatedItems" in s:
            if not self._exact and any(c.loose_eval for c in out):
                self._exact = True
                try:
                    out = self._norm_core(f)
                finally:
                    self._exact = False
            out = self._unevaluated(f, out)
        return out

    def _trial(self, build):
        """build() with refusals raised instead of recorded; None when it refuses."""
        saved = self.reporter
        self.reporter = Reporter(True)
        try:
            return build()
        except SchemaError:
            return None
        finally:
            self.reporter = saved

    def _norm_core(self, f: Formula) -> list[Conj]:
        info = f.src
        s = self.view(f)
        legacy = getattr(info.spec, "name", "") in ("draft-03", "draft-04", "draft-06", "draft-07")
        if "$ref" in s and legacy:
            return self.dnf(self._ref(f, s["$ref"], "$ref"))
        if "enum" in s or "const" in s:
            return self._finite(f)
        factors = self._factors(f)
        if factors is None:
            return []
        return self.product([pos_dnf[1]() for pos_dnf in factors], f)

    def _negate_src(self, f: Formula) -> list[Conj]:
        """not f for a raw schema: by De Morgan, the union of the complements of its factors
        (its own keywords, $ref, each allOf branch, anyOf, oneOf, not, if, dependencies), which
        avoids negating the product of all of them."""
        info = f.src
        s = self.view(f)
        legacy = getattr(info.spec, "name", "") in ("draft-03", "draft-04", "draft-06", "draft-07")
        if "$ref" in s and legacy:
            return self.dnf(self.not_(self._ref(f, s["$ref"], "$ref")))
        if "enum" in s or "const" in s or "unevaluatedProperties" in s or "unevaluatedItems" in s:
            return self.negate(self.dnf(f), self.not_(f))
        factors = self._factors(f)
        if factors is None:
            return [TOP]
        return self._union([neg() for _, _, neg in factors])

    def _factors(self, f: Formula):
        """The factors of a raw schema as (position, dnf(), complement()) in keyword order: the
        first appearance of a property name decides where its member is emitted. None when the
        schema's own keywords admit nothing."""
        info = f.src
        s = self.view(f)
        ptr = info.pointer
        pos = {k: i for i, k in enumerate(s)}
        factors: list = []
        local = self._local(f)
        if local is None:
            return None
        obj_kw = [pos[k] for k in ("properties", "required", "patternProperties", "additionalProperties") if k in pos]
        factors.append((min(obj_kw) if obj_kw else -1, lambda: [local], lambda: self.negate([local], f)))

        def formula_factor(position: int, g: Formula):
            factors.append((position, lambda: self.dnf(g), lambda: self.dnf(self.not_(g))))

        if "$ref" in s:
            formula_factor(pos["$ref"], self._ref(f, s["$ref"], "$ref"))
        if "$dynamicRef" in s:
            formula_factor(pos["$dynamicRef"], self._dynamic_ref(f, s["$dynamicRef"]))
        if "$recursiveRef" in s:
            formula_factor(pos["$recursiveRef"], self._recursive_ref(f, s["$recursiveRef"]))
        for kw in ("allOf", "anyOf", "oneOf"):
            if kw not in s:
                continue
            branches = s[kw]
            if not isinstance(branches, list) or not branches:
                raise invalid(f"{kw} must be a non-empty array of schemas", kw, ptr + "/" + kw)
            subs = [self.sub(f, b, kw, i) for i, b in enumerate(branches)]
            if kw == "allOf":
                for g in subs:
                    formula_factor(pos[kw], g)
            elif kw == "anyOf":
                factors.append(
                    (
                        pos[kw],
                        lambda subs=subs: self._any_of(subs),
                        lambda subs=subs: self.product([self.dnf(self.not_(g)) for g in subs], self.and_(*(self.not_(g) for g in subs))),
                    )
                )
            else:
                factors.append(
                    (pos[kw], lambda subs=subs: self._one_of(subs, ptr + "/oneOf", local), lambda subs=subs: self._not_one_of(subs))
                )
        if "not" in s:
            g = self.sub(f, s["not"], "not")
            factors.append((pos["not"], lambda: self.dnf(self.not_(g)), lambda: self.dnf(g)))
        if "if" in s and ("then" in s or "else" in s):
            cond = self.sub(f, s["if"], "if")
            then = self.sub(f, s["then"], "then") if "then" in s else TRUE
            els = self.sub(f, s["else"], "else") if "else" in s else TRUE

            def branch(c: Formula, t: Formula) -> list[Conj]:
                return self.product([self.dnf(c), self.dnf(t)], self.and_(c, t))

            factors.append(
                (
                    pos["if"],
                    lambda: self._union([branch(cond, then), branch(self.not_(cond), els)]),
                    lambda: self._union([branch(cond, self.not_(then)), branch(self.not_(cond), self.not_(els))]),
                )
            )
        elif "if" in s and self._uses_unevaluated:
            # no then/else, but a successful `if` still evaluates members for unevaluated*
            cond = self.sub(f, s["if"], "if")
            if any(self._eval_signature(c) != ((), ()) and c.values is None for c in self.dnf(cond)):
                split = self._trial(lambda: self._union([self.dnf(cond), self.dnf(self.not_(cond))]))
                if split is not None:
                    factors.append((pos["if"], lambda: split, lambda: []))
        for d, neg in self._dependencies(f):
            factors.append((len(s), lambda d=d: d, neg))
        factors.sort(key=lambda x: x[0])
        return factors

    def _drop_eval(self, conjs: list[Conj]) -> list[Conj]:
        """The same conjuncts without annotations (a negated schema evaluates nothing)."""
        if not self._uses_unevaluated:
            return conjs
        out = []
        for c in conjs:
            if c.values is None:
                obj = c.obj
                if obj is not None and any(r.evaluates for r in obj.rules):
                    obj = replace(obj, rules=tuple(replace(r, evaluates=False) for r in obj.rules))
                arr = c.arr
                if arr is not None and (arr.eval_prefix or arr.eval_all or any(x.evaluates for x in arr.contains)):
                    arr = replace(
                        arr, eval_prefix=0, eval_all=False, contains=tuple(replace(x, evaluates=False) for x in arr.contains)
                    )
                c = replace(c, obj=obj, arr=arr, loose_eval=False)
            out.append(c)
        return out

    def _not_one_of(self, subs: list[Formula]) -> list[Conj]:
        """Not exactly one branch: none, or at least two."""
        alts = [self.product([self.dnf(self.not_(g)) for g in subs], self.and_(*(self.not_(g) for g in subs)))]
        for i in range(len(subs)):
            for j in range(i + 1, len(subs)):
                alts.append(self.product([self.dnf(subs[i]), self.dnf(subs[j])], self.and_(subs[i], subs[j])))
        return self._union(alts)

    def _finite(self, f: Formula) -> list[Conj]:
        s = self.view(f)
        values: list = []
        if "enum" in s:
            if not isinstance(s["enum"], list):
                raise invalid("enum must be an array", "enum", f.src.pointer + "/enum")
            values.extend(s["enum"])
            if "const" in s:
                values = [v for v in values if json_equal(v, s["const"])]
        else:
            values.append(s["const"])
        for v in values:
            if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
                raise invalid("enum/const values must be JSON values (no NaN or Infinity)", "enum", f.src.pointer)
        values = list(dedupe_values(values))
        others = [k for k in s if k in _ALL_KEYWORDS and k not in ("enum", "const")]
        types = s.get("type")
        types = [types] if isinstance(types, str) else types
        if not others:  # nothing but enum/const (and annotations): every listed value holds
            kept = tuple(values)
        elif others == ["type"] and isinstance(types, list) and types and all(t in _JSON_TYPES for t in types):
            # the common `type` + `enum`: the judge's type check alone, not its O(n) enum scan per value
            checker = self._validator(f)
            kept_: list = []
            for n, v in enumerate(values):
                if not n & 4095:
                    deadline.check()
                if any(checker.is_type(v, t) for t in types):
                    kept_.append(v)
            kept = tuple(kept_)
        else:
            kept = tuple(v for v in values if self.holds(f, v))
        return [Conj(values=kept)] if kept else []

    def _ref(self, f: Formula, ref: Any, kw: str) -> Formula:
        ptr = f.src.pointer + "/" + kw
        if not isinstance(ref, str):
            raise invalid(f"{kw} must be a string", kw, ptr)
        try:
            resolved = f.src.resolver.lookup(ref)
        except Exception as e:
            self.reporter.refuse(self._unresolvable(f.src.resolver, ref, e), kw, ptr)
            return TRUE
        target = resolved.contents
        if isinstance(target, bool):
            return TRUE if target else FALSE
        if not isinstance(target, dict):
            raise invalid(f"reference {ref!r} does not point to a schema", kw, ptr)
        spec = f.src.spec
        dialect = target.get("$schema")
        if isinstance(dialect, str):
            spec = self._rj.specification_with(dialect, default=spec)
        resolver = self._canonical(resolved.resolver, target, spec)
        scope = self._enter(f.src.scope, resolver)
        return self.src(target, resolver, spec, self.pointers.get(id(target), ref), scope)

    def _canonical(self, resolver: Any, target: dict, spec: Any) -> Any:
        """The resolver inside a reference's target. A document supplied under one URI with
        another `$id` has that `$id` as the base of its references (RFC 3986 §5.1.1), but
        referencing's lookup leaves the base at the URI asked for; it is the target's `$id` joined
        onto that URI when the registry holds the target there (a relative `$id` of a target found
        by its own canonical URI is not applied twice)."""
        entered = self._entered(resolver, target, spec)
        if entered is resolver:
            return resolver
        try:
            return entered if self.registry.contents(getattr(entered, "_base_uri", "")) is target else resolver
        except LookupError:
            return resolver

    def _unresolvable(self, resolver: Any, ref: str, exc: Exception) -> str:
        """Why `ref` does not resolve, naming the absolute URI: nothing is fetched, so a document
        that was not supplied (documents=) is missing, or the fragment names nothing in it."""
        from urllib.parse import urldefrag, urljoin

        base = getattr(resolver, "_base_uri", "")  # referencing keeps it private
        uri, fragment = urldefrag(urljoin(base, ref)) if not ref.startswith("#") else (base, ref[1:])
        try:
            self.registry[uri]
        except LookupError:
            return (
                f"cannot resolve reference {ref!r}: no document {uri or '(the root)'!r} was supplied "
                "(other documents are never fetched; pass them with documents=)"
            )
        what = "JSON pointer" if fragment.startswith("/") else "anchor"
        return f"cannot resolve reference {ref!r}: document {uri!r} has no {what} {fragment!r} ({type(exc).__name__})"

    def _dynamic_ref(self, f: Formula, ref: Any) -> Formula:
        """$dynamicRef: like $ref, unless the target is a $dynamicAnchor of the fragment's name
        ("bookending"): then the outermost resource of the dynamic scope defining that anchor wins."""
        target = self._ref(f, ref, "$dynamicRef")
        if target.kind != "src" or not isinstance(ref, str) or "#" not in ref:
            return target
        name = ref.split("#", 1)[1]
        if target.src.schema.get("$dynamicAnchor") != name:
            return target
        for uri in f.src.scope:
            if name in self._dynamic_anchor_names(uri):
                return self._ref(f, f"{uri}#{name}", "$dynamicRef")
        return target

    def _recursive_ref(self, f: Formula, ref: Any) -> Formula:
        ptr = f.src.pointer + "/$recursiveRef"
        if any(d.get("$recursiveAnchor") is True for d in self._dicts):
            self.reporter.refuse("$recursiveRef with $recursiveAnchor (dynamic scope) is not supported", "$recursiveRef", ptr)
            return TRUE
        return self._ref(f, ref, "$recursiveRef")

    def _presence_only(self, dnfs: list[list[Conj]]) -> list[ObjP] | None:
        """The object parts of branches that only constrain which members are present."""
        out = []
        for d in dnfs:
            if len(d) != 1 or d[0].values is not None:
                return None
            c = d[0]
            if not (c.null and c.bools == _ALL_BOOLS and c.num == NumP() and c.str == () and c.arr == ArrP() and c.obj is not None):
                return None
            o = c.obj
            if o.rules or o.min or o.max is not None or o.key_atoms is not None or o.exists:
                return None
            out.append(o)
        return out

    @staticmethod
    def _cnf(o: ObjP) -> list[frozenset]:
        return [frozenset(((k, True),)) for k in sorted(o.required)] + list(o.clauses)

    def _presence_any(self, objs: list[ObjP], exactly_one: bool) -> Conj | None:
        """anyOf / oneOf of presence-only branches as one conjunct with CNF presence clauses."""
        branches = [self._cnf(o) for o in objs]
        if any(not b for b in branches):
            if exactly_one:
                return None
            return TOP  # a branch without constraints: the anyOf always holds
        clauses: list[frozenset] = []
        # at least one branch: distribute the disjunction of CNFs
        combos = [frozenset()]
        for b in branches:
            combos = [c | cl for c in combos for cl in b]
            if len(combos) > 64:
                return None
        clauses.extend(c for c in combos if not any((k, not pos) in c for k, pos in c))
        if exactly_one:  # no two branches: not (B_i and B_j), B made of unit-literal clauses only
            if any(len(cl) != 1 for b in branches for cl in b):
                return None
            for i in range(len(branches)):
                for j in range(i + 1, len(branches)):
                    lits = {next(iter(cl)) for cl in branches[i] + branches[j]}
                    clauses.append(frozenset((k, not pos) for k, pos in lits))
        order = tuple(dict.fromkeys(k for o in objs for k in o.order + tuple(k for cl in o.clauses for k, _ in cl)))
        obj = ObjP(order=order, clauses=tuple(dict.fromkeys(clauses)))
        if exactly_one:
            return only(obj=obj)  # every branch holds for non-objects, so oneOf fails there
        return replace(TOP, obj=obj)

    def _any_of(self, subs: list[Formula]) -> list[Conj]:
        dnfs = [self.dnf(g) for g in subs]
        if len(subs) > 1:
            objs = self._presence_only(dnfs)
            if objs is not None and not self._uses_unevaluated:
                c = self._presence_any(objs, exactly_one=False)
                if c is not None:
                    return [c]
        out = self._union(dnfs)
        if len(subs) > 1:
            sigs = {self._eval_signature(c) for d in dnfs for c in d}
            if len(sigs) > 1:
                if self._exact and len(subs) <= 5:
                    # which branches hold decides which members are evaluated: one alternative
                    # per non-empty set T of branches (T hold, the others do not)
                    n = len(subs)
                    alts = []
                    for t in range(1, 1 << n):
                        parts = [subs[i] if t >> i & 1 else self.not_(subs[i]) for i in range(n)]
                        alts.append(self.product([self.dnf(p) for p in parts], self.and_(*parts)))
                    return self._union(alts)
                out = [replace(c, loose_eval=True) if c.values is None else c for c in out]
        return out

    def _eval_signature(self, c: Conj) -> tuple:
        if c.values is not None:
            return ((), ())
        obj = tuple(sorted((r.kind, r.name, r.pattern) for r in c.obj.rules if r.evaluates)) if c.obj else ()
        arr = (c.arr.eval_prefix, c.arr.eval_all, tuple(x.schema.key for x in c.arr.contains if x.evaluates)) if c.arr else ()
        return obj, arr

    def _one_of(self, subs: list[Formula], ptr: str, context: Conj | None = None) -> list[Conj]:
        """oneOf: the union when the branches are disjoint (within `context`, the schema's own
        keywords), else branch i and not branch j for every other j."""
        n = len(subs)
        dnfs = [self.dnf(g) for g in subs]
        if n == 1:
            return dnfs[0]
        objs = self._presence_only(dnfs)
        if objs is not None:
            c = self._presence_any(objs, exactly_one=True)
            if c is not None:
                return [c]
        if all(
            self._dnfs_disjoint(dnfs[i], dnfs[j], subs[i], subs[j], 0, context) for i in range(n) for j in range(i + 1, n)
        ):
            return self._union(dnfs)
        # exactly one branch: b_i and not b_j for every other j

        def exact() -> list[Conj]:
            alts = []
            for i in range(n):
                others = [self.not_(subs[j]) for j in range(n) if j != i]
                whole = self.and_(subs[i], *others)
                ctx = [[context]] if context is not None else []
                alts.append(self.product(ctx + [dnfs[i]] + [self.dnf(o) for o in others], whole))
            return self._union(alts)

        try:
            out = self._trial(exact)
        except CompileTimeoutError:
            raise
        except GrammarTooLargeError:
            out = None
        if out is None:
            self.reporter.refuse(
                "oneOf branches may overlap and the complement of a branch cannot be expressed "
                "(or is too large), so 'exactly one' cannot be enforced",
                "oneOf",
                ptr,
            )
            return self._union(dnfs)
        return out

    def _dependencies(self, f: Formula) -> list[tuple[list[Conj], Callable[[], list[Conj]]]]:
        """dependentRequired / dependentSchemas / dependencies as (DNF, complement thunk) factors."""
        s = self.view(f)
        ptr = f.src.pointer
        deps: list[tuple[str, Any, str, str]] = []  # (key, strings or schema, keyword, pointer)
        for kw in ("dependentRequired", "dependentSchemas", "dependencies"):
            v = s.get(kw)
            if v is None:
                continue
            if not isinstance(v, dict):
                raise invalid(f"{kw} must be an object", kw, ptr + "/" + kw)
            for key, dep in v.items():
                deps.append((key, dep, kw, ptr + "/" + kw + "/" + _escape_pointer(key)))
        factors = []
        required_deps = []
        for key, dep, kw, p in deps:
            if isinstance(dep, list):
                if not all(isinstance(x, str) for x in dep):
                    raise invalid(f"{kw} lists must hold strings", kw, p)
                for d in dep:
                    if d != key:
                        required_deps.append((key, d))
                continue
            not_object = replace(TOP, obj=None)
            absent = only(obj=ObjP(rules=(KeyRule("name", FALSE, name=key, evaluates=False),), order=(key,)))
            g = self.sub(f, dep, kw, key)
            present_conj = only(obj=ObjP(required=frozenset([key]), order=(key,)))
            present = self.product([[present_conj], self.dnf(g)], g)
            factors.append(
                (
                    [not_object, absent] + present,
                    lambda present_conj=present_conj, g=g: self.product([[present_conj], self.dnf(self.not_(g))], self.not_(g)),
                )
            )
        if required_deps:  # presence clauses "key absent or d present", enforced by the object construction
            order = tuple(dict.fromkeys(k for pair in required_deps for k in pair))
            clauses = tuple(frozenset(((key, False), (d, True))) for key, d in required_deps)
            c = replace(TOP, obj=ObjP(order=order, clauses=clauses))
            factors.append(([c], lambda c=c: self.negate([c])))
        return factors

    # ---- local keywords ----

    def _local(self, f: Formula) -> Conj | None:
        s = self.view(f)
        ptr = f.src.pointer
        c = TOP
        if "type" in s:
            t = s["type"]
            names = [t] if isinstance(t, str) else t
            if not isinstance(names, list) or not all(isinstance(x, str) and x in _TYPES for x in names):
                raise invalid(f"type must be one of {_TYPES} or an array of them, not {t!r}", "type", ptr + "/type")
            ts = set(names)
            num = None
            if "number" in ts:
                num = NumP()
            elif "integer" in ts:
                num = NumP(int_only=True)
            c = Conj(
                "null" in ts,
                _ALL_BOOLS if "boolean" in ts else frozenset(),
                num,
                () if "string" in ts else None,
                ArrP() if "array" in ts else None,
                ObjP() if "object" in ts else None,
            )
        if c.num is not None:
            n = self._numeric(f)
            if n is not None:
                m = c.num.meet(n)
                c = replace(c, num=m)
        if c.str is not None:
            atoms = self._string(f)
            if atoms:
                c = replace(c, str=str_meet(c.str, atoms))
        if c.arr is not None:
            a = self._array(f)
            if a is not None:
                c = replace(c, arr=c.arr.meet(a, self))
        if c.obj is not None:
            o = self._object(f)
            if o is not None:
                c = replace(c, obj=c.obj.meet(o))
        return None if c.is_empty() else c

    def _number_value(self, v: Any, kw: str, ptr: str) -> Fraction | float:
        if isinstance(v, bool) or not is_number(v):
            raise invalid(f"{kw} must be a number, not {v!r}", kw, ptr + "/" + kw)
        if isinstance(v, float) and math.isnan(v):
            raise invalid(f"{kw} must not be NaN", kw, ptr + "/" + kw)
        if isinstance(v, float) and math.isinf(v):
            return v
        return to_fraction(v)

    def _numeric(self, f: Formula) -> NumP | None:
        s = self.view(f)
        ptr = f.src.pointer
        n = NumP()
        empty = False
        for kw, is_lo in (("minimum", True), ("maximum", False), ("exclusiveMinimum", True), ("exclusiveMaximum", False)):
            if kw not in s:
                continue
            v = s[kw]
            if isinstance(v, bool):  # draft-04: modifies minimum / maximum
                continue
            x = self._number_value(v, kw, ptr)
            strict = kw.startswith("exclusive") or (kw == "minimum" and s.get("exclusiveMinimum") is True) or (
                kw == "maximum" and s.get("exclusiveMaximum") is True
            )
            if isinstance(x, float):  # ±inf
                if (is_lo and x > 0) or (not is_lo and x < 0):
                    empty = True
                continue
            bound = NumP(lo=x, lo_strict=strict) if is_lo else NumP(hi=x, hi_strict=strict)
            m = n.meet(bound)
            if m is None:
                empty = True
            else:
                n = m
        if "multipleOf" in s:
            v = s["multipleOf"]
            x = self._number_value(v, "multipleOf", ptr)
            if isinstance(x, float) or x <= 0:
                raise invalid(f"multipleOf must be a positive number, not {v!r}", "multipleOf", ptr + "/multipleOf")
            n = replace(n, mults=n.mults + (x,), where=n.where + (("multipleOf", ptr + "/multipleOf"),))
        if empty:
            n = NumP(int_only=True, nonint=True)  # empty, dropped by the caller's meet
        return None if n.trivial else n

    def _string(self, f: Formula) -> tuple:
        s = self.view(f)
        ptr = f.src.pointer
        atoms: list = []
        lo = _nonneg_int(s["minLength"], "minLength", ptr + "/minLength") if "minLength" in s else 0
        hi = _nonneg_int(s["maxLength"], "maxLength", ptr + "/maxLength") if "maxLength" in s else None
        if lo or hi is not None:
            atoms.append(("len", lo, hi))
        if "pattern" in s:
            p = s["pattern"]
            if not isinstance(p, str):
                raise invalid("pattern must be a string", "pattern", ptr + "/pattern")
            if self.check_pattern(p, ptr + "/pattern"):
                atoms.append(("re", p))
        if "format" in s:
            atom = self.format_atom(s["format"], ptr + "/format")
            if atom is not None:
                atoms.append(atom)
        return tuple(atoms)

    def check_pattern(self, p: str, ptr: str) -> bool:
        try:
            pattern_language(p)
        except RegexError as e:
            self.reporter.refuse(f"pattern {p!r} cannot be compiled: {e}", ptr.rsplit("/", 1)[-1], ptr)
            return False
        return True

    def format_atom(self, name: Any, ptr: str):
        from .formats import SUPPORTED_FORMATS

        if not isinstance(name, str):
            raise invalid("format must be a string", "format", ptr)
        if self.formats == "annotate":
            return None  # the 2020-12 default: format is only an annotation
        if name in SUPPORTED_FORMATS:
            return ("fmt", name)
        if name in ("regex", "idn-email", "idn-hostname"):
            self.reporter.refuse(f"format {name!r} is not a regular language and cannot be enforced", "format", ptr)
        return None  # unknown formats are annotations

    def _array(self, f: Formula) -> ArrP | None:
        s = self.view(f)
        ptr = f.src.pointer
        a = ArrP()
        prefix: tuple = ()
        items: Formula = TRUE
        eval_prefix, eval_all = 0, False
        if "prefixItems" in s:
            if not isinstance(s["prefixItems"], list):
                raise invalid("prefixItems must be an array of schemas", "prefixItems", ptr + "/prefixItems")
            prefix = tuple(self.sub(f, x, "prefixItems", i) for i, x in enumerate(s["prefixItems"]))
            eval_prefix = len(prefix)
        if "items" in s:
            it = s["items"]
            if isinstance(it, list):  # draft 4-2019: tuple validation
                prefix = tuple(self.sub(f, x, "items", i) for i, x in enumerate(it))
                eval_prefix = len(prefix)
                if "additionalItems" in s:
                    items = self.sub(f, s["additionalItems"], "additionalItems")
                    eval_all = True
            else:
                items = self.sub(f, it, "items")
                eval_all = True
        lo = _nonneg_int(s["minItems"], "minItems", ptr + "/minItems") if "minItems" in s else 0
        hi = _nonneg_int(s["maxItems"], "maxItems", ptr + "/maxItems") if "maxItems" in s else None
        contains: tuple = ()
        if "contains" in s:
            x = self.sub(f, s["contains"], "contains")
            cmin = _nonneg_int(s["minContains"], "minContains", ptr + "/minContains") if "minContains" in s else 1
            cmax = _nonneg_int(s["maxContains"], "maxContains", ptr + "/maxContains") if "maxContains" in s else None
            if cmax is not None and cmin > cmax:
                return ArrP(min=1, max=0)
            if cmin > 0 or cmax is not None:
                contains = (Contains(x, cmin, cmax, 0, True),)
            elif x is not FALSE:
                contains = (Contains(x, 0, None, 0, True),)  # vacuous, kept for unevaluatedItems
        unique = s.get("uniqueItems") is True
        if hi is not None and lo > hi:
            return ArrP(min=1, max=0)
        if hi is not None and len(prefix) > hi:
            prefix = prefix[:hi]
        where = ((("uniqueItems", ptr + "/uniqueItems"),) if unique else ()) + (
            (("contains", ptr + "/contains"),) if contains else ()
        )
        a = ArrP(prefix, items, lo, hi, contains, unique, eval_prefix, eval_all, where)
        return None if a.trivial else a

    def _object(self, f: Formula) -> ObjP | None:
        s = self.view(f)
        ptr = f.src.pointer
        rules: list[KeyRule] = []
        order: list[str] = []
        props = s.get("properties", {})
        if not isinstance(props, dict):
            raise invalid("properties must be an object", "properties", ptr + "/properties")
        for name, sch in props.items():
            rules.append(KeyRule("name", self.sub(f, sch, "properties", name), name=name, pointer=ptr + "/properties/" + _escape_pointer(name)))
            order.append(name)
        pats = s.get("patternProperties", {})
        if not isinstance(pats, dict):
            raise invalid("patternProperties must be an object", "patternProperties", ptr + "/patternProperties")
        good_patterns = []
        for p, sch in pats.items():
            pp = ptr + "/patternProperties/" + _escape_pointer(p)
            if not self.check_pattern(p, pp):
                continue
            good_patterns.append(p)
            rules.append(KeyRule("pattern", self.sub(f, sch, "patternProperties", p), pattern=p, pointer=pp))
        if "additionalProperties" in s:
            sch = self.sub(f, s["additionalProperties"], "additionalProperties")
            if len(good_patterns) != len(pats):
                # a pattern we could not compile: "other keys" are unknown; refused above already
                pass
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
        for r in required:
            if r not in order:
                order.append(r)
        lo = _nonneg_int(s["minProperties"], "minProperties", ptr + "/minProperties") if "minProperties" in s else 0
        hi = _nonneg_int(s["maxProperties"], "maxProperties", ptr + "/maxProperties") if "maxProperties" in s else None
        if hi is not None and lo > hi:
            return ObjP(min=1, max=0)
        key_atoms = None
        if "propertyNames" in s:
            g = self.sub(f, s["propertyNames"], "propertyNames")
            key_atoms = self.key_language(g, ptr + "/propertyNames")
        o = ObjP(tuple(rules), frozenset(required), lo, hi, key_atoms, tuple(order))
        return None if o.trivial else o

    def key_language(self, g: Formula, ptr: str) -> tuple | None:
        """The string part of a propertyNames schema as string atoms (None: any key)."""
        dnf = self.dnf(g)
        alts: list[tuple] = []
        for c in dnf:
            if c.values is not None:
                strs = frozenset(v for v in c.values if isinstance(v, str))
                alts.append((("in", strs),))
            elif c.str is not None:
                alts.append(c.str)
        if not alts:
            return (("in", frozenset()),)
        if any(a == () for a in alts):
            return None
        if len(alts) == 1:
            return alts[0]
        # a union of conjunctions: not (not a1 and not a2 ...)
        return (("not", tuple(("not", a) for a in alts)),)

    # ---- unevaluated* ----

    def _unevaluated(self, f: Formula, dnf: list[Conj]) -> list[Conj]:
        s = self.view(f)
        ptr = f.src.pointer
        out: list[Conj] = []
        up = self.sub(f, s["unevaluatedProperties"], "unevaluatedProperties") if "unevaluatedProperties" in s else None
        ui = self.sub(f, s["unevaluatedItems"], "unevaluatedItems") if "unevaluatedItems" in s else None
        for c in dnf:
            if c.values is not None:
                out.append(c)  # filtered by the judge already
                continue
            if c.loose_eval and ((up is not None and c.obj is not None) or (ui is not None and c.arr is not None)):
                kw = "unevaluatedProperties" if up is not None and c.obj is not None else "unevaluatedItems"
                self.reporter.refuse(
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
                allowed = self.or_(ui, *xs)
                p = arr.eval_prefix
                prefix = tuple(it if i < p else self.and_(it, allowed) for i, it in enumerate(arr.prefix))
                arr = replace(arr, prefix=prefix, items=self.and_(arr.items, allowed), eval_all=True)
            out.append(replace(c, obj=obj, arr=arr, loose_eval=False))
        return out
