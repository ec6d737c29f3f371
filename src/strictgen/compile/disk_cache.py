"""Compiled grammars on disk, so a restarted server, a new worker or a replica skips the compile.

Three kinds of entry share one directory, one file format and one byte bound: a grammar's rule
automata (the tables the pushdown machine is built from; its machine grows again as decoding
visits states), the masks a grammar has computed (named by byte paths, since state numbers are
not stable across processes: disk_masks.py), and the vocabulary's tables (its trie and per-token
facts, VocabTrie.arrays; named by the vocabulary too, so that a new strictgen's tables replace
those of the one before instead of waiting for eviction). A grammar's file is written on a background thread after the compile,
off the request's path. Rules the
compile deferred (past automaton.EAGER_STATES) are built there, as the machine would build
them, so a loaded grammar has every rule; since loading costs about LOAD_SECONDS_PER_STATE per
state, such a grammar is kept only where that is less than its compile's CPU time (the building
stops as soon as it is not). Grammars with families (rules made during generation as the
document goes: any_order objects past 9 keys, big counted patterns) are not kept: their rules
need the grammar's IR, which has no file form here. A grammar not kept gets a small "not kept"
entry, so that restarts do not build its rules again to find out.

One file per grammar, in a format of our own (never pickle: a cache directory may be shared, and
a file from it must not run code):

    magic "SGCACHE\\0" | u32 format | u16 n + strictgen version | 32-byte code digest |
    32-byte vocabulary fingerprint | 32-byte key digest | u64 payload size | 32-byte payload sha256 | payload

payload: u32 n + JSON metadata (source, markers, unenforced, per rule: name, states, byte classes,
calls) | per rule: int32 table (states x classes), 256-byte class map, a byte per state
(accepting), int32 call starts (states + 1), callees, return states. Mask and vocabulary
entries: u32 n + JSON metadata naming the arrays (name, dtype, count) | the arrays, each
starting at a multiple of ALIGN bytes from the file's start (read in place, aligned).

The key digest covers the compile request (format kind, text and options) and the file header
strictgen's version, a digest of the code that builds automata, and the vocabulary's content
fingerprint. Writes go to a temporary file that is fsynced and renamed into place, so readers
(other processes too) see a whole file or none. A file that is short, fails its checksum or
header, or does not parse into consistent automata is ignored with one warning line and
removed; the grammar is compiled and written again. The directory is kept under `max_bytes` by
removing the least recently used files (a load touches its file's time).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Hashable, TypeVar

import numpy as np

from strictgen import regular

from . import disk_masks
from .automaton import CompiledAutomaton, RuleDFA

if TYPE_CHECKING:
    from strictgen.tokenizer.info import TokenizerInfo
    from strictgen.tokenizer.trie import VocabTrie

    from .compiled import CompiledGrammar

logger = logging.getLogger("strictgen.cache")

MAGIC = b"SGCACHE\0"
FORMAT = 1
SUFFIX = ".sgc"
DEFAULT_MAX_BYTES = 1 << 30
# Loading a stored grammar costs about this per automaton state (rebuilding its rules and
# machine), measured over the bench schemas on Qwen's vocabulary (6-9 µs; scripts/disk_cache_restart.py)
LOAD_SECONDS_PER_STATE = 8e-6
_HEAD = struct.Struct("<8sIH")
_TAIL = struct.Struct("<32s32s32sQ32s")
NOT_KEPT = object()  # what a "not kept" entry decodes to
VOCABULARY_KEY = ("vocabulary tables",)  # the entry of the vocabulary's trie and token facts
TABLES_PREFIX = "tables-"  # its file: tables-<vocabulary fingerprint, 16 hex>-<key digest, 40 hex>.sgc
ALIGN = 16  # its arrays start at multiples of this from the file's start (read in place, aligned)
T = TypeVar("T")


class CacheFileError(ValueError):
    """A cache file that cannot be used (the reason is the message)."""


_code_digest: bytes | None = None


def code_digest() -> bytes:
    """sha256 of the source of the layers that turn a format into automata (grammar/, compile/,
    regular/, tokenizer/): a development tree whose version string did not change still never
    reads automata an older build of the compiler wrote."""
    global _code_digest
    if _code_digest is None:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.sha256()
        for layer in ("grammar", "compile", "regular", "tokenizer"):
            for path in sorted((root / layer).rglob("*")):
                if path.suffix in (".py", ".c", ".h"):
                    h.update(path.relative_to(root).as_posix().encode() + b"\0")
                    h.update(path.read_bytes())
        _code_digest = h.digest()
    return _code_digest


def _version() -> str:
    from strictgen import __version__

    return __version__


class DiskCache:
    """The compiled grammars of one vocabulary in `directory` (shared by processes)."""

    def __init__(self, directory: str | os.PathLike, tokenizer_info: "TokenizerInfo", max_bytes: int = DEFAULT_MAX_BYTES):
        if max_bytes <= 0:
            raise ValueError(f"cache_max_bytes must be positive, not {max_bytes}")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.tokenizer_info = tokenizer_info
        self.max_bytes = max_bytes
        self._vocab = bytes.fromhex(tokenizer_info.fingerprint)
        code_digest()  # read the sources now, at start-up, not on the first request's path
        self._tables_digest = self.key_digest(VOCABULARY_KEY)
        # one background thread for writes, started now: starting a thread on a
        # request's path waits for the OS to schedule it (milliseconds on a loaded machine)
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="strictgen-cache")
        self._background.submit(int)
        self._writers: list[Future] = []
        self._not_kept: set[bytes] = set()  # keys a file says are not worth keeping
        self.tables_loaded = False  # whether the vocabulary took its tables from the directory (vocabulary_tables)
        self._lock = threading.Lock()

    # ---- keys and paths ----

    def key_digest(self, key: Hashable) -> bytes:
        """The digest naming a compile request (its kind, text and options are the key's repr:
        strings, bools and frozen dataclasses, whose reprs are stable across processes)."""
        h = hashlib.sha256(b"strictgen-grammar-key\0")
        for part in (repr(key), _version()):
            h.update(part.encode("utf-8", "surrogatepass") + b"\0")
        h.update(code_digest() + self._vocab)
        return h.digest()

    def path(self, digest: bytes) -> Path:
        if digest == self._tables_digest:  # named by its vocabulary too: superseded ones are found by name
            return self.directory / f"{TABLES_PREFIX}{self._vocab.hex()[:16]}-{digest.hex()[:40]}{SUFFIX}"
        return self.directory / (digest.hex()[:40] + SUFFIX)

    # ---- load ----

    def load(self, key: Hashable) -> "CompiledGrammar | None":
        """The grammar stored for `key`, or None (absent, or a bad file: warned about and removed)."""
        digest = self.key_digest(key)
        compiled = self._read(digest, self._decode)
        if compiled is NOT_KEPT:
            with self._lock:
                self._not_kept.add(digest)  # no store attempt (building its rules) in this process either
            return None
        return compiled

    def _read(self, digest: bytes, decode: Callable[[bytes, bytes], T]) -> T | None:
        """decode(file bytes, digest) of the entry `digest`, or None: absent, or a bad file (any
        exception decode raises), which is warned about in one line and removed."""
        path = self.path(digest)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("strictgen cache: cannot read %s (%s); building instead", path, str(exc))
            return None
        try:
            got = decode(data, digest)
        except Exception as exc:  # CacheFileError, or anything a damaged file makes the rebuild raise
            logger.warning("strictgen cache: ignoring %s (%s); building it again", path, str(exc))
            _remove(path)
            return None
        try:
            os.utime(path)  # least recently used goes first
        except OSError:
            pass
        return got

    def _decode(self, data: bytes, digest: bytes) -> "CompiledGrammar":
        from .compiled import CompiledGrammar

        payload = self._check_header(data, digest)
        try:
            (meta_len,) = struct.unpack_from("<I", payload, 0)
            meta = json.loads(bytes(payload[4 : 4 + meta_len]).decode("utf-8"))
            if meta.get("not_kept") is True and 4 + meta_len == len(payload):
                return NOT_KEPT
            arrays = _Reader(payload, 4 + meta_len)
            specs = meta["rules"]
            rules = [RuleDFA(str(r["name"]), _rebuild(arrays, int(r["states"]), int(r["classes"]), int(r["calls"]), len(specs))) for r in specs]
            if not rules or arrays.pos != len(payload):
                raise CacheFileError("the payload does not match its metadata")
            markers = tuple(str(m) for m in meta["markers"])
            unenforced = [tuple(u) for u in meta["unenforced"]] if meta.get("unenforced") is not None else None
            source = str(meta["source"])
        except CacheFileError:
            raise
        except (ValueError, KeyError, TypeError, IndexError, struct.error, UnicodeDecodeError, MemoryError) as exc:
            raise CacheFileError(f"malformed payload: {exc}") from None
        compiled = CompiledGrammar.from_automaton(CompiledAutomaton(rules), self.tokenizer_info, source, markers)
        if unenforced is not None:
            compiled.unenforced = unenforced
        return compiled

    def _check_header(self, data: bytes, digest: bytes) -> memoryview:
        if len(data) < _HEAD.size:
            raise CacheFileError("truncated header")
        magic, fmt, vlen = _HEAD.unpack_from(data, 0)
        if magic != MAGIC:
            raise CacheFileError("not a strictgen cache file")
        if fmt != FORMAT:
            raise CacheFileError(f"format {fmt}, this strictgen reads {FORMAT}")
        at = _HEAD.size + vlen
        if vlen > 64 or len(data) < at + _TAIL.size:
            raise CacheFileError("truncated or damaged header")
        version = data[_HEAD.size : at].decode("utf-8", "backslashreplace")
        code, vocab, key, size, checksum = _TAIL.unpack_from(data, at)
        if version != _version() or code != code_digest():
            raise CacheFileError(f"written by another strictgen ({version!r})")
        if vocab != self._vocab:
            raise CacheFileError("written for another vocabulary")
        if key != digest:
            raise CacheFileError("holds another grammar")
        payload = memoryview(data)[at + _TAIL.size :]
        if len(payload) != size:
            raise CacheFileError(f"payload of {len(payload)} bytes, header says {size}")
        if hashlib.sha256(payload).digest() != checksum:
            raise CacheFileError("checksum mismatch")
        return payload

    # ---- store ----

    def store_later(self, key: Hashable, compiled: "CompiledGrammar", compile_seconds: float | None = None) -> None:
        """Write `compiled` on a background thread (deferred rules are built there, off the
        request's path); `compile_seconds`: the CPU time its compile took (a grammar with
        deferred rules is kept only where loading them all would take less). `flush()` waits
        for the writes started so far."""
        with self._lock:
            if self.key_digest(key) in self._not_kept:
                return
        self._later(self.store, key, compiled, compile_seconds)

    def _later(self, write: Callable, *args) -> None:
        """write(*args) on the background thread; `flush()` waits for it; a failure is one warning line."""
        with self._lock:
            self._writers = [f for f in self._writers if not f.done()]
            self._writers.append(self._background.submit(self._quietly, write, *args))

    def flush(self) -> None:
        """Wait for the background writes asked for so far."""
        with self._lock:
            writers = list(self._writers)
        wait(writers)

    def _quietly(self, write: Callable, *args) -> None:
        try:
            write(*args)
        except Exception as exc:  # a cache write never fails a request; say why once
            logger.warning("strictgen cache: not stored (%s: %s)", type(exc).__name__, str(exc))

    def store(self, key: Hashable, compiled: "CompiledGrammar", compile_seconds: float | None = None) -> bool:
        """Write `compiled` for `key` (atomically); False when it is not kept (families, or
        deferred rules whose load would take longer than `compile_seconds`)."""
        budget = None if compiled.automaton.lazy is None or compile_seconds is None else compile_seconds / LOAD_SECONDS_PER_STATE
        rules = _all_rules(compiled, budget)
        digest = self.key_digest(key)
        if rules is None:  # a small entry that says so: later processes do not build its rules again to find out
            with self._lock:
                self._not_kept.add(digest)  # nor store its masks
            self._write(digest, {"not_kept": True}, [])
            return False
        meta = {
            "source": compiled.source,
            "markers": list(compiled.markers),
            "unenforced": [list(u) for u in compiled.unenforced] if hasattr(compiled, "unenforced") else None,
            "rules": [],
        }
        parts: list[bytes] = []
        for rule in rules:
            dfa = rule.dfa
            compact, classmap = dfa.compact(0)
            start, callee, ret = dfa.call_arrays()
            meta["rules"].append({"name": rule.name, "states": dfa.num_states, "classes": dfa.num_classes, "calls": len(callee) // 4})
            parts += [compact, classmap, dfa.accepting(), start, callee, ret]
        self._write(digest, meta, parts)
        with self._lock:
            self._not_kept.discard(digest)
        return True

    def _write(self, digest: bytes, meta: dict, parts: list[bytes], align: int = 1) -> None:
        """The entry `digest`: header, metadata, parts; with `align`, every part starts at a
        multiple of `align` bytes from the file's start (so that arrays read in place are aligned)."""
        version = _version().encode("utf-8")
        meta_bytes = json.dumps(meta, ensure_ascii=False).encode("utf-8", "surrogatepass")
        meta_bytes += b" " * (-(_HEAD.size + len(version) + _TAIL.size + 4 + len(meta_bytes)) % align)  # JSON may end in spaces
        payload = struct.pack("<I", len(meta_bytes)) + meta_bytes + b"".join(p + bytes(-len(p) % align) for p in parts)
        header = _HEAD.pack(MAGIC, FORMAT, len(version)) + version + _TAIL.pack(code_digest(), self._vocab, digest, len(payload), hashlib.sha256(payload).digest())
        _write_atomically(self.path(digest), header + payload)
        self.evict()

    # ---- the vocabulary's tables ----

    def vocabulary_tables(self) -> bool:
        """Give the vocabulary its trie and token facts from the directory (True), or, where they
        are not stored, build them now and store them on a background thread (False)."""
        digest = self._tables_digest
        self.tables_loaded = self.tokenizer_info.adopt_trie(lambda: self._read(digest, self._decode_tables))
        if not self.tables_loaded:
            trie = self.tokenizer_info.trie  # built now, or before
            if not self.path(digest).exists():
                self._later(self._store_tables, digest, trie)
        return self.tables_loaded

    def _store_tables(self, digest: bytes, trie: "VocabTrie") -> None:
        """Write the tables, unless they would take more than half the directory's bound (they
        would push out the grammars, and be pushed out by the next ones)."""
        arrays = trie.arrays()
        if sum(a.nbytes for a in arrays.values()) > self.max_bytes // 2:
            return
        self._write_arrays(digest, {}, arrays)
        self._drop_superseded_tables()

    def _drop_superseded_tables(self) -> None:
        """Remove the tables entries of this vocabulary that another strictgen (version or
        source) wrote: each is 20 MB or so, and every source change makes a new one. Safe with
        processes sharing the directory: a process reads its tables whole at start-up (a file
        removed meanwhile reads whole or not at all, and is then built again), and one of
        another strictgen, started later, builds and writes its own again (one build's cost;
        two versions started in turn on one directory pay it at every start)."""
        ours = self.path(self._tables_digest)
        for path in self.directory.glob(f"{TABLES_PREFIX}{self._vocab.hex()[:16]}-*{SUFFIX}"):
            if path != ours:
                _remove(path)

    def _decode_tables(self, data: bytes, digest: bytes) -> "VocabTrie":
        """The trie stored in `data` (its arrays views of `data`), checked (VocabTrie.from_arrays)."""
        from strictgen.tokenizer.trie import VocabTrie

        _, arrays = self._read_arrays(data, digest)
        info = self.tokenizer_info
        try:
            return VocabTrie.from_arrays(arrays, info.all_token_bytes, info.is_special)
        except ValueError as exc:
            raise CacheFileError(f"malformed tables: {exc}") from None

    # ---- a grammar's masks (disk_masks.py) ----

    def store_masks(self, key: Hashable, compiled: "CompiledGrammar") -> bool:
        """Write the masks `compiled` has cached (up to disk_masks.MAX_MASKS) for `key`; False
        when it has none or is not kept (rules built as the document goes, a "not kept" entry).
        A grammar whose compile deferred rules stores its masks too, in its first process: the
        mask after a byte path depends on the language alone, which the deferred rules, built
        as the machine meets them, do not change (a restart loads every rule, built alike)."""
        if not self._keeps_masks(key, compiled):
            return False
        try:
            arrays = disk_masks.export(compiled)
            if arrays is None:
                return False
            self._write_arrays(self.key_digest(("masks", key)), {"words": int(compiled.masker.eos_only.size)}, arrays)
        except Exception as exc:  # a cache write never fails a request or a shutdown; say why once
            logger.warning("strictgen cache: masks not stored (%s: %s)", type(exc).__name__, str(exc))
            return False
        return True

    def store_masks_later(self, key: Hashable, compiled: "CompiledGrammar") -> None:
        """store_masks on a background thread, where the grammar has twice the masks it had at
        its last store or load (or any, the first time): a server's grammars save their masks as
        they grow, a few times in all. Cheap when there is nothing to do (every cache hit asks)."""
        count = compiled.masker.num_cached()
        if count < max(1, 2 * compiled.masks_stored) or not self._keeps_masks(key, compiled):
            return
        with self._lock:
            if count < max(1, 2 * compiled.masks_stored):
                return
            compiled.masks_stored = count  # no second store meanwhile
        self._later(self.store_masks, key, compiled)

    def _keeps_masks(self, key: Hashable, compiled: "CompiledGrammar") -> bool:
        """Whether masks of `compiled` are worth a file: not where its grammar is "not kept"
        (nothing loads them), nor where it has rules made as the document goes (families: no
        grammar file holds them)."""
        lazy = compiled.automaton.lazy
        if lazy is not None:
            with lazy.lock:
                if lazy.calls.lazy:
                    return False
        return self.key_digest(key) not in self._not_kept  # a set read: atomic under the GIL

    def load_masks(self, key: Hashable, compiled: "CompiledGrammar") -> int:
        """Give `compiled` (loaded for `key`) the masks stored for it, looked up as its masker
        misses (disk_masks.StoredMasks.find: nothing is replayed now); how many are stored. A
        file whose entries fail their checks is refused with one warning line and removed."""
        digest = self.key_digest(("masks", key))
        stored = self._read(digest, lambda data, d: self._decode_masks(data, d, compiled))
        if stored is None:
            return 0
        compiled.masks_stored = len(stored)
        stored.attach(compiled, lambda reason: self._refuse_masks(digest, reason))
        return len(stored)

    def _decode_masks(self, data: bytes, digest: bytes, compiled: "CompiledGrammar") -> disk_masks.StoredMasks:
        meta, arrays = self._read_arrays(data, digest)
        try:
            if meta.get("words") != compiled.masker.eos_only.size:
                raise CacheFileError("masks of another vocabulary size")
            return disk_masks.StoredMasks(arrays, int(meta["words"]))
        except (KeyError, ValueError) as exc:
            raise CacheFileError(f"malformed masks: {exc}") from None

    def _refuse_masks(self, digest: bytes, reason: str) -> None:
        path = self.path(digest)
        logger.warning("strictgen cache: ignoring %s (%s); its masks will be computed", path, reason)
        _remove(path)

    # ---- entries of named arrays (the vocabulary's tables, masks) ----

    def _write_arrays(self, digest: bytes, meta: dict, arrays: dict[str, np.ndarray]) -> None:
        meta = {**meta, "arrays": [[name, a.dtype.str, int(a.size)] for name, a in arrays.items()]}
        self._write(digest, meta, [np.ascontiguousarray(a).tobytes() for a in arrays.values()], ALIGN)

    def _read_arrays(self, data: bytes, digest: bytes) -> tuple[dict, dict[str, np.ndarray]]:
        """(metadata, arrays by name) of an entry `_write_arrays` wrote: the arrays are views of
        `data` (aligned: each starts at a multiple of ALIGN bytes), every length checked."""
        payload = self._check_header(data, digest)
        try:
            (meta_len,) = struct.unpack_from("<I", payload, 0)
            meta = json.loads(bytes(payload[4 : 4 + meta_len]).decode("utf-8"))
            pos = len(data) - len(payload) + 4 + meta_len
            arrays = {}
            for name, dtype, count in meta["arrays"]:
                dtype = np.dtype(dtype)
                if dtype.hasobject or int(count) < 0 or pos + int(count) * dtype.itemsize > len(data):
                    raise CacheFileError("the payload is shorter than its metadata says")
                a = np.frombuffer(data, dtype=dtype, count=int(count), offset=pos)
                arrays[str(name)] = a if a.ctypes.data % dtype.alignment == 0 else a.copy()
                pos += -(-a.nbytes // ALIGN) * ALIGN
            if pos != len(data):
                raise CacheFileError("the payload does not match its metadata")
            return meta, arrays
        except CacheFileError:
            raise
        except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as exc:
            raise CacheFileError(f"malformed arrays: {exc}") from None

    def evict(self) -> None:
        """Remove the least recently used files until the directory fits in max_bytes, and
        temporary files a process left behind (it stopped mid-write) an hour ago or more."""
        for tmp in self.directory.glob(".tmp-*" + SUFFIX + ".part"):
            try:
                if tmp.stat().st_mtime < time.time() - 3600:
                    _remove(tmp)
            except FileNotFoundError:
                pass
        files = []
        for path in self.directory.glob("*" + SUFFIX):
            try:
                st = path.stat()
            except FileNotFoundError:
                continue  # another process removed it
            files.append((st.st_mtime, st.st_size, path))
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.max_bytes:
                break
            _remove(path)
            total -= size

    def total_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.directory.glob("*" + SUFFIX))


