"""JSON Schema conformance through the public API: the official JSON-Schema-Test-Suite (draft 2020-12)
and maskbench-dev, on real vocabularies.

A *group* is one schema with its documents. It passes when the schema compiles and every valid
document is accepted token by token (then EOS) while every invalid one is rejected (some token
refused, or EOS refused at the end). Outcomes: pass, compile_error (SchemaError / RegexError /
GrammarTooLargeError: a keyword we refuse rather than enforce loosely), false_reject, false_accept.
False accepts must be zero; passes may only go up (tests/data/schema_ratchet.json is a ratchet).

Serialising documents. Each document is written in every `Form` (FORMS): json.dumps's default
separators (", " and ": ") with raw UTF-8, compact separators, and ensure_ascii=True (every non-ASCII
character \\u-escaped, surrogate pairs above U+FFFF); the default form is also fed as a seeded random
split into vocabulary tokens (tests.helpers.random_split), not only the tokenizer's own encoding. A
valid document must be accepted in all of them; an invalid one accepted in any is a false accept.
Floats that json.dumps writes with an exponent are also tried in plain decimal notation (the
grammar spells bounded numbers without exponents). The grammar emits object members in a fixed
order (listed properties in schema order, then the others), while JSON object semantics ignore
order. Each document is therefore serialised with its keys in *some order the grammar accepts, if
one exists*: a search over key orders driven by the compiled byte-level machine (document order
tried first, memoised, with a budget; keys are tried in the order the schema text first lists
them, then in document order). For valid documents this finds the order the grammar expects; for
invalid documents it looks for *any* accepted order, which makes the false-accept check stronger
than one fixed order. Under `any_order=True` there is no search: every key order of a valid
object must be accepted, so each document is fed in its own key order in every form and, in the
default form, with every object's keys shuffled (seeded); only the spelling of numbers is chosen
by the machine (the search over orders would build thousands of run-time key-set rules for
nothing, see schema.key_sets). The chosen text is then tokenised with the vocabulary's own encoder (Qwen:
tiktoken ranks; DeepSeek: its tokenizer.json; SmolLM2 ships no encoder here, so a seeded random
split into vocabulary tokens is used) and fed to `GrammarMatcher.accept_token`, then EOS.

Suites: top-level draft2020-12/*.json (383 groups) are the required tests; `optional/` is skipped
except `optional/format/*.json`, counted separately. Notes on expected non-passes: `format.json`
asserts that format is only an annotation, while strictgen enforces formats (the useful behaviour
for generation; `optional/format` tests that) — those groups show up as false_reject, which is
stricter, never unsound. The `$ref`s to `http://localhost:1234/...` (refRemote.json, dynamicRef.json)
point into the suite's `remotes/` folder (a copy is in tests/data/json-schema-test-suite-remotes/):
strictgen fetches nothing, so `suite_documents()` passes those files as `documents=`.

Run with `-s` to see the summary tables. Time: compiling dominates, and some real-world schemas
take seconds. `make test` runs the official suite on all three vocabularies and a fixed sample of
maskbench-dev (MASKBENCH_SAMPLE: every 16th schema on Qwen, every 64th on SmolLM2 and DeepSeek);
all but the Qwen suite are marked slow. The whole of maskbench-dev (about an hour per vocabulary on
2 cores) is opted into with STRICTGEN_MASKBENCH=1; scripts/schema_sweep.py measures any sample.
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

import strictgen as sg
from strictgen.compile.machine import DEAD
from strictgen.errors import GrammarTooLargeError, RegexError, SchemaError

DATA = Path(__file__).parents[1] / ".." / "shared" / "data"
SUITE = DATA / "json-schema-test-suite" / "draft2020-12"
MASKBENCH = DATA / "maskbench-dev"
RATCHET = Path(__file__).parent / "data" / "schema_ratchet.json"
REMOTES = Path(__file__).parent / "data" / "json-schema-test-suite-remotes"
REMOTES_URI = "http://localhost:1234/"  # where the suite serves its remotes/ folder

OUTCOMES = ("pass", "compile_error", "false_reject", "false_accept")
SEARCH_BUDGET = 100_000  # object-key-order search steps per document


@dataclass(frozen=True)
class Form:
    """One way json.dumps writes a document: separators and ensure_ascii."""

    name: str
    item_sep: str
    key_sep: str
    ascii: bool

    def dumps(self, value) -> str:
        return json.dumps(value, ensure_ascii=self.ascii, separators=(self.item_sep, self.key_sep))


# every document is tried in each: json.dumps's default, compact, and \u-escaped (ensure_ascii)
FORMS = (Form("default", ", ", ": ", False), Form("compact", ",", ":", False), Form("ascii", ", ", ": ", True))


# ---- loading ----------------------------------------------------------------------------------


def suite_groups(include_formats: bool = True) -> list[tuple[str, str, object, list]]:
    """(kind, name, schema, tests) for the official suite: kind "required" or "format"."""
    out = []
    for path in sorted(SUITE.glob("*.json")):
        for i, g in enumerate(json.loads(path.read_text())):
            out.append(("required", f"{path.stem}#{i} {g['description']}", g["schema"], g["tests"]))
    if include_formats:
        for path in sorted((SUITE / "optional" / "format").glob("*.json")):
            for i, g in enumerate(json.loads(path.read_text())):
                out.append(("format", f"format/{path.stem}#{i} {g['description']}", g["schema"], g["tests"]))
    return out


def suite_documents() -> dict[str, object]:
    """The suite's remote documents by the URI its schemas use for them (documents= of compile_json_schema)."""
    return {REMOTES_URI + p.relative_to(REMOTES).as_posix(): json.loads(p.read_text()) for p in sorted(REMOTES.rglob("*.json"))}


