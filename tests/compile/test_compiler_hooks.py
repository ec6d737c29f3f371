"""GrammarCompiler's hooks for servers: one compile per key however many threads ask at once, the
compile-slot semaphore, and the (kind, seconds, cache hit) observer."""

from __future__ import annotations

import gc
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import strictgen as sg
from strictgen.grammar.ir import Grammar, lit


def _compiler():
    return sg.GrammarCompiler(sg.TokenizerInfo.from_name("smollm2"))


def test_concurrent_requests_for_one_format_compile_it_once():
    c = _compiler()
    seen: list[tuple[str, bool]] = []
    lock = threading.Lock()

    def observe(kind, seconds, hit):
        assert seconds >= 0
        with lock:
            seen.append((kind, hit))

    c.on_compile = observe
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 5}}, "required": ["a"]}
    with ThreadPoolExecutor(6) as pool:
        got = list(pool.map(lambda _: c.compile_json_schema(schema, strict=False), range(6)))
    assert all(g is got[0] for g in got) and got[0].unenforced == []
    assert sorted(seen) == [("json_schema", False)] + [("json_schema", True)] * 5


def test_compile_slots_bound_cold_compiles_and_failures_release_them():
    c = _compiler()
    running = {"now": 0, "most": 0}
    lock = threading.Lock()
    c.compile_slots = threading.BoundedSemaphore(1)
    real = c._build  # noqa: SLF001 - counts how many builds overlap

    def counted(kind, make):
        def make_counted():
            with lock:
                running["now"] += 1
                running["most"] = max(running["most"], running["now"])
            try:
                return make()
            finally:
                with lock:
                    running["now"] -= 1

        return real(kind, make_counted)

    c._build = counted
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: c.compile_regex(f"[a-c]{{{i + 1},40}}x"), range(4)))
    assert running["most"] == 1
    for _ in range(2):  # a refused format frees its slot and its key: the same error again, no hang
        try:
            c.compile_regex("(unclosed")
        except sg.RegexError:
            pass
        else:
            raise AssertionError("the bad regex compiled")
    c.compile_regex("ok")


def test_the_cyclic_collector_is_paused_during_compiles_and_restored_after():
    """Compiles run with gc paused (they make ~10^5 short-lived objects); overlapping compiles
    keep it paused until the last one ends, failures restore it too, and a collector the caller
    had disabled stays disabled."""

    c = _compiler()
    seen: list[bool] = []
    inner_started, outer_may_end = threading.Event(), threading.Event()

    def slow_build():
        seen.append(gc.isenabled())
        inner_started.set()
        assert outer_may_end.wait(10)
        return Grammar({"root": lit("a")})

    assert gc.isenabled()
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(c._cached, ("test", 1), "test", slow_build)  # noqa: SLF001 - a compile held open
        assert inner_started.wait(10)
        c.compile_regex("[a-z]{1,8}")  # a second compile ends while the first still runs
        assert not gc.isenabled()
        outer_may_end.set()
        first.result(10)
    assert seen == [False] and gc.isenabled()
    try:
        c.compile_regex("(unclosed")
    except sg.StrictgenError:
        pass
    assert gc.isenabled()
    gc.disable()
    try:
        c.compile_regex("[0-9]+x")
        assert not gc.isenabled()
    finally:
        gc.enable()


_CYCLE_PROBES = [
    {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[A-Z][a-z]+$", "maxLength": 40},
                                      "when": {"type": "string", "format": "date-time"},
                                      "kind": {"enum": ["a", "b", 3, None]}, "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}},
     "required": ["name"], "additionalProperties": False},
    {"oneOf": [{"type": "object", "properties": {"t": {"const": "x"}, "v": {"type": "integer", "minimum": 0}}, "required": ["t"]},
               {"type": "object", "properties": {"t": {"const": "y"}, "v": {"type": "string"}}, "required": ["t"]}]},
    {"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"},
    {"type": "array", "items": {"anyOf": [{"type": "number", "multipleOf": 0.5}, {"type": "string", "not": {"enum": ["no"]}}]}, "maxItems": 4},
]


@pytest.mark.parametrize("schema", _CYCLE_PROBES, ids=["object", "oneOf", "recursive", "anyOf"])
def test_a_compile_leaves_no_reference_cycles(schema):
    """What a compile makes and drops is freed by reference counting: the cyclic collector, which
    walks the whole heap of a server, finds nothing left behind (the normaliser's hooks, the
    builders' memos and recursive helpers are cycles unless they are broken when a compile ends)."""
    c = _compiler()
    c.compile_json_schema(schema)  # module-level caches (formats, spellings, pieces) filled first
    gc.collect()
    gc.disable()
    try:
        sg.GrammarCompiler(c.tokenizer_info).compile_json_schema(schema)  # a fresh compiler: a cold compile, dropped
        left = gc.collect()
    finally:
        gc.enable()
    assert left == 0
