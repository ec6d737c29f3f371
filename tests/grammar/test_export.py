"""Export of the grammar IR as GBNF and Lark (strictgen.grammar.export), read back.

Round trip: a schema's grammar, exported and compiled again by our own GBNF or Lark front end,
accepts exactly the documents the schema's grammar does (official JSON-Schema-Test-Suite and
maskbench-dev samples, from ../shared/data); Lark grammars go through IR -> text -> IR with the
same verdicts on random members and mutations; the `lark` package reads our Lark output and
llama.cpp (llama-cpp-python, with the embedded model's vocabulary) loads our GBNF."""

from __future__ import annotations

import json
import random
from pathlib import Path

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.cli import main
from strictgen.grammar.export import export_grammar
from strictgen.grammar.json_schema import json_schema_grammar
from strictgen.grammar.lark import parse_lark

from ..helpers import mutated
from .lark_sample import derive
from .test_lark import GRAMMARS

DATA = Path(__file__).parents[2] / ".." / "shared" / "data"
SUITE = DATA / "json-schema-test-suite" / "draft2020-12"
MASKBENCH = DATA / "maskbench-dev"
SUITE_FILES = ["properties", "enum", "anyOf", "not", "pattern", "minLength", "prefixItems", "ref", "uniqueItems"]
MASKBENCH_STRIDE = 250  # every 250th file: 9 schemas


@pytest.fixture(scope="module")
def compiler():
    """Membership only: a byte vocabulary is enough (masks are not asked for)."""
    tok = sg.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b""], eos_token_ids=[256])
    return sg.GrammarCompiler(tok)


def accepts(compiled, text: str) -> bool:
    m = sg.GrammarMatcher(compiled)
    return m.accept_string(text) and m.can_end()


def read_back(compiler, text: str, target: str):
    return compiler.compile_grammar(text) if target == "gbnf" else compiler.compile_lark(text)


def groups():
    out = []
    if SUITE.is_dir():
        for name in SUITE_FILES:
            for i, g in enumerate(json.loads((SUITE / f"{name}.json").read_text())):
                out.append(pytest.param(g["schema"], [t["data"] for t in g["tests"]], id=f"{name}#{i}"))
    if MASKBENCH.is_dir():
        for path in sorted(MASKBENCH.glob("*.json"))[::MASKBENCH_STRIDE]:
            d = json.loads(path.read_text())
            out.append(pytest.param(d["schema"], [t["data"] for t in d["tests"]], id=path.stem))
    return out


@pytest.mark.skipif(not SUITE.is_dir(), reason=f"{SUITE} is absent")
@pytest.mark.parametrize("target", ["gbnf", "lark"])
@pytest.mark.parametrize("schema, documents", groups())
def test_round_trip_accepts_what_the_schema_does(compiler, schema, documents, target):
    try:
        original = compiler.compile_json_schema(schema)
    except sg.StrictgenError:
        pytest.skip("the schema itself is refused")
    exported = original.export(target)
    try:
        back = read_back(compiler, exported.text, target)
    except sg.GrammarTooLargeError as exc:  # the DFA rules of big string languages (formats, key sets)
        pytest.xfail(f"our own compiler refuses the exported text: {exc}")
    texts = [f(d) for d in documents for f in (json.dumps, lambda d: json.dumps(d, separators=(",", ":"), ensure_ascii=False))]
    verdicts = [(accepts(original, t), accepts(back, t)) for t in texts]
    if exported.inexact:  # uniqueItems written without it: never a false reject
        assert "uniqueItems" in exported.text and all(b or not a for a, b in verdicts)
    else:
        assert all(a == b for a, b in verdicts), [t for t, (a, b) in zip(texts, verdicts) if a != b]


@pytest.mark.parametrize("target", ["gbnf", "lark"])
@pytest.mark.parametrize("name", sorted(GRAMMARS))
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_lark_grammars_survive_export(compiler, name, target, seed):
    rng = random.Random(seed)
    text = GRAMMARS[name]
    original = compiler.compile_lark(text)
    back = read_back(compiler, original.export(target).text, target)
    member = derive(parse_lark(text), rng)
    assert accepts(back, member)
    alphabet = "".join(sorted(set(text + member) - {"\n"})) + "\n\t"
    for _ in range(4):
        other = mutated(member, alphabet, rng, rng.randint(1, 3))
        assert accepts(original, other) == accepts(back, other), other