class _Reader:
    """Typed arrays read one after another from the payload, every length checked."""

    def __init__(self, payload: memoryview, pos: int):
        self.payload = payload
        self.pos = pos

    def take(self, count: int, dtype) -> np.ndarray:
        size = count * np.dtype(dtype).itemsize
        if count < 0 or self.pos + size > len(self.payload):
            raise CacheFileError("the payload is shorter than its metadata says")
        out = np.frombuffer(self.payload, dtype=dtype, count=count, offset=self.pos)
        self.pos += size
        return out


def _rebuild(arrays: _Reader, n: int, k: int, ncalls: int, num_rules: int) -> regular.DFA:
    """A rule's DFA from its stored arrays, checked: a call-free DFA of the byte table (the core's
    dense constructor), embedded in an NFA at its own state numbers, plus the call edges, and
    determinised again; the result must have the same number of states."""
    if n < 1 or not 1 <= k <= 256:
        raise CacheFileError("a rule with no states or a bad class count")
    table = arrays.take(n * k, "<i4").reshape(n, k)
    classmap = arrays.take(256, np.uint8)
    accepting = arrays.take(n, np.uint8)
    start = arrays.take(n + 1, "<i4")
    callee = arrays.take(ncalls, "<i4")
    ret = arrays.take(ncalls, "<i4")
    if int(classmap.max()) >= k or table.min() < -1 or table.max() >= n:
        raise CacheFileError("a byte table entry out of range")
    if start[0] != 0 or start[-1] != ncalls or (np.diff(start) < 0).any():
        raise CacheFileError("call starts out of order")
    if ncalls and (callee.min() < 0 or callee.max() >= num_rules or ret.min() < 0 or ret.max() >= n):
        raise CacheFileError("a call edge out of range")
    bytes_only = regular.from_classes(table.data, accepting.data, classmap.data)  # views of the payload: no copies
    if not ncalls:
        return bytes_only
    nfa = regular.NFA()
    entry, final = nfa.add_state(), nfa.add_state()
    base = nfa.num_states  # embed numbers the DFA's state q as base + q
    nfa.embed(bytes_only, entry, final)
    sources = np.repeat(np.arange(n, dtype=np.int64), np.diff(start))
    for s, c, r in zip(sources.tolist(), callee.tolist(), ret.tolist()):
        nfa.add_call(base + s, c, base + r)
    dfa = regular.determinize(nfa, base, final)  # from base itself: a return to state 0 is state 0
    if dfa.num_states != n:
        raise CacheFileError(f"a rule rebuilt with {dfa.num_states} states, stored with {n}")
    return dfa


