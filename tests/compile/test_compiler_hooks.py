"""GrammarCompiler's hooks for servers: one compile per key however many threads ask at once, the
compile-slot semaphore, and the (kind, seconds, cache hit) observer."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import strictgen as sg


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