def test_lark_package_reads_our_lark(compiler):
    """Compact JSON: lark's Earley parser is slow on the bounded whitespace runs of the default."""
    from strictgen.grammar.json_value import JsonStyle

    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}, "b": {"enum": ["x", "y\n"]},
                                               "c": {"type": "string", "pattern": "^[a-c]+$", "maxLength": 3}},
              "required": ["a"], "additionalProperties": False}
    grammar, _ = json_schema_grammar(schema, style=JsonStyle("compact"))
    reference = lark.Lark(export_grammar(grammar, "lark").text, parser="earley", lexer="dynamic_complete")
    ours = compiler.compile_json_schema(schema, whitespace="compact")
    for doc in ['{"a":3}', '{"a":2}', '{"a":30,"b":"y\\n"}', '{"a":4,"c":"abc"}', '{"a":4,"c":"abcd"}',
                '{"a":4,"c":"\\u0061"}', '{"b":"x"}', '{"a":5,"b":"z"}', '{"a":3,"c":"ab"}']:
        try:
            reference.parse(doc)
            theirs = True
        except lark.exceptions.LarkError:
            theirs = False
        assert theirs == accepts(ours, doc), doc


def test_every_node_kind_has_a_spelling(compiler):
    """Special tokens, counted repeats, empty strings and the regular operations (as DFA rules)."""
    gbnf = r'''root ::= <|im_start|> "a\"\\\n" [é-ë😀]{2,3} x{0,} "" <[7-9,12]>
x ::= [^a-c]'''
    from strictgen.grammar.gbnf import parse_gbnf

    for target in ("gbnf", "lark"):
        text = export_grammar(parse_gbnf(gbnf), target).text
        assert "<|im_start|>" in text and "<[7-9,12]>" in text
        reread = parse_gbnf(text) if target == "gbnf" else parse_lark(text)
        assert reread.special_tokens
    any_order = {"type": "object", "properties": {k: {"type": "integer"} for k in "abcdefghijk"}, "additionalProperties": False}
    grammar, _ = json_schema_grammar(any_order, any_order=True)  # a lazily built family: 2^11 key sets
    exported = export_grammar(grammar, "gbnf", max_lazy_members=100)
    assert exported.inexact and "left out" in exported.inexact[0]


def test_compiled_grammars_export_their_source(compiler):
    g = compiler.compile_regex(r"[a-z]{2,4}(-\d+)?")
    back = compiler.compile_grammar(g.to_gbnf())
    for s in ["ab", "abcd-12", "abcde", "a", "ab-", "zz-0"]:
        assert accepts(g, s) == accepts(back, s), s
    assert compiler.compile_lark(g.to_lark())


@pytest.mark.parametrize("target", ["gbnf", "lark"])
def test_convert_command(tmp_path, capsys, target):
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"type": "array", "items": {"type": "boolean"}, "maxItems": 2}))
    assert main(["convert", "--to", target, str(plain), "--strict"]) == 0
    out = capsys.readouterr().out
    assert "INEXACT" not in out
    unique = tmp_path / "unique.json"
    unique.write_text(json.dumps({"type": "array", "items": {"type": "string"}, "uniqueItems": True}))
    assert main(["convert", "--to", target, str(unique)]) == 0
    assert "INEXACT" in capsys.readouterr().out
    assert main(["convert", "--to", target, str(unique), "--strict"]) == 1
    assert "not exact" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert main(["convert", "--to", target, str(broken)]) == 2


def test_llama_cpp_loads_our_gbnf():
    llama_cpp = pytest.importorskip("llama_cpp")
    from strictgen.engine.loader import resolve_model_path

    try:
        path = resolve_model_path("default")
    except sg.StrictgenError as exc:
        pytest.skip(f"the embedded model is not installed: {exc}")
    llm = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    schemas = [{"type": "object", "properties": {"n": {"type": "integer", "minimum": -5}, "s": {"type": "string", "format": "date"}}},
               {"anyOf": [{"type": "string", "pattern": "^a+$", "minLength": 2}, {"type": "array", "prefixItems": [{"const": 1}]}]},
               {"enum": ["x\ty", 2, None, {"k": [True]}]}]
    for schema in schemas:
        grammar, _ = json_schema_grammar(schema)
        text = export_grammar(grammar, "gbnf").text
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode("utf-8"), b"root")
        assert sampler, text[:500]
        llama_cpp.llama_sampler_free(sampler)
    assert not llama_cpp.llama_sampler_init_grammar(vocab, b'root ::= "a" (', b"root")  # it does check
