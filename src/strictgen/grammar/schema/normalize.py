"""JSON Schema normalisation: raw schemas → a small schema IR in disjunctive normal form.

The JSON Schema front end works in two steps (DESIGN.md §1): these modules resolve references,
merge `allOf`, distributes `anyOf`/`oneOf`/`not`/`if`/`dependent*` and produces, for every
(sub)schema, a list of *conjuncts* (`Conjunct`, the alternatives of a DNF); `emitter` (and its
emit_* functions) turns conjuncts into grammar IR, asking this normaliser through its read-only
view (schema.normalized.NormalizedSchema); the normaliser never asks the emitter back.

Formulas
    Subschemas are referred to lazily through interned `Formula` objects: a raw schema at a
    location (`src`), or `and` / `or` / `not` of formulas, or `true` / `false`. Nested positions
    (property values, array items) hold formulas, not normalised schemas, so recursive schemas
    stay finite: the emitter turns each formula into one grammar rule, and references to a
    formula that is being emitted become rule references (recursion in the grammar).

Conjuncts
    A `Conjunct` constrains each JSON type separately: `null` (allowed or not), `bools` (the allowed
    booleans), `num` (`NumberConstraints`: bounds, integer-ness, multipleOf, excluded values), `str` (`StrP`:
    a conjunction of regular string atoms, negation included), `arr` (`ArrayConstraints`) and `obj` (`ObjectConstraints`);
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

Modules: `Normalizer` (here: the root, its registry and memo tables, formula constructors, the
jsonschema judge of enum values, trials), a class without mixins. Functions of the normaliser,
one concern each: schema.refs (`$ref`, `$dynamicRef` and its `DynamicScope`), schema.applicators
(allOf, anyOf, oneOf, not, if, dependencies, enum/const), schema.keywords (per-type keywords,
unevaluated*) and the boolean algebra (dnf, negation, disjointness) over the normaliser's tables
(schema.algebra). The methods
`src_conjuncts`, `src_complement`, `dnf`, `value_formula`, `rule_applies` and `obj_contradicts`
are those functions' answers under the normaliser's name, one line each (for the modules that
cannot import them: the algebra, the IR's meets, the emitter's read-only view). The
schema IR is schema.ir, JSON values and errors schema.values, keyword vocabularies schema.dialects,
other documents schema.documents. Services the Normalizer holds and which never call it back: the
dialects a supplied metaschema's `$vocabulary` defines (`vocabularies`, schema.vocabularies) and the
compile's string-language service (`strings`, schema.strings).
"""

from __future__ import annotations

import json
from typing import Any, Callable

from strictgen import deadline
from strictgen.errors import GrammarTooLargeError, SchemaError, StrictgenError

from . import algebra, applicators
from .dialects import ALL_KEYWORDS, DIALECT_KEYWORDS, legacy_items_2020_validator
from .documents import SchemaDocuments, dialect_of
from .ir import FALSE, TRUE, Formula, KeyRule, SrcInfo
from .limits import malformed_subschema
from .normalized import NormalizedSchema
from .refs import DynamicScope, base_uri, entered
from .strings import StringLanguages
from .vocabularies import Vocabularies
from .values import FORMAT_MODES, RefLoop, Reporter, escape_pointer, invalid, json_equal, value_key

__all__ = ["Normalizer", "MAX_FORMULAS", "MAX_ENUM_FILTER"]

MAX_FORMULAS = 200_000  # formulas created while compiling one schema
MAX_ENUM_FILTER = 20_000  # enum values checked per schema (enum filtering runs jsonschema on each)

# annotations that do not change what a schema object validates (its own $id, $schema, anchors and
# $defs still count: they change resolution); ignored when deciding that two subschemas are the same
_NO_CONTENT = frozenset(
    "title description default examples example $comment deprecated readOnly writeOnly".split()
)


