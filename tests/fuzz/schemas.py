"""Random JSON Schemas and documents for the differential fuzz campaign.

Two sources of schemas: hypothesis-jsonschema (its documents for any schema, `from_schema`) and our own
generator below, which reaches the keywords that hypothesis-jsonschema skips or rarely draws:
`$ref` graphs (recursive ones included), anyOf/oneOf/not/if-then-else, patternProperties,
propertyNames, uniqueItems, contains, dependentRequired, dependentSchemas and unevaluated*.
Patterns are drawn from the part of the regex syntax where Python's `re.search` (what `jsonschema`
runs) and ECMA agree: ASCII literals and classes, groups, alternation, quantifiers, a leading `^`.

Documents: members drawn by hypothesis-jsonschema where it can, near-misses built from the schema's
own names, values and bounds, and mutations of both. The judge (`jsonschema`, Draft 2020-12) says
which are valid; the generator never decides.
"""

from __future__ import annotations

import json
import random
import warnings

import jsonschema

from tests.fuzz.languages import regex_text

NAMES = ["a", "b", "id", "name", "x-y", "é", "ok"]
STRINGS = ["", "a", "ab", "abc", "hello", "A1", "é", "你好", "x-y", "\n", "0", "aaaa"]
SAFE_CHARS = "abcxyz019AZ-_"


def safe_pattern(rnd: random.Random) -> str:
    """A pattern `re.search` and ECMA read alike."""

    def node(depth: int) -> list:
        r = rnd.random()
        if depth <= 0 or r < 0.4:
            if rnd.random() < 0.5:
                return ["lit", "".join(rnd.choice(SAFE_CHARS) for _ in range(rnd.randint(1, 2)))]
            a, b = sorted((ord(rnd.choice(SAFE_CHARS)), ord(rnd.choice(SAFE_CHARS))))
            return ["cls", False, [[a, b]]]
        if r < 0.65:
            return ["seq", [node(depth - 1) for _ in range(2)]]
        if r < 0.8:
            return ["alt", [node(depth - 1) for _ in range(2)]]
        lo, hi = rnd.choice([(0, None), (1, None), (0, 1), (1, 3)])
        return ["rep", node(depth - 1), lo, hi]

    text = regex_text(node(rnd.randint(0, 3)), python=False)
    return ("^" + text) if rnd.random() < 0.5 else text


