"""`strictgen serve --cache-dir DIR --cache-max-bytes N`: the flags reach the server's compiler,
which then keeps its grammars in DIR (no model is loaded here: the flags and the compiler only)."""

from __future__ import annotations

import pytest

import strictgen as sg

pytest.importorskip("fastapi")

from strictgen.cli import build_parser  # noqa: E402
from strictgen.serve.ops import Operations, options_from_args  # noqa: E402


def test_cache_flags_reach_the_compiler(qwen, tmp_path):
    args = build_parser().parse_args(["serve", "--cache-dir", str(tmp_path), "--cache-max-bytes", "123456"])
    options = options_from_args(args)
    compiler = sg.GrammarCompiler(qwen)
    Operations(options, 1).attach(compiler)
    assert compiler.disk_cache is not None and compiler.disk_cache.max_bytes == 123456
    compiler.compile_regex("[a-z]+@x")
    compiler.disk_cache.flush()
    assert len(list(tmp_path.glob("*.sgc"))) == 1
    plain = sg.GrammarCompiler(qwen)
    Operations(options_from_args(build_parser().parse_args(["serve"])), 1).attach(plain)
    assert plain.disk_cache is None
    with pytest.raises(sg.StrictgenError, match="cache-max-bytes"):
        options_from_args(build_parser().parse_args(["serve", "--cache-max-bytes", "0"]))
