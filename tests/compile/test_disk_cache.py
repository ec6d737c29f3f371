"""The on-disk grammar cache (compile/disk_cache.py): a restarted compiler loads what an earlier
one stored, and its masks equal a cold compile's; damaged, foreign or stale files are ignored
with one warning line and rebuilt, never a crash or a wrong mask."""

from __future__ import annotations

import hashlib
import json
import logging
import struct
import threading

import numpy as np
import pytest

import strictgen as sg
from strictgen.compile import disk_cache

from tests.helpers import canonical_ids

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}, "tags": {"type": "array", "items": {"type": "integer"}},
                                           "extra": {"type": "object"}}, "required": ["name"], "additionalProperties": False}
DOC = '{"name": "abc", "tags": [1, 22], "extra": {"k": [null, {"z": true}]}}'
GBNF = 'root ::= "(" list ")"\nlist ::= item ("," item)*\nitem ::= [0-9]+ | "(" list ")"'
REGEX = "[a-c]{1,3}@(x|yz)"
UNIQUE = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "n": {"type": "integer"}},
          "required": ["tags"]}


@pytest.fixture(autouse=True)
def no_vocabulary_entry(monkeypatch):
    """These tests count and damage grammar entries; the vocabulary's tables (a 22 MB entry for
    Qwen) have their own tests (test_disk_tables.py)."""
    monkeypatch.setattr(disk_cache.DiskCache, "vocabulary_tables", lambda self: False)


def formats(compiler):
    """(name, compile function, a valid document) for a schema with calls, recursive GBNF, a regex,
    a schema with uniqueItems."""
    return [
        ("schema", lambda c: c.compile_json_schema(SCHEMA), DOC),
        ("gbnf", lambda c: c.compile_grammar(GBNF), "(1,(22,(3)),4)"),
        ("regex", lambda c: c.compile_regex(REGEX), "abc@yz"),
        ("unique", lambda c: c.compile_json_schema(UNIQUE), '{"tags": ["a", "b", "ab"], "n": 3}'),  # the matcher follows uniqueItems
    ]


def masks_along(grammar, text: str) -> list[np.ndarray]:
    """The mask before each token of text's canonical qwen tokens, and after the last (EOS included)."""
    m = sg.GrammarMatcher(grammar)
    out = [m.next_token_mask().copy()]
    for t in canonical_ids("qwen", text):
        assert m.accept_token(t)
        out.append(m.next_token_mask().copy())
    assert m.accept_token(grammar.tokenizer_info.eos_token_ids[0])
    return out


def loaded(tok, directory, make) -> tuple[object, bool]:
    """(grammar, whether the disk cache answered) from a new compiler on `directory`."""
    c = sg.GrammarCompiler(tok, cache_dir=directory)
    hits = []
    c.on_compile = lambda kind, seconds, hit: hits.append(hit)
    g = make(c)
    c.disk_cache.flush()
    return g, hits == [True]


def test_round_trip_gives_the_cold_masks(qwen, tmp_path):
    for name, make, doc in formats(None):
        cold = make(sg.GrammarCompiler(qwen))
        first, hit = loaded(qwen, tmp_path, make)
        assert not hit
        again, hit = loaded(qwen, tmp_path, make)
        assert hit, name
        assert again.automaton.lazy is None and len(again.automaton.rules) == len(cold.automaton.rules)
        for a, b in zip(masks_along(again, doc), masks_along(cold, doc)):
            assert np.array_equal(a, b), name
    assert len(list(tmp_path.glob("*.sgc"))) == 4


def test_unenforced_and_markers_survive(qwen, tmp_path):
    make = lambda c: c.compile_json_schema({"type": "string", "format": "no-such-format", "contentEncoding": "base64"}, strict=False)  # noqa: E731
    cold = make(sg.GrammarCompiler(qwen))
    loaded(qwen, tmp_path, make)
    again, hit = loaded(qwen, tmp_path, make)
    assert hit and again.unenforced == cold.unenforced and again.markers == cold.markers


def test_grammars_with_families_are_not_stored(qwen, tmp_path):
    keys = [f"k{i}" for i in range(12)]  # any_order past 9 keys: a run-time family of key sets
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in keys}, "required": keys}
    make = lambda c: c.compile_json_schema(schema, any_order=True)  # noqa: E731
    g, hit = loaded(qwen, tmp_path, make)
    assert g.automaton.lazy is not None and not hit
    (entry,) = tmp_path.glob("*.sgc")  # a small "not kept" entry, so no process builds its rules again to find out
    assert entry.stat().st_size < 1000
    assert not loaded(qwen, tmp_path, make)[1]


