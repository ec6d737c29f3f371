"""A grammar's masks on disk (compile/disk_masks.py): a restarted compiler's grammar gets the masks
an earlier process computed, named by byte paths (state numbers differ between processes), and
computes none of them again; every mask equals a cold compile's; a damaged or lying mask file is
refused with one warning line and its masks are computed, never a wrong one."""

from __future__ import annotations

import hashlib
import json
import logging
import random
import struct
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strictgen as sg
from strictgen.compile import disk_cache, disk_masks
from strictgen.compile.token_mask import TokenMasker

from tests.compile.test_disk_cache import formats, masks_along, no_vocabulary_entry  # noqa: F401 (an autouse fixture)
from tests.helpers import canonical_ids


@pytest.fixture
def computed(monkeypatch) -> list[int]:
    """The states whose masks were computed (not found cached), in order."""
    states: list[int] = []
    original = TokenMasker._compute

    def counting(self, state):
        states.append(state)
        return original(self, state)

    monkeypatch.setattr(TokenMasker, "_compute", counting)
    return states


def saved(tok, directory, make, doc: str):
    """A compiler on `directory` compiles, walks `doc` and saves its masks, as a process before a restart."""
    c = sg.GrammarCompiler(tok, cache_dir=directory)
    masks_along(make(c), doc)
    c.disk_cache.flush()
    assert c.save_masks() == 1
    return c


def restarted(tok, directory, make):
    """(grammar, how many masks are stored for it) from a new compiler on `directory`."""
    c = sg.GrammarCompiler(tok, cache_dir=directory)
    g = make(c)
    c.disk_cache.flush()
    return g, g.masks_stored


def mask_files(directory) -> list:
    return [p for p in directory.glob("*.sgc") if b'{"words"' in p.read_bytes()[:400]]


def test_a_restart_gets_the_masks_and_computes_none(qwen, tmp_path, computed):
    for name, make, doc in formats(None):
        cold = masks_along(make(sg.GrammarCompiler(qwen)), doc)
        saved(qwen, tmp_path, make, doc)
        computed.clear()
        g, stored = restarted(qwen, tmp_path, make)
        assert stored > 1 and g.masker.stored is not None, name
        assert g.masker.cached_states() == [], name  # nothing is loaded ahead: the masker asks as it misses
        for a, b in zip(masks_along(g, doc), cold):
            assert np.array_equal(a, b), name
        assert computed == [], name  # every mask along the document came from the file
    assert len(mask_files(tmp_path)) == 4


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rng=st.randoms(use_true_random=False), which=st.sampled_from([0, 1, 3]))
def test_random_walks_after_a_restart_equal_a_cold_compile(qwen, rng, which):
    """Masks of states the saving process reached in another order, by random allowed tokens:
    the loaded grammar's states are numbered otherwise, its masks are the cold ones (the
    schema with calls, the recursive GBNF, uniqueItems)."""
    name, make, doc = formats(None)[which]
    with tempfile.TemporaryDirectory() as directory:
        first = sg.GrammarCompiler(qwen, cache_dir=directory)
        g1 = make(first)
        walk(g1, rng, 40, None)
        masks_along(g1, doc)
        first.disk_cache.flush()
        first.save_masks()
        g2, _ = restarted(qwen, directory, make)
        walk(g2, rng, 60, make(sg.GrammarCompiler(qwen)))
        # every state the first process cached is reached again, and passes its checks
        assert g2.masker.stored.resolve_all() == min(len(g1.masker.cached_states()), disk_masks.MAX_MASKS)


def test_the_same_path_has_other_state_numbers_after_a_restart(qwen, tmp_path):
    """What the byte paths are for: a state the saving process numbered one way is numbered
    another way after the restart (the lookup replays paths nearest the start first)."""
    name, make, doc = formats(None)[0]
    first = sg.GrammarCompiler(qwen, cache_dir=tmp_path)
    g1 = make(first)
    walk(g1, random.Random(7), 40, None)
    masks_along(g1, doc)
    first.save_masks()
    g2, _ = restarted(qwen, tmp_path, make)
    masks_along(g2, doc)
    before = {p: s for s, p in disk_masks.state_paths(g1, g1.masker.cached_states()).items()}
    after = {p: s for s, p in disk_masks.state_paths(g2, g2.masker.cached_states()).items()}
    assert any(before[p] != after[p] for p in after.keys() & before.keys())  # one path, two state numbers


