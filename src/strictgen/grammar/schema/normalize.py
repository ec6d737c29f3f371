"""JSON Schema normalisation: raw schemas → a small schema IR in disjunctive normal form.

The JSON Schema front end works in two steps (DESIGN.md §1): these modules resolve references,
merge `allOf`, distributes `anyOf`/`oneOf`/`not`/`if`/`dependent*` and produces, for every
(sub)schema, a list of *conjuncts* (`Conjunct`, the alternatives of a DNF); `emitter` (and its
emit_* functions) turns conjuncts into grammar IR. The normaliser hands it an immutable value
(schema.normalized.NormalizedSchema: the root formula and the formula algebra's answers); neither
stage calls the other.

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

Modules: here, `SchemaSource` (the documents, their registry, pointers, dialect views and the
jsonschema judge) and `Normalizer` (a source joined with the compile's formula algebra,
schema.formulas, which the functions of the normaliser use: one class, no mixins). Functions of
the normaliser, one concern each: schema.refs (`$ref`, `$dynamicRef` and its `DynamicScope`),
schema.applicators (allOf, anyOf, oneOf, not, if, dependencies, enum/const) and schema.keywords
(per-type keywords, unevaluated*). The boolean algebra (dnf, negation) is schema.algebra's and
disjointness schema.disjointness's, over the formula algebra, which never refers to the normaliser:
it reaches a raw schema's conjuncts through its lazy step, the SchemaSource. The schema IR is schema.ir, JSON values
and errors schema.values, keyword vocabularies schema.dialects, other documents schema.documents.
Services that never call the normaliser: the dialects a supplied metaschema's `$vocabulary` defines
(`vocabularies`, schema.vocabularies) and the compile's string-language service (`strings`,
schema.strings).
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from strictgen import deadline
from strictgen.errors import GrammarTooLargeError, SchemaError, StrictgenError

from . import applicators
from ._json_spans import member_spans, object_spans
from .dialects import ALL_KEYWORDS, DIALECT_KEYWORDS, UNRESOLVED_2020, legacy_items_2020_validator, unresolved_dialect
from .documents import SchemaDocuments, dialect_of
from .formulas import MAX_FORMULAS, FormulaAlgebra
from .ir import FALSE, TRUE, Conjunct, Formula, SrcInfo
from .limits import SCHEMA_MAP, SUBSCHEMA_SHAPES, malformed_subschema, shape_holds
from .normalized import NormalizedSchema
from .refs import DynamicScope, base_uri, entered
from .strings import StringLanguages
from .vocabularies import Vocabularies
from .values import FORMAT_MODES, Reporter, escape_pointer, invalid, plain_type_holds

__all__ = ["Normalizer", "SchemaSource", "MAX_FORMULAS", "MAX_ENUM_FILTER"]

MAX_ENUM_FILTER = 20_000  # enum values checked per schema (enum filtering runs jsonschema on each)

# annotations that do not change what a schema object validates (its own $id, $schema, anchors and
# $defs still count: they change resolution); ignored when deciding that two subschemas are the same
_NO_CONTENT = frozenset(
    "title description default examples example $comment deprecated readOnly writeOnly".split()
)

# the keys whose resolution reads a resolver's dynamic scope (SchemaSource.plain_pointer, _local_dialect)
_DYNAMIC_KEYS = frozenset(("$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor"))
_MISSING = object()

# the keys that give a subschema a dialect or base URI of its own (Normalizer.sub: vocabularies.dialect_spec
# reads `$schema`, refs.entered `$id` and `id`)
_ENTERING_KEYS = frozenset(("$schema", "$id", "id"))

# the keys that can make a document hold an inner resource (SchemaSource._has_inner_resources)
_RESOURCE_KEYS = frozenset(("$anchor", "$dynamicAnchor", "$recursiveAnchor", "$id", "id"))

# SchemaSource._crawl_unasked: keys that make referencing's crawl matter (a lookup, an anchor) or
# walk a keyword limits.malformed_subschema does not check; the dialects whose crawl reads only `$id`
_CRAWL_ASKED_KEYS = frozenset(("$ref", "$dynamicRef", "$recursiveRef", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "dependencies", "extends"))
_CRAWL_PLAIN_DIALECTS = frozenset(("draft2020-12", "draft2019-09", "draft-07", "draft-06"))


def _refuse_value(value: Any) -> Any:
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _content_writer() -> Callable[[Any], str]:
    """json.dumps(kept, ensure_ascii=False, separators=(",", ":")), the text content() keys a
    subschema by, from one C encoder made once and without the circular-reference markers:
    JSONEncoder.encode made a new C encoder per call and tracked every container's id (about a
    quarter of the encoding on the Kubernetes schemas, where content() is a tenth of the front
    end). A cycle, which the markers would report as ValueError, is a RecursionError here (the
    schema bounds refuse nesting that deep before any content is asked)."""
    make = json.encoder.c_make_encoder
    if make is None:  # a Python without the C accelerator
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
    chunks = make(None, _refuse_value, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    return lambda value: "".join(chunks(value, 0))


_CONTENT_TEXT = _content_writer()


def _content_cut(text: str, span: tuple[int, int], schema: dict) -> str | None:
    """SchemaSource.content's text of `schema`, whose own compact JSON text is text[start:end]
    (`span`, from _json_spans.object_spans): that text when no member is an annotation of
    _NO_CONTENT, else the texts of its other members (member_spans); None where the text
    disagrees with the schema (content then encodes it)."""
    start, end = span
    if _NO_CONTENT.isdisjoint(schema):
        return text[start:end]
    members = member_spans(schema, text, start)
    if members is None:
        return None
    return "{" + ",".join(text[a:b] for (a, b), k in zip(members, schema) if k not in _NO_CONTENT) + "}"


_SCALARS = frozenset((str, int, float, bool, type(None)))  # values SchemaSource.is_valid memoises (hashable; the type keeps 1 and True apart)


class SchemaSource:
    """The raw schema documents of one compile and how they read: the root and the `documents=`,
    their registry and JSON pointers, each subschema's dialect view, the dynamic scope, and the
    jsonschema judge of a value against a raw subschema (validators memoised per formula).

    It is the formula algebra's lazy step (schema.formulas.RawSchemas): `conjuncts` and
    `complement` normalise one raw schema with the algebra they are given (through a working
    `Normalizer` over both, which lives for that call), and it never holds the algebra, so the
    algebra, its formulas and this source free each other without the garbage collector."""

    def __init__(self, root: Any, formats: str = "assert", documents: Any = None, root_text: str | None = None):
        """`documents`: the other documents `root` may refer to (SchemaDocuments.of takes a mapping
        of URI -> schema or a referencing.Registry); nothing else is ever fetched. `root_text`:
        the root's JSON text as schema_cache_text writes it, when the caller has it (the `content`
        of the root and of every subschema in it is then cut from it, not encoded again)."""
        if formats not in FORMAT_MODES:
            raise StrictgenError(f"formats must be one of {FORMAT_MODES}, not {formats!r}")
        self.formats = formats
        self.root = root
        self._validators: dict[Formula, Any] = {}
        self._answers: dict[tuple, bool] = {}  # (src formula, type, scalar value) -> the judge's answer
        self._enum_checks = 0
        self._contents: dict[int, str] = {}
        self._views: dict[int, dict] = {}
        self._keep: list = []  # keeps schema objects alive while their ids are cache keys
        self._working: Normalizer | None = None  # while a lazy step is under way (_outermost_step)
        self.pointers: dict[int, str] = {}
        self.documents = SchemaDocuments.of(documents)
        self.documents.check_bounds()
        self._dicts: list[dict] = []
        self.vocabularies = Vocabularies(self.documents, self.pointers, formats)  # custom dialects
        # where each object of the root sits in its text (content() cuts a subschema's key from it)
        self._root_text = root_text
        self._spans = object_spans(root, root_text) if root_text is not None and type(root) is dict else None
        self._root_suspect = self._index(root, "")  # (a subschema keyword of a wrong shape may be there)
        for uri, contents, _ in self.documents.items:
            self._index(contents, uri + "#")
        keys = set().union(*self._dicts)  # every key of every object: one C pass, then set look-ups
        self.uses_unevaluated = "unevaluatedProperties" in keys or "unevaluatedItems" in keys
        self.has_recursive_anchor = "$recursiveAnchor" in keys and any(
            d.get("$recursiveAnchor") is True for d in self._dicts
        )  # ($recursiveRef is refused)
        self.plain_document: tuple[str, dict] | None = None  # (URI, root) where plain_pointer may answer
        self.registry: Any = None  # referencing's, with the root's resolver: None while nothing
        self.resolver: Any = None  # resolves (made when asked then, resolver_of)
        local = None if not isinstance(root, dict) or self.documents else self._local_dialect(root, keys)
        if not isinstance(root, dict):
            self.scope = DynamicScope(None, False)
            self.spec = UNRESOLVED_2020
        elif local is None:
            self._set_up_references(root, keys)
        else:  # nothing to resolve but plain pointers: the registry waits for the judge or a reference plain_pointer cannot answer (resolver_of)
            bad = self._malformed_root()  # what referencing would have refused
            if bad is not None:
                raise self._shape_error(bad, "")
            self.spec = local
            self.scope = DynamicScope(None, False)
            self.plain_document = ("", root)

    def _local_dialect(self, root: dict, keys: set) -> Any:
        """The dialect, by name (dialects.unresolved_dialect), of a root document that needs no
        referencing until a reference plain_pointer cannot answer: no dynamic reference, no `$id`
        or `id` of its own, no anchor or inner resource, a standard `$schema` or none (and no other
        documents: the caller's check); None where referencing must index it."""
        if not _DYNAMIC_KEYS.isdisjoint(keys) or "$id" in root or isinstance(root.get("id"), str):
            return None
        if not _RESOURCE_KEYS.isdisjoint(keys) and self._has_inner_resources(root):
            return None
        return unresolved_dialect(root.get("$schema"))

    def _set_up_references(self, root: dict, keys: set) -> None:
        """The registry of the documents, the root's resolver, dialect and dynamic scope, for a
        schema in which references may resolve."""
        spec = self.vocabularies.dialect_spec(root, dialect_of(root))  # 2020-12 by default, also with an array-form `items`
        resource = spec.create_resource(root)
        if not isinstance(root.get("$id", ""), str):
            raise invalid("$id must be a string (a URI reference)", "$id", "")
        uri = resource.id() or ""
        inner = not _RESOURCE_KEYS.isdisjoint(keys) and self._has_inner_resources(root)
        crawl = inner and not self._crawl_unasked(root, keys, spec)  # (which found no malformed shape)
        bad = None if inner else self._malformed_root()  # what the crawl would have refused
        if bad is not None:
            raise self._shape_error(bad, "")
        try:
            self.registry = self.documents.registry(uri, resource, crawl)
        except Exception as e:  # malformed $id and the like
            raise self._malformed(root, "", e, "cannot index the schema's resources", "$id") from None
        self.resolver = self.registry.resolver(base_uri=uri)
        self.spec = spec
        self.scope = DynamicScope(self.registry, "$dynamicRef" in keys)
        if not inner and not self.documents and _DYNAMIC_KEYS.isdisjoint(keys):
            self.plain_document = (uri, root)

    def _crawl_unasked(self, root: dict, keys: set, spec: Any) -> bool:
        """Is the crawl of a root document with inner `$id`s certain to be unused and to succeed?
        Unused: nothing is looked up (no reference, anchor or other document; `entered` joins each
        `$id` onto its base itself). Succeeding: one standard dialect whose crawl reads only `$id`
        (no `$schema` below the root), every `$id` an ASCII string without brackets (urljoin cannot
        fail on it), and no keyword of a shape limits.malformed_subschema does not check (the
        caller refuses what it finds, as after a failed crawl). Generated draft-06 schemas with an
        `$id` on every subschema and no reference spent ~9% of their front end in the crawl."""
        if self.documents or not _CRAWL_ASKED_KEYS.isdisjoint(keys) or getattr(spec, "name", "") not in _CRAWL_PLAIN_DIALECTS:
            return False
        if self.vocabularies.dialect(spec) is not None:  # (a custom vocabulary's)
            return False
        for d in self._dicts:
            if "$schema" in d and d is not root:
                return False
            uri = d.get("$id")
            if uri is not None and (type(uri) is not str or not uri.isascii() or "[" in uri or "]" in uri):
                return False
        return self._malformed_root() is None

    def plain_pointer(self, resolver: Any, target_ref: str) -> Any:
        """The schema `target_ref` points to when it is a plain JSON pointer ("#/a/b": no `~`
        escapes, no percent-encoding) into the root document read from its own base URI, and that
        document holds no inner resource (no `$id`, anchor or other document), so that the
        resolver in the target is `resolver` (referencing's lookup, a fifth of a reference's cost
        on the Kubernetes schemas, would give one with this base URI and a longer dynamic scope,
        which only `$dynamicRef` / `$recursiveRef` read: not with them). None where the lookup
        must decide, or the pointer reaches nothing."""
        if self.plain_document is None or not target_ref.startswith("#/") or "~" in target_ref or "%" in target_ref:
            return None
        uri, node = self.plain_document
        if base_uri(resolver) != uri:
            return None
        for segment in target_ref[2:].split("/"):
            if type(node) is not dict:
                return None
            node = node.get(segment, _MISSING)
            if node is _MISSING:
                return None
        return node

    def resolver_of(self, f: Formula) -> Any:
        """The referencing resolver of the src formula `f` (where the jsonschema judge starts from,
        and a reference plain_pointer cannot answer is looked up): its own, or for a schema set up
        without referencing (_local_dialect) the root's, the registry made now (once)."""
        if f.src.resolver is None and self.registry is None:
            self._set_up_references(self.root, set())
        return f.src.resolver if f.src.resolver is not None else self.resolver

    # ---- the lazy step of the formula algebra ----

    def conjuncts(self, formulas: FormulaAlgebra, f: Formula) -> list[Conjunct]:
        """The conjuncts of the src formula `f` (schema.applicators). A nested step calls the
        applicator straight from here: each Python frame a nesting level costs counts against
        the interpreter's recursion limit, which MAX_APPLICATOR_NESTING's levels must stay under."""
        norm = self._working
        if norm is not None and norm.formulas is formulas:
            return applicators.src_conjuncts(norm, f)
        return self._outermost_step(applicators.src_conjuncts, formulas, f)

    def complement(self, formulas: FormulaAlgebra, f: Formula) -> list[Conjunct]:
        """The conjuncts of the negation of the src formula `f` (schema.applicators); nested as `conjuncts`."""
        norm = self._working
        if norm is not None and norm.formulas is formulas:
            return applicators.src_complement(norm, f)
        return self._outermost_step(applicators.src_complement, formulas, f)

    def _outermost_step(self, step: Callable[[Normalizer, Formula], list[Conjunct]], formulas: FormulaAlgebra, f: Formula) -> list[Conjunct]:
        """`step(norm, f)` with a new working Normalizer over this source and `formulas`, which
        the steps nested in it (a schema's subschemas are normalised inside its own
        normalisation) share; copying the services into a new one per step was ~2% of the front
        end. It is dropped when this step ends, so this source holds no algebra between steps
        (no reference cycle outlives a step)."""
        norm = self._working
        self._working = Normalizer.working(self, formulas)
        try:
            return step(self._working, f)
        finally:
            self._working = norm

    @contextmanager
    def steps_through(self, norm: Normalizer) -> Iterator[None]:
        """Inside the block, the lazy steps of `norm`'s algebra are taken with `norm` itself,
        where each outermost step (each raw schema the emitter reaches first) made a working
        Normalizer (~2.4 us: ~1.4% of the front end on the bench's schemas, ~900 steps a pass).
        This source then holds `norm`, whose algebra holds this source: the block's end breaks
        that reference cycle (the compile's tables are freed by reference counting, as before)."""
        saved = self._working
        self._working = norm
        try:
            yield
        finally:
            self._working = saved

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

    def _index(self, root: Any, prefix: str) -> bool:
        """JSON pointers of every object of a document (for error messages): "/a/b" in the root
        document, "URI#/a/b" in another one. Returns whether a subschema keyword may have the wrong
        shape (limits.shape_holds; False is certain, True asks malformed_subschema, whose own walk
        was ~2% of a front end). Roles: 1 a schema, 2 an object or array of schemas, 0 other."""
        shapes = SUBSCHEMA_SHAPES
        suspect = False
        work = [(root, prefix, 1)]
        while work:
            node, ptr, role = work.pop()
            if isinstance(node, dict):
                if id(node) in self.pointers:
                    suspect = suspect or role != 0  # (the same object in two places: a Python-made schema)
                    continue
                self.pointers[id(node)] = ptr
                self._dicts.append(node)
                for k, v in node.items():
                    inner = 0 if role != 1 or k not in shapes else (2 if shapes[k] == SCHEMA_MAP or type(v) is list else 1)
                    if inner and not shape_holds(shapes[k], v):
                        suspect = True
                    if isinstance(v, (dict, list)):  # (most keys are their own pointer token: nothing to escape)
                        inner = inner if role != 2 else 1
                        work.append((v, f"{ptr}/{k}" if type(k) is str and "~" not in k and "/" not in k else f"{ptr}/{escape_pointer(k)}", inner))
            elif isinstance(node, list):
                inner = 1 if role == 2 else 0
                for i, v in enumerate(node):
                    if isinstance(v, (dict, list)):
                        work.append((v, f"{ptr}/{i}", inner))
        return suspect

    def _malformed_root(self) -> tuple[str, str, str] | None:
        """malformed_subschema of the root document, walked only where _index saw a suspect shape."""
        return malformed_subschema(self.root) if self._root_suspect else None

    def content(self, schema: dict) -> str:
        """Subschemas with the same content (and base URI and dynamic scope) share one formula,
        hence one grammar rule: generated schemas repeat inline definitions a lot. An object of
        the root document has its text cut from the root's (`_spans`, from `root_text`): encoding
        each subschema again wrote every object once per enclosing subschema (~6% of the front
        end, ~8% on the bench's slowest schemas)."""
        got = self._contents.get(id(schema))
        if got is None:
            span = self._spans.get(id(schema)) if self._spans is not None else None
            if span is not None:
                got = _content_cut(self._root_text, span, schema)
            if got is None:
                try:
                    kept = schema if _NO_CONTENT.isdisjoint(schema) else {k: v for k, v in schema.items() if k not in _NO_CONTENT}
                    got = _CONTENT_TEXT(kept)
                except (TypeError, ValueError, RecursionError):
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

    def is_valid(self, f: Formula, value: Any) -> bool:
        """The jsonschema judge: does `value` satisfy the raw schema of the src formula `f`?
        (at most MAX_ENUM_FILTER checks a compile: enum filtering runs it on every value)"""
        deadline.check()
        self._enum_checks += 1
        if self._enum_checks > MAX_ENUM_FILTER:
            raise GrammarTooLargeError(f"schema too large: more than {MAX_ENUM_FILTER} enum/const checks")
        memo_key = (f, type(value), value) if type(value) in _SCALARS else None
        if memo_key is not None:  # (counted above all the same: the limit refuses as it did)
            got = self._answers.get(memo_key)
            if got is not None:
                return got
        validator = self._validators.get(f)
        if validator is None:
            validator = self._validators[f] = self.validator(f)
        try:
            got = validator.is_valid(value)
            if memo_key is not None:
                self._answers[memo_key] = got
            return got
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
            return SchemaSource._shape_error(bad, pointer)
        if isinstance(exc, (AttributeError, TypeError, KeyError, IndexError, RecursionError)):
            return invalid(f"{what}: a keyword has a value of the wrong type", keyword, pointer)
        return invalid(f"{what}: {exc}", keyword, pointer)

    def judge_draft(self, f: Formula) -> str:
        """The draft of the jsonschema judge of the src formula `f` ("draft-07", ...; the base
        draft of a custom dialect; "" or another name for 2020-12)."""
        custom = self.vocabularies.dialect(f.src.spec)
        return custom.base if custom is not None else getattr(f.src.spec, "name", "")

    def type_judge(self, f: Formula) -> Callable[[Any, list[str]], bool]:
        """`judge(value, types)`: has `value` one of the JSON `types` for the judge of the src
        formula `f`? Plain JSON values are decided here (values.plain_type_holds, exact per
        draft), others by the judge's own type checker, made when first needed."""
        integral_floats = self.judge_draft(f) not in ("draft-03", "draft-04")
        checker = None

        def judge(value: Any, types: list[str]) -> bool:
            nonlocal checker
            got = plain_type_holds(value, types, integral_floats)
            if got is None:
                checker = self.validator(f) if checker is None else checker
                got = any(checker.is_type(value, t) for t in types)
            return got

        return judge

    def validator(self, f: Formula):
        """The jsonschema validator of the src formula `f` (its dialect, its resolver, formats as asserted)."""
        import jsonschema.validators as jv

        info = f.src
        name = self.judge_draft(f)
        cls = {
            "draft-03": jv.Draft3Validator,
            "draft-04": jv.Draft4Validator,
            "draft-06": jv.Draft6Validator,
            "draft-07": jv.Draft7Validator,
            "draft2019-09": jv.Draft201909Validator,
        }.get(name) or legacy_items_2020_validator()
        cls = self.vocabularies.judge_class(cls, info.spec)
        checker = cls.FORMAT_CHECKER if self.vocabularies.format_asserted(info.spec) else None
        resolver = self.resolver_of(f)
        base = cls(self.root if isinstance(self.root, dict) else {}, registry=self.registry, format_checker=checker)
        return base.evolve(schema=info.schema, _resolver=resolver)


class Normalizer:
    """Normalises one root schema: a raw schema's conjuncts are functions of this object
    (schema.applicators, keywords, refs), which joins the compile's `SchemaSource` (what the
    schemas say) and its `FormulaAlgebra` (the formulas, their memoised normal forms, the reporter).

    `Normalizer(root, ...)` builds both and the root formula; `normalized` is what it hands the
    emitter. The algebra normalises a raw schema it reaches through a working Normalizer over the
    same two (`working`), made for that call, so nothing the algebra or the emitter holds refers
    to a Normalizer. The attributes below are the two services' own (bound methods and tables),
    copied once, so the functions of the normaliser ask them without a delegating call."""

    def __init__(
        self, root: Any, reporter: Reporter | None = None, formats: str = "assert", documents: Any = None, strings: StringLanguages | None = None,
        root_text: str | None = None,
    ):
        """`documents`, `root_text`: see SchemaSource. `strings`: the compile's string-language
        service (a new one by default). `reporter`: where refusals go (strict by default)."""
        source = SchemaSource(root, formats, documents, root_text)
        strings = strings if strings is not None else StringLanguages()
        self._join(source, FormulaAlgebra(source, reporter or Reporter(True), strings, source.uses_unevaluated))
        if isinstance(root, dict):
            self.root_formula = self.src(root, source.resolver, source.spec, "", source.scope.enter((), source.resolver))
        else:
            self.root_formula = TRUE if root else FALSE

    @classmethod
    def working(cls, source: SchemaSource, formulas: FormulaAlgebra) -> Normalizer:
        """A normaliser over `source` and `formulas` for one lazy step of the algebra."""
        norm = cls.__new__(cls)
        cls._join(norm, source, formulas)
        return norm

    def _join(self, source: SchemaSource, formulas: FormulaAlgebra) -> None:
        self.source = source
        self.formulas = formulas
        # what the schemas say
        self.root = source.root
        self.formats = source.formats
        self.documents = source.documents
        self.vocabularies = source.vocabularies
        self.registry = source.registry
        self.resolver = source.resolver
        self.spec = source.spec
        self.scope = source.scope
        self.pointers = source.pointers
        self.uses_unevaluated = source.uses_unevaluated
        self.has_recursive_anchor = source.has_recursive_anchor
        self.view = source.view
        self.plain_pointer = source.plain_pointer
        self.type_judge = source.type_judge
        # the formula algebra
        self.tables = formulas.tables
        self.strings = formulas.strings
        self.compile_reporter = formulas.compile_reporter
        self.and_ = formulas.and_
        self.or_ = formulas.or_
        self.not_ = formulas.not_
        self.const_ = formulas.const_
        self.const_value = formulas.const_value
        self.dnf = formulas.dnf
        self.value_formula = formulas.value_formula
        self.obj_contradicts = formulas.obj_contradicts
        self.rule_applies = formulas.rule_applies
        self.is_empty = formulas.is_empty
        self.satisfies = formulas.satisfies
        self.trial = formulas.trial

    @property
    def reporter(self) -> Reporter:
        """Where refusals go now (a strict one during the algebra's trial)."""
        return self.formulas.reporter

    @property
    def normalized(self) -> NormalizedSchema:
        """What the emitter receives: the root formula and the algebra's answers (an immutable
        value that holds neither this normaliser nor its source's tables directly)."""
        return NormalizedSchema.of(self.root_formula, self.formulas)

    @contextmanager
    def emitting(self) -> Iterator[NormalizedSchema]:
        """`normalized`, with the algebra's lazy steps taken by this normaliser until the block
        ends (SchemaSource.steps_through): the emission that runs in the block still reaches
        only the value, never this normaliser."""
        with self.source.steps_through(self):
            yield self.normalized

    # ---- formulas of raw schemas ----

    def src(self, schema: Any, resolver: Any, spec: Any, pointer: str | None = None, scope: tuple = ()) -> Formula:
        if schema is True:
            return TRUE
        if schema is False:
            return FALSE
        if not isinstance(schema, dict):
            raise invalid(f"a schema must be an object or a boolean, not {schema!r}", "", pointer or "")
        key = ("src", self.source.content(schema), base_uri(resolver), scope)
        got = self.formulas.interned(key)
        if got is not None:
            return got
        ptr = self.source.pointers.get(id(schema), pointer if pointer is not None else "?")
        return self.formulas.intern("src", key, (), SrcInfo(schema, resolver, spec, ptr, scope))

    def sub(self, f: Formula, schema: Any, *path: Any) -> Formula:
        """The formula of a subschema of the src formula `f` (reached by `path` from it)."""
        info = f.src
        ptr = self.pointers.get(id(schema)) if isinstance(schema, dict) else None  # (src's pointer)
        if ptr is None:  # a boolean schema, or an object the index did not reach: written from the path
            ptr = info.pointer + "".join("/" + escape_pointer(p) for p in path)
        if not isinstance(schema, dict):
            return self.src(schema, info.resolver, info.spec, ptr)
        if _ENTERING_KEYS.isdisjoint(schema):  # (most subschemas) f's dialect and base URI hold in it
            spec, resolver = info.spec, info.resolver
        else:
            spec = self.vocabularies.dialect_spec(schema, info.spec)
            resolver = entered(info.resolver, schema, spec)
        return self.src(schema, resolver, spec, ptr, self.scope.enter(info.scope, resolver) if self.scope.active else ())

