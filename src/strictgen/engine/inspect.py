"""Step by step through a grammar: what the mask allowed, what the grammar forced, where a document
leaves the format and, with a model, what the model wanted.

When constrained output looks wrong (a field cut short, a key forced, a number stopped at one digit)
the final text does not say why; the steps do. Two walks give the same table:

- a *document* in its canonical tokenization (the tokenizer's own encoding) goes through a fresh
  GrammarMatcher: per token, the allowed count (the mask's popcount), a sample of the allowed tokens,
  the forced text (`find_jump_forward_string`), and, where a token is refused, the byte offset and
  the bytes the grammar expected there;
- a *prompt*: the model generates under the format with a `StepObserver` attached to the engine's
  own loop (generate.py), so the table also shows the model's top tokens before and after the mask,
  whether each token was sampled or forced, and where the truncation guard or token healing acted.
  The output tokens then go through the same walk, so both tables count the same way.

`strictgen inspect` (cli.py) and the server's `/v1/strictgen/inspect` (serve/inspect_routes.py)
only render what this module returns (`Inspection.to_dict()` is the JSON of both).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

from strictgen.compile.compiled import CompiledGrammar
from strictgen.errors import StrictgenError
from strictgen.runtime.matcher import GrammarMatcher

from .generate import GenerationConfig, GenerationResult, StepObserver, generate
from .model import Model

SAMPLE = 40  # allowed tokens listed per step by default
MAX_SAMPLE = 2000
TOP = 5  # model tokens listed before and after the mask
MAX_TOP = 50
FOUND_BYTES = 12  # how much of the document a departure quotes


def mask_ids(row: np.ndarray, vocab_size: int) -> np.ndarray:
    """The token ids whose bit is set in a packed int32 mask row."""
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:vocab_size]
    return np.flatnonzero(bits)


def byte_label(b: int) -> str:
    """One byte as a reader sees it: the character for printable ASCII, else an escape."""
    if 0x20 <= b < 0x7F:
        return chr(b)
    return {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}.get(b, f"\\x{b:02x}")


def byte_ranges(values: list[int]) -> list[str]:
    """Sorted byte values as ranges ("0-9", "a", "\\xc2-\\xdf")."""
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        lo, hi = values[i], values[j]
        out.append(byte_label(lo) if lo == hi else f"{byte_label(lo)}-{byte_label(hi)}")
        i = j + 1
    return out


@dataclass
class Departure:
    """Where a document leaves the format: the first byte no valid document has there."""

    step: int  # the table row whose token holds the byte (the end row when the document stops early)
    offset: int  # byte offset in the document
    found: str  # the document from that byte on (a few bytes), "" at its end
    expected: list[str]  # byte ranges the grammar allows at that offset
    end_allowed: bool  # the document could end there instead
    forced: str  # text the grammar forces at that offset ("" if none)

    @property
    def message(self) -> str:
        want = ", ".join(repr(e) for e in self.expected) or "nothing"
        if self.end_allowed:
            want += (", " if self.expected else "") + "or the end"
        where = f"{self.found!r}" if self.found else "the end of the document"
        return f"byte {self.offset}: found {where}, expected {want}"


@dataclass
class Step:
    """One row of the table: the state before `token` (the end row has no token)."""

    index: int
    offset: int  # byte offset of the token in the text
    token: dict | None  # {"id", "text", "special"}
    allowed: int  # tokens the mask allows here (EOS included)
    eos_allowed: bool
    matching: int  # allowed tokens matching the search (== allowed without one)
    sample: list[dict]  # allowed tokens (matching the search), lowest ids first
    forced: str  # find_jump_forward_string here
    accepted: bool  # the token (at the end row: the end of the text) was accepted
    # with a model (a prompt) only:
    origin: str | None = None  # "sampled" or "forced"
    forced_by: str | None = None  # "jump-forward" or "budget" (the truncation guard's shortest completion)
    top_before: list[dict] | None = None  # the model's top tokens before the mask, with probabilities
    top_after: list[dict] | None = None  # ...after the mask (and token healing's restriction)
    chosen: dict | None = None  # the sampled token, where jump-forward later re-encoded it as another
    guard: dict | None = None  # {"wanted", "taken"}: the truncation guard overruled the first choice
    healing: dict | None = None  # {"backed_off", "candidates"}: token healing took back a forced token


@dataclass
class Inspection:
    mode: str  # "document" or "prompt"
    vocab_size: int
    text: str
    steps: list[Step]
    departure: Departure | None
    complete: bool  # the text is a whole document of the format
    finish_reason: str | None = None  # prompt mode: the generation's
    stats: dict = field(default_factory=dict)  # prompt mode: the generation's summary

    def to_dict(self) -> dict:
        out = asdict(self)
        if self.departure is not None:
            out["departure"]["message"] = self.departure.message
        return out


class _Vocab:
    """Token ids → what the table shows, for one grammar (its marker tokens are text)."""

    def __init__(self, grammar: CompiledGrammar):
        self.info = grammar.tokenizer_info
        self.markers = grammar.marker_tokens
        self.eos = frozenset(self.info.eos_token_ids)

    def data(self, tid: int) -> bytes:
        if tid in self.markers:
            return self.markers[tid]
        return self.info.token_bytes(tid) if 0 <= tid < self.info.vocab_size else b""

    def text(self, tid: int) -> str:
        return self.data(tid).decode("utf-8", "backslashreplace")

    def view(self, tid: int) -> dict:
        """{"id", "text", "special"}, and "hex" (the exact bytes) where the token holds part of a
        UTF-8 character, so a client can join such tokens into characters."""
        special = bool(0 <= tid < self.info.vocab_size and self.info.is_special[tid]) and tid not in self.markers
        data = self.data(tid)
        out = {"id": int(tid), "text": data.decode("utf-8", "backslashreplace"), "special": special}
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            out["hex"] = data.hex()
        return out


def _sample(vocab: _Vocab, ids: np.ndarray, size: int, search: str | None) -> tuple[int, list[dict]]:
    """(how many of `ids` match `search`, the first `size` of them as views)."""
    if not search:
        return len(ids), [vocab.view(int(t)) for t in ids[:size]]
    hits = [t for t in ids.tolist() if search in vocab.text(t)]
    return len(hits), [vocab.view(t) for t in hits[:size]]


def _next_bytes(m: GrammarMatcher) -> list[int]:
    """The byte values the matcher accepts next."""
    out = []
    for b in range(256):
        if m.accept_string(bytes([b])):
            m.rollback(1)
            out.append(b)
    return out


def _departure(m: GrammarMatcher, data: bytes, step: int, offset: int, token_data: bytes) -> Departure:
    """Where `token_data` (refused at `offset` of `data`; b"" past the end) stops being valid."""
    ok = 0
    while ok < len(token_data) and m.accept_string(token_data[: ok + 1]):
        m.rollback(1)
        ok += 1
    moved = bool(ok) and m.accept_string(token_data[:ok])
    at = offset + ok
    end_allowed, forced = m.can_end(), m.find_jump_forward_string()
    expected = byte_ranges(_next_bytes(m))
    if moved:
        m.rollback(1)
    found = data[at : at + FOUND_BYTES].decode("utf-8", "backslashreplace")
    return Departure(step, at, found, expected, end_allowed, forced)


def _walk(grammar: CompiledGrammar, token_ids: list[int], data: bytes, sample: int, search: str | None) -> tuple[list[Step], Departure | None, bool]:
    """Steps for `token_ids` (spelling `data`) through a fresh matcher, up to the first refused one."""
    vocab = _Vocab(grammar)
    m = GrammarMatcher(grammar)
    steps: list[Step] = []
    offset = 0

    def step(token: int | None) -> Step:
        allowed = mask_ids(m.next_token_mask(), vocab.info.vocab_size)
        matching, shown = _sample(vocab, allowed, sample, search)
        view = vocab.view(token) if token is not None else None
        return Step(len(steps), offset, view, len(allowed), m.can_end(), matching, shown, m.find_jump_forward_string(), True)

    for tid in token_ids:
        row = step(tid)
        steps.append(row)
        if not m.accept_token(tid):
            row.accepted = False
            spelled = b"" if row.token["special"] else vocab.data(tid)  # a control token is refused whole
            return steps, _departure(m, data, row.index, offset, spelled), False
        offset += len(vocab.data(tid))
    end = step(None)
    end.accepted = m.can_end()
    steps.append(end)
    departure = None if end.accepted else _departure(m, data, end.index, offset, b"")
    return steps, departure, end.accepted


def _limits(sample: int, top: int = TOP) -> None:
    if not 0 <= sample <= MAX_SAMPLE:
        raise StrictgenError(f"sample must be between 0 and {MAX_SAMPLE}, not {sample}")
    if not 0 <= top <= MAX_TOP:
        raise StrictgenError(f"top must be between 0 and {MAX_TOP}, not {top}")


def inspect_document(
    grammar: CompiledGrammar, document: str, encode: Callable[[str], list[int]], *, sample: int = SAMPLE, search: str | None = None
) -> Inspection:
    """Walk `document`, tokenized by `encode` (the tokenizer's canonical encoding; where the grammar
    has marker tokens, special-token text should become those tokens, as generation spells them),
    through `grammar`."""
    _limits(sample)
    ids = list(encode(document))
    steps, departure, complete = _walk(grammar, ids, document.encode("utf-8"), sample, search)
    return Inspection("document", grammar.tokenizer_info.vocab_size, document, steps, departure, complete)


class GenerationRecorder(StepObserver):
    """Records what the model wanted at each choice (attach with GenerationConfig(observer=...))."""

    def __init__(self, grammar: CompiledGrammar, top: int = TOP):
        _limits(0, top)
        self.vocab = _Vocab(grammar)
        self.top = top
        self._before: list[dict] | None = None
        self.choices: dict[int, dict] = {}  # position → the last choice made there
        self.guards: dict[int, dict] = {}
        self.heals: dict[int, dict] = {}
        self.forced_by: dict[int, str] = {}

    def _top(self, logits: np.ndarray) -> list[dict]:
        x = np.asarray(logits, dtype=np.float64)
        live = np.flatnonzero(np.isfinite(x))
        if not len(live) or not self.top:
            return []
        vals = x[live]
        probs = np.exp(vals - vals.max())
        probs /= probs.sum()
        k = min(self.top, len(live))
        best = np.argpartition(-probs, k - 1)[:k]
        best = best[np.argsort(-probs[best], kind="stable")]
        return [{**self.vocab.view(int(live[i])), "p": round(float(probs[i]), 6)} for i in best]

    def before_mask(self, logits) -> None:
        self._before = self._top(logits)

    def chosen(self, position: int, token: int, logits) -> None:
        self.choices[position] = {"token": self.vocab.view(token), "top_before": self._before, "top_after": self._top(logits)}

    def guarded(self, position: int, wanted: int, taken: int) -> None:
        self.guards[position] = {"wanted": self.vocab.view(wanted), "taken": self.vocab.view(taken)}

    def forced(self, position: int, tokens: list[int], why: str) -> None:
        for i in range(len(tokens)):
            self.forced_by[position + i] = why

    def healed(self, position: int, token: int, candidates: int) -> None:
        self.heals[position] = {"backed_off": self.vocab.view(token), "candidates": candidates}

    def inspection(self, grammar: CompiledGrammar, result: GenerationResult, *, sample: int = SAMPLE, search: str | None = None) -> Inspection:
        """The table of a finished run: its output tokens walked as a document, with the model's view."""
        _limits(sample)
        data = b"".join(self.vocab.data(t) for t in result.token_ids)
        steps, departure, complete = _walk(grammar, result.token_ids, data, sample, search)
        origins = list(result.forced) + [False]  # the end row: EOS, when the model chose it
        for row in steps:
            i = row.index
            choice = self.choices.get(i)
            if i == len(result.token_ids) and (choice is None or choice["token"]["id"] not in self.vocab.eos):
                continue  # the run stopped without choosing EOS (grammar complete, or length)
            row.origin = "forced" if origins[i] else "sampled"
            row.forced_by = self.forced_by.get(i) if origins[i] else None
            row.guard, row.healing = self.guards.get(i), self.heals.get(i)
            if choice is not None:
                row.top_before, row.top_after = choice["top_before"], choice["top_after"]
                if row.token is None or choice["token"]["id"] != row.token["id"]:
                    row.chosen = choice["token"]
        return Inspection("prompt", grammar.tokenizer_info.vocab_size, result.text, steps, departure, complete, result.finish_reason, result.stats.summary())