def walk(grammar, rng: random.Random, steps: int, cold) -> None:
    """Random allowed tokens from the start, again and again; with `cold`, a cold compile's matcher
    follows and its mask must equal this one's at every step."""
    m = sg.GrammarMatcher(grammar)
    other = sg.GrammarMatcher(cold) if cold is not None else None
    for _ in range(steps):
        mask = m.next_token_mask()
        if other is not None:
            assert np.array_equal(mask, other.next_token_mask())
        allowed = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")[: grammar.tokenizer_info.vocab_size])
        token = int(rng.choice(allowed.tolist()))
        if token in grammar.tokenizer_info.eos_token_ids or m.is_terminated():
            m, other = sg.GrammarMatcher(grammar), (sg.GrammarMatcher(cold) if cold is not None else None)
            continue
        assert m.accept_token(token)
        if other is not None:
            assert other.accept_token(token)


def rewrite_payload(data: bytes, change) -> bytes:
    head = disk_cache._HEAD.size + struct.unpack_from("<8sIH", data)[2]
    code, vocab, key, _, _ = disk_cache._TAIL.unpack_from(data, head)
    payload = bytes(change(bytearray(data[head + disk_cache._TAIL.size:])))
    return data[:head] + disk_cache._TAIL.pack(code, vocab, key, len(payload), hashlib.sha256(payload).digest()) + payload