def _all_rules(compiled: "CompiledGrammar", max_states: float | None = None) -> list[RuleDFA] | None:
    """Every static rule's automaton, the deferred ones built now as the machine builds them
    (taken from it where it has), or None when the grammar has families (their rules follow the
    document) or its rules pass `max_states` states (the building stops there). The rule lock
    is held per rule, so a matcher waiting for one waits for one build."""
    from strictgen import deadline

    automaton = compiled.automaton
    lazy = automaton.lazy
    rules = list(automaton.rules)
    if lazy is None:
        return rules
    states = sum(r.num_states for r in rules)
    for index in range(len(rules), len(lazy.names)):
        if max_states is not None and states > max_states:
            return None
        with lazy.lock:
            if lazy.calls.lazy:
                return None
            got = compiled.machine.added.get(index)
            if got is None:
                with deadline.compile_deadline(lazy.timeout):
                    got = RuleDFA(*lazy.dfa(index))
        rules.append(got)
        states += got.num_states
    if max_states is not None and states > max_states:
        return None
    with lazy.lock:
        return None if lazy.calls.lazy else rules  # a deferred rule may have met a family


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=SUFFIX + ".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove(Path(tmp))
        raise
    try:  # the rename itself reaches the disk once the directory is synced
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        logger.warning("strictgen cache: cannot remove %s (%s)", path, str(exc))
