"""DESIGN.md §4 properties on the three real vocabularies, judged by independent oracles:
`re.fullmatch`, `json.loads`, and the Earley reference recognizer in tests/reference.py.

1 sound: random walks through allowed tokens end in valid documents;
2 complete: valid documents are accepted under canonical and random token splits;
3 no dead ends: every allowed token keeps the prefix viable (reference) and the mask non-empty;
4 fast mask == reference mask, bit for bit;
5 bytes, not characters: partial UTF-8 tokens are judged by the same byte-level oracle.
"""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.grammar.gbnf import parse_gbnf
from strictgen.grammar.ir import Grammar
from strictgen.grammar.json_value import json_value_grammar
from strictgen.grammar.regex import parse_regex

from tests.helpers import allowed_ids, canonical_ids, random_split
from tests.reference import ReferenceRecognizer

REGEXES = [
    r"[a-z]{2,5}-\d{3}",
    r"(foo|bar|你好)+!?",
    r"\w+@\w+\.(com|org)",
    r"[^\"\\]{0,12}x",
    r"😀+[\u4e00-\u9fff]{1,3}",
    r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?",
]
GBNF = {
    "arithmetic": 'root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= factor (("*" | "/") factor)*\nfactor ::= [0-9]+ | "(" expr ")"',
    "parens": 'root ::= p\np ::= ("(" p ")")*',
    "chinese-form": 'root ::= "姓名：" name "\\n年龄：" [0-9]{1,3} "\\n"\nname ::= [一-龥]{2,4}',
}
GBNF_DOCS = {
    "arithmetic": ["1+2*(3-4)/5", "((((7))))", "12*(3+4)*(5-(6/7))"],
    "parens": ["", "()", "(((((((((())))))))))", "(" * 50 + ")" * 50],
    "chinese-form": ["姓名：张三\n年龄：30\n", "姓名：欧阳娜娜\n年龄：7\n"],
}

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def formats():
    """(kind, key, compile function on a compiler, IR grammar, validity oracle)."""
    out = []
    for pattern in REGEXES:
        rx = re.compile(pattern)
        out.append(("regex", pattern, lambda c, p=pattern: c.compile_regex(p), Grammar({"root": parse_regex(pattern)}),
                    lambda data, rx=rx: _utf8(data) is not None and rx.fullmatch(_utf8(data), ) is not None))
    for name, text in GBNF.items():
        g = parse_gbnf(text)
        ref = ReferenceRecognizer(g)
        out.append(("gbnf", name, lambda c, t=text: c.compile_grammar(t), g, ref.accepts))
    out.append(("json", "json", lambda c: c.compile_json(), json_value_grammar(), _is_json))
    return out


def _utf8(data: bytes):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _is_json(data: bytes) -> bool:
    text = _utf8(data)
    if text is None:
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


FORMATS = formats()
FORMAT_IDS = [f"{kind}:{key}" for kind, key, *_ in FORMATS]
_REFS: dict[str, ReferenceRecognizer] = {}


def reference(key: str, grammar: Grammar) -> ReferenceRecognizer:
    if key not in _REFS:
        _REFS[key] = ReferenceRecognizer(grammar)
    return _REFS[key]


_COMPILERS: dict[int, sg.GrammarCompiler] = {}


def compiler_for(tok: sg.TokenizerInfo) -> sg.GrammarCompiler:
    if id(tok) not in _COMPILERS:
        _COMPILERS[id(tok)] = sg.GrammarCompiler(tok)
    return _COMPILERS[id(tok)]


def documents(kind: str, key: str):
    """A strategy of valid documents for one format."""
    if kind == "regex":
        # Python's \d and \w are Unicode; ECMA's are ASCII
        return st.from_regex(re.compile(key, re.ASCII) if "\\w" in key or "\\d" in key else key, fullmatch=True)
    if kind == "gbnf":
        return st.sampled_from(GBNF_DOCS[key])
    scalars = st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
    layouts = st.sampled_from([{}, {"separators": (",", ":")}, {"indent": 2}, {"ensure_ascii": False}])
    return st.builds(lambda v, kw: json.dumps(v, **kw), values, layouts)