def stored_arrays(p: bytearray, head: int) -> tuple[dict, dict[str, tuple[int, np.ndarray]]]:
    """(metadata, name -> (offset in the payload, a copy of the array)) of a mask entry's payload;
    `head`: the header's length (arrays are aligned to the file)."""
    (n,) = struct.unpack_from("<I", p, 0)
    meta = json.loads(bytes(p[4:4 + n]))
    pos, out = 4 + n, {}
    for name, dtype, count in meta["arrays"]:
        a = np.frombuffer(bytes(p), dtype=dtype, count=count, offset=pos).copy()
        out[name] = (pos, a)
        pos += -(-a.nbytes // disk_cache.ALIGN) * disk_cache.ALIGN
    return meta, out


def lie(head: int, name: str, change):
    """A payload change: array `name` changed in place by change(array) (the same length)."""
    def go(p: bytearray) -> bytearray:
        _, arrays = stored_arrays(p, head)
        pos, a = arrays[name]
        change(a)
        p[pos:pos + a.nbytes] = a.tobytes()
        return p
    return go


def test_damaged_and_lying_mask_files_are_refused(qwen, tmp_path, caplog, computed):
    name, make, doc = formats(None)[0]
    cold = masks_along(make(sg.GrammarCompiler(qwen)), doc)
    saved(qwen, tmp_path, make, doc)
    (path,) = mask_files(tmp_path)
    good = path.read_bytes()
    head = disk_cache._HEAD.size + struct.unpack_from("<8sIH", good)[2] + disk_cache._TAIL.size
    meta_start = good.index(b'{"words"')
    damaged = [good[:i] + bytes([good[i] ^ 0xFF]) + good[i + 1:] for i in list(range(0, meta_start, 11)) + list(range(meta_start, len(good), 401))]
    damaged += [good[:n] for n in range(0, len(good), len(good) // 6)]

    def garbage_mask(a):
        a[:8] = 0x55  # the first compressed mask's zlib header and data: not a mask

    lies = [
        lie(head, "paths", lambda a: a.__setitem__(slice(None), 0x00)),  # paths of NUL bytes: nowhere in a JSON grammar
        lie(head, "shapes", lambda a: a.__setitem__(32, 1 - a[32])),  # the start state accepts / does not accept
        lie(head, "shapes", lambda a: a.__setitem__(slice(0, 32), 0xFF)),  # every byte continues
        lie(head, "mask_of", lambda a: a.__setitem__(0, 10**6)),
        lie(head, "path_ends", lambda a: a.__setitem__(0, a[-1] + 1)),
        lie(head, "masks", garbage_mask),
    ]

    def other_words(p: bytearray) -> bytearray:
        (n,) = struct.unpack_from("<I", p, 0)
        body = bytes(p[4:4 + n]).replace(b'"words": ', b'"words": 1', 1)
        return bytearray(struct.pack("<I", len(body)) + body + bytes(p[4 + n:]))

    damaged += [rewrite_payload(good, change) for change in lies + [other_words]]
    caplog.set_level(logging.WARNING, logger="strictgen.cache")
    refused = 0
    for data in damaged:
        path.write_bytes(data)
        caplog.clear()
        g, _ = restarted(qwen, tmp_path, make)
        for a, b in zip(masks_along(g, doc), cold):
            assert np.array_equal(a, b)  # a lie found on the way or never met: no wrong mask either way
        if g.masker.stored is not None:
            assert g.masker.stored.resolve_all() == 0  # every entry checked now: the file is refused
        warnings = [r.getMessage() for r in caplog.records if r.name == "strictgen.cache"]
        assert len(warnings) == 1 and "\n" not in warnings[0], warnings
        assert not path.exists()  # refused and removed: the next save writes it again
        refused += 1
    assert refused == len(damaged)


def test_a_store_keeps_the_stored_masks_it_did_not_use(qwen, tmp_path, computed):
    """A process that used only the first stored mask saves the others too: the next restart
    computes none of the masks along the document."""
    name, make, doc = formats(None)[0]
    cold = masks_along(make(sg.GrammarCompiler(qwen)), doc)
    saved(qwen, tmp_path, make, doc)
    c = sg.GrammarCompiler(qwen, cache_dir=tmp_path)
    g = make(c)
    sg.GrammarMatcher(g).next_token_mask()
    assert c.save_masks() == 1 and len(g.masker.cached_states()) == 1
    computed.clear()
    g3, _ = restarted(qwen, tmp_path, make)
    for a, b in zip(masks_along(g3, doc), cold):
        assert np.array_equal(a, b)
    assert computed == []


def test_a_batch_fill_after_a_restart_looks_up_from_threads(qwen, tmp_path, computed):
    """Rows at every position of the document filled in one batch call after a restart: the
    first-time masks go to the thread pool, whose threads look the stored masks up at once;
    every row is the cold compile's, and none is computed."""
    name, make, doc = formats(None)[0]
    cold = masks_along(make(sg.GrammarCompiler(qwen)), doc)
    saved(qwen, tmp_path, make, doc)
    computed.clear()
    g, _ = restarted(qwen, tmp_path, make)
    matchers = []
    ids = canonical_ids("qwen", doc)
    for k in range(len(ids) + 1):
        m = sg.GrammarMatcher(g)
        assert all(m.accept_token(t) for t in ids[:k])
        matchers.append(m)
    rows = sg.allocate_token_bitmask(len(matchers), qwen.vocab_size)
    sg.fill_next_token_bitmask_batch(matchers, rows)
    for k, m in enumerate(matchers):
        assert np.array_equal(rows[k, : len(cold[k])], cold[k]), k
    assert computed == []


def test_deferred_rules_get_their_masks_stored_by_the_first_process(qwen, tmp_path, monkeypatch, computed):
    """A compile that defers its called rules (budget 0 here) saves its masks in its first
    process; the first restart computes none of them along the document."""
    from strictgen.compile import automaton

    monkeypatch.setattr(automaton, "EAGER_STATES", 0)
    monkeypatch.setattr(disk_cache, "LOAD_SECONDS_PER_STATE", 1e-12)  # kept, however fast its compile was
    tree = {"$defs": {"node": {"type": "object", "properties": {"masks_v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                               "additionalProperties": False}}, "$ref": "#/$defs/node"}
    make = lambda c: c.compile_json_schema(tree)  # noqa: E731
    doc = '{"masks_v": 1, "kids": [{"kids": []}, {"masks_v": -2}]}'
    cold = masks_along(make(sg.GrammarCompiler(qwen)), doc)
    assert make(saved(qwen, tmp_path, make, doc)).automaton.lazy is not None  # the saving process's grammar deferred rules
    computed.clear()
    g, stored = restarted(qwen, tmp_path, make)
    assert g.automaton.lazy is None and stored > 1
    for a, b in zip(masks_along(g, doc), cold):
        assert np.array_equal(a, b)
    assert computed == []


def test_saves_as_the_masks_grow(qwen, tmp_path):
    """A cache hit stores the grammar's masks in the background when they have doubled since the
    last store (not at every hit)."""
    name, make, doc = formats(None)[0]
    c = sg.GrammarCompiler(qwen, cache_dir=tmp_path)
    g = make(c)
    m = sg.GrammarMatcher(g)
    m.next_token_mask()
    assert make(c) is g
    c.disk_cache.flush()
    (path,) = mask_files(tmp_path)
    first = path.read_bytes()
    assert make(c) is g
    c.disk_cache.flush()
    assert path.read_bytes() == first  # nothing new: not written again
    masks_along(g, doc)
    assert make(c) is g
    c.disk_cache.flush()
    assert len(path.read_bytes()) > len(first) and g.masks_stored == g.masker.num_cached()
