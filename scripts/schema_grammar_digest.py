"""Digest of the JSON Schema front end's output on every corpus schema: a refactoring check.

    python scripts/schema_grammar_digest.py --save before.jsonl      # on the tree before a change
    python scripts/schema_grammar_digest.py --compare before.jsonl   # after it: lists every difference
    (--step N --offset K: every Nth maskbench-dev schema from the Kth; --only TEXT: names containing TEXT;
     --names FILE: only the maskbench-dev schemas FILE names, comma- or line-separated, every one)
    python scripts/schema_grammar_digest.py --cpu --step 4              # front-end CPU seconds instead

For each schema of the JSON-Schema-Test-Suite (draft 2020-12, its remotes as documents=), of
maskbench-dev and of the bench folder (../shared/data), under a few option sets (strict, strict=False
with any_order, canonical compact numbers), the outcome of `json_schema_grammar` is reduced to one line:
a SHA-256 of the grammar (every rule's name and expression in order, the members of lazily built rule
families up to a bound, the root) plus the unenforced (keyword, pointer) list, or the error's class,
keyword, JSON pointer and message. Two trees whose files are equal emit identical grammars and refuse
the same keywords at the same pointers, so a restructuring that must not change behaviour is checked
by comparing the two files. Runs with PYTHONHASHSEED=0 (set by re-running itself): some rule
names hash the repr of frozensets, whose order follows the process's string hashing, so two runs
of one tree differ under different seeds. Front end only (no automaton compile): the whole corpus takes minutes,
each schema under a deadline of --limit-s seconds.

--cpu prints instead the front end's CPU time (`time.process_time()` around `json_schema_grammar`,
strict options, errors included) summed over the maskbench-dev schemas selected and every bench
schema, with the cyclic collector paused as a compile pauses it (compile.guards.collector_paused:
unpaused, collections of the caches' heap were ~35% of the sum, and fell wherever allocation
happened to cross a threshold): run it on two trees alternately (PYTHONPATH=<tree>/src) for
interleaved pairs."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from strictgen import deadline  # noqa: E402
from strictgen.compile.guards import collector_paused  # noqa: E402
from strictgen.errors import CompileTimeoutError, StrictgenError  # noqa: E402
from strictgen.grammar.ir import Expr, Grammar, Lazy, LazyFamily  # noqa: E402
from strictgen.grammar.json_schema import json_schema_grammar  # noqa: E402
from strictgen.grammar.json_value import JsonStyle  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LAZY_MEMBERS = 64  # members of one lazily built family expanded into the digest

OPTION_SETS = {
    "strict": {},
    "loose_any_order": {"strict": False, "any_order": True},
    "canonical_compact": {"style": JsonStyle("compact", numbers="canonical")},
}


def corpus() -> list[tuple[str, object, dict]]:
    """(name, schema, extra options) for every schema of the three corpora."""
    out = []
    suite = DATA / "json-schema-test-suite" / "draft2020-12"
    remotes = Path(__file__).resolve().parents[1] / "tests" / "data" / "json-schema-test-suite-remotes"
    documents = {"http://localhost:1234/" + p.relative_to(remotes).as_posix(): json.loads(p.read_text()) for p in sorted(remotes.rglob("*.json"))}
    for path in sorted(suite.glob("*.json")) + sorted((suite / "optional" / "format").glob("*.json")):
        for i, group in enumerate(json.loads(path.read_text())):
            out.append((f"suite/{path.relative_to(suite).as_posix()}#{i}", group["schema"], {"documents": documents}))
    for folder in ("maskbench-dev", "bench"):
        for path in sorted((DATA / folder).glob("*.json")):
            out.append((f"{folder}/{path.name}", json.loads(path.read_text())["schema"], {}))
    return out


class Digester:
    """SHA-256 of expressions, memoised by identity (grammars share big subexpressions)."""

    def __init__(self):
        self._memo: dict[int, tuple[object, str]] = {}

    def expr(self, e) -> str:
        got = self._memo.get(id(e))
        if got is not None and got[0] is e:
            return got[1]
        if isinstance(e, Lazy):
            text = f"Lazy({type(e.family).__name__},{e.key!r},{[self.expr(u) for u in e.uses]},{self.family(e.family, e.key)})"
        elif isinstance(e, Expr):
            fields = []
            for name in e.__dataclass_fields__:
                v = getattr(e, name)
                fields.append(self.value(v))
            text = f"{type(e).__name__}({','.join(fields)})"
        else:
            text = self.value(e)
        h = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        self._memo[id(e)] = (e, h)
        return h

    def value(self, v) -> str:
        if isinstance(v, Expr):
            return self.expr(v)
        if isinstance(v, tuple):
            return "(" + ",".join(self.value(x) for x in v) + ")"
        return repr(v)

    def family(self, fam: LazyFamily, start) -> str:
        """The members reachable from `start`, breadth first, up to LAZY_MEMBERS (memoised per family)."""
        got = self._memo.get(id(fam))
        if got is not None and got[0] is fam:
            return got[1]
        self._memo[id(fam)] = (fam, "cycle")
        seen, order, parts = {start}, [start], []
        while order and len(parts) < LAZY_MEMBERS:
            key = order.pop(0)
            body = fam.body(key)
            parts.append(f"{key!r}:{self.expr(body)}")
            for node in _lazy_nodes(body):
                if node.family is fam and node.key not in seen:
                    seen.add(node.key)
                    order.append(node.key)
        h = hashlib.sha256((type(fam).__name__ + "|".join(parts) + f"|{len(fam.uses)}").encode()).hexdigest()
        self._memo[id(fam)] = (fam, h)
        return h

    def grammar(self, g: Grammar) -> str:
        parts = [f"{name}={self.expr(body)}" for name, body in g.rules.items()]
        parts.append(f"root={g.root};captures={sorted(g.captures.items())};special={g.special_tokens}")
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _lazy_nodes(e):
    stack = [e]
    seen = set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, Lazy):
            yield x
            continue
        if isinstance(x, Expr):
            for name in x.__dataclass_fields__:
                v = getattr(x, name)
                if isinstance(v, Expr):
                    stack.append(v)
                elif isinstance(v, tuple):
                    stack.extend(y for y in v if isinstance(y, Expr))


def outcome(schema, options: dict, limit_s: float) -> str:
    try:
        with deadline.compile_deadline(limit_s):
            grammar, unenforced = json_schema_grammar(schema, **options)
    except CompileTimeoutError:
        return "timeout"  # timing-dependent: compare such lines by rerunning them with a longer --limit-s
    except StrictgenError as e:
        return f"{type(e).__name__} keyword={getattr(e, 'keyword', None)!r} pointer={getattr(e, 'pointer', None)!r} {e}"
    except RecursionError:
        return "RecursionError"
    # the digest recurses along the expressions, deeper than the front end's own limit allows
    # (which stays as in production while it runs); main() runs on a thread with a big stack
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    try:
        return f"ok {Digester().grammar(grammar)} rules={len(grammar.rules)} unenforced={unenforced}"
    finally:
        sys.setrecursionlimit(limit)


def selected(args: argparse.Namespace):
    """The corpus schemas --only, --step and --offset select."""
    seen = 0
    names = set(Path(args.names).read_text().replace(",", "\n").split()) if args.names else None
    for name, schema, extra in corpus():
        if args.only not in name:
            continue
        if names is not None:
            if name.startswith("maskbench-dev/") and name.removeprefix("maskbench-dev/").removesuffix(".json") in names:
                yield name, schema, extra
            continue
        if name.startswith("maskbench-dev/"):
            seen += 1
            if (seen - 1 - args.offset) % args.step:
                continue
        yield name, schema, extra


def front_end_cpu(args: argparse.Namespace) -> int:
    """Sum of json_schema_grammar's CPU time over the selected maskbench-dev and bench schemas."""
    total, n = 0.0, 0
    for name, schema, extra in selected(args):
        if name.startswith("suite/"):
            continue
        c0 = time.process_time()
        try:
            with deadline.compile_deadline(args.limit_s), collector_paused():
                json_schema_grammar(schema, **extra)
        except (StrictgenError, RecursionError):
            pass
        total += time.process_time() - c0
        n += 1
    print(f"front-end CPU {total:.3f} s over {n} schemas")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--save")
    ap.add_argument("--compare")
    ap.add_argument("--limit-s", type=float, default=20.0)
    ap.add_argument("--only", default="", help="names containing this text")
    ap.add_argument("--names", help="a file naming the maskbench-dev schemas to take (and nothing else)")
    ap.add_argument("--step", type=int, default=1, help="every Nth maskbench-dev schema")
    ap.add_argument("--offset", type=int, default=0, help="... from this one")
    ap.add_argument("--cpu", action="store_true", help="front-end CPU seconds of maskbench-dev and bench, no digest")
    args = ap.parse_args()
    if args.cpu:
        return front_end_cpu(args)
    results: dict[str, str] = {}
    t0 = time.perf_counter()
    out = open(args.save, "w") if args.save else None  # one JSON line per outcome, as they come
    for name, schema, extra in selected(args):
        for label, options in OPTION_SETS.items():
            key = f"{name} [{label}]"
            results[key] = outcome(schema, {**extra, **options}, args.limit_s)
            if out is not None:
                out.write(json.dumps([key, results[key]], ensure_ascii=False) + "\n")
                out.flush()
    print(f"{len(results)} outcomes in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if args.compare:
        before = dict(json.loads(line) for line in Path(args.compare).read_text().splitlines() if line)
        diffs = [k for k in sorted(results) if before.get(k) != results.get(k)]  # this run's schemas only
        for k in diffs:
            print(f"DIFF {k}\n  before: {before.get(k)}\n  after:  {results.get(k)}")
        print(f"{len(diffs)} differences in {len(results)} outcomes")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != "0":  # frozenset order (hence some rule names) follows it
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    threading.stack_size(1 << 29)
    status: list[int] = []
    worker = threading.Thread(target=lambda: status.append(main()))
    worker.start()
    worker.join()
    sys.exit(status[0] if status else 2)