class SchemaGenerator:
    """Random schemas over the keywords of Draft 2020-12 that strictgen claims to enforce."""

    def __init__(self, rnd: random.Random):
        self.rnd = rnd
        self.defs: dict[str, dict] = {}

    def schema(self) -> dict | bool:
        rnd = self.rnd
        self.defs = {}
        if rnd.random() < 0.3:  # a $ref graph: definitions that may refer to each other and themselves
            for i in range(rnd.randint(1, 3)):
                self.defs[f"d{i}"] = {}
            for name in list(self.defs):
                self.defs[name] = self.node(2, refs=True)
        root = self.node(rnd.randint(1, 3), refs=bool(self.defs))
        if self.defs and isinstance(root, dict):
            root = {**root, "$defs": self.defs}
        return root

    def node(self, depth: int, refs: bool = False) -> dict | bool:
        rnd = self.rnd
        if refs and self.defs and rnd.random() < 0.2:
            return {"$ref": "#/$defs/" + rnd.choice(list(self.defs))}
        if depth <= 0 or rnd.random() < 0.2:
            return self.leaf()
        k = rnd.random()
        if k < 0.3:
            s = self.object(depth, refs)
        elif k < 0.5:
            s = self.array(depth, refs)
        elif k < 0.75:
            kw = rnd.choice(["anyOf", "oneOf", "allOf"])
            s = {kw: [self.node(depth - 1, refs) for _ in range(rnd.randint(1, 3))]}
        elif k < 0.85:
            s = {"not": self.node(depth - 1, refs)}
            if rnd.random() < 0.7:
                s["type"] = rnd.choice(["string", "integer", "object", "array"])
        elif k < 0.92:
            s = {"if": self.node(depth - 1, refs), "then": self.node(depth - 1, refs)}
            if rnd.random() < 0.5:
                s["else"] = self.node(depth - 1, refs)
        else:
            s = self.leaf()
            if isinstance(s, dict):
                s["anyOf"] = [self.node(depth - 1, refs), self.node(depth - 1, refs)]
        return s

    def leaf(self) -> dict | bool:
        rnd = self.rnd
        k = rnd.random()
        if k < 0.04:
            return rnd.choice([True, False])
        if k < 0.1:
            return {"enum": rnd.sample([None, True, 0, 1, 1.5, "a", "é", [], {}, [1, "a"], {"a": 1}], rnd.randint(1, 4))}
        if k < 0.14:
            return {"const": rnd.choice([None, False, 2, -0.5, "x", [1, 2], {"a": [None]}])}
        kind = rnd.choice(["string", "integer", "number", "boolean", "null", ["string", "null"], ["integer", "string"]])
        s: dict = {"type": kind}
        kinds = kind if isinstance(kind, list) else [kind]
        if "string" in kinds:
            if rnd.random() < 0.4:
                s["minLength"] = rnd.randint(0, 3)
            if rnd.random() < 0.4:
                s["maxLength"] = s.get("minLength", 0) + rnd.randint(0, 4)
            if rnd.random() < 0.3:
                s["pattern"] = safe_pattern(rnd)
        if "integer" in kinds or "number" in kinds:
            for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                if rnd.random() < 0.25:
                    s[key] = rnd.choice([-10, -1, 0, 1, 2, 7, 100, 2.5, -0.5])
            if rnd.random() < 0.2:
                s["multipleOf"] = rnd.choice([2, 3, 5, 0.5, 0.25, 10])
        return s

    def object(self, depth: int, refs: bool) -> dict:
        rnd = self.rnd
        names = rnd.sample(NAMES, rnd.randint(0, 4))
        s: dict = {"type": "object"} if rnd.random() < 0.8 else {}
        if names:
            s["properties"] = {n: self.node(depth - 1, refs) for n in names}
            if rnd.random() < 0.6:
                s["required"] = rnd.sample(names, rnd.randint(0, len(names)))
        k = rnd.random()
        if k < 0.3:
            s["additionalProperties"] = False
        elif k < 0.45:
            s["additionalProperties"] = self.node(depth - 1, refs)
        elif k < 0.6:
            s["unevaluatedProperties"] = rnd.choice([False, self.node(depth - 1, refs)])
        if rnd.random() < 0.25:
            s["patternProperties"] = {safe_pattern(rnd): self.node(depth - 1, refs)}
        if rnd.random() < 0.15:
            s["propertyNames"] = rnd.choice([{"maxLength": rnd.randint(1, 3)}, {"pattern": safe_pattern(rnd)}, {"enum": rnd.sample(NAMES, 3)}])
        if rnd.random() < 0.2:
            s["minProperties"] = rnd.randint(0, 2)
        if rnd.random() < 0.2:
            s["maxProperties"] = rnd.randint(1, 4)
        if names and rnd.random() < 0.2:
            s["dependentRequired"] = {rnd.choice(names): rnd.sample(NAMES, rnd.randint(1, 2))}
        if names and rnd.random() < 0.2:
            s["dependentSchemas"] = {rnd.choice(names): self.object(depth - 1, refs) if depth > 1 else {"required": [rnd.choice(NAMES)]}}
        return s

    def counted(self) -> dict | bool:
        """A schema around objects whose minProperties members with unlisted names could reach
        (compile/distinct_names.py): under anyOf/oneOf with other objects, inside arrays (unique or
        not), as members of other objects, or alone; key languages both endless and finite."""
        rnd = self.rnd
        self.defs = {}
        obj = self.counted_object()
        k = rnd.random()
        if k < 0.25:
            return {rnd.choice(["anyOf", "oneOf"]): [obj, self.object(1, False) if rnd.random() < 0.5 else {"type": "object", "additionalProperties": self.leaf()}]}
        if k < 0.4:
            return {"type": "array", "items": obj, **({"uniqueItems": True} if rnd.random() < 0.4 else {})}
        if k < 0.55:
            return {"type": "object", "properties": {rnd.choice(NAMES): obj}, "additionalProperties": obj if rnd.random() < 0.3 else rnd.choice([True, False])}
        return obj

    def counted_object(self) -> dict:
        rnd = self.rnd
        names = rnd.sample(NAMES, rnd.randint(0, 3))
        s: dict = {"type": "object"}
        if names:
            s["properties"] = {n: self.node(1) for n in names}
            if rnd.random() < 0.4:
                s["required"] = rnd.sample(names, rnd.randint(0, len(names)))
        k = rnd.random()
        if k < 0.3:
            s["additionalProperties"] = self.leaf()
        elif k < 0.4:
            s["additionalProperties"] = False
            s["patternProperties"] = {safe_pattern(rnd): self.leaf()}
        elif k < 0.5:
            s["propertyNames"] = rnd.choice([{"maxLength": rnd.randint(1, 3)}, {"minLength": 1}, {"pattern": safe_pattern(rnd)}])
        elif k < 0.6:
            s["patternProperties"] = {safe_pattern(rnd): self.leaf()}
        lo = rnd.randint(2, 5)
        if rnd.random() < 0.2:
            s["not"] = {"maxProperties": lo - 1}
        else:
            s["minProperties"] = lo
        if rnd.random() < 0.3:
            s["maxProperties"] = lo + rnd.randint(0, 2)
        return s

    def array(self, depth: int, refs: bool) -> dict:
        rnd = self.rnd
        s: dict = {"type": "array"} if rnd.random() < 0.8 else {}
        if rnd.random() < 0.3:
            s["prefixItems"] = [self.node(depth - 1, refs) for _ in range(rnd.randint(1, 3))]
        k = rnd.random()
        if k < 0.6:
            s["items"] = self.node(depth - 1, refs) if rnd.random() < 0.9 else False
        elif k < 0.75:
            s["unevaluatedItems"] = rnd.choice([False, self.node(depth - 1, refs)])
        if rnd.random() < 0.3:
            s["minItems"] = rnd.randint(0, 3)
        if rnd.random() < 0.3:
            s["maxItems"] = s.get("minItems", 0) + rnd.randint(0, 3)
        if rnd.random() < 0.25:
            s["uniqueItems"] = True
        if rnd.random() < 0.15:
            s["contains"] = self.node(depth - 1, refs)
            if rnd.random() < 0.5:
                s["minContains"] = rnd.randint(0, 2)
            if rnd.random() < 0.3:
                s["maxContains"] = rnd.randint(1, 3)
        return s


