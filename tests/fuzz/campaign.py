"""The differential fuzz campaign: random formats and documents, the matcher against independent judges.

A *case* is JSON data: {"target", "seed", "source", "docs"}. `make_case(target, seed)` draws one;
`check_case` compiles it and returns the findings, each {"kind", "doc", "detail"}:

    false_reject_unique           a false reject that goes away without uniqueItems (where an anyOf's
                                  branches disagree, compile/unique_items.py drops only the unique parses)
    false_accept / false_reject   the matcher's verdict on a document (accept its tokens, then can it
                                  end?) differs from the judge's: `jsonschema` (Draft 2020-12), Python's
                                  `re.fullmatch`, or the Earley recogniser of tests/reference.py over an
                                  IR translated here from the generator's own tree
    false_accept_repeated         a document with a repeated member name is accepted, and `jsonschema`
                                  rejects what Python's parser reads of it (the last member of each name)
    dead_token                    an allowed token after a valid prefix cannot reach a valid end (where
                                  objects keep their names distinct and the machine's completion repeats
                                  one, a depth-first search through the matcher looks for another end)
    unsound_completion            the shortest completion after an allowed token ends a document the
                                  judge rejects
    empty_mask                    no token allowed, yet not terminated
    false_empty                   a compile refused the format as empty, yet the judge accepts a document
    not_strictgen_error           a compile raised something else than StrictgenError
    matcher_error                 a matcher call raised while following a document
    slow_compile                  a compile (failed or not) ran well past compile_timeout
    crash / hang                  the worker process died or stopped answering (Supervisor)

The target `min_properties` draws schemas around minProperties over members with unlisted names
(schemas.SchemaGenerator.counted) and adds documents that repeat a name (schemas.with_repeated_name).

Not findings, counted: `repeats` (documents with a repeated member name, judged as above),
`tracked_completions` (completions found through the matcher), `unjudged` (no judge decides: a backtracking
`re` past JUDGE_S, `jsonschema` lost in a `$ref` loop), `exponent_limit` (a valid document rejected
only for writing a bounded number with an exponent, which grammar/numbers.py leaves out by design),
`order_limit` (rejected only for its member order: the default fixed order of grammar/json_schema.py),
`inconclusive` (a completion search past PROBE_EXPANSIONS, a uniqueItems veto of the completion),
`judge_hang` (an outcome: the worker stopped answering inside a judge, Python's `re` backtracking).

Compiles run in a worker process (`Supervisor`) with faulthandler on, so a crash or a hang is a
finding with a traceback instead of the end of the campaign. A refusal (a StrictgenError at compile:
an unsupported keyword, a construct too large) is counted, not a finding.
"""

from __future__ import annotations

import faulthandler
import json
import multiprocessing as mp
import os
import random
import re
import signal
import tempfile
import threading
import time
import traceback
import warnings
from decimal import Decimal

import jsonschema

import strictgen as sg
from strictgen.runtime.budget import ShortestCompletions, greedy_tokenizer

from tests.fuzz import languages, schemas
from tests.helpers import allowed_ids, random_split
from tests.lazy_checks import completion
from tests.reference import ReferenceRecognizer

TARGETS = ("schema", "hypothesis_schema", "regex", "gbnf", "min_properties")
SLACK_S = 5.0  # a compile may overrun compile_timeout by this much (deadline checks are periodic)
TOKENS_SAMPLED = 3  # allowed tokens followed to a complete document at each probed prefix
PREFIXES_PROBED = 2
# states the shortest-completion search may expand per probe; strictgen's own limit (200,000) can take
# minutes on small recursive grammars (the open finding in tests/fuzz/test_regressions.py)
PROBE_EXPANSIONS = 20_000
JUDGE_S = 2.0  # the most one judge call may take (a backtracking `re` can take forever)


# ---- drawing cases --------------------------------------------------------------------------------