def maskbench_groups() -> list[tuple[str, str, object, list]]:
    out = []
    for path in sorted(MASKBENCH.glob("*.json")):
        d = json.loads(path.read_text())
        out.append(("maskbench", path.name, d["schema"], d["tests"]))
    return out


# ---- serialisation guided by the machine -----------------------------------------------------------


class _Budget(Exception):
    pass


def key_ranks(schema) -> dict[str, int]:
    """Property names in order of first appearance in the schema text (a search heuristic)."""
    ranks: dict[str, int] = {}
    work = [schema]
    order: list = []
    while work:  # depth-first, in document order
        node = work.pop()
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                order.extend(props)
            req = node.get("required")
            if isinstance(req, list):
                order.extend(x for x in req if isinstance(x, str))
            work.extend(reversed([v for v in node.values() if isinstance(v, (dict, list))]))
        elif isinstance(node, list):
            work.extend(reversed([v for v in node if isinstance(v, (dict, list))]))
    for k in order:
        ranks.setdefault(k, len(ranks))
    return ranks


def _serialise(machine, state: int, value, budget: list[int], ranks: dict | None = None, memo: dict | None = None, form: Form | None = None, order=None) -> dict[int, str]:
    """Texts of `value` in `form` that the machine can read from `state`, by end state (objects:
    the first key order found, or only the key order `order(obj)` when given; arrays: at most 2 end
    states). Memoised per (value, state)."""
    memo = {} if memo is None else memo
    form = form or FORMS[0]
    key = (id(value), state)
    if key in memo:
        return memo[key]
    budget[0] -= 1
    if budget[0] < 0:
        raise _Budget
    ranks = ranks or {}
    out: dict[int, str] = {}
    if isinstance(value, dict):
        if order is not None:
            keys = order(value)  # one fixed order: the search below then tries nothing else
        else:
            keys = list(value)
            keys.sort(key=lambda k: ranks.get(k, len(ranks)))  # schema order first, then document order
        open_state = machine.step_bytes(state, b"{")
        failed: set = set()
        # each member's head (separator, key, colon) as text and bytes, first member and later ones
        heads = {}
        for k in keys:
            text = json.dumps(k, ensure_ascii=form.ascii) + form.key_sep
            heads[k] = ((form.item_sep + text, (form.item_sep + text).encode()), (text, text.encode()))
        readable: dict[tuple, list] = {}

        def heads_from(st: int, first: bool) -> list[tuple[int, str, int]]:
            """(index, head, state after it) of the members whose head the machine reads from `st`
            (memoised: a few states, visited many times)."""
            got = readable.get((st, first))
            if got is None:
                got = readable[(st, first)] = []
                for i, k in enumerate(keys):
                    head, head_bytes = heads[k][first]
                    s1 = machine.step_bytes(st, head_bytes)
                    if s1 != DEAD:
                        got.append((i, head, s1))
            return got

        def next_head(remaining: int, st: int, first: bool) -> list[tuple[int, str, int]]:
            """A fixed order tries only its next member (stepping no other head, which under
            any_order would build a run-time key-set rule for nothing)."""
            i = len(keys) - remaining.bit_count()
            head, head_bytes = heads[keys[i]][first]
            s1 = machine.step_bytes(st, head_bytes)
            return [(i, head, s1)] if s1 != DEAD else []

        def go(remaining: int, st: int, first: bool) -> tuple[int, str] | None:
            """The rest of the members from `st`; `remaining`: a bit per index into `keys`."""
            if (remaining, st, first) in failed:
                return None
            budget[0] -= 1
            if budget[0] < 0:
                raise _Budget
            if not remaining:
                e = machine.step_bytes(st, b"}")
                return (e, "}") if e != DEAD else None
            for i, head, s1 in heads_from(st, first) if order is None else next_head(remaining, st, first):
                if not remaining >> i & 1:
                    continue
                for e1, t1 in _serialise(machine, s1, value[keys[i]], budget, ranks, memo, form, order).items():
                    rest = go(remaining & ~(1 << i), e1, False)
                    if rest is not None:
                        return rest[0], head + t1 + rest[1]
            failed.add((remaining, st, first))
            return None

        if open_state != DEAD:
            found = go((1 << len(keys)) - 1, open_state, True)
            if found is not None:
                out[found[0]] = "{" + found[1]
    elif isinstance(value, list):
        cur = {machine.step_bytes(state, b"["): "["}
        cur = {s: t for s, t in cur.items() if s != DEAD}
        for i, item in enumerate(value):
            nxt: dict[int, str] = {}
            for s, t in cur.items():
                if i:
                    s = machine.step_bytes(s, form.item_sep.encode())
                    if s == DEAD:
                        continue
                for e, tt in _serialise(machine, s, item, budget, ranks, memo, form, order).items():
                    if len(nxt) < 2:
                        nxt.setdefault(e, t + (form.item_sep if i else "") + tt)
            cur = nxt
            if not cur:
                break
        for s, t in cur.items():
            e = machine.step_bytes(s, b"]")
            if e != DEAD:
                out[e] = t + "]"
    else:
        for text in _scalar_texts(value, form.ascii):
            e = machine.step_bytes(state, text.encode())
            if e != DEAD:
                out.setdefault(e, text)
    memo[key] = out
    return out


