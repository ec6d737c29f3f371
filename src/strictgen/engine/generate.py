"""The constrained generation loop: mask, sample, advance; jump-forward; truncation-safe budgets.

One step: the logits of the last forward pass get the matcher's mask, a token is chosen, the matcher
accepts it. If the grammar then forces some text (jump-forward), that text is tokenized together
with the last few output tokens — re-encoding the boundary so the model sees tokenizations it was
trained on — and everything new goes through the model in one forward pass; the KV cache is rolled
back to the longest common prefix first. While the model runs (another thread: llama.cpp and torch
release the GIL) the matcher computes the next mask.

Token healing (on by default): where jump-forward ends on a token that the tokenizer could have
merged with what follows, that token is backed off and the next sampled token must begin with its
bytes (strictgen.runtime.healing), so the model continues from its own tokenization rather than
from a boundary it never chose. It fires only when the grammar allows some longer such token; when
the model then picks the backed-off token itself, that costs one forward pass. With `heal_prompt`
(raw-text prompts such as /v1/completions, unconstrained output) the prompt's last token is healed
the same way: "The capital of Fra" continues with a token beginning "Fra", and the output text is
what follows the prompt's own bytes.

With a grammar and a max_tokens budget the output is truncation-safe: a token is taken only if the
document can still be finished in the tokens left after it (see strictgen.runtime.budget), so
`finish_reason == "length"` still leaves a valid document.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from strictgen.compile.compiled import CompiledGrammar
from strictgen.compile.machine import DEAD
from strictgen.errors import StrictgenError
from strictgen.runtime.bitmask import apply_token_bitmask_inplace
from strictgen.runtime.budget import TokenBudget, greedy_tokenizer
from strictgen.runtime.healing import allowed_in, restrict_logits, token_prefixes
from strictgen.runtime.matcher import GrammarMatcher

from .kv_cache import KVSequence, common_prefix
from .model import Model
from .reasoning_limit import DONE, INSIDE, ReasoningLimit
from .sampling import Sampler, SamplingParams

# how many of the last output tokens jump-forward re-encodes together with the forced text
RETOKENIZE_BACKOFF = 2
# how many top-ranked tokens the truncation guard tries before taking the shortest-completion token
GUARD_CANDIDATES = 32


class StepObserver:
    """Watches one run's decisions, in order, without changing them; every method here does nothing.

    Positions are indices into the output tokens. Jump-forward may re-encode the last tokens
    together with forced text, so a position reported earlier can later hold another token."""

    def before_mask(self, logits: np.ndarray) -> None:
        """The raw logits of a step, before the grammar's mask is applied (read, never keep)."""

    def chosen(self, position: int, token: int, logits: np.ndarray) -> None:
        """`token` was chosen at `position` from `logits` (masked, and restricted by token healing)."""

    def guarded(self, position: int, wanted: int, taken: int) -> None:
        """The truncation guard overruled the first choice `wanted`: `taken` still fits the budget."""

    def forced(self, position: int, tokens: list[int], why: str) -> None:
        """Output from `position` on is now `tokens`, put there without sampling (why: "jump-forward",
        or "budget" where the guard took the shortest completion's tokens)."""

    def healed(self, position: int, token: int, candidates: int) -> None:
        """Token healing took back forced `token` at `position`: the next choice is among
        `candidates` tokens that begin with its bytes (itself included)."""


@dataclass
class GenerationConfig:
    max_tokens: int = 256
    sampling: SamplingParams = field(default_factory=SamplingParams)
    stop: tuple[str, ...] = ()
    jump_forward: bool = True
    token_healing: bool = True  # back off the last forced token where the model could merge across it
    heal_prompt: bool = False  # ...and the prompt's last token (raw prompts ending mid-word; no grammar)
    truncation_safe: bool = True
    overlap_mask: bool = True  # compute the next mask while the forward pass runs
    # called after every step with the output token ids so far (streaming servers read text from it);
    # returning False stops the run with finish_reason "cancelled" (a client went away)
    on_progress: Callable[[list[int]], bool | None] | None = None
    # called after every step (after on_progress) with the output text's bytes so far: what streaming
    # shows (a healed prompt's last token is partly prompt, so ids alone do not give the text)
    on_text: Callable[[bytes], None] | None = None
    # a bound on the reasoning block the output starts with: at it, the close marker is forced
    reasoning_limit: ReasoningLimit | None = None
    # sees every decision of the run (engine/inspect.py records them for `strictgen inspect`)
    observer: StepObserver | None = None

    def __post_init__(self):
        if self.max_tokens < 1:
            raise StrictgenError(f"max_tokens must be at least 1, not {self.max_tokens}")
        self.stop = tuple(s for s in self.stop if s)