# ---- 2: complete --------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_complete_under_canonical_and_random_splits(vocab, fmt):
    name, tok = vocab
    kind, key, compile_fn, _, valid = fmt
    grammar = compile_fn(compiler_for(tok))

    @SETTINGS
    @given(doc=documents(kind, key), seed=st.integers(0, 2**32 - 1))
    def check(doc, seed):
        data = doc.encode("utf-8")
        assert valid(data), doc
        split = random_split(tok, data, random.Random(seed))
        assume(split is not None)
        splits = [split]
        canonical = canonical_ids(name, doc)
        if canonical is not None:
            splits.append(canonical)
        for ids in splits:
            m = sg.GrammarMatcher(grammar)
            for i, t in enumerate(ids):
                assert m.accept_token(t), (doc, i, tok.token_bytes(t))
            assert m.accept_token(tok.eos_token_ids[0]) and m.is_terminated(), doc

    check()


# ---- 1, 3, 5: sound, no dead ends (judged by the reference, byte by byte) -----------------------


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_random_walks_are_sound_and_never_dead_end(vocab, fmt):
    name, tok = vocab
    kind, key, compile_fn, ir, valid = fmt
    grammar = compile_fn(compiler_for(tok))
    ref = reference(key, ir)
    eos = set(tok.eos_token_ids)

    @SETTINGS
    @given(seed=st.integers(0, 2**32 - 1))
    def walk(seed):
        rnd = random.Random(seed)
        m = sg.GrammarMatcher(grammar)
        text = b""
        for _ in range(30):
            ids = allowed_ids(m)
            assert len(ids), f"dead end after {text!r}"
            can_stop = bool(eos & set(ids.tolist()))
            assert can_stop == ref.accepts(text), text
            if can_stop and rnd.random() < 0.3:
                assert m.accept_token(tok.eos_token_ids[0])
                break
            # prefer short tokens so that walks reach the end; check several allowed tokens each step
            pool = [int(t) for t in rnd.sample(list(ids), min(16, len(ids))) if int(t) not in eos]
            if not pool:
                continue
            for t in pool:
                assert ref.is_viable_prefix(text + tok.token_bytes(t)), (text, tok.token_bytes(t))
            t = min(pool, key=lambda t: len(tok.token_bytes(t)) + rnd.random())
            assert m.accept_token(t)
            text += tok.token_bytes(t)
        if m.is_terminated():
            assert valid(text), text
        else:
            assert ref.is_viable_prefix(text)

    walk()


# ---- 4: fast mask == reference mask ---------------------------------------------------------------


def reference_mask(tok: sg.TokenizerInfo, ref: ReferenceRecognizer, prefix: bytes, token_ids) -> set[int]:
    """Tokens (among `token_ids`) the reference accepts after `prefix`; EOS where the prefix is complete."""
    state = ref.state_after(prefix)
    out = set()
    for t in token_ids:
        t = int(t)
        if t in tok.eos_token_ids:
            if ref.state_accepts(state):
                out.add(t)
            continue
        data = tok.token_bytes(t)
        if tok.is_special[t] or not data:
            continue
        s = state
        for b in data:
            s = ref.advance(s, b)
            if s is None:
                break
        if s is not None and ref.state_viable(s):
            out.add(t)
    return out


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_fast_mask_equals_reference(vocab, fmt):
    """On states reached by walks, the mask equals the reference on every token whose first byte
    the reference allows (all others it rejects outright), plus a random sample of the rest."""
    name, tok = vocab
    kind, key, compile_fn, ir, _ = fmt
    grammar = compile_fn(compiler_for(tok))
    ref = reference(key, ir)
    rnd = random.Random(hash((name, key)) & 0xFFFF)
    first_byte = np.array([tok.token_bytes(i)[0] if tok.token_bytes(i) else -1 for i in range(tok.vocab_size)])
    m = sg.GrammarMatcher(grammar)
    text = b""
    for _ in range(6):
        fast = set(allowed_ids(m).tolist())
        starts = ref.state_allowed_bytes(ref.state_after(text))
        candidates = np.flatnonzero(np.isin(first_byte, list(starts)))
        if len(candidates) > 4000:  # broad states (inside strings): a large random sample
            candidates = rnd.sample(list(candidates), 4000)
        sample = set(int(c) for c in candidates) | set(rnd.sample(range(tok.vocab_size), 300)) | set(tok.eos_token_ids)
        expected = reference_mask(tok, ref, text, sorted(sample))
        assert fast & sample == expected, (text, sorted(tok.token_bytes(t) for t in (fast & sample) ^ expected)[:10])
        options = [t for t in fast if t not in tok.eos_token_ids]
        if not options:
            break
        t = rnd.choice(options)
        assert m.accept_token(t)
        text += tok.token_bytes(t)