def _clause(keyword: str, value: dict) -> dict:
    return {"type": "array", "items": [{"const": keyword}, value], "minItems": 2, "additionalItems": False}  # draft 7: its dialect


_TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]
_PROPERTY = {"type": "array", "items": [{"enum": NAMES}, {"enum": ["integer", "string", "boolean", "null", "number"]}], "minItems": 2, "additionalItems": False}
# A schema as a list of [keyword, value] clauses. hypothesis-jsonschema 0.23.1 cannot draw objects
# with hypothesis >= 6.1xx (`many.more` is gone: AttributeError in from_object_schema), so the
# metaschema describes arrays only and `hypothesis_schema` assembles the object.
META = {
    "type": "array",
    "maxItems": 6,
    "items": {
        "anyOf": [
            _clause("type", {"enum": _TYPES}),
            _clause("minLength", {"type": "integer", "minimum": 0, "maximum": 4}),
            _clause("maxLength", {"type": "integer", "minimum": 0, "maximum": 6}),
            _clause("minimum", {"type": "integer", "minimum": -20, "maximum": 20}),
            _clause("maximum", {"type": "integer", "minimum": -20, "maximum": 20}),
            _clause("exclusiveMinimum", {"type": "number", "minimum": -20, "maximum": 20}),
            _clause("multipleOf", {"enum": [1, 2, 3, 0.5, 0.1]}),
            _clause("minItems", {"type": "integer", "minimum": 0, "maximum": 3}),
            _clause("maxItems", {"type": "integer", "minimum": 0, "maximum": 4}),
            _clause("uniqueItems", {"type": "boolean"}),
            _clause("items", {"type": "array", "items": {"enum": _TYPES}, "minItems": 1, "maxItems": 1}),
            _clause("enum", {"type": "array", "minItems": 1, "maxItems": 4, "items": {"type": ["integer", "string", "null", "boolean"], "maxLength": 3}}),
            _clause("required", {"type": "array", "items": {"enum": NAMES}, "uniqueItems": True, "maxItems": 3}),
            _clause("properties", {"type": "array", "items": _PROPERTY, "maxItems": 3}),
            _clause("additionalProperties", {"type": "boolean"}),
            _clause("minProperties", {"type": "integer", "minimum": 0, "maximum": 3}),
        ]
    },
}


