"""The JSON Schema front end: `entry.json_schema_grammar` (re-exported by `grammar.json_schema`).

Two steps, data flowing one way (normaliser → schema IR → emitter), one concern a module:
- normalise the schema into the schema IR (`ir`: formulas, the per-type constraints of a conjunct,
  string atoms): `normalize` (the Normalizer, made of the mixins below), `refs` ($ref, $dynamicRef
  and $id resolution), `documents` (other documents a $ref may name), `dialects` and
  `vocabularies` ($schema and $vocabulary), `values` (JSON values, equality, the reporter),
  `limits` (size and depth bounds), `applicators` (allOf/anyOf/oneOf/not/if and unevaluated*),
  `keywords` (type keywords → constraints), `algebra` (dnf, product, negation, disjointness);
- the questions both steps ask: `strings` (the compile's string-language service, which calls
  neither step) and `key_space` (which keys an object may have, from the normaliser's formulas);
- emit grammar IR from the normalised conjuncts: `emitter` (the core: rules, literal values,
  separators), `emit_numbers`, `emit_strings`, `emit_arrays`, `emit_objects`, with `counting`
  (counting constructions), `key_sets` (any_order members built at run time), `length_product` (a pattern under a long length bound, built at run time),
  `unique` and `unique_strings` (uniqueItems, followed by the matcher) and `rule_sizes` (which
  rules the automaton compiler keeps as calls).
"""