@dataclass
class GenerationStats:
    prompt_tokens: int = 0
    output_tokens: int = 0
    sampled_tokens: int = 0  # chosen by sampling (EOS included)
    forced_tokens: int = 0  # net tokens added by jump-forward
    jumps: int = 0
    retokenized: int = 0  # jumps whose boundary re-encoding changed already-chosen tokens
    healed: int = 0  # boundaries where the last forced token was backed off (token healing)
    healed_longer: int = 0  # ...and the model chose a longer token that begins with its bytes
    forward_passes: int = 0  # decode passes after the prompt's
    prefill_s: float = 0.0
    forward_s: float = 0.0
    mask_s: float = 0.0  # computing and applying masks
    sample_s: float = 0.0
    budget_s: float = 0.0  # truncation guard
    guarded: int = 0  # steps where the guard overruled the first choice
    total_s: float = 0.0
    ended_by_eos: bool = False
    reasoning_cut: bool = False  # the reasoning budget ran out and its close marker was forced

    @property
    def passes_saved(self) -> int:
        """Forward passes jump-forward saved: token-by-token decoding of the same output needs one
        pass per output token after the first (plus one to sample EOS), less the passes made."""
        baseline = max(0, self.output_tokens - 1) + (1 if self.ended_by_eos else 0)
        return max(0, baseline - self.forward_passes)

    def summary(self) -> dict:
        n = max(1, self.forward_passes)
        out = max(1, self.output_tokens)
        return {
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "sampled_tokens": self.sampled_tokens,
            "forced_tokens": self.forced_tokens,
            "jumps": self.jumps,
            "retokenized": self.retokenized,
            "healed": self.healed,
            "healed_longer": self.healed_longer,
            "forward_passes": self.forward_passes,
            "passes_saved": self.passes_saved,
            "passes_saved_pct": round(100.0 * self.passes_saved / max(1, self.passes_saved + self.forward_passes), 1),
            "prefill_ms": round(self.prefill_s * 1000, 1),
            "forward_ms_per_pass": round(self.forward_s * 1000 / n, 2),
            "forward_ms_per_token": round(self.forward_s * 1000 / out, 2),
            "mask_ms_per_token": round(self.mask_s * 1000 / out, 3),
            "sample_ms_per_token": round(self.sample_s * 1000 / out, 3),
            "budget_ms_per_token": round(self.budget_s * 1000 / out, 3),
            "guarded_steps": self.guarded,
            "total_s": round(self.total_s, 3),
            "tokens_per_s": round(self.output_tokens / self.total_s, 1) if self.total_s else 0.0,
            "decode_tokens_per_s": round(self.output_tokens / max(1e-9, self.total_s - self.prefill_s), 1),
        }


@dataclass
class GenerationResult:
    text: str
    token_ids: list[int]
    finish_reason: str  # "stop" (EOS, grammar complete, or a stop string), "length", or "cancelled" (on_progress)
    stats: GenerationStats
    forced: list[bool] = field(default_factory=list)  # per output token: put there by jump-forward, not sampled


