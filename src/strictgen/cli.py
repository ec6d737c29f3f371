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


def _load_schema(path_text: str):
    """The JSON Schema in a file (a ../shared/data/bench workload file's "schema" member)."""
    import json
    from pathlib import Path

    import strictgen as sg

    path = Path(path_text)
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise sg.StrictgenError(f"cannot read schema file {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise sg.SchemaError(f"{path} is not JSON: {exc}") from exc
    if isinstance(schema, dict) and "schema" in schema and "$schema" not in schema and "type" not in schema:
        schema = schema["schema"]  # a workload file of ../shared/data/bench: {"schema": ..., "tests": ...}
    return schema


def _format_spec(args: argparse.Namespace):
    """The FormatSpec the format flags ask for (None: unconstrained)."""
    from pathlib import Path

    import strictgen as sg
    from strictgen.grammar.format_spec import GENERATION_STYLE, FormatOptions, FormatSpec

    options = FormatOptions(style=GENERATION_STYLE)
    if args.schema:
        return FormatSpec("json_schema", _load_schema(args.schema), options, "--schema")
    if getattr(args, "json", False):
        return FormatSpec("json_object", None, options, "--json")
    if args.regex is not None:
        return FormatSpec("regex", args.regex, options, "--regex")
    if args.grammar:
        try:
            text = Path(args.grammar).read_text(encoding="utf-8")
        except OSError as exc:
            raise sg.StrictgenError(f"cannot read grammar file {args.grammar}: {exc}") from exc
        return FormatSpec("grammar", text, options, "--grammar")
    if getattr(args, "choice", None):
        return FormatSpec("choice", list(args.choice), options, "--choice")
    return None


def cmd_generate(args: argparse.Namespace) -> int:
    """Generate constrained output with a real model; the output on stdout, --stats on stderr."""
    import json

    import strictgen as sg
    from strictgen.engine import GenerationConfig, SamplingParams, generate, load_model

    spec = _format_spec(args)  # a bad format file fails before the model loads
    model = load_model(args.model, runtime=args.runtime, threads=args.threads, progress=not args.quiet)
    try:
        if args.chat_template:
            model.chat_template = model.chat_template.replaced_by(args.chat_template)
        grammar = None if spec is None else sg.GrammarCompiler(model.tokenizer_info).compile_format(spec)
        config = GenerationConfig(
            max_tokens=args.max_tokens,
            sampling=SamplingParams(temperature=args.temperature, top_p=args.top_p, top_k=args.top_k, seed=args.seed),
            stop=tuple(args.stop or ()),
            jump_forward=not args.no_jump_forward,
            token_healing=not args.no_token_healing,
            truncation_safe=not args.no_truncation_safe,
        )
        system = args.system
        if spec is not None and spec.kind == "json_schema" and not args.raw and not args.no_format_hint:
            from strictgen.engine.format_hint import format_hint

            system = (system + "\n\n" if system else "") + format_hint(spec.value)
        prompt_ids = model.encode_prompt(args.prompt, chat=not args.raw, system=system)
        result = generate(model, prompt_ids, grammar, config)
    finally:
        model.close()
    print(result.text)
    if args.stats:
        info = {"model": model.name, "runtime": model.runtime, "format": _format_name(args), "finish_reason": result.finish_reason}
        info.update(result.stats.summary())
        print(json.dumps(info), file=sys.stderr)
    return 0


def _format_name(args: argparse.Namespace) -> str:
    for name in ("schema", "regex", "grammar", "choice", "json"):
        if getattr(args, name):
            return name
    return "none"


def _add_generate_arguments(gen: argparse.ArgumentParser) -> None:
    gen.add_argument("prompt", help="the user message (wrapped in the model's chat template unless --raw)")
    gen.add_argument("--model", default="default", help="'default' (embedded SmolLM2-135M-Instruct), a GGUF file or a Hugging Face folder")
    gen.add_argument("--runtime", default="auto", choices=["auto", "llama.cpp", "transformers"])
    gen.add_argument("--chat-template", metavar="FILE", help="a Jinja chat template replacing the model's")
    fmt = gen.add_mutually_exclusive_group()
    fmt.add_argument("--schema", metavar="FILE", help="a JSON Schema file")
    fmt.add_argument("--regex", metavar="RE", help="a regular expression the whole output must match")
    fmt.add_argument("--grammar", metavar="FILE", help="a GBNF grammar file (root rule 'root')")
    fmt.add_argument("--choice", metavar="TEXT", action="append", help="one allowed output (repeat the flag)")
    fmt.add_argument("--json", action="store_true", help="any JSON value")
    gen.add_argument("--max-tokens", type=int, default=256)
    gen.add_argument("--temperature", type=float, default=0.0, help="0 (default): greedy")
    gen.add_argument("--top-p", type=float, default=1.0)
    gen.add_argument("--top-k", type=int, default=0)
    gen.add_argument("--seed", type=int, default=None)
    gen.add_argument("--stop", action="append", help="stop string (repeat the flag)")
    gen.add_argument("--system", default=None, help="a system message")
    gen.add_argument("--raw", action="store_true", help="use the prompt as is, without the chat template")
    gen.add_argument("--no-jump-forward", action="store_true", help="sample every token, even forced ones")
    gen.add_argument("--no-token-healing", action="store_true", help="keep the last forced token even where the model could merge across it")
    gen.add_argument("--no-format-hint", action="store_true", help="with --schema: do not describe the format in the system turn")
    gen.add_argument("--no-truncation-safe", action="store_true", help="let max_tokens cut the output anywhere")
    gen.add_argument("--threads", type=int, default=None)
    gen.add_argument("--stats", action="store_true", help="print timings and token counts as JSON on stderr")
    gen.add_argument("--quiet", action="store_true", help="no loading indicator on stderr")


def cmd_inspect(args: argparse.Namespace) -> int:
    """The mask step by step for a document or a generation (strictgen.engine.inspect)."""
    import json

    import strictgen as sg
    from strictgen.engine import GenerationConfig, SamplingParams, load_model
    from strictgen.engine.format_hint import format_hint
    from strictgen.engine.inspect import describe_error, format_table, inspect_document, inspect_generation
    from strictgen.errors import StrictgenError

    model = load_model(args.model, runtime=args.runtime, progress=False)
    try:
        try:
            grammar = sg.GrammarCompiler(model.tokenizer_info).compile_format(_format_spec(args))
        except StrictgenError as exc:
            if not args.as_json:
                raise
            print(json.dumps({"error": describe_error(exc)}, ensure_ascii=False))
            return 2
        if args.prompt is not None:
            system = format_hint(_load_schema(args.schema)) if args.schema else None
            config = GenerationConfig(max_tokens=args.max_tokens, sampling=SamplingParams(temperature=args.temperature, seed=args.seed))
            prompt_ids = model.encode_prompt(args.prompt, system=system)
            found = inspect_generation(model, prompt_ids, grammar, config, top=args.top, sample=args.sample, search=args.search)
        else:
            special = bool(grammar.marker_tokens)  # marker text as its tokens, as generation spells it
            found = inspect_document(grammar, args.document, lambda text: model.tokenize(text, special=special), sample=args.sample, search=args.search)
    finally:
        model.close()
    print(json.dumps(found.to_dict(), ensure_ascii=False) if args.as_json else format_table(found))
    return 0 if found.complete else 1


def _add_inspect_arguments(ins: argparse.ArgumentParser) -> None:
    fmt = ins.add_mutually_exclusive_group(required=True)
    fmt.add_argument("--schema", metavar="FILE", help="a JSON Schema file")
    fmt.add_argument("--regex", metavar="RE", help="a regular expression")
    fmt.add_argument("--grammar", metavar="FILE", help="a GBNF grammar file (root rule 'root')")
    what = ins.add_mutually_exclusive_group(required=True)
    what.add_argument("document", nargs="?", help="a document to step through the format (the model's tokenization)")
    what.add_argument("--prompt", metavar="TEXT", help="let the model generate under the format instead")
    ins.add_argument("--json", dest="as_json", action="store_true", help="print the steps as JSON (the /v1/strictgen/inspect answer)")
    ins.add_argument("--model", default="default", help="'default' (embedded SmolLM2-135M-Instruct), a GGUF file or a Hugging Face folder")
    ins.add_argument("--runtime", default="auto", choices=["auto", "llama.cpp", "transformers"])
    ins.add_argument("--max-tokens", type=int, default=64)
    ins.add_argument("--temperature", type=float, default=0.0, help="0 (default): greedy")
    ins.add_argument("--seed", type=int, default=None)
    ins.add_argument("--sample", type=int, default=40, help="allowed tokens listed per step (--json)")
    ins.add_argument("--top", type=int, default=5, help="model tokens listed before and after the mask")
    ins.add_argument("--search", metavar="TEXT", help="list only the allowed tokens containing TEXT")
    ins.set_defaults(func=cmd_inspect, json=False, choice=None)


def cmd_bench(args: argparse.Namespace) -> int:
    """Side-by-side mask benchmark: strictgen, and xgrammar / llguidance when installed (DESIGN.md §5)."""
    from strictgen import bench

    return bench.main(args)


def cmd_eval(args: argparse.Namespace) -> int:
    """Output quality per mode (prompt-only, json-object, schema, schema+retry), report, chart, regression gate."""
    from strictgen.reliability import eval as reliability_eval

    return reliability_eval.main(args)


def cmd_serve(args: argparse.Namespace) -> int:
    """The OpenAI-compatible HTTP server (also vLLM, llama.cpp and Ollama dialects) on the model."""
    try:
        import uvicorn

        from strictgen.serve import ServerLimits, build_server, create_app
        from strictgen.serve.ops import options_from_args
    except ImportError as exc:
        from strictgen.errors import StrictgenError

        raise StrictgenError(f"the server needs its extra: pip install 'strictgen[serve]' ({exc})") from exc
    limits = ServerLimits(max_body_bytes=args.max_body_bytes, max_tokens=args.max_tokens_limit)
    options = options_from_args(args)  # keys, queue, deadlines, request log (a bad flag fails before the model loads)
    server = build_server(
        args.model, slots=args.slots, runtime=args.runtime, n_ctx=args.ctx, limits=limits, progress=True,
        deterministic=args.deterministic, options=options, chat_template=args.chat_template,
    )
    print(f"strictgen serve: {server.model_name}, {server.pool.size} slot(s), http://{args.host}:{args.port}/v1", file=sys.stderr)
    try:
        uvicorn.run(create_app(server), host=args.host, port=args.port, log_level=args.log_level, access_log=False)
    finally:
        server.grammars.compiler.save_masks()  # with --cache-dir: the grammars' masks for the next start
        server.pool.close()
    return 0


def _add_serve_arguments(srv: argparse.ArgumentParser) -> None:
    srv.add_argument("--model", default="default", help="'default' (embedded SmolLM2-135M-Instruct), a GGUF file or a Hugging Face folder")
    srv.add_argument("--runtime", default="auto", choices=["auto", "llama.cpp", "transformers"])
    srv.add_argument("--chat-template", metavar="FILE", help="a Jinja chat template replacing the model's (tool-call format, reasoning, stops follow it)")
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=8000)
    srv.add_argument("--slots", type=int, default=2, help="concurrent generations (llama.cpp: sequences decoded together in one context; else one model copy each)")
    srv.add_argument("--ctx", type=int, default=4096, help="context length per slot")
    srv.add_argument(
        "--deterministic", action="store_true",
        help="concurrent requests get bit for bit what each gets alone (llama.cpp: no pass shared between requests; costs throughput)",
    )
    srv.add_argument("--max-tokens-limit", type=int, default=2048, help="largest max_tokens a request may ask for")
    srv.add_argument("--max-body-bytes", type=int, default=1 << 20)
    srv.add_argument("--log-level", default="info")
    srv.add_argument("--api-key", action="append", metavar="KEY", help="a key clients must send as 'Authorization: Bearer KEY' (repeat the flag; also STRICTGEN_API_KEY)")
    srv.add_argument("--api-key-file", metavar="FILE", help="a file of keys, one per line ('#' starts a comment)")
    srv.add_argument("--max-queue", type=int, default=256, metavar="N", help="generation requests admitted beyond the slots; more get 429 with Retry-After")
    srv.add_argument("--max-concurrent-compiles", type=int, default=2, metavar="N", help="cold grammar compiles running at once (cache hits never wait)")
    srv.add_argument("--request-timeout", type=float, default=None, metavar="S", help="seconds a request may take from arrival; past it the output stops (finish_reason length)")
    srv.add_argument("--cache-dir", metavar="DIR", help="keep compiled grammars in DIR across restarts (several servers may share it)")
    srv.add_argument("--cache-max-bytes", type=int, default=1 << 30, metavar="N", help="bound on --cache-dir's size; least recently used files go first")
    srv.add_argument("--log-format", default="text", choices=["text", "json"], help="the one line logged per request")
    srv.add_argument("--log-content", action="store_true", help="also log each request's body and output text")


