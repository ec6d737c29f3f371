"""The JSON Schema front end: `entry.json_schema_grammar` (re-exported by `grammar.json_schema`).

Two steps, data flowing one way (normaliser → immutable value → emitter), one concern a module:
- normalise the schema into the schema IR (`ir`: formulas, the per-type constraints of a conjunct,
  string atoms): `normalize` (`SchemaSource`: the documents, their registry and the jsonschema
  judge; `Normalizer`: a source joined with the formula algebra, one class without mixins, whose
  functions are the modules that follow), `refs` ($ref, $dynamicRef and $id resolution),
  `applicators` (allOf/anyOf/oneOf/not/if, dependencies, enum/const), `keywords` (type keywords →
  constraints, unevaluated*), with `documents` (other documents a $ref may name), `dialects` and
  `vocabularies` ($schema and $vocabulary), `values` (JSON values, equality, the reporter) and
  `limits` (size and depth bounds);
- the services both steps ask, which call neither step: `formulas` (the compile's formula algebra:
  interning, `and_`/`not_`, memoised normal forms, emptiness, membership, member value schemas;
  raw schemas reach their normal form through its lazy step, the SchemaSource) with `algebra`
  (its functions: dnf, product, negation, disjointness), `strings` (the string-language service)
  and `key_space` (which keys an object may have);
- `normalized`: what the normaliser hands the emitter, an immutable value (the root formula and
  the formula algebra's answers);
- emit grammar IR from the normalised conjuncts: `emitter` (the core: rules, literal values,
  separators), `emit_numbers`, `emit_strings`, `emit_arrays`, `emit_objects`, with `counting`
  (counting constructions), `key_sets` (any_order members built at run time), `length_product` (a
  pattern under a long length bound, built at run time), `unique` and `unique_strings`
  (uniqueItems, followed by the matcher) and `rule_sizes` (which rules the automaton compiler
  keeps as calls).
"""