def make_case(target: str, seed: int) -> dict:
    rnd = random.Random(f"{target}:{seed}")
    if target == "regex":
        tree = languages.random_regex(rnd)
        return {"target": target, "seed": seed, "source": tree, "docs": languages.documents(rnd, tree)}
    if target == "gbnf":
        rules = languages.random_gbnf(rnd)
        return {"target": target, "seed": seed, "source": rules, "docs": languages.documents(rnd, rules["root"], rules)}
    if target == "schema":
        schema = schemas.SchemaGenerator(rnd).schema()
    elif target == "hypothesis_schema":
        schema = schemas.hypothesis_schema(seed)
        schema = {} if schema is None else schema
    elif target == "min_properties":  # objects counted in distinct names (compile/distinct_names.py)
        schema = schemas.SchemaGenerator(rnd).counted()
        docs = schemas.schema_documents(rnd, schema, seed)
        docs += [json.dumps(schemas.with_members(rnd, json.loads(d)), **rnd.choice(schemas.LAYOUTS)) for d in docs[:6]]
        docs += [schemas.with_repeated_name(rnd, d) for d in docs if rnd.random() < 0.5]
        return {"target": "schema", "seed": seed, "source": schema, "docs": list(dict.fromkeys(d for d in docs if d)), "any_order": rnd.random() < 0.5}
    else:
        raise ValueError(f"unknown target {target!r}; the targets are {', '.join(TARGETS)}")
    docs = schemas.schema_documents(rnd, schema, seed)
    return {"target": "schema", "seed": seed, "source": schema, "docs": docs, "any_order": rnd.random() < 0.5}


# ---- judging one case (in the worker) ----------------------------------------------------------------


class Judge:
    """One case's format: compiles it for strictgen and decides validity independently."""

    def __init__(self, case: dict):
        target, source = case["target"], case["source"]
        self.reference = None
        if target == "regex":
            self.format_text = languages.regex_text(source, python=False)
            with warnings.catch_warnings():  # "possible set union" ([||]): Python's future semantics, same today
                warnings.simplefilter("ignore", FutureWarning)
                self._python = re.compile(languages.regex_text(source, python=True), re.ASCII)
            self.reference = ReferenceRecognizer(languages.regex_grammar(source))
        elif target == "gbnf":
            self.format_text = languages.gbnf_text(source)
            self.reference = ReferenceRecognizer(languages.gbnf_grammar(source))
        else:
            self.format_text = json.dumps(source)
            # numbers as exact decimals on both sides: with floats, jsonschema calls 21.9 no multiple of 0.1
            # and 1.122961536778815e+17 equal to 112296153677881504
            self._validator = EXACT_VALIDATOR(json.loads(json.dumps(source), parse_float=Decimal))
        self.target = target
        self.source = source
        self.any_order = bool(case.get("any_order"))

    def compile(self, compiler: sg.GrammarCompiler, any_order: bool | None = None, source=None):
        if self.target == "regex":
            return compiler.compile_regex(self.format_text)
        if self.target == "gbnf":
            return compiler.compile_grammar(self.format_text)
        return compiler.compile_json_schema(self.source if source is None else source, any_order=self.any_order if any_order is None else any_order)

    def valid(self, data: bytes) -> bool | None:
        """The judge's verdict; None where no judge decides: JSON with a repeated member name (parsers
        disagree on it), a judge that gives up (Python's backtracking `re` past JUDGE_S seconds,
        `jsonschema` recursing without end through a `$ref` loop)."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        if self.target == "regex":
            return _within(JUDGE_S, lambda: self._python.fullmatch(text) is not None)
        if self.target == "gbnf":
            return self.reference.accepts(data)
        try:
            value = json.loads(text, object_pairs_hook=_no_duplicates, parse_float=Decimal)
        except _DuplicateName:
            return None
        except ValueError:
            return False
        try:
            return self._validator.is_valid(value)
        except Exception:  # noqa: BLE001  (RecursionError, an unresolvable $ref: the judge cannot say)
            return None

    def parsed_valid(self, data: bytes) -> bool | None:
        """JSON with a repeated member name: jsonschema's verdict on what Python's parser reads
        (the last member of each name). A matcher that accepts such a document must have that
        verdict (a counted object refuses the repeat outright, compile/distinct_names.py)."""
        try:
            return self._validator.is_valid(json.loads(data.decode("utf-8"), parse_float=Decimal))
        except Exception:  # noqa: BLE001  (as in `valid`: the judge cannot say)
            return None

    def viable(self, data: bytes) -> bool | None:
        """Whether some valid document starts with `data` (None: no recogniser for this target)."""
        return None if self.reference is None else self.reference.is_viable_prefix(data)


def _is_integer(checker, value) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, Decimal) and value == value.to_integral_value())


EXACT_VALIDATOR = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer)
)


class _DuplicateName(Exception):
    pass


class Completions:
    """The matcher's own shortest completions (runtime/budget.py), with a smaller search limit, as tokens."""

    def __init__(self, compiled):
        self._search = ShortestCompletions(compiled.machine, max_expanded=PROBE_EXPANSIONS)
        self._tokenizer = greedy_tokenizer(compiled.tokenizer_info)

    def completion_tokens(self, state: int) -> list[int]:
        return self._tokenizer.encode(self._search.completion(state))


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _DuplicateName
    return dict(pairs)


