"""The vocabulary's tables on disk (compile/disk_cache.py, VocabTrie/TokenFacts.arrays): a new
process's vocabulary takes its trie and token facts from the cache directory instead of building
them, the loaded tables are the built ones array for array and give the same masks; a damaged,
lying or foreign tables file is ignored with one warning line and rebuilt, never a crash or a
wrong mask."""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import struct

import numpy as np
import pytest

import strictgen as sg
from strictgen.compile import disk_cache

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "note": {"type": "string"},
                                           "n": {"type": "array", "items": {"type": "integer"}}}, "required": ["name", "note"]}
DOC = '{"name": "añb c", "note": "free text ✓ here", "n": [1, -20]}'


def fresh(tok: sg.TokenizerInfo) -> sg.TokenizerInfo:
    """The same vocabulary as a new object, as a new process has it: no tables built yet."""
    out = copy.copy(tok)
    assert out is not tok and out.fingerprint == tok.fingerprint
    return out


def masks_along(grammar, text: str) -> list[np.ndarray]:
    """The mask before each step of `text`, taking at each step the longest allowed token that
    the rest of the text starts with, then EOS (which must be allowed)."""
    m = sg.GrammarMatcher(grammar)
    tok = grammar.tokenizer_info
    ids = _ids_by_bytes(tok.fingerprint, tok)
    data, out = text.encode(), []
    while True:
        mask = m.next_token_mask().copy()
        out.append(mask)
        if not data:
            break
        allowed = [ids[data[:n]] for n in range(min(len(data), 64), 0, -1) if data[:n] in ids]
        best = next(t for t in allowed if mask[t // 32] >> (t % 32) & 1)
        assert m.accept_token(best)
        data = data[len(tok.all_token_bytes[best]):]
    assert m.accept_token(tok.eos_token_ids[0])
    return out


_IDS: dict[str, dict[bytes, int]] = {}


def _ids_by_bytes(fingerprint: str, tok: sg.TokenizerInfo) -> dict[bytes, int]:
    """The text tokens by their bytes, once per vocabulary (copies of it share them)."""
    if fingerprint not in _IDS:
        special = set(tok.special_token_ids)
        _IDS[fingerprint] = {b: i for i, b in enumerate(tok.all_token_bytes) if b and i not in special}
    return _IDS[fingerprint]


@pytest.fixture(autouse=True)
def taken(monkeypatch) -> list[bool]:
    """What each DiskCache.vocabulary_tables call answered (True: the stored tables were taken)."""
    answers: list[bool] = []
    original = disk_cache.DiskCache.vocabulary_tables

    def recorded(self):
        answers.append(original(self))
        return answers[-1]

    monkeypatch.setattr(disk_cache.DiskCache, "vocabulary_tables", recorded)
    return answers


def compiler(tok, directory, taken: list[bool]) -> tuple[sg.GrammarCompiler, bool]:
    """A compiler on `directory` (its writes finished) and whether its vocabulary took stored tables."""
    before = len(taken)
    c = sg.GrammarCompiler(tok, cache_dir=directory)
    c.disk_cache.flush()
    assert len(taken) == before + 1 and not tok.adopt_trie(lambda: pytest.fail("the tables are in place after use_disk_cache"))
    return c, taken[-1]


def tables_path(cache: disk_cache.DiskCache):
    return cache.path(cache.key_digest(disk_cache.VOCABULARY_KEY))


def test_tables_round_trip(qwen, tmp_path, taken):
    cold = masks_along(sg.GrammarCompiler(qwen).compile_json_schema(SCHEMA), DOC)
    first = fresh(qwen)
    assert not first.__dict__.get("trie")
    c1, _ = compiler(first, tmp_path, taken)
    assert tables_path(c1.disk_cache).exists() and not c1.disk_cache.vocabulary_tables()  # built, then stored; not adopted
    second = fresh(qwen)
    c2, took = compiler(second, tmp_path, taken)
    assert took and second.trie is not first.trie
    want, got = qwen.trie.arrays(), second.trie.arrays()
    assert want.keys() == got.keys() and "loops.0.inside" in got  # the common loops' splits too (trie.COMMON_LOOPS)
    for name in want:
        assert want[name].dtype == got[name].dtype and np.array_equal(want[name], got[name]), name
    assert second.trie.depth == qwen.trie.depth and second.trie.token_bytes is second.all_token_bytes
    for a, b in zip(masks_along(c2.compile_json_schema(SCHEMA), DOC), cold):
        assert np.array_equal(a, b)
    # a vocabulary whose tables are built already keeps them (no load)
    assert not c2.disk_cache.vocabulary_tables()


def rewrite_payload(data: bytes, change) -> bytes:
    """`data` with its payload changed and its size and checksum made right again."""
    head = disk_cache._HEAD.size + struct.unpack_from("<8sIH", data)[2]
    code, vocab, key, _, _ = disk_cache._TAIL.unpack_from(data, head)
    payload = bytes(change(bytearray(data[head + disk_cache._TAIL.size:])))
    return data[:head] + disk_cache._TAIL.pack(code, vocab, key, len(payload), hashlib.sha256(payload).digest()) + payload


def with_meta(change):
    def go(p: bytearray) -> bytearray:
        (n,) = struct.unpack_from("<I", p, 0)
        meta = json.loads(bytes(p[4:4 + n]))
        change(meta["arrays"])
        body = json.dumps(meta).encode()
        body += b" " * (n - len(body)) if len(body) <= n else b""
        return bytearray(struct.pack("<I", len(body)) + body + bytes(p[4 + n:]))
    return go


def array_at(name: str, index: int, value: int):
    """Write `value` into element `index` of the stored array `name` (its stored dtype)."""
    def go(p: bytearray) -> bytearray:
        (n,) = struct.unpack_from("<I", p, 0)
        head = len(p)  # offsets inside the payload: the arrays start aligned to the file, so find them from the end
        entries = json.loads(bytes(p[4:4 + n]))["arrays"]
        sizes = [-(-np.dtype(d).itemsize * c // disk_cache.ALIGN) * disk_cache.ALIGN for _, d, c in entries]
        pos = head - sum(sizes)
        for (entry, dtype, _), size in zip(entries, sizes):
            if entry == name:
                a = np.frombuffer(p, dtype=dtype, count=index + 1, offset=pos).copy()
                a[index] = value
                p[pos:pos + a.nbytes] = a.tobytes()
                return p
            pos += size
        raise AssertionError(name)
    return go


def damaged_copies(good: bytes, strides: tuple[int, int, int], cuts: int):
    """Bytes flipped in the header, metadata and arrays at the given strides, the file cut at
    `cuts` lengths, and lies with a right checksum; made one at a time (all 442 dense copies of a
    7 MB file at once held 11 GB)."""
    meta_start = good.index(b'{"arrays"')
    meta_end = good.index(b"]]}", meta_start) + 3
    positions = list(range(0, meta_start, strides[0])) + list(range(meta_start, meta_end, strides[1])) + list(range(meta_end, len(good), strides[2]))
    flipped = (good[:i] + bytes([good[i] ^ 0xFF]) + good[i + 1:] for i in positions)
    cut = (good[:n] for n in range(0, len(good), len(good) // cuts))
    lies = [
        with_meta(lambda t: t[0].__setitem__(2, t[0][2] + 1)),  # a count one more than stored
        with_meta(lambda t: t.pop()),  # an array missing
        with_meta(lambda t: t[1].__setitem__(1, "<i8")),  # another dtype
        with_meta(lambda t: t[3].__setitem__(1, "|O")),  # objects: never made from bytes
        array_at("walk_nodes", 5, 1 << 30),  # a child beyond the trie
        array_at("node_tokens", 0, -3),
        array_at("token_node", 7, 1 << 40),
        array_at("node_parent", 2, -5),
        array_at("facts.starts", 11, 1 << 40),  # a token's bytes beyond the vocabulary's
        array_at("facts.lengths", 0, -1),
    ]
    yield from flipped
    yield from cut
    for lie in lies:
        yield rewrite_payload(good, lie)


@pytest.mark.parametrize("strides, cuts", [pytest.param((23, 97, 1_500_007), 3, id="sampled"),  # 32 copies, ~8 s on 2 loaded cores
                                           pytest.param((1, 3, 99_991), 16, id="dense", marks=pytest.mark.slow)])  # 442 copies, ~2 minutes
def test_damaged_tables_are_refused_and_rebuilt(tmp_path, caplog, strides, cuts, taken):
    """The SmolLM2 vocabulary's tables file (7 MB) with bytes flipped in the header, the
    metadata and the arrays, cut short, and rewritten with a right checksum around lies
    (counts, types, indices out of range): each is refused with exactly one warning line, the
    tables are built and stored again (the same file), and masks along a document equal those of
    the vocabulary's own tables."""
    smol = sg.TokenizerInfo.from_name("smollm2")
    cold = masks_along(sg.GrammarCompiler(smol).compile_json_schema(SCHEMA), DOC)
    c, _ = compiler(fresh(smol), tmp_path, taken)
    path = tables_path(c.disk_cache)
    good = path.read_bytes()
    caplog.set_level(logging.WARNING, logger="strictgen.cache")
    count = 0
    for data in damaged_copies(good, strides, cuts):
        count += 1
        path.write_bytes(data)
        caplog.clear()
        c, took = compiler(fresh(smol), tmp_path, taken)
        assert not took
        warnings = [r.getMessage() for r in caplog.records if r.name == "strictgen.cache"]
        assert len(warnings) == 1 and "\n" not in warnings[0], warnings
        assert path.read_bytes() == good  # rebuilt: the same file again
        for a, b in zip(masks_along(c.compile_json_schema(SCHEMA), DOC), cold):
            assert np.array_equal(a, b)
    assert count >= 30
    print(f"\n{len(good):,} bytes, {count} damaged copies, all refused and rebuilt")


def test_tables_of_another_vocabulary_or_version_are_refused(tmp_path, caplog, taken):
    smol = sg.TokenizerInfo.from_name("smollm2")
    # a padded SmolLM2: another vocabulary (another fingerprint) of the same tokens
    other = sg.TokenizerInfo.from_vocab(list(smol.all_token_bytes), eos_token_ids=smol.eos_token_ids,
                                        special_token_ids=[i for i in smol.special_token_ids if i < len(smol)], vocab_size=len(smol) + 64)
    c_other, _ = compiler(other, tmp_path / "other", taken)
    c, _ = compiler(fresh(smol), tmp_path, taken)
    path = tables_path(c.disk_cache)
    good = path.read_bytes()
    caplog.set_level(logging.WARNING, logger="strictgen.cache")
    path.write_bytes(tables_path(c_other.disk_cache).read_bytes())
    assert not compiler(fresh(smol), tmp_path, taken)[1]
    assert "another vocabulary" in caplog.records[-1].getMessage()
    vlen = struct.unpack_from("<8sIH", good)[2]
    path.write_bytes(good[:disk_cache._HEAD.size] + b"9" * vlen + good[disk_cache._HEAD.size + vlen:])
    assert not compiler(fresh(smol), tmp_path, taken)[1]
    assert "another strictgen" in caplog.records[-1].getMessage()
    assert path.read_bytes() == good and compiler(fresh(smol), tmp_path, taken)[1]


def test_tables_share_the_directory_bound(qwen, tmp_path, taken):
    """The tables entry counts in the directory's byte bound like a grammar's, and goes first
    when it is the least recently used."""
    c, _ = compiler(fresh(qwen), tmp_path, taken)
    c.compile_regex("[a-z]+@x")
    c.disk_cache.flush()
    path = tables_path(c.disk_cache)
    size = path.stat().st_size
    assert c.disk_cache.total_bytes() > size > 10_000_000
    import os

    os.utime(path, (1, 1))  # used long ago
    small = disk_cache.DiskCache(tmp_path, qwen, max_bytes=size)
    small.evict()
    assert not path.exists() and small.total_bytes() > 0  # the grammar stays


def test_tables_past_half_the_bound_are_not_stored(qwen, tmp_path, taken):
    """Tables larger than half the directory's bound would push out every grammar: not written."""
    cache = disk_cache.DiskCache(tmp_path, fresh(qwen), max_bytes=1 << 20)
    assert not cache.vocabulary_tables()
    cache.flush()
    assert not tables_path(cache).exists() and cache.tokenizer_info.trie.num_tokens == qwen.vocab_size


def test_a_new_strictgen_drops_the_tables_another_one_wrote(tmp_path, taken, monkeypatch):
    """Another strictgen (here: another code digest, as after any source change) writes its own
    tables entry for the vocabulary and removes the one it supersedes; another vocabulary's
    tables and the grammar entries stay."""
    smol = sg.TokenizerInfo.from_name("smollm2")
    other = sg.TokenizerInfo.from_vocab(list(smol.all_token_bytes), eos_token_ids=smol.eos_token_ids,
                                        special_token_ids=[i for i in smol.special_token_ids if i < len(smol)], vocab_size=len(smol) + 64)
    c_other, _ = compiler(other, tmp_path, taken)
    c_old, _ = compiler(fresh(smol), tmp_path, taken)
    c_old.compile_regex("[a-z]+@x")
    c_old.disk_cache.flush()
    old, others = tables_path(c_old.disk_cache), tables_path(c_other.disk_cache)
    assert old.exists() and others.exists() and len(list(tmp_path.glob("*.sgc"))) == 3
    monkeypatch.setattr(disk_cache, "_code_digest", hashlib.sha256(b"another strictgen").digest())
    c_new, took = compiler(fresh(smol), tmp_path, taken)
    new = tables_path(c_new.disk_cache)
    assert not took and new.exists() and new != old and not old.exists()
    assert others.exists()
    assert len(list(tmp_path.glob("*.sgc"))) == 3  # the two vocabularies' tables, the grammar