def test_deferred_rules_are_built_and_stored(qwen, tmp_path, monkeypatch):
    """A compile that defers its called rules (budget 0 here): the store builds them as the
    machine would, the loaded grammar has them all, and its masks are the cold compile's; where
    loading them all would take longer than the compile did, nothing is stored."""
    from strictgen.compile import automaton

    monkeypatch.setattr(automaton, "EAGER_STATES", 0)
    tree = {"$defs": {"node": {"type": "object", "properties": {"deferred_v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                               "additionalProperties": False}}, "$ref": "#/$defs/node"}  # rules no earlier compile built
    make = lambda c: c.compile_json_schema(tree)  # noqa: E731
    doc = '{"deferred_v": 1, "kids": [{"kids": []}, {"deferred_v": -2}]}'
    cold, deferred = make(sg.GrammarCompiler(qwen)), make(sg.GrammarCompiler(qwen))
    assert cold.automaton.lazy is not None and deferred.automaton.lazy is not None and not deferred.machine.added
    key = ("json_schema",)  # any key: stored and loaded directly
    cache = disk_cache.DiskCache(tmp_path, qwen)
    assert not cache.store(key, deferred, compile_seconds=1e-9)  # a load would cost more: a "not kept" entry
    assert cache.load(key) is None and cache.key_digest(key) in cache._not_kept
    assert cache.store(key, deferred)
    again = cache.load(key)
    assert again.automaton.lazy is None and len(again.automaton.rules) == len(cold.automaton.lazy.names)
    for a, b in zip(masks_along(again, doc), masks_along(cold, doc)):
        assert np.array_equal(a, b)


def stored_file(tok, directory, make):
    loaded(tok, directory, make)
    (path,) = directory.glob("*.sgc")
    return path, path.read_bytes()


@pytest.mark.parametrize("which", ["regex", pytest.param("schema", marks=pytest.mark.slow)])  # schema: ~2 minutes on 2 cores
def test_corrupted_files_byte_by_byte(qwen, tmp_path, caplog, which):
    """Bytes of a stored file flipped in turn (the regex's 848-byte file: every header byte, every
    second metadata byte, arrays at a stride; the schema's 136 kB file: every header and
    metadata byte, arrays every 97th), and the file cut at 40 lengths: each load is refused with
    exactly one warning line, the grammar is compiled and stored again, and its masks along a
    document equal a cold compile's."""
    name, make, doc = next(f for f in formats(None) if f[0] == which)
    cold = masks_along(make(sg.GrammarCompiler(qwen)), doc)
    path, good = stored_file(qwen, tmp_path, make)
    meta_start, meta_end = good.index(b'{"source"'), good.index(b"}]}") + 3
    fast = which == "regex"
    positions = list(range(meta_start)) + list(range(meta_start, meta_end, 2 if fast else 1)) + list(range(meta_end, len(good), 17 if fast else 97))
    cuts = list(range(0, len(good), max(1, len(good) // 40)))
    damaged = [bytes(good[:i]) + bytes([good[i] ^ 0xFF]) + good[i + 1 :] for i in positions] + [good[:n] for n in cuts]
    caplog.set_level(logging.WARNING, logger="strictgen.cache")
    for data in damaged:
        path.write_bytes(data)
        caplog.clear()
        g, hit = loaded(qwen, tmp_path, make)
        assert not hit
        warnings = [r for r in caplog.records if r.name == "strictgen.cache"]
        assert len(warnings) == 1 and "\n" not in warnings[0].getMessage(), [r.getMessage() for r in warnings]
        assert path.read_bytes() == good  # rebuilt: the same file again
        for a, b in zip(masks_along(g, doc), cold):
            assert np.array_equal(a, b)
    print(f"\n{which}: {len(good)} bytes, {len(damaged)} damaged copies, all refused and rebuilt")


def rewrite_payload(data: bytes, change) -> bytes:
    """`data` with its payload changed by `change` and the checksum and size made right again:
    a file that passes the checksum but is not what strictgen wrote."""
    head = disk_cache._HEAD.size + struct.unpack_from("<8sIH", data)[2]
    code, vocab, key, size, _ = disk_cache._TAIL.unpack_from(data, head)
    payload = change(bytearray(data[head + disk_cache._TAIL.size :]))
    return data[:head] + disk_cache._TAIL.pack(code, vocab, key, len(payload), hashlib.sha256(payload).digest()) + bytes(payload)


def test_files_that_pass_the_checksum_but_lie(qwen, tmp_path, caplog):
    name, make, doc = formats(None)[1]  # the recursive GBNF: rules with calls
    cold = masks_along(make(sg.GrammarCompiler(qwen)), doc)
    path, good = stored_file(qwen, tmp_path, make)

    def meta_of(p: bytearray) -> tuple[dict, int]:
        (n,) = struct.unpack_from("<I", p, 0)
        return json.loads(bytes(p[4 : 4 + n])), n

    def with_meta(change):
        def go(p: bytearray) -> bytearray:
            meta, n = meta_of(p)
            change(meta)
            body = json.dumps(meta).encode()
            return bytearray(struct.pack("<I", len(body)) + body + bytes(p[4 + n :]))
        return go

    def table_entry(value):
        def go(p: bytearray) -> bytearray:
            _, n = meta_of(p)
            struct.pack_into("<i", p, 4 + n, value)  # the first rule's first table entry
            return p
        return go

    lies = [
        with_meta(lambda m: m["rules"][0].update(states=m["rules"][0]["states"] + 1)),
        with_meta(lambda m: m["rules"][0].update(calls=m["rules"][0]["calls"] + 5)),
        with_meta(lambda m: m["rules"].pop()),
        with_meta(lambda m: m.update(rules=[])),
        with_meta(lambda m: m.pop("markers")),
        table_entry(10**6),
        table_entry(-7),
        lambda p: p + b"\0",
        lambda p: bytearray(b"{" + bytes(p)),
    ]
    caplog.set_level(logging.WARNING, logger="strictgen.cache")
    for lie in lies:
        path.write_bytes(rewrite_payload(good, lie))
        caplog.clear()
        g, hit = loaded(qwen, tmp_path, make)
        assert not hit and len([r for r in caplog.records if r.name == "strictgen.cache"]) == 1
        for a, b in zip(masks_along(g, doc), cold):
            assert np.array_equal(a, b)


def test_other_version_and_other_vocabulary_are_refused(qwen, tmp_path, caplog, monkeypatch):
    name, make, doc = formats(None)[2]
    path, good = stored_file(qwen, tmp_path, make)
    caplog.set_level(logging.WARNING, logger="strictgen.cache")
    # a file another strictgen wrote, under the name this one looks for
    vlen = struct.unpack_from("<8sIH", good)[2]
    path.write_bytes(good[: disk_cache._HEAD.size] + b"9" * vlen + good[disk_cache._HEAD.size + vlen :])
    assert not loaded(qwen, tmp_path, make)[1]
    assert "another strictgen" in caplog.records[-1].getMessage()
    # a file written for another vocabulary (DeepSeek's), renamed to the name Qwen's would have
    deepseek = sg.TokenizerInfo.from_name("deepseek")
    other_dir = tmp_path / "other"
    other, _ = stored_file(deepseek, other_dir, make)
    key = ("regex", REGEX)
    target = disk_cache.DiskCache(tmp_path, qwen).path(disk_cache.DiskCache(tmp_path, qwen).key_digest(key))
    assert target == path
    path.write_bytes(other.read_bytes())
    caplog.clear()
    g, hit = loaded(qwen, tmp_path, make)
    assert not hit and "another vocabulary" in caplog.records[-1].getMessage()
    assert np.array_equal(masks_along(g, doc)[0], masks_along(make(sg.GrammarCompiler(qwen)), doc)[0])
    # another format version
    path.write_bytes(good[:8] + struct.pack("<I", disk_cache.FORMAT + 1) + good[12:])
    caplog.clear()
    assert not loaded(qwen, tmp_path, make)[1] and "format" in caplog.records[-1].getMessage()


def test_size_bound_evicts_least_recently_used(qwen, tmp_path):
    patterns = [f"[a-z]{{{i}}}x" for i in range(1, 7)]
    sizes = {}
    for p in patterns:
        loaded(qwen, tmp_path, lambda c, p=p: c.compile_regex(p))
        sizes[p] = max(f.stat().st_size for f in tmp_path.glob("*.sgc"))
    bound = sum(sorted(sizes.values())[-3:]) + 10  # room for about three files
    cache = disk_cache.DiskCache(tmp_path, qwen, max_bytes=bound)
    import os
    import time as _time

    now = _time.time()
    for i, p in enumerate(patterns):  # pattern 0 used most recently, then 5, 4, ...
        os.utime(cache.path(cache.key_digest(("regex", p))), (now - 100 + (50 if i == 0 else i), now - 100 + (50 if i == 0 else i)))
    stale, fresh = tmp_path / f".tmp-stale{disk_cache.SUFFIX}.part", tmp_path / f".tmp-fresh{disk_cache.SUFFIX}.part"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    os.utime(stale, (now - 7200, now - 7200))  # a writer that died two hours ago
    cache.evict()
    assert not stale.exists() and fresh.exists()  # a write in progress elsewhere is left alone
    assert cache.total_bytes() <= bound
    left = {p for p in patterns if cache.path(cache.key_digest(("regex", p))).exists()}
    assert patterns[0] in left and patterns[1] not in left and patterns[5] in left
    with pytest.raises(ValueError):
        disk_cache.DiskCache(tmp_path, qwen, max_bytes=0)


def test_concurrent_writers_and_readers_share_a_directory(qwen, tmp_path):
    """Threads of several compilers (as processes would) store and load the same grammar at
    once: every load is whole (a hit or a miss, never a damaged file) and no temporary file stays."""
    name, make, doc = formats(None)[0]
    cold = masks_along(make(sg.GrammarCompiler(qwen)), doc)
    errors = []

    def worker():
        try:
            for _ in range(3):
                g, _ = loaded(qwen, tmp_path, make)
                assert np.array_equal(masks_along(g, doc)[-2], cold[-2])
        except Exception as exc:  # collected, then raised in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert [p.name for p in tmp_path.iterdir()] == [p.name for p in tmp_path.glob("*.sgc")] and len(list(tmp_path.glob("*.sgc"))) == 1