class _JudgeTimeout(Exception):
    pass


def _within(seconds: float, judge):
    """judge() or None when it runs past `seconds` (SIGALRM; `re` checks signals while it backtracks).
    Off the main thread there is no alarm: the judge runs unbounded."""
    if threading.current_thread() is not threading.main_thread():
        return judge()

    def stop(*_):
        raise _JudgeTimeout

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return judge()
    except _JudgeTimeout:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def plain_numbers(text: str) -> str | None:
    """`text` (JSON) with every number written without an exponent (1e3 -> 1000), compact; None if
    it is not JSON. strictgen's bounded number languages leave exponents out by design
    (grammar/numbers.py): a document rejected for that alone is a documented limit, not a finding."""
    try:
        value = json.loads(text, parse_float=Decimal, parse_int=Decimal)
    except ValueError:
        return None

    def dump(v) -> str:
        if isinstance(v, Decimal):
            return format(v, "f")
        if isinstance(v, dict):
            return "{" + ",".join(json.dumps(k) + ":" + dump(x) for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ",".join(dump(x) for x in v) + "]"
        return json.dumps(v)

    return dump(value)


def check_case(case: dict, compiler: sg.GrammarCompiler) -> dict:
    """Compile the case and judge every document; {"outcome", "findings", "compile_s", ...}."""
    tok = compiler.tokenizer_info
    try:
        judge = Judge(case)
    except (re.error, jsonschema.SchemaError, RecursionError) as exc:
        return {"outcome": "skipped", "findings": [], "detail": f"the judge refuses it: {exc}"}
    t0 = time.perf_counter()
    try:
        compiled = judge.compile(compiler)
    except sg.StrictgenError as exc:
        elapsed = time.perf_counter() - t0
        findings = []
        if compiler.compile_timeout is not None and elapsed > compiler.compile_timeout + SLACK_S:
            findings.append(_finding("slow_compile", None, f"failed after {elapsed:.1f} s: {type(exc).__name__}"))
        if _says_empty(exc):  # a claim the judge can check: no document of the case may be valid
            for doc in case["docs"]:
                if judge.valid(doc.encode("utf-8")):
                    findings.append(_finding("false_empty", doc, f"{type(exc).__name__}: {exc}"[:300]))
                    break
        return {"outcome": "refused", "error": type(exc).__name__, "detail": str(exc)[:300], "findings": findings, "compile_s": elapsed}
    except Exception as exc:  # noqa: BLE001  (the finding itself)
        return {"outcome": "error", "findings": [_finding("not_strictgen_error", None, _trace(exc))], "compile_s": time.perf_counter() - t0}
    elapsed = time.perf_counter() - t0
    findings = []
    if compiler.compile_timeout is not None and elapsed > compiler.compile_timeout + SLACK_S:
        findings.append(_finding("slow_compile", None, f"compiled in {elapsed:.1f} s"))
    rnd = random.Random(case["seed"])
    budget = Completions(compiled)
    stats = {"docs": 0, "valid": 0, "probes": 0, "inconclusive": 0, "unjudged": 0, "exponent_limit": 0, "order_limit": 0, "tracked_completions": 0, "repeats": 0}
    for doc in case["docs"]:
        try:
            findings += _check_doc(judge, compiler, compiled, budget, doc, rnd, stats)
        except Exception as exc:  # noqa: BLE001  (a matcher call that raises on a plain document is a finding)
            findings.append(_finding("matcher_error", doc, _trace(exc)))
    return {"outcome": "compiled", "findings": findings, "compile_s": elapsed, **stats}


def _follow(compiled, tok, data: bytes, rnd: random.Random):
    """A matcher fed `data` in a random split into vocabulary tokens (bytes where the vocabulary
    cannot spell it): (matcher, steps, how many steps it accepted)."""
    ids = random_split(tok, data, rnd) if data else []
    m = sg.GrammarMatcher(compiled)
    steps = [(t, tok.token_bytes(t)) for t in ids] if ids is not None else [(None, bytes([b])) for b in data]
    accepted = 0
    for t, piece in steps:
        if not (m.accept_token(t) if t is not None else m.accept_string(piece)):
            break
        accepted += 1
    return m, steps, accepted


def _check_doc(judge: Judge, compiler, compiled, budget: Completions, doc: str, rnd: random.Random, stats: dict) -> list:
    tok = compiler.tokenizer_info
    data = doc.encode("utf-8")
    valid = judge.valid(data)
    stats["docs"] += 1
    stats["valid"] += bool(valid)
    m, steps, accepted = _follow(compiled, tok, data, rnd)
    whole = accepted == len(steps)
    verdict = whole and m.can_end()
    out = []
    if valid is None and judge.target == "schema" and (parsed := judge.parsed_valid(data)) is not None:
        stats["repeats"] += 1  # a repeated member name: accepted only where what a parser reads is valid
        if verdict and not parsed:
            out.append(_finding("false_accept_repeated", doc, "a document with a repeated member name is accepted, and what a parser reads of it is invalid"))
    elif valid is None:
        stats["unjudged"] += 1
    elif valid and not verdict and judge.target == "schema" and (limit := _documented_limit(judge, compiler, compiled, doc, rnd)):
        stats[limit] += 1
    elif verdict != valid:
        prefix = b"".join(p for _, p in steps[:accepted])
        kind = "false_accept" if verdict else "false_reject"
        if kind == "false_reject" and judge.target == "schema" and _unique_tracking(judge, compiler, doc, rnd):
            kind = "false_reject_unique"
        out.append(_finding(kind, doc, f"judge says {'valid' if valid else 'invalid'}; the matcher took {len(prefix)} of {len(data)} bytes ({prefix[-20:]!r} last), can end: {whole and m.can_end()}"))
    if not whole and m.is_terminated():
        return out
    # probe a few prefixes the matcher accepted: every allowed token must still reach a valid end
    cuts = sorted({rnd.randint(0, accepted) for _ in range(PREFIXES_PROBED)})
    for cut in cuts:
        p = sg.GrammarMatcher(compiled)
        for t, piece in steps[:cut]:
            assert p.accept_token(t) if t is not None else p.accept_string(piece)
        out += _probe(judge, p, budget, tok, b"".join(piece for _, piece in steps[:cut]), rnd, stats)
    return out


def _accepts(compiled, text: str | None, rnd: random.Random) -> bool:
    if text is None:
        return False
    m, steps, accepted = _follow(compiled, compiled.tokenizer_info, text.encode("utf-8"), rnd)
    return accepted == len(steps) and m.can_end()


def _documented_limit(judge: Judge, compiler, compiled, doc: str, rnd: random.Random) -> str | None:
    """Why a valid document is rejected, where grammar/json_schema.py documents it: "exponent_limit"
    (accepted once its numbers are written without exponents) or "order_limit" (members out of the
    schema's order: accepted with any_order=True). None: no documented reason, a finding."""
    plain = plain_numbers(doc)
    if plain != doc and _accepts(compiled, plain, rnd):
        return "exponent_limit"
    if not judge.any_order:
        try:
            unordered = judge.compile(compiler, any_order=True)
        except sg.StrictgenError:
            return None
        if _accepts(unordered, doc, rnd) or _accepts(unordered, plain, rnd):
            return "order_limit"
    return None


def _unique_tracking(judge: Judge, compiler, doc: str, rnd: random.Random) -> bool:
    """Whether a valid document is rejected for uniqueItems alone: the schema without it accepts
    the document (compile/unique_items.py documents false rejects where an anyOf's branches disagree)."""
    if "uniqueItems" not in json.dumps(judge.source):
        return False
    try:
        loose = judge.compile(compiler, any_order=True, source=_without(judge.source, "uniqueItems"))
    except sg.StrictgenError:
        return False
    return _accepts(loose, doc, rnd) or _accepts(loose, plain_numbers(doc), rnd)


def _without(value, keyword: str):
    if isinstance(value, dict):
        return {k: _without(v, keyword) for k, v in value.items() if k != keyword}
    if isinstance(value, list):
        return [_without(v, keyword) for v in value]
    return value


def _probe(judge: Judge, m: sg.GrammarMatcher, budget: Completions, tok, prefix: bytes, rnd: random.Random, stats: dict) -> list:
    allowed = [int(t) for t in allowed_ids(m)]
    eos = set(tok.eos_token_ids)
    if not allowed:
        return [_finding("empty_mask", prefix.decode("utf-8", "replace"), f"no token allowed after {prefix[-40:]!r}")]
    out = []
    if (bool(eos & set(allowed)) and judge.target != "schema") and judge.valid(prefix) is False:
        out.append(_finding("false_accept", prefix.decode("utf-8", "replace"), f"EOS allowed after {prefix[-40:]!r}, which the judge rejects"))
    pool = [t for t in allowed if t not in eos and not tok.is_special[t]]
    for t in rnd.sample(pool, min(TOKENS_SAMPLED, len(pool))):
        stats["probes"] += 1
        piece = tok.token_bytes(t)
        if judge.viable(prefix + piece) is False:
            out.append(_finding("dead_token", prefix.decode("utf-8", "replace"), f"token {t} {piece!r} allowed after {prefix[-40:]!r}; no valid document starts so"))
            continue
        assert m.accept_token(t)
        try:
            rest = budget.completion_tokens(m.state)
        except sg.StrictgenError:
            stats["inconclusive"] += 1
            m.rollback(1)
            continue
        done = 0
        for c in rest:
            if not m.accept_token(c):
                break
            done += 1
        text = prefix + piece + b"".join(tok.token_bytes(c) for c in rest[:done])
        if done == len(rest) and m.can_end():
            verdict = judge.valid(text)
            if verdict is None:
                stats["unjudged"] += 1
            elif not verdict:
                out.append(_finding("unsound_completion", text.decode("utf-8", "replace"), f"after token {piece!r} the matcher completes to {text[-60:]!r}, which the judge rejects"))
        elif judge.target == "schema" and m.compiled.tracker is not None and m.compiled.unique_items is None:
            out += _tracked_completion(judge, m, piece, prefix, done, stats)  # distinct names: refused a repeat; search on
            done = 0  # it rolled those steps back
        elif judge.target != "schema" or compiled_has_unique(m):
            stats["inconclusive"] += 1  # uniqueItems vetoes a repeated item the machine's completion ignores
        else:
            out.append(_finding("dead_token", prefix.decode("utf-8", "replace"), f"token {piece!r}: the shortest completion {text[-60:]!r} is refused after {done} of {len(rest)} tokens"))
        m.rollback(done + 1)
    return out


def _tracked_completion(judge: Judge, m: sg.GrammarMatcher, piece: bytes, prefix: bytes, done: int, stats: dict) -> list:
    """The machine's completion closed a key on a name seen before (distinct-name objects refuse
    it): a depth-first search through the matcher finds another way, or the token is a dead end.
    Leaves `m` right after the probed token."""
    m.rollback(done)
    rest = completion(m)
    out = []
    if rest is None:
        out.append(_finding("dead_token", prefix.decode("utf-8", "replace"), f"token {piece!r}: no completion through the matcher (distinct names)"))
    else:
        text = prefix + piece + rest
        verdict = judge.valid(text)
        if verdict is False:
            out.append(_finding("unsound_completion", text.decode("utf-8", "replace"), f"after token {piece!r} the matcher completes to {text[-60:]!r}, which the judge rejects"))
        stats["unjudged" if verdict is None else "tracked_completions"] += 1
    return out


def compiled_has_unique(m: sg.GrammarMatcher) -> bool:
    return m.compiled.tracker is not None


def _says_empty(exc: Exception) -> bool:
    """Whether a compile error claims the format has no member at all."""
    return type(exc).__name__ == "EmptyLanguageError" or (isinstance(exc, sg.SchemaError) and "admits no JSON value" in str(exc))


def _finding(kind: str, doc, detail: str) -> dict:
    return {"kind": kind, "doc": doc, "detail": detail}


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-2000:]


