"""Draft APIs (runtime/drafts.py) on real vocabularies: every row a draft call writes equals the
mask a fresh matcher gives after accepting the same tokens, and the matcher never moves.

Drafts are made of a valid document's tokens (canonical or a random split), cut at a random
point, with random tokens put in at random places (part valid, part invalid), sometimes EOS."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg

from tests.helpers import canonical_ids, random_split

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "uniqueItems": True},
        "n": {"type": "integer", "minimum": -5, "maximum": 500},
        "more": {"type": "object"},
    },
    "required": ["name", "n"],
    "additionalProperties": False,
}
SCHEMA_DOCS = [{"name": "Zoë", "tags": ["a", "c"], "n": 42}, {"name": "x\"y", "n": -5, "more": {"k": [1, {"z": None}]}},
               {"name": "", "tags": [], "n": 500, "more": {}}]
GBNF = 'root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= [0-9]+ | "(" expr ")"'
GBNF_DOCS = ["1+2-(3+44)", "((7))", "12-(3+(4-5))"]
REGEX = r"[a-z]{2,6}@(mail|post)\.(com|org)"
REGEX_DOCS = ["ab@mail.com", "zzzzzz@post.org"]
CASES = [("schema", SCHEMA_DOCS), ("gbnf", GBNF_DOCS), ("regex", REGEX_DOCS)]


@pytest.fixture(scope="module", params=["qwen", "deepseek"])
def setup(request):
    name = request.param
    tok = sg.TokenizerInfo.from_name(name)
    c = sg.GrammarCompiler(tok)
    grammars = {"schema": c.compile_json_schema(SCHEMA), "gbnf": c.compile_grammar(GBNF), "regex": c.compile_regex(REGEX)}
    return name, tok, grammars


def mask_after(grammar, tokens) -> np.ndarray:
    """The reference: a fresh matcher's mask after accepting `tokens` (each must be accepted)."""
    m = sg.GrammarMatcher(grammar)
    for t in tokens:
        assert m.accept_token(t)
    out = sg.allocate_token_bitmask(1, grammar.tokenizer_info.vocab_size)
    m.fill_next_token_bitmask(out)
    return out[0]


def accepted_prefix(grammar, prefix, draft) -> int:
    m = sg.GrammarMatcher(grammar)
    for t in prefix:
        assert m.accept_token(t)
    for k, t in enumerate(draft):
        if not m.accept_token(t):
            return k
    return len(draft)


def document_ids(name, tok, kind, doc, rnd) -> list[int]:
    text = json.dumps(doc, ensure_ascii=rnd.random() < 0.3) if kind == "schema" else doc
    ids = canonical_ids(name, text) if rnd.random() < 0.5 else random_split(tok, text.encode(), rnd)
    return list(ids) + [tok.eos_token_ids[0]]


def make_draft(tok, ids, rnd) -> tuple[list[int], list[int]]:
    """(prefix already accepted, a draft after it): the document's next tokens with some replaced."""
    cut = rnd.randrange(len(ids))
    draft = ids[cut : cut + rnd.randint(0, 8)]
    for _ in range(rnd.choice([0, 0, 1, 2])):
        if draft:
            draft[rnd.randrange(len(draft))] = rnd.choice([rnd.randrange(tok.vocab_size), rnd.choice(ids), tok.eos_token_ids[0]])
    return ids[:cut], draft


def snapshot(m):
    return m.state, m.is_terminated(), m.validate_tokens([])