def cmd_convert(args: argparse.Namespace) -> int:
    """A JSON Schema as a GBNF or Lark grammar on stdout. What the target cannot state exactly is
    marked by comments in the output; with --strict that is also exit status 1."""
    import json

    from strictgen.deadline import compile_deadline
    from strictgen.grammar.export import export_grammar
    from strictgen.grammar.json_schema import json_schema_grammar
    from strictgen.grammar.json_value import JsonStyle

    try:
        with open(args.schema, encoding="utf-8") as f:
            schema = json.load(f)
    except (OSError, ValueError) as exc:
        print(f"strictgen: cannot read the schema {args.schema}: {exc}", file=sys.stderr)
        return 2
    with compile_deadline(args.timeout):
        grammar, _ = json_schema_grammar(schema, any_order=args.any_order, style=JsonStyle(args.whitespace))
        out = export_grammar(grammar, args.to)
    sys.stdout.write(out.text)
    if out.inexact and args.strict:
        print(f"strictgen: the {args.to} grammar is not exact: " + "; ".join(out.inexact), file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="strictgen", description="Language-model output guaranteed to match a format.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="walk a document through a grammar on a real vocabulary, showing per-step masks")
    demo.add_argument("--tokenizer", default="smollm2", choices=["smollm2", "qwen", "deepseek"])
    demo.set_defaults(func=cmd_demo)
    gen = sub.add_parser("generate", help="generate output in a format (JSON Schema, regex, GBNF, choice, JSON) with a real model")
    _add_generate_arguments(gen)
    gen.set_defaults(func=cmd_generate)
    srv = sub.add_parser("serve", help="OpenAI-compatible HTTP server with structured outputs and tool calling")
    _add_serve_arguments(srv)
    srv.set_defaults(func=cmd_serve)
    ins = sub.add_parser("inspect", help="the mask step by step: allowed tokens, forced text, where a document leaves the format, what the model wanted")
    _add_inspect_arguments(ins)
    bench = sub.add_parser("bench", help="time token masks side by side with xgrammar and llguidance (when installed)")
    from strictgen.bench import add_arguments as add_bench_arguments

    add_bench_arguments(bench)
    bench.set_defaults(func=cmd_bench)
    ev = sub.add_parser("eval", help="measure syntax, schema-valid and field accuracy per mode on a dataset; gate on a baseline")
    from strictgen.reliability.eval import add_arguments as add_eval_arguments

    add_eval_arguments(ev)
    ev.set_defaults(func=cmd_eval)
    conv = sub.add_parser("convert", help="a JSON Schema as a GBNF (llama.cpp, Ollama) or Lark (llguidance) grammar")
    conv.add_argument("schema", metavar="SCHEMA.json")
    conv.add_argument("--to", required=True, choices=["gbnf", "lark"])
    conv.add_argument("--strict", action="store_true", help="exit 1 when the target cannot state the schema exactly")
    conv.add_argument("--any-order", action="store_true", help="object keys in any order (as compile_json_schema(any_order=True))")
    conv.add_argument("--whitespace", default="flexible", choices=["flexible", "compact", "spaced"])
    conv.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds the conversion may take")
    conv.set_defaults(func=cmd_convert)
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
