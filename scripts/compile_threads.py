"""Cold compiles of every bench schema spread over THREADS threads (each thread its own
GrammarCompiler and its share of the schemas, round robin): wall time and process CPU time of one
run in a fresh process (the process's caches start empty, so run the script again to repeat). With the GIL held by the whole rule build, 2 threads take as long as 1; with
it let go (regular/'s algorithms and the C lowering), they can take less. Compare trees in
interleaved runs, and threads only on a machine with the cores free.

    PYTHONPATH=<tree>/src python scripts/compile_threads.py THREADS [--vocab qwen]"""

import argparse
import threading
import time

import strictgen as sg
from strictgen import bench


def compile_share(tok, cases) -> None:
    compiler = sg.GrammarCompiler(tok)
    for case in cases:
        try:
            sg.GrammarMatcher(compiler.compile_json_schema(case.schema_text))
        except sg.StrictgenError:
            pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("threads", type=int)
    ap.add_argument("--vocab", default="qwen")
    args = ap.parse_args()
    cases = bench.load_cases(bench.default_schemas_dir())
    tok = sg.TokenizerInfo.from_name(args.vocab)
    sg.GrammarMatcher(sg.GrammarCompiler(tok).compile_json_schema(bench.WARMUP_SCHEMA))
    workers = [threading.Thread(target=compile_share, args=(tok, cases[i :: args.threads])) for i in range(args.threads)]
    w0, c0 = time.perf_counter(), time.process_time()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    print(f"threads={args.threads} schemas={len(cases)} wall={wall * 1e3:.0f} ms cpu={cpu * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