class Normalizer:
    """Resolves and normalises one root schema; formulas and conjuncts are memoised per instance."""

    def __init__(
        self, root: Any, reporter: Reporter | None = None, formats: str = "assert", documents: Any = None, strings: StringLanguages | None = None
    ):
        """`documents`: the other documents `root` may refer to (SchemaDocuments.of takes a mapping
        of URI -> schema or a referencing.Registry); nothing else is ever fetched. `strings`: the
        compile's string-language service (shared with its emitter; a new one by default)."""
        import referencing.jsonschema as rj

        if formats not in FORMAT_MODES:
            raise StrictgenError(f"formats must be one of {FORMAT_MODES}, not {formats!r}")
        self.reporter = reporter or Reporter(True)  # swapped for a strict one during a trial
        self.compile_reporter = self.reporter  # never swapped: where the emitter's refusals go too
        self.strings = strings if strings is not None else StringLanguages()
        self.formats = formats
        self.root = root
        self._formulas: dict[tuple, Formula] = {}
        self.tables = algebra.AlgebraTables()  # the boolean algebra's memo tables (schema.algebra)
        self._validators: dict[Formula, Any] = {}
        self._enum_checks = 0
        self._contents: dict[int, str] = {}
        self._views: dict[int, dict] = {}
        self._const_values: dict[tuple, Any] = {}
        self._keep: list = []  # keeps schema objects alive while their ids are cache keys
        self.pointers: dict[int, str] = {}
        self.documents = SchemaDocuments.of(documents)
        self.documents.check_bounds()
        self._dicts: list[dict] = []
        self.vocabularies = Vocabularies(self.documents, self.pointers, formats)  # custom dialects
        self._index(root, "")
        for uri, contents, _ in self.documents.items:
            self._index(contents, uri + "#")
        self.uses_unevaluated = any("unevaluatedProperties" in d or "unevaluatedItems" in d for d in self._dicts)
        self.has_recursive_anchor = any(d.get("$recursiveAnchor") is True for d in self._dicts)  # ($recursiveRef is refused)
        if isinstance(root, dict):
            spec = self.vocabularies.dialect_spec(root, dialect_of(root))  # 2020-12 by default, also with an array-form `items`
            resource = spec.create_resource(root)
            if not isinstance(root.get("$id", ""), str):
                raise invalid("$id must be a string (a URI reference)", "$id", "")
            uri = resource.id() or ""
            crawl = self._has_inner_resources(root)
            bad = None if crawl else malformed_subschema(root)  # what the crawl would have refused
            if bad is not None:
                raise self._shape_error(bad, "")
            try:
                self.registry = self.documents.registry(uri, resource, crawl)
            except Exception as e:  # malformed $id and the like
                raise self._malformed(root, "", e, "cannot index the schema's resources", "$id") from None
            self.resolver = self.registry.resolver(base_uri=uri)
            self.spec = spec
            self.scope = DynamicScope(self.registry, any("$dynamicRef" in d for d in self._dicts))
            self.root_formula = self.src(root, self.resolver, spec, "", self.scope.enter((), self.resolver))
        else:
            self.registry = None
            self.scope = DynamicScope(None, False)
            self.resolver = None
            self.spec = rj.DRAFT202012
            self.root_formula = TRUE if root else FALSE

    def _has_inner_resources(self, root: dict) -> bool:
        """Does the root document hold anchors, or `$id`s below its root (also draft 4/6 `id`)?
        Only those need the registry crawled (two thirds of a small schema's set-up)."""
        for d in self._dicts:
            if "$anchor" in d or "$dynamicAnchor" in d or "$recursiveAnchor" in d:
                return True
            if d is root:  # the root's own id matters only when it holds an anchor
                if any(isinstance(v, str) and "#" in v.rstrip("#") for v in (d.get("$id"), d.get("id"))):
                    return True
            elif "$id" in d or isinstance(d.get("id"), str):  # any $id (the crawl refuses a malformed
                return True  # one); a draft 4/6 id is a string (a property named id holds a dict)
        return False

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
                        work.append((v, f"{ptr}/{escape_pointer(k)}"))
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
        key = ("src", self._content(schema), base_uri(resolver), scope)
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
            vocab = DIALECT_KEYWORDS.get(getattr(f.src.spec, "name", ""))
            schema = f.src.schema
            custom = self.vocabularies.vocabulary_view(f.src.spec, schema)
            if custom is not None:
                got = custom
            elif vocab is None:
                got = schema
            else:
                got = {k: v for k, v in schema.items() if k in vocab or k not in ALL_KEYWORDS}
            self._views[id(schema)] = got
        return got

    def sub(self, f: Formula, schema: Any, *path: Any) -> Formula:
        """The formula of a subschema of the src formula `f` (reached by `path` from it)."""
        info = f.src
        ptr = info.pointer + "".join("/" + escape_pointer(p) for p in path)
        if not isinstance(schema, dict):
            return self.src(schema, info.resolver, info.spec, ptr)
        spec = self.vocabularies.dialect_spec(schema, info.spec)
        resolver = entered(info.resolver, schema, spec)
        return self.src(schema, resolver, spec, ptr, self.scope.enter(info.scope, resolver))

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
        return self._intern("not", ("not", f.key), (f,))

    def is_empty(self, f: Formula) -> bool:
        """Does `f` admit no value at all? (False when it cannot be told yet: `f` is being
        normalised, as when a question is asked from inside its own normalisation.)"""
        if f is FALSE:
            return True
        if f in self.tables.active:
            return False
        try:
            return not self.dnf(f)
        except RefLoop:
            if self.tables.active:  # asked from inside a normalisation: cannot tell
                return False
            raise

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

    @property
    def normalized(self) -> NormalizedSchema:
        """Its read-only view: what the emitter and key_space ask. A new one each time, held by
        none of the normaliser's tables (a view held there would make a reference cycle, and a
        normaliser, with all it holds, would then wait for the garbage collector after a compile)."""
        return NormalizedSchema(self)

    # ---- answers of the functions of the normaliser, under its name ----
    # for the modules that cannot import those functions: the algebra asks the applicators' two,
    # the emitter's view, the key space and the IR's meets the algebra's. Each is the function
    # itself (`norm.dnf(f)` is `algebra.dnf(norm, f)`), not a method that calls it.

    src_conjuncts = applicators.src_conjuncts  # the conjuncts of a src formula
    src_complement = applicators.src_complement  # the conjuncts of its negation
    dnf = algebra.dnf
    value_formula = algebra.value_formula
    obj_contradicts = algebra.obj_contradicts  # (ir.conjunct_meet asks)

    def rule_applies(self, r: KeyRule, key: str) -> bool:
        """Does key rule `r` range over the member named `key`?"""
        return algebra.rule_applies(self.strings, r, key)

    # ---- membership (the jsonschema validator is the judge) ----

    def satisfies(self, f: Formula, value: Any) -> bool:
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
        deadline.check()
        self._enum_checks += 1
        if self._enum_checks > MAX_ENUM_FILTER:
            raise GrammarTooLargeError(f"schema too large: more than {MAX_ENUM_FILTER} enum/const checks")
        validator = self._validators.get(f)
        if validator is None:
            validator = self._validators[f] = self.validator(f)
        try:
            return validator.is_valid(value)
        except RecursionError:
            raise invalid("the schema refers to itself without end", "$ref", f.src.pointer) from None
        except Exception as e:  # unresolvable reference, bad regex in the judge, ...
            raise self._malformed(f.src.schema, f.src.pointer, e, "jsonschema cannot evaluate this subschema", "enum") from None

    @staticmethod
    def _shape_error(bad: tuple[str, str, str], pointer: str) -> SchemaError:
        """The error for malformed_subschema's finding (keyword, pointer below `pointer`, shape)."""
        kw, where, shape = bad
        return invalid(f"{kw} must be {shape}", kw, pointer + where.lstrip("#"))

    @staticmethod
    def _malformed(schema: Any, pointer: str, exc: Exception, what: str, keyword: str) -> SchemaError:
        """The error for a library failing on (part of) the schema: the keyword of the wrong shape
        when there is one; the library's own message only when it is not a Python slip inside it."""
        bad = malformed_subschema(schema)
        if bad is not None:
            return Normalizer._shape_error(bad, pointer)
        if isinstance(exc, (AttributeError, TypeError, KeyError, IndexError, RecursionError)):
            return invalid(f"{what}: a keyword has a value of the wrong type", keyword, pointer)
        return invalid(f"{what}: {exc}", keyword, pointer)

    def validator(self, f: Formula):
        """The jsonschema validator of the src formula `f` (its dialect, its resolver, formats as asserted)."""
        import jsonschema.validators as jv

        info = f.src
        custom = self.vocabularies.dialect(info.spec)
        name = custom.base if custom is not None else getattr(info.spec, "name", "")
        cls = {
            "draft-03": jv.Draft3Validator,
            "draft-04": jv.Draft4Validator,
            "draft-06": jv.Draft6Validator,
            "draft-07": jv.Draft7Validator,
            "draft2019-09": jv.Draft201909Validator,
        }.get(name) or legacy_items_2020_validator()
        cls = self.vocabularies.judge_class(cls, info.spec)
        checker = cls.FORMAT_CHECKER if self.vocabularies.format_asserted(info.spec) else None
        base = cls(self.root if isinstance(self.root, dict) else {}, registry=self.registry, format_checker=checker)
        return base.evolve(schema=info.schema, _resolver=info.resolver)