def _scalar_texts(value, ascii_: bool = False) -> list[str]:
    """json.dumps's text, plus the plain decimal spelling of a float written with an exponent
    (the grammar spells bounded numbers without exponents)."""
    text = json.dumps(value, ensure_ascii=ascii_)
    if isinstance(value, float) and ("e" in text or "E" in text) and math.isfinite(value):
        plain = format(Decimal(repr(value)), "f")
        return [text, plain]
    return [text]


def serialise_for(compiled: sg.CompiledGrammar, value, schema=None, form: Form | None = None, order=None) -> str:
    """A serialisation of `value` in `form` the grammar accepts if the search finds one, else
    json.dumps's. Keys are tried in the order the schema text lists property names first, or only
    in the order `order(obj)` when given (then only the spelling of numbers is searched)."""
    form = form or FORMS[0]
    machine = compiled.machine
    try:
        found = _serialise(machine, machine.start, value, [SEARCH_BUDGET], key_ranks(schema) if schema is not None else None, None, form, order)
    except (_Budget, RecursionError):
        found = {}
    for e, text in found.items():
        if machine.accepting[e]:
            return text
    if order is not None:
        return form.dumps(_reordered(value, order))
    return form.dumps(value)


def document_order(obj: dict) -> list:
    return list(obj)


def shuffled_order(seed: str):
    """A seeded random key order per object (the same object keeps its order)."""
    rng = random.Random(seed)
    orders: dict[int, list] = {}

    def order(obj: dict) -> list:
        got = orders.get(id(obj))
        if got is None:
            got = orders[id(obj)] = rng.sample(list(obj), len(obj))
        return got

    return order


def _reordered(value, order):
    if isinstance(value, dict):
        return {k: _reordered(value[k], order) for k in order(value)}
    if isinstance(value, list):
        return [_reordered(v, order) for v in value]
    return value


# ---- tokenisation per vocabulary -----------------------------------------------------------------------


def make_encoder(name: str, tok: sg.TokenizerInfo):
    from strictgen.tokenizer.info import text_encoder

    encode = text_encoder(name)
    if encode is not None:
        return encode
    from tests.helpers import random_split

    def split(text: str):
        return random_split(tok, text.encode("utf-8"), random.Random(len(text)))

    return split