_META_CHECK = jsonschema.Draft7Validator(META)


def hypothesis_schema(seed: int) -> dict | None:
    """A schema drawn by hypothesis-jsonschema, as clauses of META (None where the draw failed)."""
    from hypothesis_jsonschema import from_schema

    got = draw_examples(from_schema(META), seed, 8)  # hypothesis draws the simplest example first: take a later one
    # hypothesis-jsonschema sometimes draws past a tuple's `additionalItems: false` (seen twice in
    # the long campaign, not reproducible in a fresh process): such draws are left out
    got = got[:1] + [g for g in got[1:] if _META_CHECK.is_valid(g)]
    if len(got) < 2:
        return None
    schema: dict = {}
    for keyword, value in random.Random(seed).choice(got[1:]):
        if keyword == "items":
            value = {"type": value[0]}
        elif keyword == "properties":
            value = {name: {"type": kind} for name, kind in value}
        schema[keyword] = value
    return schema


def draw_examples(strategy, seed: int, n: int) -> list:
    """Up to `n` examples of a hypothesis strategy, the same for the same seed (no database, no shrinking)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    out: list = []

    @hseed(seed)
    @settings(max_examples=n, database=None, phases=[Phase.generate], deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(x):
        out.append(x)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            collect()
        except Exception:  # noqa: BLE001  (an unsatisfiable or unsupported schema: no examples from it)
            pass
    return out[:n]


def member_examples(schema, seed: int, n: int = 4) -> list:
    """Documents hypothesis-jsonschema draws for `schema` ([] where it cannot)."""
    try:
        from hypothesis_jsonschema import from_schema

        strategy = from_schema(schema)
    except Exception:  # noqa: BLE001  (keywords it does not support: unevaluated*, recursive refs, ...)
        return []
    return draw_examples(strategy, seed, n)


def near_value(rnd: random.Random, schema, depth: int = 3):
    """A value shaped by `schema` (its names, enums, bounds), valid or not: the judge decides."""
    if not isinstance(schema, dict) or depth <= 0 or rnd.random() < 0.1:
        return random_value(rnd, 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema and rnd.random() < 0.6:
            return near_value(rnd, rnd.choice(schema[key]), depth)
    if "enum" in schema and rnd.random() < 0.8:
        return rnd.choice(schema["enum"])
    if "const" in schema and rnd.random() < 0.8:
        return schema["const"]
    kind = schema.get("type")
    kind = rnd.choice(kind) if isinstance(kind, list) else kind
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema or "prefixItems" in schema else rnd.choice(["object", "array", "string", "integer"])
    if kind == "object":
        props = schema.get("properties", {})
        out = {}
        for name in list(props) + rnd.sample(NAMES, 1):
            if name in schema.get("required", ()) or rnd.random() < 0.6:
                out[name] = near_value(rnd, props.get(name, {}), depth - 1)
        return out
    if kind == "array":
        prefix = schema.get("prefixItems", [])
        lo = schema.get("minItems", 0)
        n = rnd.randint(lo, max(lo, schema.get("maxItems", lo + 3)))  # maxItems < minItems: an empty schema
        out = [near_value(rnd, prefix[i] if i < len(prefix) else schema.get("items", {}), depth - 1) for i in range(n)]
        if out and rnd.random() < 0.2:
            out.append(out[0])
        return out
    if kind == "string":
        lo = schema.get("minLength", 0)
        hi = schema.get("maxLength", lo + 4)
        text = "".join(rnd.choice("abcxyz019AZ-_é你") for _ in range(rnd.randint(lo, max(lo, hi))))
        return text
    if kind in ("integer", "number"):
        bounds = [schema[k] for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in schema]
        base = rnd.choice(bounds) if bounds and rnd.random() < 0.7 else rnd.randint(-12, 12)
        value = base + rnd.choice([0, 1, -1, 0.5, 2])
        if kind == "integer" and rnd.random() < 0.8:
            value = int(value)
        if "multipleOf" in schema and rnd.random() < 0.5:
            value = schema["multipleOf"] * rnd.randint(-4, 4)
        return value
    if kind == "boolean":
        return rnd.random() < 0.5
    return None


def random_value(rnd: random.Random, depth: int):
    k = rnd.random()
    if depth > 0 and k < 0.15:
        return [random_value(rnd, depth - 1) for _ in range(rnd.randint(0, 3))]
    if depth > 0 and k < 0.3:
        return {rnd.choice(NAMES): random_value(rnd, depth - 1) for _ in range(rnd.randint(0, 3))}
    return rnd.choice([None, True, False, 0, 1, -1, 2, 3.5, 1e21, -0.0, 10, "", "a", "é", "ab", "你好", 1.0])


def mutate_value(rnd: random.Random, value):
    """One small structural change somewhere in `value`."""
    if isinstance(value, dict) and value and rnd.random() < 0.7:
        key = rnd.choice(list(value))
        k = rnd.random()
        if k < 0.3:
            return {n: v for n, v in value.items() if n != key}
        if k < 0.5:
            return {**value, rnd.choice(NAMES): random_value(rnd, 1)}
        return {**value, key: mutate_value(rnd, value[key])}
    if isinstance(value, list) and value and rnd.random() < 0.7:
        i = rnd.randrange(len(value))
        k = rnd.random()
        if k < 0.3:
            return value[:i] + value[i + 1 :]
        if k < 0.5:
            return value + [value[i]]
        return value[:i] + [mutate_value(rnd, value[i])] + value[i + 1 :]
    if isinstance(value, str) and rnd.random() < 0.5:
        return value + rnd.choice("aZ9-é") if rnd.random() < 0.6 else value[:-1]
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)) and rnd.random() < 0.7:
        return value + rnd.choice([1, -1, 0.5])
    return random_value(rnd, 1)


LAYOUTS = [{}, {"separators": (",", ":")}, {"indent": 2}, {"ensure_ascii": False}, {"indent": 1, "ensure_ascii": False}]


def with_members(rnd: random.Random, value, most: int = 6):
    """`value` with members of fresh names added to its objects (some of NAMES, some made up) up
    to 2..`most` members each, so that documents reach the minProperties they are drawn for."""
    if isinstance(value, list):
        return [with_members(rnd, v, most) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: with_members(rnd, v, most) for k, v in value.items()}
    for _ in range(rnd.randint(2, most) - len(out)):
        name = rnd.choice(NAMES) if rnd.random() < 0.5 else "".join(rnd.choice(SAFE_CHARS + "é") for _ in range(rnd.randint(1, 3)))
        out.setdefault(name, random_value(rnd, 0))
    return out


def with_repeated_name(rnd: random.Random, text: str) -> str | None:
    """`text` (JSON) with one object's member written again, at its end, with its name maybe
    \\u-escaped and its value maybe another; None when the text holds no object with a member."""
    value = json.loads(text)
    objects = []

    def walk(v):
        if isinstance(v, dict):
            if v:
                objects.append(v)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    if not objects:
        return None
    target = rnd.choice(objects)
    name = rnd.choice(list(target))
    again = target[name] if rnd.random() < 0.5 else random_value(rnd, 1)
    spelled = json.dumps(name) if rnd.random() < 0.6 else '"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c for c in name) + '"'

    def dump(v) -> str:
        if isinstance(v, dict):
            members = [json.dumps(k) + ":" + dump(x) for k, x in v.items()]
            if v is target:
                members.append(spelled + ":" + dump(again))
            return "{" + ",".join(members) + "}"
        if isinstance(v, list):
            return "[" + ",".join(dump(x) for x in v) + "]"
        return json.dumps(v)

    return dump(value)


def schema_documents(rnd: random.Random, schema, seed: int, n: int = 5) -> list[str]:
    """JSON texts to judge against `schema`: members, near-misses and mutations, in random layouts."""
    values = member_examples(schema, seed, n)
    values += [near_value(rnd, schema) for _ in range(n)]
    values += [mutate_value(rnd, rnd.choice(values)) for _ in range(n)]
    texts = [json.dumps(v, **rnd.choice(LAYOUTS)) for v in values]
    return list(dict.fromkeys(texts))