def inspect_generation(
    model: Model, prompt_ids: list[int], grammar: CompiledGrammar, config: GenerationConfig | None = None,
    *, top: int = TOP, sample: int = SAMPLE, search: str | None = None,
) -> Inspection:
    """Generate after `prompt_ids` under `grammar`, recording each step (the CLI's path; the server
    runs the same recorder through its model pool)."""
    recorder = GenerationRecorder(grammar, top)
    config = config or GenerationConfig()
    config.observer = recorder
    result = generate(model, prompt_ids, grammar, config)
    return recorder.inspection(grammar, result, sample=sample, search=search)


def describe_error(exc: BaseException) -> dict[str, Any]:
    """A compile error as data: its kind and message, and where it points (SchemaError: keyword and
    JSON pointer; GrammarSyntaxError: line and column; RegexError: position). A wrapper's cause (the
    server's RequestError) is looked through."""
    inner, seen = exc, exc
    while seen is not None:
        if any(hasattr(seen, a) for a in ("pointer", "line", "position")):
            inner = seen
            break
        seen = seen.__cause__
    out: dict[str, Any] = {"type": type(inner).__name__, "message": str(inner)}
    for attr in ("keyword", "pointer", "line", "column", "position"):
        if hasattr(inner, attr):
            out[attr] = getattr(inner, attr)
    cause = exc.__cause__
    if isinstance(cause, json.JSONDecodeError):  # a schema sent as text that is not JSON
        out.update(type="JSONDecodeError", line=cause.lineno, column=cause.colno)
    return out