def accepts(compiled: sg.CompiledGrammar, ids) -> bool:
    m = sg.GrammarMatcher(compiled)
    for t in ids:
        if not m.accept_token(t):
            return False
    return m.accept_token(compiled.tokenizer_info.eos_token_ids[0])


# ---- running groups ----------------------------------------------------------------------------------


def spellings(compiled: sg.CompiledGrammar, encode, value, schema, any_order: bool = False) -> list[tuple[str, str, list[int] | None]]:
    """(form, text, token ids) for each way `value` is fed: every Form under the vocabulary's own
    encoding, and the default form split into random vocabulary tokens (seeded by the text).

    With `any_order` the grammar must accept every key order of a valid object, so there is no
    search over orders: each form keeps the document's own order, and the default form is also fed
    with every object's keys shuffled (seeded). An invalid document accepted in any of them is
    still a false accept, a valid one rejected in any a false reject."""
    from tests.helpers import random_split

    out = []
    order = document_order if any_order else None
    for form in FORMS:
        text = serialise_for(compiled, value, schema, form, order)
        out.append((form.name, text, encode(text)))
        if form is FORMS[0]:
            split = random_split(compiled.tokenizer_info, text.encode("utf-8"), random.Random(text))
            out.append(("split", text, split))
    if any_order and _has_object_of_two(value):
        text = serialise_for(compiled, value, schema, FORMS[0], shuffled_order(text))
        out.append(("shuffled", text, encode(text)))
    return out


def _has_object_of_two(value) -> bool:
    """Does `value` hold an object with at least two members (one that has other key orders)?"""
    if isinstance(value, dict):
        return len(value) > 1 or any(_has_object_of_two(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_object_of_two(v) for v in value)
    return False


def run_group(compiler: sg.GrammarCompiler, encode, schema, tests, **options) -> tuple[str, str, float]:
    """(outcome, detail, compile seconds) for one group (options go to compile_json_schema). A
    valid document must be accepted in every spelling; an invalid one accepted in any is a false
    accept."""
    t0 = time.perf_counter()
    try:
        compiled = compiler.compile_json_schema(schema, **options)
    except (SchemaError, RegexError, GrammarTooLargeError) as e:
        return "compile_error", f"{type(e).__name__}: {e}"[:300], time.perf_counter() - t0
    elapsed = time.perf_counter() - t0
    worst = "pass"
    detail = ""
    for t in tests:
        for form, text, ids in spellings(compiled, encode, t["data"], schema, bool(options.get("any_order"))):
            if ids is None:
                continue
            got = accepts(compiled, ids)
            if got and not t["valid"]:
                return "false_accept", f"accepted invalid {text[:200]!r} [{form}] ({t['description']})", elapsed
            if not got and t["valid"] and worst == "pass":
                worst, detail = "false_reject", f"rejected valid {text[:200]!r} [{form}] ({t['description']})"
    return worst, detail, elapsed


def run_all(compiler, encode, groups, **options) -> list[dict]:
    results = []
    for kind, name, schema, tests in groups:
        outcome, detail, secs = run_group(compiler, encode, schema, tests, **options)
        results.append({"kind": kind, "name": name, "outcome": outcome, "detail": detail, "compile_s": secs})
    return results


def summary(results: list[dict], title: str) -> str:
    kinds = sorted({r["kind"] for r in results})
    lines = [f"{title}", f"{'kind':<12}{'groups':>8}" + "".join(f"{o:>15}" for o in OUTCOMES)]
    for kind in kinds:
        rs = [r for r in results if r["kind"] == kind]
        counts = [sum(r["outcome"] == o for r in rs) for o in OUTCOMES]
        lines.append(f"{kind:<12}{len(rs):>8}" + "".join(f"{c:>15}" for c in counts))
    times = sorted(r["compile_s"] for r in results if r["outcome"] != "compile_error")
    if times:
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        lines.append(f"compile time: p50 {statistics.median(times) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {times[-1]:.2f} s")
    return "\n".join(lines)


def _ratchet() -> dict:
    return json.loads(RATCHET.read_text()) if RATCHET.exists() else {}


def _check(results: list[dict], kind: str, vocab: str) -> None:
    rs = [r for r in results if r["kind"] == kind]
    accepts_ = [r for r in rs if r["outcome"] == "false_accept"]
    assert not accepts_, "false accepts:\n" + "\n".join(f"{r['name']}: {r['detail']}" for r in accepts_)
    passed = sum(r["outcome"] == "pass" for r in rs)
    floor = _ratchet().get(vocab, {}).get(kind, 0)
    assert passed >= floor, f"{kind} on {vocab}: {passed} groups pass, the ratchet says at least {floor}"


# ---- tests --------------------------------------------------------------------------------------------


def _need(path: Path) -> None:
    if not path.is_dir():
        pytest.skip(f"test data folder {path} is absent")


@pytest.fixture(scope="module")
def qwen_compiler(qwen):
    return sg.GrammarCompiler(qwen, cache_size=16)


def test_official_suite_qwen(qwen, qwen_compiler):
    _need(SUITE)
    results = run_all(qwen_compiler, make_encoder("qwen", qwen), suite_groups(), documents=suite_documents())
    print("\n" + summary(results, "JSON-Schema-Test-Suite draft2020-12 (qwen)"))
    _check(results, "required", "qwen")
    _check(results, "format", "qwen")


# Every vocabulary runs the official suite and a fixed sample of maskbench-dev in `make test` (marked
# slow); the full maskbench-dev sweep (2208 schemas, some of which take seconds to compile) is opted
# into with STRICTGEN_MASKBENCH=1, and scripts/schema_sweep.py measures any sample outside pytest.
MASKBENCH_SAMPLE = {"qwen": (16, 0), "smollm2": (64, 8), "deepseek": (64, 40)}  # every step-th group from offset
LONG_SWEEPS = os.environ.get("STRICTGEN_MASKBENCH") == "1"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["smollm2", "deepseek"])
def test_official_suite_other_vocabularies(name):
    _need(SUITE)
    tok = sg.TokenizerInfo.from_name(name)
    results = run_all(sg.GrammarCompiler(tok, cache_size=16), make_encoder(name, tok), suite_groups(), documents=suite_documents())
    print("\n" + summary(results, f"JSON-Schema-Test-Suite draft2020-12 ({name})"))
    _check(results, "required", name)
    _check(results, "format", name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MASKBENCH_SAMPLE))