# ---- the worker process ----------------------------------------------------------------------------


def _worker(conn, parent_end, tok, compile_timeout: float, log_path: str) -> None:
    parent_end.close()  # the fork's copy: with it closed, the parent's exit ends recv() with EOFError
    log = open(log_path, "w")
    faulthandler.enable(file=log)
    compiler = sg.GrammarCompiler(tok, compile_timeout=compile_timeout)
    while True:
        try:
            case, cap = conn.recv()
        except EOFError:
            return
        faulthandler.dump_traceback_later(max(1.0, cap - 1.0), exit=False, file=log)
        try:
            result = check_case(case, compiler)
        except BaseException as exc:  # noqa: BLE001  (reported as a finding by the parent)
            result = {"outcome": "error", "findings": [_finding("not_strictgen_error", None, _trace(exc))]}
        faulthandler.cancel_dump_traceback_later()
        conn.send(result)


class Supervisor:
    """Runs cases in one worker process (fork); a crash or a hang becomes a finding and a fresh worker."""

    def __init__(self, tok: sg.TokenizerInfo, compile_timeout: float = 10.0, cap: float | None = None):
        self.tok = tok
        self.compile_timeout = compile_timeout
        self.cap = cap if cap is not None else 4 * compile_timeout + 60.0  # compile + the documents' checks
        self._proc = None
        self._log = os.path.join(tempfile.mkdtemp(prefix="strictgen-fuzz-"), "worker.log")

    def _start(self) -> None:
        ctx = mp.get_context("fork")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_worker, args=(child, self._conn, self.tok, self.compile_timeout, self._log), daemon=True)
        self._proc.start()
        child.close()

    def run(self, case: dict) -> dict:
        if self._proc is None or not self._proc.is_alive():
            self._start()
        start = os.path.getsize(self._log) if os.path.exists(self._log) else 0
        self._conn.send((case, self.cap))
        t0 = time.perf_counter()
        if self._conn.poll(self.cap):
            try:
                return self._conn.recv()
            except EOFError:  # the worker died: let it be reaped, so that it reads as dead below
                self._proc.join(10)
        hung = self._proc.is_alive()
        self.close()
        trace = _read_from(self._log, start)
        detail = f"{'no answer after' if hung else 'worker died after'} {time.perf_counter() - t0:.1f} s (exit code {self._proc.exitcode}); faulthandler:\n{trace}"
        if hung and _judge_hung(trace):
            return {"outcome": "judge_hang", "findings": [], "detail": detail}
        return {"outcome": "hang" if hung else "crash", "findings": [_finding("hang" if hung else "crash", None, detail)]}

    def close(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
        if self._proc is not None:
            self._proc.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _judge_hung(trace: str) -> bool:
    """Did the worker hang inside a judge's bounded call (`_within`), not in strictgen? Python's
    `re` backtracks in C without looking at signals, so JUDGE_S cannot stop it (seen in the long
    campaign on `(?:(?:.*)+){0,2}` followed by a long literal tail)."""
    frames = re.findall(r'line \d+ in (\S+)', trace)
    return len(frames) >= 2 and frames[1] == "_within"


def _read_from(path: str, offset: int, limit: int = 4000) -> str:
    """What the worker's faulthandler wrote for this case (the innermost frames come first)."""
    try:
        with open(path, errors="replace") as f:
            f.seek(offset)
            return f.read(limit)
    except OSError:
        return ""


# ---- minimising a finding ----------------------------------------------------------------------------


def reproduces(run, case: dict, kind: str) -> bool:
    return any(f["kind"] == kind for f in run(case)["findings"])


def minimise(run, case: dict, finding: dict, max_runs: int = 300, max_s: float = 300.0) -> dict:
    """A smaller case with a finding of the same kind: one document, then a smaller source and document."""
    kind = finding["kind"]
    deadline = time.monotonic() + max_s
    runs = [0]

    def still(candidate: dict) -> bool:
        if runs[0] >= max_runs or time.monotonic() > deadline:
            return False
        runs[0] += 1
        try:
            return reproduces(run, candidate, kind)
        except Exception:  # noqa: BLE001  (a shrink the generators' shape does not allow)
            return False

    best = dict(case)
    if finding["doc"] is not None:
        one = {**best, "docs": [finding["doc"]]}
        if still(one):
            best = one
    improved = True
    while improved and runs[0] < max_runs and time.monotonic() < deadline:
        improved = False
        for source in _shrinks(best["source"]):
            candidate = {**best, "source": source}
            if still(candidate):
                best, improved = candidate, True
                break
        if not improved and len(best["docs"]) == 1:
            for doc in _text_shrinks(best["docs"][0]):
                candidate = {**best, "docs": [doc]}
                if still(candidate):
                    best, improved = candidate, True
                    break
    return best


def _shrinks(value):
    """Smaller variants of JSON-like data: a container replaced by a child container, an entry or
    item removed, a part shrunk (smallest changes last)."""
    if isinstance(value, dict):
        for v in value.values():
            if isinstance(v, (dict, list)) and not (isinstance(v, list) and value and set(value) <= {"root"} | {f"r{i}" for i in range(9)}):
                yield v
        for k in list(value):
            if k != "root":
                yield {n: v for n, v in value.items() if n != k}
        for k, v in value.items():
            for s in _shrinks(v):
                yield {**value, k: s}
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, list) and v and isinstance(v[0], str):
                yield v  # a tree node replaced by one of its children
        for i in range(len(value)):
            if i or not isinstance(value[0], str):
                yield value[:i] + value[i + 1 :]
        for i, v in enumerate(value):
            for s in _shrinks(v):
                yield value[:i] + [s] + value[i + 1 :]
    elif isinstance(value, str) and len(value) > 1:
        yield value[: len(value) // 2]
        yield value[:-1]
        yield value[1:]
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and value not in (0, 1):
        yield 0
        yield int(value) // 2


def _text_shrinks(text: str):
    n = len(text)
    size = n // 2
    while size >= 1:
        for i in range(0, n, size):
            yield text[:i] + text[i + size :]
        size //= 2
