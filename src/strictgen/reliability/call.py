"""`structured_call`: constrain where the backend can, validate, retry with the errors fed back.

Two backends answer a list of chat messages:
- LocalBackend: a strictgen engine model (the embedded SmolLM2 by default); constrained with a
  grammar compiled from the schema (mode "schema") or any-JSON (mode "json-object").
- OpenAIBackend: any OpenAI-compatible endpoint through the official `openai` client; constrained
  with `response_format` (json_schema or json_object) when the mode asks for it.

Each attempt: check finish_reason before parsing (a cut-off answer is an error unless the backend
guarantees a complete document), parse strictly (repair only when asked, and recorded), validate
with jsonschema (and the pydantic model when one is given). A failed attempt's errors go back into
the conversation, and the call is retried up to `max_retries` times; when retries run out,
StructuredOutputError lists every attempt's errors.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from strictgen.errors import StrictgenError

from .repair import RepairError, RepairResult, repair_json
from .validate import ValidationIssue, schema_dict, validate

MODES = ("prompt-only", "json-object", "schema")


class StructuredOutputError(StrictgenError):
    """Every attempt of a structured call failed; `.attempts` holds them, the message lists their errors."""

    def __init__(self, attempts: list["Attempt"]):
        self.attempts = attempts
        lines = [f"no valid output after {len(attempts)} attempt{'s' if len(attempts) != 1 else ''}:"]
        for i, a in enumerate(attempts, 1):
            lines.append(f"  attempt {i} (finish_reason={a.finish_reason}): " + "; ".join(a.errors))
        super().__init__("\n".join(lines))


@dataclass
class Completion:
    text: str
    finish_reason: str
    complete_when_cut: bool = False  # a "length" finish still ends a whole document (truncation-safe grammar)


@dataclass
class Attempt:
    text: str
    finish_reason: str
    latency_s: float
    errors: list[str] = field(default_factory=list)
    issues: list[ValidationIssue] = field(default_factory=list)
    parsed: bool = False  # the text was JSON as it stood
    repair: RepairResult | None = None  # set when the value came from a repair
    value: object = None

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass
class CallOutcome:
    attempts: list[Attempt]
    value: object = None  # the validated value (a pydantic object when a model class was given)

    @property
    def ok(self) -> bool:
        return bool(self.attempts) and self.attempts[-1].ok

    @property
    def final(self) -> Attempt:
        return self.attempts[-1]

    @property
    def latency_s(self) -> float:
        return sum(a.latency_s for a in self.attempts)


# ---- backends ----


class LocalBackend:
    """The strictgen engine: a Model object, or a --model spec ("default", a GGUF path, a HF folder)."""

    def __init__(self, model="default", *, runtime: str = "auto", n_ctx: int = 4096, token_healing: bool = True):
        from strictgen.compile.compiler import GrammarCompiler
        from strictgen.engine import load_model

        self.model = load_model(model, runtime=runtime, n_ctx=n_ctx) if isinstance(model, str) else model
        self.compiler = GrammarCompiler(self.model.tokenizer_info)
        self.name = f"{self.model.name} ({self.model.runtime})"
        self.token_healing = token_healing
        self.stats: list = []  # GenerationStats of every completion (eval reads healing figures here)

    # the mode → the format kind it constrains the output with (other modes: unconstrained)
    MODE_KINDS = {"schema": "json_schema", "json-object": "json_object"}

    def grammar(self, schema, mode: str):
        from strictgen.grammar.format_spec import GENERATION_STYLE, FormatOptions, FormatSpec

        kind = self.MODE_KINDS.get(mode)
        if kind is None:
            return None
        return self.compiler.compile_format(FormatSpec(kind, schema if kind == "json_schema" else None, FormatOptions(style=GENERATION_STYLE), "schema"))

    def complete(self, messages: list[dict], schema, mode: str, *, max_tokens: int, temperature: float, seed) -> Completion:
        from strictgen.engine import GenerationConfig, SamplingParams, generate

        m = self.model
        ids = m.tokenize(m.chat_template.render(messages), special=True)
        if m.add_bos and m.bos_token_id is not None and (not ids or ids[0] != m.bos_token_id):
            ids = [m.bos_token_id] + ids
        grammar = self.grammar(schema, mode)
        config = GenerationConfig(max_tokens=max_tokens, sampling=SamplingParams(temperature=temperature, seed=seed), token_healing=self.token_healing)
        result = generate(m, ids, grammar, config)
        self.stats.append(result.stats)
        return Completion(result.text, result.finish_reason, complete_when_cut=grammar is not None)


class OpenAIBackend:
    """Any OpenAI-compatible chat.completions endpoint, through the official `openai` client."""

    def __init__(self, base_url: str | None = None, *, api_key: str | None = None, model: str = "default", client=None, timeout: float = 120.0):
        if client is None:
            try:
                import openai
            except ImportError as exc:
                raise StrictgenError("the openai client is not installed: pip install 'strictgen[reliability]'") from exc
            client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout, max_retries=0)
        self.client = client
        self.model = model
        self.name = f"{model} @ {base_url}"

    def complete(self, messages: list[dict], schema, mode: str, *, max_tokens: int, temperature: float, seed) -> Completion:
        kwargs = {}
        if mode == "schema":
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": schema, "strict": True}}
        elif mode == "json-object":
            kwargs["response_format"] = {"type": "json_object"}
        if seed is not None:
            kwargs["seed"] = seed
        try:
            resp = self.client.chat.completions.create(
                model=self.model, messages=messages, max_tokens=max_tokens, temperature=temperature, **kwargs
            )
        except Exception as exc:  # network and API errors: one clear line
            raise StrictgenError(f"the endpoint failed: {type(exc).__name__}: {exc}") from exc
        if not resp.choices:
            return Completion("", "error")
        choice = resp.choices[0]
        return Completion(choice.message.content or "", choice.finish_reason or "unknown")


# ---- the call ----


def schema_instruction(schema: dict) -> str:
    """What the system turn says about the format: the compact sketch (engine.format_hint), which a
    small model follows far better than a JSON Schema dump."""
    from strictgen.engine.format_hint import format_hint

    return format_hint(schema)


def feedback_message(attempt: Attempt) -> str:
    lines = ["Your previous answer was not valid:"]
    lines += [f"- {e}" for e in attempt.errors[:10]]
    lines.append("Reply again with only the corrected JSON.")
    return "\n".join(lines)


def _check(text: str, finish_reason: str, complete_when_cut: bool, schema: dict, model_cls, repair: bool, attempt: Attempt) -> None:
    """Fill `attempt` with its value and errors."""
    if finish_reason == "length" and not complete_when_cut:
        attempt.errors.append("the output was cut off at max_tokens (finish_reason 'length'): answer shorter")
        return
    if finish_reason not in ("stop", "length", "tool_calls"):
        attempt.errors.append(f"the backend stopped with finish_reason {finish_reason!r}")
        return
    try:
        value = json.loads(text)
        attempt.parsed = True
    except json.JSONDecodeError as exc:
        if not repair:
            attempt.errors.append(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
            return
        try:
            attempt.repair = repair_json(text)
        except RepairError as rexc:
            attempt.errors.append(f"not JSON, and no JSON could be recovered: {rexc}")
            return
        value = attempt.repair.value
    attempt.value = value
    attempt.issues = validate(value, schema)
    attempt.errors.extend(str(i) for i in attempt.issues)
    if not attempt.issues and model_cls is not None:
        from pydantic import ValidationError

        try:
            attempt.value = model_cls.model_validate(value)
        except ValidationError as exc:
            for e in exc.errors():
                attempt.errors.append(f"/{'/'.join(str(p) for p in e['loc'])} ({e['type']}): {e['msg']}")


def run_structured(
    messages: list[dict],
    schema,
    backend,
    *,
    mode: str = "schema",
    max_retries: int = 2,
    max_tokens: int = 256,
    temperature: float = 0.0,
    seed: int | None = None,
    repair: bool = False,
) -> CallOutcome:
    """The attempts of one structured call (never raises for invalid output; see structured_call)."""
    if mode not in MODES:
        raise StrictgenError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if max_retries < 0:
        raise StrictgenError(f"max_retries must be at least 0, not {max_retries}")
    model_cls = schema if isinstance(schema, type) else None
    schema = schema_dict(schema)
    messages = [dict(m) for m in messages]
    outcome = CallOutcome([])
    for _ in range(max_retries + 1):
        t0 = time.perf_counter()
        done = backend.complete(messages, schema, mode, max_tokens=max_tokens, temperature=temperature, seed=seed)
        attempt = Attempt(done.text, done.finish_reason, time.perf_counter() - t0)
        _check(done.text, done.finish_reason, done.complete_when_cut, schema, model_cls, repair, attempt)
        outcome.attempts.append(attempt)
        if attempt.ok:
            outcome.value = attempt.value
            break
        messages += [{"role": "assistant", "content": done.text}, {"role": "user", "content": feedback_message(attempt)}]
    return outcome


def structured_call(
    prompt,
    schema,
    *,
    model="default",
    base_url: str | None = None,
    api_key: str | None = None,
    backend=None,
    mode: str = "schema",
    max_retries: int = 2,
    max_tokens: int = 256,
    temperature: float = 0.0,
    seed: int | None = None,
    system: str | None = None,
    repair: bool = False,
    schema_in_prompt: bool = True,
):
    """Ask for output matching `schema` and return it validated (a pydantic object for a model class).

    prompt: a user message, or a list of chat messages. Backend: `backend=` as given; else an
    OpenAI-compatible endpoint when `base_url` is set (`model` is then its model name); else the local
    engine with `model` ("default", a path, or a loaded Model). mode: "schema" (constrained to the
    schema), "json-object" (any JSON) or "prompt-only" (unconstrained). A failed attempt's errors are
    fed back and the call retried up to `max_retries` times; then StructuredOutputError is raised.
    repair=True lets a repaired value through (unconstrained backends); attempts record it."""
    if backend is None:
        if base_url is not None:
            backend = OpenAIBackend(base_url, api_key=api_key, model=model if isinstance(model, str) else "default")
        else:
            backend = LocalBackend(model)
    if isinstance(prompt, str):
        messages = [{"role": "user", "content": prompt}]
    else:
        messages = [dict(m) for m in prompt]
    if schema_in_prompt:
        instruction = schema_instruction(schema_dict(schema))
        messages = [{"role": "system", "content": (system + "\n\n" if system else "") + instruction}] + messages
    elif system:
        messages = [{"role": "system", "content": system}] + messages
    outcome = run_structured(
        messages, schema, backend, mode=mode, max_retries=max_retries, max_tokens=max_tokens,
        temperature=temperature, seed=seed, repair=repair,
    )
    if not outcome.ok:
        raise StructuredOutputError(outcome.attempts)
    return outcome.value