def test_maskbench_sample(name, qwen):
    _need(MASKBENCH)
    tok = qwen if name == "qwen" else sg.TokenizerInfo.from_name(name)
    step, offset = MASKBENCH_SAMPLE[name]
    groups = [("maskbench_sample",) + g[1:] for g in maskbench_groups()[offset::step]]
    results = run_all(sg.GrammarCompiler(tok, cache_size=16), make_encoder(name, tok), groups)
    print("\n" + summary(results, f"maskbench-dev, every {step}th schema from {offset} ({name})"))
    _check(results, "maskbench_sample", name)


@pytest.mark.skipif(not LONG_SWEEPS, reason="long sweep: set STRICTGEN_MASKBENCH=1 to run all of maskbench-dev")
@pytest.mark.parametrize("name", sorted(MASKBENCH_SAMPLE))
def test_maskbench_dev_full(name, qwen):
    _need(MASKBENCH)
    tok = qwen if name == "qwen" else sg.TokenizerInfo.from_name(name)
    results = run_all(sg.GrammarCompiler(tok, cache_size=16), make_encoder(name, tok), maskbench_groups())
    print("\n" + summary(results, f"maskbench-dev ({name})"))
    _check(results, "maskbench", name)


def test_any_order_harness_catches_false_rejects_and_accepts(qwen, qwen_compiler):
    """The any_order check without a key-order search still fails where it must: a grammar in
    schema order fed shuffled keys is a false reject; an invalid document stays rejected."""
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in "abcdef"}, "required": ["a"], "additionalProperties": False}
    encode = make_encoder("qwen", qwen)
    valid = [{"description": "", "data": {"f": 1, "e": 2, "a": 3, "b": 4}, "valid": True}]
    invalid = [{"description": "", "data": {"f": 1, "a": "x"}, "valid": False}]
    assert run_group(qwen_compiler, encode, schema, valid + invalid, any_order=True)[0] == "pass"
    fixed = qwen_compiler.compile_json_schema(schema)
    fed = spellings(fixed, encode, valid[0]["data"], schema, any_order=True)
    assert {form for form, _, _ in fed} == {"default", "split", "compact", "ascii", "shuffled"}
    assert not all(accepts(fixed, ids) for _, _, ids in fed)  # document order f, e, a, b is not schema order
    assert run_group(qwen_compiler, encode, {"type": "object"}, invalid, any_order=True)[0] == "false_accept"  # a grammar too loose