@given(seed=st.integers(0, 2**32 - 1))
@SETTINGS
def test_linear_draft_rows_equal_fresh_matchers(setup, seed):
    name, tok, grammars = setup
    rnd = random.Random(seed)
    kind, docs = rnd.choice(CASES)
    g = grammars[kind]
    prefix, draft = make_draft(tok, document_ids(name, tok, kind, rnd.choice(docs), rnd), rnd)
    m = sg.GrammarMatcher(g)
    for t in prefix:
        assert m.accept_token(t)
    before = (m.state, m.is_terminated())
    kept = accepted_prefix(g, prefix, draft)
    assert m.validate_tokens(draft) == kept
    start = rnd.randint(0, 2)
    rows = sg.allocate_token_bitmask(start + len(draft) + 1, tok.vocab_size)
    assert m.fill_draft_bitmasks(draft, rows, start_row=start) == kept + 1
    assert (m.state, m.is_terminated()) == before
    for k in range(kept + 1):
        assert np.array_equal(rows[start + k], mask_after(g, prefix + draft[:k])), (kind, k)
    assert (rows[start + kept + 1 :] == -1).all()  # rows past the refused token are left alone
    # a terminated matcher's row is EOS-only (a fresh matcher's too: compared above), yet it accepts nothing
    ended = before[1] if not kept else draft[kept - 1] in tok.eos_token_ids
    if kept < len(draft) and not (ended and draft[kept] in tok.eos_token_ids):  # the last row written refuses the next draft token
        t = draft[kept]
        assert not (rows[start + kept, t // 32] >> (t % 32)) & 1
    # and the matcher still works from where it was: the rest of the document goes through
    assert m.validate_tokens(draft[:kept]) == kept


def random_tree(ids_pool, tok, rnd, size) -> tuple[list[int], list[int], list[int], list[int]]:
    """A draft tree of `size` nodes (tokens, first_child, next_sibling, parent): node 0 the root,
    each other node under a random earlier node, its token a likely one (the document's next) or
    a random one."""
    tokens, parent = [ids_pool[0]], [-1]
    depth_pos = {0: 0}  # node -> position of its token in ids_pool
    for i in range(1, size):
        p = rnd.randrange(i)
        pos = depth_pos[p] + 1
        tok_id = ids_pool[pos] if pos < len(ids_pool) and rnd.random() < 0.6 else rnd.choice([rnd.randrange(tok.vocab_size), rnd.choice(ids_pool)])
        tokens.append(tok_id)
        parent.append(p)
        depth_pos[i] = pos
    first, sibling = [-1] * size, [-1] * size
    for i in range(size - 1, 0, -1):  # children in order of node number
        sibling[i] = first[parent[i]]
        first[parent[i]] = i
    return tokens, first, sibling, parent


def path(parent, tokens, node) -> list[int]:
    out = []
    while node > 0:
        out.append(tokens[node])
        node = parent[node]
    return out[::-1]


def has(row, t) -> bool:
    return bool((int(row[t // 32]) >> (t % 32)) & 1)


@given(seed=st.integers(0, 2**32 - 1), budget=st.sampled_from([None, None, 0.0]))
@SETTINGS
def test_tree_rows_equal_fresh_matchers(setup, seed, budget):
    name, tok, grammars = setup
    rnd = random.Random(seed)
    kind, docs = rnd.choice(CASES)
    g = grammars[kind]
    ids = document_ids(name, tok, kind, rnd.choice(docs), rnd)
    cut = rnd.randrange(len(ids))
    prefix, pool = ids[:cut], ids[cut - 1 :] if cut else ids  # the root's token is the last accepted
    tokens, first, sibling, parent = random_tree(pool, tok, rnd, rnd.randint(1, 12))
    m = sg.GrammarMatcher(g)
    for t in prefix:
        assert m.accept_token(t)
    before = m.state
    rows = np.zeros((len(tokens), sg.allocate_token_bitmask(1, tok.vocab_size).shape[1]), dtype=np.int32)
    visited = m.fill_draft_tree_bitmasks(tokens, first, sibling, rows, time_budget=budget)
    assert m.state == before and 1 <= visited <= len(tokens)
    # walk the tree as a verifier would: a child is entered only when its parent's row allows it
    entered = {0}
    for node in range(1, len(tokens)):  # parents come before children
        ended = tok.eos_token_ids[0] in path(parent, tokens, parent[node])  # no matcher accepts past EOS
        if parent[node] in entered and has(rows[parent[node]], tokens[node]) and not ended:
            entered.add(node)
    for node in range(len(tokens)):
        if node not in entered:
            assert not rows[node].any(), node  # never reached: zero row
            continue
        exact = mask_after(g, prefix + path(parent, tokens, node))
        if budget is None:
            assert np.array_equal(rows[node], exact), (kind, node)
        else:  # a cut only clears bits: a subset of the exact mask, never empty where the exact one is not
            assert not (rows[node] & ~exact).any() and (rows[node].any() or not exact.any()), node
            children = [c for c in range(len(tokens)) if parent[c] == node]
            if all(c in entered for c in children):
                assert np.array_equal(rows[node], exact), node
    if budget is None:
        assert visited == len(entered)


def test_tree_in_sglang_layout_with_eos_and_refusals(qwen):
    g = sg.GrammarCompiler(qwen).compile_regex("ab|abc")
    ids = {s: next(i for i in range(qwen.vocab_size) if qwen.all_token_bytes[i] == s.encode()) for s in ("a", "b", "c", "x")}
    eos = qwen.eos_token_ids[0]
    # root(a) -> b -> [eos, c -> eos], and root -> x (refused)
    tokens = [ids["a"], ids["b"], eos, ids["c"], eos, ids["x"]]
    first = [1, 2, -1, 4, -1, -1]
    sibling = [-1, 5, 3, -1, -1, -1]
    m = sg.GrammarMatcher(g)
    assert m.accept_token(ids["a"])
    before = m.state
    rows = np.zeros((6, (qwen.vocab_size + 31) // 32), dtype=np.int32)
    assert m.fill_draft_tree_bitmasks(tokens, first, sibling, rows) == 5
    assert not rows[5].any()  # x: refused under the root
    for node, path_ in [(1, ["b"]), (2, ["b", eos]), (3, ["b", "c"]), (4, ["b", "c", eos])]:
        assert np.array_equal(rows[node], mask_after(g, [ids["a"]] + [p if isinstance(p, int) else ids[p] for p in path_]))
    assert np.flatnonzero(np.unpackbits(rows[2].view(np.uint8), bitorder="little")).tolist() == qwen.eos_token_ids  # after EOS: EOS only
    with pytest.raises(ValueError, match="not a node"):
        m.fill_draft_tree_bitmasks(tokens, [1, 9, -1, -1, -1, -1], sibling, rows)
    assert m.state == before and m.validate_tokens([ids["b"], ids["c"], eos]) == 3


def test_forced_draft_tokens_are_accepted_and_follow_the_forced_text(qwen):
    c = sg.GrammarCompiler(qwen)
    g = c.compile_json_schema({"type": "object", "properties": {"temperature_celsius": {"type": "integer"}, "city": {"const": "Paris"}},
                               "required": ["temperature_celsius", "city"], "additionalProperties": False}, whitespace="compact")
    m = sg.GrammarMatcher(g)
    seen_long = False
    doc = b'{"temperature_celsius":21,"city":"Paris"}'
    pos = 0
    while True:
        forced = m.find_jump_forward_bytes()
        draft = m.forced_draft_tokens()
        spelled = b"".join(qwen.all_token_bytes[t] for t in draft if t not in qwen.eos_token_ids)
        assert forced.startswith(spelled), (forced, spelled)
        assert m.validate_tokens(draft) == len(draft)  # the whole free draft is accepted
        seen_long = seen_long or len(draft) >= 2
        if m.is_terminated():
            break
        if draft and draft[-1] in qwen.eos_token_ids:
            assert doc[pos:] == spelled
            break
        # advance one byte-exact token of the document (the longest accepted)
        for t in draft:
            assert m.accept_token(t)
        pos += len(spelled)
        if not draft:
            nxt = next(t for t in sorted(range(qwen.vocab_size), key=lambda i: -len(qwen.all_token_bytes[i]))
                       if qwen.all_token_bytes[t] and doc[pos:].startswith(qwen.all_token_bytes[t]) and m.validate_tokens([t]))
            assert m.accept_token(nxt)
            pos += len(qwen.all_token_bytes[nxt])
    assert seen_long


def test_terminated_and_empty_drafts(qwen):
    g = sg.GrammarCompiler(qwen).compile_choice(["yes"])
    m = sg.GrammarMatcher(g)
    rows = sg.allocate_token_bitmask(3, qwen.vocab_size)
    assert m.fill_draft_bitmasks([], rows) == 1 and np.array_equal(rows[0], mask_after(g, []))
    assert m.validate_tokens([]) == 0
    forced = m.forced_draft_tokens()
    assert forced and forced[-1] == qwen.eos_token_ids[0] and m.validate_tokens(forced) == len(forced)
    for t in forced:
        assert m.accept_token(t)
    assert m.is_terminated() and m.forced_draft_tokens() == [] and m.validate_tokens([forced[-1]]) == 0
    assert m.fill_draft_bitmasks([1, 2], rows) == 1  # terminated: EOS-only row, then nothing accepted
    with pytest.raises(ValueError, match="cannot hold"):
        sg.GrammarMatcher(g).fill_draft_bitmasks(forced * 3, rows)
