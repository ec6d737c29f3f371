"""strictgen as a vLLM structured-output backend: the path vLLM's own backends take.

vLLM fills a structured-output backend's bitmask in the scheduler while the forward pass runs,
validates and rolls back speculative tokens through it, and handles reasoning models around it; a
logits processor gets none of that (docs/engines.md). vLLM 0.33 builds its backends by name in
`StructuredOutputManager.grammar_init` and validates requests per backend name in
`SamplingParams._validate_structured_outputs`, with the names a `Literal` of its config. So this
module adds a backend under its own name, "strictgen", and takes no other backend's name:

- `register()` is a vLLM general plugin (entry point `vllm.general_plugins`, loaded by vLLM in
  every process). It does nothing unless the environment selects strictgen
  (`STRICTGEN_VLLM_BACKEND=1`, an option of our own: the config's backend names are fixed); then
  it checks the vLLM version (SUPPORTED_VLLM, else a RuntimeError saying so) and wraps those two
  methods: requests with structured outputs are validated by compiling their format with
  strictgen (a 400 with strictgen's message when it does not compile) and marked for the
  "strictgen" backend, which the manager builds the first time such a request arrives.
- `StrictgenBackend` / `StrictgenStructuredGrammar` implement vLLM's `StructuredOutputBackend` /
  `StructuredOutputGrammar` over `RequestGrammar` (integrations/_grammar.py) and `compile_format`.

The bitmask is vLLM's layout (int32 words, bit i = token i), so vLLM's own GPU apply serves it.
This module imports vLLM; strictgen itself never does.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass, field

import torch
from vllm.v1.structured_output.backend_types import StructuredOutputBackend, StructuredOutputGrammar, StructuredOutputOptions

from strictgen.compile.compiler import GrammarCompiler
from strictgen.errors import InternalError, StrictgenError
from strictgen.runtime.bitmask import allocate_token_bitmask
from strictgen.tokenizer.info import TokenizerInfo

from ._formats import CHOICE, GRAMMAR, JSON_SCHEMA, REGEX, STRUCTURAL_TAG, byte_compiler, compile_format
from ._grammar import RequestGrammar

logger = logging.getLogger(__name__)

NAME = "strictgen"
SELECT_ENV = "STRICTGEN_VLLM_BACKEND"
SUPPORTED_VLLM = ("0.33.0",)
OBJECT_SCHEMA = '{"type": "object"}'  # vLLM's json_object: an object (as its xgrammar backend compiles it)

_FORMAT_OF = {
    StructuredOutputOptions.JSON: JSON_SCHEMA,
    StructuredOutputOptions.JSON_OBJECT: JSON_SCHEMA,
    StructuredOutputOptions.REGEX: REGEX,
    StructuredOutputOptions.GRAMMAR: GRAMMAR,
    StructuredOutputOptions.CHOICE: CHOICE,
    StructuredOutputOptions.STRUCTURAL_TAG: STRUCTURAL_TAG,
}


def compile_request(compiler: GrammarCompiler, request_type: StructuredOutputOptions, grammar_spec: str):
    """vLLM's (request type, spec text) as a compiled grammar of `compiler`'s vocabulary."""
    if request_type not in _FORMAT_OF:
        raise StrictgenError(f"strictgen has no vLLM structured-output type {request_type}")
    if request_type == StructuredOutputOptions.JSON_OBJECT:
        grammar_spec = OBJECT_SCHEMA
    if request_type == StructuredOutputOptions.GRAMMAR and _looks_like_lark(grammar_spec):
        return compiler.compile_lark(grammar_spec)
    return compile_format(compiler, _FORMAT_OF[request_type], grammar_spec)


def _looks_like_lark(text: str) -> bool:
    from vllm.v1.structured_output.utils import grammar_is_likely_lark

    return grammar_is_likely_lark(text)


class StrictgenStructuredGrammar(StructuredOutputGrammar):
    """One request, with the semantics vLLM's scheduler expects of a grammar: tokens after the
    grammar has terminated are ignored, a refused token returns False with the state unchanged."""

    def __init__(self, grammar: RequestGrammar):
        self.grammar = grammar

    @property
    def num_processed_tokens(self) -> int:
        return self.grammar.num_processed_tokens

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        for n, token in enumerate(tokens):
            if self.grammar.is_terminated():
                return True  # the rest follows EOS (vLLM's stop handling): nothing left to constrain
            if not self.grammar.accept_tokens([token]):
                logger.error("strictgen: request %s: token %s does not follow the grammar", request_id, token)
                if n:
                    self.grammar.rollback(n)
                return False
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        return self.grammar.validate_tokens(tokens)

    def rollback(self, num_tokens: int) -> None:
        if num_tokens:
            self.grammar.rollback(num_tokens)

    def fill_bitmask(self, bitmask: torch.Tensor, batch_index: int) -> None:
        self.grammar.fill_bitmask(bitmask, batch_index)

    def is_terminated(self) -> bool:
        return self.grammar.is_terminated()

    def reset(self) -> None:
        self.grammar.reset()


@dataclass
class StrictgenBackend(StructuredOutputBackend):
    """The engine-level backend: one compiler per set of stop tokens (a request's EOS and stop
    token ids are allowed exactly where its grammar can end), caching compiled grammars by content."""

    _compilers: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        self.info = tokenizer_info(self.tokenizer, self.vocab_size)

    def compiler_for(self, stop_token_ids) -> GrammarCompiler:
        key = frozenset(int(t) for t in stop_token_ids or ()) or frozenset(self.info.eos_token_ids)
        compiler = self._compilers.get(key)
        if compiler is None:
            info = self.info
            if key != frozenset(info.eos_token_ids):
                info = TokenizerInfo.from_vocab(info.all_token_bytes, eos_token_ids=sorted(key),
                                                special_token_ids=info.special_token_ids, vocab_size=info.vocab_size)
            compiler = self._compilers[key] = GrammarCompiler(info)
        return compiler

    def compile_grammar(self, request_type: StructuredOutputOptions, grammar_spec: str, stop_token_ids: set[int] | None = None) -> StructuredOutputGrammar:
        compiled = compile_request(self.compiler_for(stop_token_ids), request_type, grammar_spec)
        return StrictgenStructuredGrammar(RequestGrammar(compiled))

    def allocate_token_bitmask(self, max_num_seqs: int) -> torch.Tensor:
        return torch.from_numpy(allocate_token_bitmask(max_num_seqs, self.vocab_size))

    def destroy(self) -> None:
        self._compilers.clear()


@functools.lru_cache(maxsize=4)
def tokenizer_info(tokenizer, vocab_size: int) -> TokenizerInfo:
    """The vocabulary of vLLM's tokenizer (a Hugging Face tokenizer), padded to the model's size;
    one per tokenizer object and size in a process."""
    try:
        return TokenizerInfo.from_huggingface(tokenizer, vocab_size=int(vocab_size))
    except StrictgenError:
        raise
    except Exception as e:  # noqa: BLE001  (a tokenizer kind strictgen cannot read)
        raise StrictgenError(f"strictgen's vLLM backend needs a Hugging Face tokenizer, got {type(tokenizer).__name__}: {e}") from e


# ---- the plugin ----------------------------------------------------------------------------------


def selected() -> bool:
    return os.environ.get(SELECT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def check_version(version: str) -> None:
    if version not in SUPPORTED_VLLM:
        raise RuntimeError(
            f"{SELECT_ENV} selects strictgen's vLLM structured-output backend, which supports vLLM "
            f"{', '.join(SUPPORTED_VLLM)}; this is vLLM {version}. Install a supported vLLM, or unset "
            f"{SELECT_ENV} and use the logits processor (docs/engines.md)."
        )


def register() -> None:
    """vLLM general plugin: with STRICTGEN_VLLM_BACKEND=1, structured outputs go to strictgen."""
    if not selected():
        return
    import vllm

    check_version(vllm.__version__)
    _patch()


def _patch() -> None:
    """Wrap vLLM's validation and backend construction (once: a second call finds them wrapped)."""
    from vllm.exceptions import VLLMValidationError
    from vllm.sampling_params import SamplingParams
    from vllm.v1.structured_output import StructuredOutputManager
    from vllm.v1.structured_output.request import get_structured_output_key

    def validate_structured_outputs(self, model_config, structured_outputs_config, tokenizer) -> None:
        params = self.structured_outputs
        if structured_outputs_config is None or params is None:
            return
        if structured_outputs_config.backend != "auto":
            raise VLLMValidationError(
                f"{SELECT_ENV}=1 selects the strictgen backend; leave --structured-outputs-config.backend "
                f"at 'auto' (it is '{structured_outputs_config.backend}')"
            )
        if params._backend not in (None, NAME):
            raise VLLMValidationError(f"this vLLM serves structured outputs with strictgen, not '{params._backend}'")
        try:
            compile_request(byte_compiler(), *get_structured_output_key(params))
        except (StrictgenError, InternalError, ValueError) as e:
            raise VLLMValidationError(str(e)) from None
        params._backend = NAME
        params._backend_was_auto = False
        params.__post_init__()

    original_grammar_init = StructuredOutputManager.grammar_init
    if getattr(original_grammar_init, "strictgen_backend", False):
        return

    def grammar_init(self, request) -> None:
        params = request.sampling_params.structured_outputs if request.structured_output_request is not None else None
        if params is not None and params._backend == NAME and self.backend is None:
            self.backend = StrictgenBackend(self.vllm_config, tokenizer=self.tokenizer, vocab_size=self.vllm_config.model_config.get_vocab_size())
            self.backend_name = NAME
        original_grammar_init(self, request)

    grammar_init.strictgen_backend = True
    SamplingParams._validate_structured_outputs = validate_structured_outputs
    StructuredOutputManager.grammar_init = grammar_init