class GenerationRun:
    """One generation's mutable state (kept out of the Model so a Model can be reused)."""

    def __init__(self, model: Model, prompt_ids: list[int], grammar: CompiledGrammar | None, config: GenerationConfig):
        if not prompt_ids:
            raise StrictgenError("the prompt is empty")
        self.model = model
        self.config = config
        self.prompt = list(prompt_ids)
        self.out: list[int] = []
        self.origin: list[bool] = []  # True where jump-forward put the token
        self.heal: tuple[int, np.ndarray] | None = None  # (backed-off token, tokens the next choice may be)
        self.owed = 0  # leading output bytes that are the healed prompt token's (not output text)
        self.stats = GenerationStats(prompt_tokens=len(self.prompt))
        self.sampler = Sampler(config.sampling)
        self._pool: ThreadPoolExecutor | None = None
        self._fed = False  # has this run made its first forward pass?
        self.matcher = GrammarMatcher(grammar) if grammar is not None else None
        self.observer = config.observer
        self.keep = grammar.marker_tokens if grammar is not None else {}  # special tokens that are output text
        limit = config.reasoning_limit
        self._reasoning_from: int | None = 0 if limit is not None and limit.starts_inside else None  # output index
        self._reasoning_done = limit is None
        self.budget = TokenBudget(grammar) if grammar is not None and config.truncation_safe else None
        if self.budget is not None:
            self.budget.check(config.max_tokens)
        eos = grammar.tokenizer_info.eos_token_ids if grammar is not None else model.tokenizer_info.eos_token_ids
        self.eos = frozenset(eos)
        if grammar is not None and grammar.tokenizer_info.vocab_size > model.vocab_size:
            raise StrictgenError(
                f"the grammar was compiled for {grammar.tokenizer_info.vocab_size} tokens, the model has {model.vocab_size}"
            )

    # ---- helpers ----

    @property
    def remaining(self) -> int:
        return self.config.max_tokens - len(self.out)

    def _grammar_done(self) -> bool:
        """The grammar can end here and nothing else can follow: no need to ask the model."""
        m = self.matcher
        if m is None or not m.can_end():
            return False
        return not self.model_row_live(m.state)

    def model_row_live(self, state: int) -> bool:
        row = self.matcher.compiled.machine.compute_row(state)
        return bool((row != DEAD).any())

    def _text(self) -> bytes:
        return self.model.detokenize(self.out, self.keep)[self.owed :]

    # ---- jump-forward ----

    def _jump_forward(self) -> None:
        """Append what the grammar forces now, re-encoding the boundary with the model's tokenizer."""
        forced = self.matcher.find_jump_forward_string()
        if forced:
            self._append_forced(forced)

    def _append_forced(self, forced: str) -> bool:
        """Append `forced` (text the grammar forces, or a reasoning block's close marker), the
        boundary re-encoded; within the token budget. False: it could not be appended."""
        m = self.matcher
        before = list(self.out)
        new_out = self._retokenized(forced)
        if new_out is None or not self._replace_output(new_out):
            return False
        if self.budget is not None and self.budget.tokens_needed(m.state) > self.remaining:
            # the model's tokenization of the forced text is too long for the budget: take the
            # shortest-completion tokens inside the forced text instead (always within budget)
            self._replace_output(before)
            self._force_canonical(len(forced.encode("utf-8")))
            return True
        if len(self.out) > self.config.max_tokens:  # no budget guard: cut to max_tokens
            self._replace_output(self.out[: self.config.max_tokens])
        self.stats.jumps += 1
        kept = common_prefix(before, self.out)
        if kept < len(before):
            self.stats.retokenized += 1
        self.stats.forced_tokens += len(self.out) - len(before)
        if self.observer is not None:
            self.observer.forced(kept, self.out[kept:], "jump-forward")
        if self.config.token_healing and self.origin and self.origin[-1] and m is not None:
            self._back_off_boundary()
        return True

    def _limit_reasoning(self) -> None:
        """Force the reasoning block's close marker once the block used its token budget
        (strictgen.engine.reasoning_limit); then what the grammar forces after it."""
        if self._reasoning_done:
            return
        limit = self.config.reasoning_limit
        phase = limit.phase(self._text())
        if phase == DONE:
            self._reasoning_done = True
        if phase != INSIDE:
            return
        if self._reasoning_from is None:
            self._reasoning_from = len(self.out)  # the tokens after the one that opened the block count
        if len(self.out) - self._reasoning_from < limit.max_tokens:
            return
        self._reasoning_done = True
        self.stats.reasoning_cut = True
        if self._append_forced(limit.close) and self.matcher is not None and self.config.jump_forward:
            self._jump_forward()

    def _back_off_boundary(self) -> None:
        """Token healing: take back the last forced token when the grammar allows a longer token
        beginning with its bytes; the next choice is then among those tokens and itself."""
        last = self.out[-1]
        if self.model.tokenizer_info.is_special[last]:
            return  # a marker token: nothing longer begins with it
        longer = token_prefixes(self.model.tokenizer_info).extending(self.model.token_bytes(last))
        if not len(longer) or self._grammar_done():
            return
        m = self.matcher
        m.rollback(1)
        allowed = allowed_in(m.next_token_mask(), longer)
        if not len(allowed):
            m.accept_token(last)
            return
        self.out.pop()
        self.origin.pop()
        self.stats.forced_tokens -= 1
        self.stats.healed += 1
        self.heal = (last, np.append(allowed, last))
        if self.observer is not None:
            self.observer.healed(len(self.out), last, len(self.heal[1]))

    def _retokenized(self, forced: str) -> list[int] | None:
        """Output tokens with the last few re-encoded together with `forced` (None: cannot)."""
        forced_b = forced.encode("utf-8")
        for back in range(min(RETOKENIZE_BACKOFF, len(self.out)), -1, -1):
            tail = self.out[len(self.out) - back :] if back else []
            data = self.model.detokenize(tail, self.keep) + forced_b
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue  # the tail starts inside a character: back off less
            ids = self.model.tokenize(text, special=bool(self.keep))  # a forced marker as its token
            special = self.model.tokenizer_info.is_special
            if self.model.detokenize(ids, self.keep) != data or any(special[i] and i not in self.keep for i in ids):
                continue
            return self.out[: len(self.out) - back] + ids
        # the model's tokenizer does not spell the text back exactly (a SentencePiece tokenizer adds a
        # leading space, say): spell the forced text by greedy longest match instead
        try:
            return self.out + greedy_tokenizer(self.model.tokenizer_info).encode(forced_b)
        except StrictgenError:
            return None

    def _replace_output(self, new_out: list[int]) -> bool:
        """Make the output `new_out`, rolling the matcher back to the common prefix (False: refused)."""
        m = self.matcher
        keep = common_prefix(self.out, new_out)
        origin = self.origin[:keep] + [True] * (len(new_out) - keep)
        if m is None:  # unconstrained: nothing to check
            self.out, self.origin = list(new_out), origin
            return True
        undo = len(self.out) - keep
        if undo:
            m.rollback(undo)
        accepted = 0
        for t in new_out[keep:]:
            if not m.accept_token(t):
                break
            accepted += 1
        if accepted < len(new_out) - keep:  # should not happen: restore the old output
            m.rollback(accepted)
            for t in self.out[keep:]:
                m.accept_token(t)
            return False
        self.out = list(new_out)
        self.origin = origin
        return True

    def _force_canonical(self, max_bytes: int) -> None:
        """Append the shortest-completion tokens that lie within the next `max_bytes` bytes."""
        toks = self.budget.completion_tokens(self.matcher.state)
        used = 0
        added = 0
        for t in toks:
            used += len(self.model.token_bytes(t, self.keep))
            if used > max_bytes:
                break
            self.matcher.accept_token(t)
            self.out.append(t)
            self.origin.append(True)
            added += 1
        if added:
            self.stats.jumps += 1
            self.stats.forced_tokens += added
            if self.observer is not None:
                self.observer.forced(len(self.out) - added, self.out[-added:], "budget")

    # ---- choosing ----

    def _choose(self, logits: np.ndarray) -> int:
        t0 = time.perf_counter()
        scores = self.sampler.scores(logits)
        best = int(np.argmax(scores))
        self.stats.sample_s += time.perf_counter() - t0
        if not np.isfinite(scores[best]):
            raise StrictgenError("no token is allowed (internal error: the mask is empty)")
        if self.budget is None or best in self.eos:
            return best
        t1 = time.perf_counter()
        try:
            state = self.matcher.state
            if self.budget.fits(state, best, self.remaining):
                return best
            self.stats.guarded += 1
            taken = next(
                (t for t in self.sampler.ranked(scores, GUARD_CANDIDATES)[1:] if t in self.eos or self.budget.fits(state, t, self.remaining)),
                None,
            )
            if taken is None:
                taken = self.budget.completion_tokens(state)[0]
            if self.observer is not None:
                self.observer.guarded(len(self.out), best, taken)
            return taken
        finally:
            self.stats.budget_s += time.perf_counter() - t1

    # ---- the loop ----

    def _forward(self, feed: list[int]) -> tuple[np.ndarray, float]:
        t0 = time.perf_counter()
        logits = self.model.forward(feed)
        return logits, time.perf_counter() - t0

    def _mask(self, logits: np.ndarray | None, row: np.ndarray | None) -> np.ndarray | None:
        if self.matcher is None:
            return None
        if logits is not None:
            self.observe_logits(logits)
        t0 = time.perf_counter()
        if row is None:
            row = self.matcher.next_token_mask()
        if logits is not None:
            apply_token_bitmask_inplace(logits, row)
        self.stats.mask_s += time.perf_counter() - t0
        return row

    def observe_logits(self, logits: np.ndarray) -> None:
        """Show the observer a step's logits before the mask (the batched scheduler calls this too)."""
        if self.observer is not None:
            self.observer.before_mask(logits)

    def run(self) -> GenerationResult:
        try:
            return self._run()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)

    def _run(self) -> GenerationResult:
        cfg = self.config
        model = self.model
        self.begin()
        while True:
            finish = self.check_done()
            if finish is not None:
                break
            keep, feed = self.next_feed(model.kv)
            model.truncate(keep)
            if cfg.overlap_mask and self.matcher is not None:
                if self._pool is None:  # one worker per run: concurrent runs never queue behind each other
                    self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="strictgen-forward")
                future = self._pool.submit(self._forward, feed)
                row = self._mask(None, None)
                logits, dt = future.result()
                self._mask(logits, row)
            else:
                logits, dt = self._forward(feed)
                self._mask(logits, None)
            self.record_forward(dt)
            finish = self.step(logits)
            if finish is not None:
                break
        return self.result(finish)

    # ---- per-step pieces (the batched scheduler in batching.py drives these too) ----

    def begin(self) -> None:
        """Start the clock and take what the grammar forces before the first token."""
        self._t_start = time.perf_counter()
        self._first = True
        if self.matcher is not None and self.config.jump_forward:
            self._jump_forward()
        self._limit_reasoning()
        if self.config.heal_prompt and self.config.token_healing and self.matcher is None:
            self._heal_prompt()

    def _heal_prompt(self) -> None:
        """Take back the prompt's last token when longer tokens begin with its bytes; the first
        output token is then one of them (or itself), and its first bytes stay prompt text."""
        last = self.prompt[-1]
        data = self.model.token_bytes(last)
        longer = token_prefixes(self.model.tokenizer_info).extending(data) if data and len(self.prompt) > 1 else ()
        if not len(longer):
            return
        self.prompt.pop()
        self.owed = len(data)
        self.stats.healed += 1
        self.heal = (last, np.append(longer, last))

    def check_done(self) -> str | None:
        """The finish reason when no forward pass is needed any more (else None)."""
        if self._grammar_done():
            return "stop"
        if self.remaining <= 0:
            return "length"
        return None

    def next_feed(self, kv: KVSequence) -> tuple[int, list[int]]:
        """(cached tokens to keep, tokens to feed after them) for the next forward pass. The first
        pass keeps only what any request would compute the same way (KVSequence.reusable), so the
        run does not depend on what the cache held; later passes keep what this run fed itself."""
        seq = self.prompt + self.out
        keep = kv.within_run(seq) if self._fed else kv.reusable(seq)
        self._fed = True
        return keep, seq[keep:]

    def record_forward(self, dt: float) -> None:
        if self._first:
            self.stats.prefill_s += dt
            self._first = False
        else:
            self.stats.forward_passes += 1
            self.stats.forward_s += dt

    def step(self, logits: np.ndarray) -> str | None:
        """Choose a token from the (masked) `logits` and advance; the finish reason, or None to go on."""
        cfg = self.config
        healing = self.heal
        if healing is not None:
            self.heal = None
            restrict_logits(logits, healing[1])
        token = self._choose(logits)
        if self.observer is not None:
            self.observer.chosen(len(self.out), token, logits)
        self.stats.sampled_tokens += 1
        if healing is not None and token != healing[0]:
            self.stats.healed_longer += 1
        if token in self.eos:
            if self.matcher is not None:
                self.matcher.accept_token(token)
            self.stats.ended_by_eos = True
            return "stop"
        if self.matcher is not None and not self.matcher.accept_token(token):
            raise StrictgenError(f"internal error: the matcher refused allowed token {token}")
        self.out.append(token)
        self.origin.append(False)
        if self.matcher is not None and cfg.jump_forward:
            self._jump_forward()
        self._limit_reasoning()
        if cfg.stop and self._cut_at_stop():  # after jump-forward: forced text may hold a stop string
            return "stop"
        if cfg.on_progress is not None and cfg.on_progress(list(self.out)) is False:
            return "cancelled"
        if cfg.on_text is not None:
            cfg.on_text(self._text())
        return None

    def result(self, finish: str) -> GenerationResult:
        self.stats.output_tokens = len(self.out)
        self.stats.total_s = time.perf_counter() - self._t_start
        text = self._text().decode("utf-8", "replace")
        if self.config.stop:
            text = _cut_text(text, self.config.stop)
        return GenerationResult(text, list(self.out), finish, self.stats, list(self.origin))

    def _cut_at_stop(self) -> bool:
        text = self._text().decode("utf-8", "ignore")
        return any(s in text for s in self.config.stop)


def _cut_text(text: str, stops: tuple[str, ...]) -> str:
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    return text if cut < 0 else text[:cut]


def generate(
    model: Model,
    prompt_ids: list[int],
    grammar: CompiledGrammar | None = None,
    config: GenerationConfig | None = None,
) -> GenerationResult:
    """Generate after `prompt_ids`, constrained by `grammar` (None: unconstrained)."""
    return GenerationRun(model, prompt_ids, grammar, config or GenerationConfig()).run()
