"""Checks shared by the tests of rules built at run time (any_order key sets, uniqueItems): a
judge (jsonschema, plus no duplicate object key), feeding a document token by token, and the mask
check that every sampled allowed token still completes to a valid document."""

from __future__ import annotations

import json
import random

import jsonschema
import numpy as np

import strictgen as sg
from strictgen.runtime.budget import ShortestCompletions
from tests.helpers import allowed_ids, canonical_ids, random_split

# bytes tried first when completing a prefix: close strings, then brackets, then short ways on
# (z is in no test's string alphabet: a string that takes it is new)
_PREFER = list(b'"]}z0,:1tfnu')
_ORDER = np.array(_PREFER + [b for b in range(256) if b not in _PREFER])


class Judge:
    """Is a text a document valid under `schema`, with no listed property twice? (Additional
    members may repeat a key: the grammar does not prevent that, json_schema.py documents it.)"""

    def __init__(self, schema):
        self.validator = jsonschema.Draft202012Validator(schema)
        self.listed = set(schema.get("properties", {})) if isinstance(schema, dict) else set()

    def valid(self, text: str) -> bool:
        dup = []

        def pairs(items):
            keys = [k for k, _ in items if k in self.listed]
            if len(set(keys)) != len(keys):
                dup.append(keys)
            return dict(items)

        try:
            value = json.loads(text, object_pairs_hook=pairs)
        except ValueError:
            return False
        return not dup and self.validator.is_valid(value)


def _reads_text(track) -> bool:
    """Is a tracker reading an item's or a name's text (unique_items.Track; distinct_names'
    tuple of frames; a pair of both)?"""
    if isinstance(track, tuple):
        return any(_reads_text(t) for t in track) if track and not hasattr(track[-1], "in_string") else bool(track) and track[-1].in_string
    return track is not None and track.mode in ("string", "number")


def completion(m: sg.GrammarMatcher, budget: int = 20_000) -> bytes | None:
    """The shortest bytes (breadth first, closing strings and brackets first) that take matcher `m`
    to where the document may end, or None if none is found within `budget` positions; `m` is
    left where it was. Positions are told apart by machine state and, for unique arrays, the
    matcher's track of the items seen (a test may read it)."""
    machine = m.compiled.machine
    tracked = m.compiled.tracker is not None

    def where():
        return (m.state, m._tracks[-1]) if tracked else m.state

    if m.can_end():
        return b""
    if not tracked:
        return _depth_first(machine, m.state)
    if m.compiled.unique_items is None:  # distinct names only: a repeat is refused at one byte, depth first finds a new name
        return _repaired_completion(m)
    frontier, seen = [b""], {where()}
    while frontier:
        nxt = []
        for path in frontier:
            assert not path or m.accept_string(path)
            row = machine.compute_row(m.state)
            live = _ORDER[row[_ORDER] != 0].tolist()
            if tracked and _reads_text(m._tracks[-1]):
                live = live[:4]  # items differ by their text: a few ways on each are enough (4: a repeated 1.0 needs a 1 past "]0,")
            if path:
                m.rollback(1)
            for b in live:
                cand = path + bytes((b,))
                if not m.accept_string(cand):
                    continue
                key, done = where(), m.can_end()
                m.rollback(1)
                if done:
                    return cand
                if key not in seen:
                    seen.add(key)
                    nxt.append(cand)
                    if len(seen) > budget:
                        return None
        frontier = nxt
    return None


def _repaired_completion(m: sg.GrammarMatcher, rounds: int = 500) -> bytes | None:
    """For distinct-name objects: the machine's shortest completion (runtime/budget.py), fed
    through the matcher; where the matcher refuses a byte (a key closed on a name seen before),
    the key is made longer by a byte the machine allows, and the machine's completion is taken
    again from there. None when no byte lengthens it, the search gives up, or after `rounds`
    repairs; `m` is left where it was."""
    machine = m.compiled.machine
    search = ShortestCompletions(machine, max_expanded=20_000)
    out, steps = [], 0
    try:
        while not m.can_end():
            try:
                rest = search.completion(m.state)
            except sg.StrictgenError:
                return None
            if rounds <= 0:
                return None
            rounds -= 1
            for b in rest:
                if m.accept_string(bytes((b,))):
                    out.append(b)
                    steps += 1
                    continue
                row = machine.compute_row(m.state)
                longer = next((x for x in _ORDER[row[_ORDER] != 0].tolist() if x != 0x22 and m.accept_string(bytes((x,)))), None)
                if longer is None:
                    return None
                out.append(longer)
                steps += 1
                break
        return bytes(out)
    finally:
        if steps:
            m.rollback(steps)  # (one step per byte)


def _depth_first(machine, state: int, limit: int = 4000) -> bytes | None:
    """Without unique arrays the machine state is the whole position: a depth-first search over
    its rows finds a way to the end fast (breadth first would try every order of an object's keys)."""

    def ways(s: int):
        row = machine.compute_row(s)
        live = _ORDER[row[_ORDER] != 0]
        return iter(zip(live.tolist(), row[live].tolist()))

    stack, path, seen = [(state, ways(state))], [], {state}
    while stack:
        s, options = stack[-1]
        if machine.accepting[s]:
            return bytes(path)
        for b, t in options:
            if t not in seen and len(path) < limit:
                seen.add(t)
                path.append(b)
                stack.append((t, ways(t)))
                break
        else:
            stack.pop()
            if path:
                path.pop()
    return None


def check_mask(m: sg.GrammarMatcher, prefix: bytes, judge: Judge, rnd: random.Random, expected: int | None) -> None:
    """The mask holds `expected` (the document's next token), every sampled allowed token is
    accepted and completes to a valid document, and sampled disallowed tokens are refused."""
    info = m.compiled.tokenizer_info
    allowed = allowed_ids(m).tolist()
    if expected is not None:
        assert expected in allowed
    for t in rnd.sample(allowed, min(5, len(allowed))):
        if info.is_special[t]:
            continue
        assert m.accept_token(t)
        rest = completion(m)
        assert rest is not None, (prefix, info.token_bytes(t))
        doc = prefix + info.token_bytes(t) + rest
        assert judge.valid(doc.decode("utf-8")), doc
        m.rollback(1)
    allowed_set = set(allowed)
    for t in rnd.sample(range(info.vocab_size), 40):
        if t not in allowed_set and t < len(info.all_token_bytes):
            assert not m.accept_token(t)


def feed_all(g: sg.CompiledGrammar, tok: sg.TokenizerInfo, judge: Judge, text: str, rnd: random.Random, check_masks: bool) -> None:
    """`text` is accepted token by token (then EOS) exactly when the judge says it is valid, under
    Qwen's own encoding and a random split; masks are checked on a sample of steps."""
    expected = judge.valid(text)
    splits = [canonical_ids("qwen", text), random_split(tok, text.encode("utf-8"), rnd)]
    for ids in splits:
        m = sg.GrammarMatcher(g)
        prefix = b""
        ok = True
        for t in ids:
            if check_masks and rnd.random() < 0.1:
                check_mask(m, prefix, judge, rnd, t if expected else None)
            if not m.accept_token(t):
                ok = False
                break
            prefix += tok.token_bytes(t)
        if ok and ids:  # rollback returns to the very same state
            state, k = m.state, min(3, len(ids))
            m.rollback(k)
            assert all(m.accept_token(t) for t in ids[-k:]) and m.state == state
        accepted = ok and m.accept_token(tok.eos_token_ids[0])
        assert accepted == expected, (text, "accepted" if accepted else "rejected")
