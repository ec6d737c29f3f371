"""schema.dialects: the keyword vocabulary of each draft matches what jsonschema validates in that
draft (a keyword outside it is an annotation, as jsonschema treats it, and the normaliser agrees);
`legacy_items_2020` crawls resources inside an array-form `items`; `legacy_items_2020_validator`
judges an array-form `items` as 2019-09 does and a schema-form one as 2020-12 does."""

from __future__ import annotations

import jsonschema.validators as jv
import pytest
import referencing

from strictgen.grammar.schema.dialects import ALL_KEYWORDS, DIALECT_KEYWORDS, legacy_items_2020, legacy_items_2020_validator, unresolved_dialect

from .oracle import SEEDS, check_agreement, normalizer

VALIDATORS = {
    "draft-04": jv.Draft4Validator,
    "draft-06": jv.Draft6Validator,
    "draft-07": jv.Draft7Validator,
    "draft2019-09": jv.Draft201909Validator,
}
# keywords jsonschema reads inside another keyword's function rather than as their own
COMPANIONS = {"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum", "then": "if", "else": "if", "minContains": "contains", "maxContains": "contains"}


@pytest.mark.parametrize("draft", sorted(VALIDATORS))
def test_each_vocabulary_is_what_jsonschema_validates_in_that_draft(draft):
    ours = DIALECT_KEYWORDS[draft]
    theirs = set(VALIDATORS[draft].VALIDATORS)
    assert theirs <= ours
    assert all(COMPANIONS.get(k) in theirs for k in ours - theirs), sorted(ours - theirs)
    assert ours <= ALL_KEYWORDS


URIS = {
    "draft-04": "http://json-schema.org/draft-04/schema#",
    "draft-07": "http://json-schema.org/draft-07/schema#",
    "draft2019-09": "https://json-schema.org/draft/2019-09/schema",
}


@pytest.mark.parametrize(
    "draft,keywords",
    [
        ("draft-04", {"const": 1}),
        ("draft-04", {"if": {"type": "string"}, "then": {"maxLength": 1}}),
        ("draft-07", {"dependentRequired": {"a": ["b"]}, "type": "object"}),
        ("draft2019-09", {"dependencies": {"a": ["b"]}, "prefixItems": [{"type": "string"}]}),
        ("draft2019-09", {"dependentRequired": {"a": ["b"]}}),  # defined there: enforced
        ("draft-07", {"contains": {"type": "string"}, "minContains": 2}),  # minContains is 2019-09's
    ],
)
def test_keywords_outside_a_declared_draft_are_annotations_as_in_jsonschema(draft, keywords):
    schema = {"$schema": URIS[draft], **keywords}
    judge = jv.validator_for(schema)(schema)
    norm = normalizer(schema)
    check_agreement(norm, judge, SEEDS + [{"a": 1}, ["s"], [1, "s"], ["s", "t"]], norm.dnf(norm.root_formula))


def test_legacy_spec_crawls_resources_inside_an_array_form_items():
    inner = {"$id": "https://ex.test/inner", "type": "integer"}
    root = {"$id": "https://ex.test/root", "items": [inner], "additionalItems": {"$id": "https://ex.test/extra", "type": "string"}}
    registry = referencing.Registry().with_resource("https://ex.test/root", legacy_items_2020().create_resource(root)).crawl()
    assert registry.contents("https://ex.test/inner") is inner
    assert registry.contents("https://ex.test/extra")["type"] == "string"
    plain = referencing.Registry().with_resource("https://ex.test/root", referencing.jsonschema.DRAFT202012.create_resource(root))
    with pytest.raises(AttributeError):  # why the legacy spec exists: 2020-12 proper fails on the list
        plain.crawl()


@pytest.mark.parametrize(
    "schema,judge",
    [
        ({"items": [{"type": "integer"}, {"type": "string"}], "additionalItems": False}, jv.Draft201909Validator),
        ({"items": [{"type": "integer"}], "additionalItems": {"type": "string"}}, jv.Draft201909Validator),
        ({"items": {"type": "integer"}, "prefixItems": [{"type": "string"}]}, jv.Draft202012Validator),
        ({"items": {"type": "integer"}, "additionalItems": False}, jv.Draft202012Validator),  # not a 2020-12 keyword
    ],
)
def test_the_legacy_validator_reads_items_by_its_form(schema, judge):
    ours = legacy_items_2020_validator()(schema)
    theirs = judge(schema)
    for v in [[], [1], ["a"], [1, "a"], [1, 2], ["a", 1], [1, "a", "b"], [1, "a", 3], "x"]:
        assert ours.is_valid(v) == theirs.is_valid(v), v


@pytest.mark.parametrize(
    "uri",
    [
        "https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2019-09/schema#", "http://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-07/schema", "http://json-schema.org/draft-06/schema#", "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-04/schema", "http://json-schema.org/draft-03/schema#", "http://json-schema.org/draft-04/schema##",
        "https://json-schema.org/draft-07/schema#", "http://json-schema.org/schema#", "https://example.com/custom", "", None, 7,
    ],
)
def test_unresolved_dialects_are_the_ones_referencing_names(uri):
    """A standard `$schema` gets referencing's name for the draft (2020-12: legacy_items_2020's,
    also without `$schema`) without importing referencing; any other value is left to referencing
    (None)."""
    import referencing.jsonschema as rj

    got = unresolved_dialect(uri)
    if uri is None:
        assert got.name == legacy_items_2020().name
        return
    try:
        spec = rj.specification_with(uri) if isinstance(uri, str) else None
    except rj.UnknownDialect:
        spec = None
    if spec is None:
        assert got is None
    else:
        assert got.name == (legacy_items_2020() if spec is rj.DRAFT202012 else spec).name


def test_import_lazy_modules_imports_what_a_first_compile_would():
    """A fresh interpreter: `import strictgen` leaves referencing, jsonschema and the string formats
    unimported (they stay lazy); import_lazy_modules() (a server's start, the bench's warm-up)
    imports all three."""
    from tests.helpers import fresh_interpreter_words

    lazy = ("referencing", "jsonschema", "strictgen.grammar.string_formats")
    code = (
        "import sys, strictgen\n"
        f"lazy = {lazy!r}\n"
        "print(sum(m in sys.modules for m in lazy))\n"
        "from strictgen.grammar.schema.dialects import import_lazy_modules\n"
        "import_lazy_modules()\n"
        "print(sum(m in sys.modules for m in lazy))\n"
    )
    assert fresh_interpreter_words(code) == ["0", "3"]
