"""The `strictgen` command."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

DEMO_GRAMMAR = r"""
# a weather report as JSON, with Chinese enum values
root    ::= "{" ws "\"city\":" ws string "," ws "\"temp_c\":" ws int "," ws "\"weather\":" ws weather ws "}"
string  ::= "\"" [^"\\]{1,40} "\""
int     ::= "-"? [0-9]{1,3}
weather ::= "\"晴\"" | "\"多云\"" | "\"雨\""
ws      ::= [ ]?
"""
DEMO_DOCUMENT = '{"city": "Beijing", "temp_c": 27, "weather": "多云"}'


def _allowed_ids(mask_row: np.ndarray, vocab_size: int) -> np.ndarray:
    bits = np.unpackbits(mask_row.view(np.uint8), bitorder="little")[:vocab_size]
    return np.flatnonzero(bits)


def cmd_demo(args: argparse.Namespace) -> int:
    """Compile a grammar for a real vocabulary and walk a document through it token by token,
    showing how many of the vocabulary's tokens each step allows."""
    import strictgen as sg

    t0 = time.perf_counter()
    tok = sg.TokenizerInfo.from_name(args.tokenizer)
    t1 = time.perf_counter()
    compiler = sg.GrammarCompiler(tok)
    grammar = compiler.compile_grammar(DEMO_GRAMMAR)
    t2 = time.perf_counter()
    matcher = sg.GrammarMatcher(grammar)
    mask = sg.allocate_token_bitmask(1, tok.vocab_size)
    print(f"vocabulary {args.tokenizer}: {tok.vocab_size} tokens, loaded in {t1 - t0:.2f} s; grammar compiled in {(t2 - t1) * 1000:.1f} ms")
    print(f"document: {DEMO_DOCUMENT}")
    rest = DEMO_DOCUMENT.encode("utf-8")
    step = 0
    while True:
        t = time.perf_counter()
        matcher.fill_next_token_bitmask(mask)
        fill_us = (time.perf_counter() - t) * 1e6
        allowed = _allowed_ids(mask[0], tok.vocab_size)
        if not rest:
            eos_ok = any(e in set(allowed.tolist()) for e in tok.eos_token_ids)
            print(f"step {step:3d}: {len(allowed):6d} allowed  ({fill_us:7.1f} µs)  EOS allowed: {eos_ok}")
            matcher.accept_token(tok.eos_token_ids[0])
            break
        # the longest allowed token that spells the next part of the document
        best = max((i for i in allowed.tolist() if rest.startswith(tok.token_bytes(i)) and tok.token_bytes(i)), key=lambda i: len(tok.token_bytes(i)))
        piece = tok.token_bytes(best)
        print(f"step {step:3d}: {len(allowed):6d} allowed  ({fill_us:7.1f} µs)  → token {best:6d} {piece!r}")
        if not matcher.accept_token(best):
            print("internal error: an allowed token was refused", file=sys.stderr)
            return 1
        rest = rest[len(piece) :]
        step += 1
    print(f"terminated: {matcher.is_terminated()}")
    bad = '{"city": "Beijing", "temp_c": 27, "weather": "sunny"}'
    probe = sg.GrammarMatcher(grammar)
    print(f"an off-format document is refused: accept_string({bad!r}) -> {probe.accept_string(bad)}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """Side-by-side mask benchmark: strictgen, and xgrammar / llguidance when installed (DESIGN.md §5)."""
    from strictgen import bench

    return bench.main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="strictgen", description="Language-model output guaranteed to match a format.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="walk a document through a grammar on a real vocabulary, showing per-step masks")
    demo.add_argument("--tokenizer", default="smollm2", choices=["smollm2", "qwen", "deepseek"])
    demo.set_defaults(func=cmd_demo)
    bench = sub.add_parser("bench", help="time token masks side by side with xgrammar and llguidance (when installed)")
    from strictgen.bench import add_arguments as add_bench_arguments

    add_bench_arguments(bench)
    bench.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except Exception as exc:  # user-facing errors get one clear line
        from strictgen.errors import StrictgenError

        if isinstance(exc, StrictgenError):
            print(f"strictgen: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