def _cell(text: str, width: int) -> str:
    text = text.encode("unicode_escape").decode("ascii") if any(c in text for c in "\n\r\t") else text
    return text if len(text) <= width else text[: width - 1] + "…"


def format_table(found: Inspection, top: int = 3) -> str:
    """The inspection as a terminal table (`strictgen inspect` without --json)."""
    model = found.mode == "prompt"
    head = f"{'#':>4} {'byte':>5}  {'token':<18} {'allowed':>8} {'EOS':<3}  {'forced next':<22}"
    if model:
        head += f" {'how':<12} {'model before mask':<30} {'after mask':<30}"
    head += f" {'allowed tokens (sample)':<28}"
    lines = [head + " notes", "-" * (len(head) + 6)]
    for s in found.steps:
        token = repr(s.token["text"]) if s.token else "(end)"
        row = f"{s.index:>4} {s.offset:>5}  {_cell(token, 18):<18} {s.allowed:>8} {'yes' if s.eos_allowed else '':<3}  {_cell(repr(s.forced) if s.forced else '', 22):<22}"
        if model:
            tops = [" ".join(f"{t['text']!r}:{t['p']:.2f}" for t in (lst or [])[:top]) for lst in (s.top_before, s.top_after)]
            row += f" {(s.forced_by or s.origin or ''):<12} {_cell(tops[0], 30):<30} {_cell(tops[1], 30):<30}"
        notes = [] if s.accepted else ["refused" if s.token else "cannot end here"]
        if s.guard:
            notes.append(f"guard: wanted {s.guard['wanted']['text']!r}, took {s.guard['taken']['text']!r}")
        if s.healing:
            notes.append(f"healing: took back {s.healing['backed_off']['text']!r} ({s.healing['candidates']} candidates)")
        if s.chosen:
            notes.append(f"sampled {s.chosen['text']!r}, re-encoded")
        sample = " ".join(repr(t["text"]) for t in s.sample[:4]) + (" …" if s.matching > 4 else "")
        lines.append(row + f" {_cell(sample, 28):<28} " + "; ".join(notes))
    if found.departure is not None:
        lines.append(f"leaves the format at {found.departure.message}")
    ending = "a whole document of the format" if found.complete else "not a whole document"
    lines.append(f"{len(found.steps)} steps; {ending}" + (f"; finish: {found.finish_reason}" if found.finish_reason else ""))
    return "\n".join(lines)
