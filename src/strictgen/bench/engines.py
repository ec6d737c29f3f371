"""Engines: one small adapter per library (strictgen, xgrammar, llguidance), same protocol."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

import numpy as np

from strictgen.bench.workload import BenchCase, Vocab


ENGINES = ("strictgen", "xgrammar", "llguidance")

# ---------------------------------------------------------------------------------------------
# Engines: one small adapter per library, same protocol


class EngineUnavailable(RuntimeError):
    pass


class Engine:
    name = "?"
    apply_note = ""

    def __init__(self, vocab: Vocab, info, fmt: str, use_torch: bool, any_order: bool = False):
        self.vocab, self.fmt, self.use_torch, self.any_order = vocab, fmt, use_torch, any_order
        self.info = None
        if info is not None:
            self._set_info(info)

    def _set_info(self, info) -> None:
        self.info = info
        self.V = info.vocab_size
        self.eos = int(info.eos_token_ids[0])

    # vocabulary preprocessing: returns the engine's tokenizer state (timed by the caller)
    def preprocess(self):
        raise NotImplementedError

    def adopt(self, state) -> None:
        """Use this preprocessed state for everything that follows."""
        self.state = state

    def new_compiler(self):
        raise NotImplementedError

    has_any_order = False  # whether compile(..., any_order=True) accepts object members in any order

    def compile(self, compiler, case: BenchCase, any_order: bool | None = None):
        """Compile `case`'s schema (or the any-JSON grammar) and build the first matcher;
        returns (artefact, matcher). any_order: members in any order (engines with
        `has_any_order`); None: the bench's setting."""
        raise NotImplementedError

    def quiet(self):
        """Context for a whole cell, outside the timed regions: collects what the library prints."""
        return contextlib.nullcontext([])

    def matcher(self, artefact):
        raise NotImplementedError

    def alloc_mask(self):
        raise NotImplementedError

    def fill(self, matcher, mask) -> None:
        raise NotImplementedError

    def accept(self, matcher, token_id: int) -> bool:
        raise NotImplementedError

    def make_logits(self):
        """(logits, base): a 1-D float32 vector of vocab size for apply, and values to reset it from."""
        base = np.random.default_rng(0).standard_normal(self.V).astype(np.float32)
        if self.use_torch:
            import torch

            return torch.from_numpy(base.copy()), torch.from_numpy(base)
        return base.copy(), base

    def reset_logits(self, logits, base) -> None:
        if isinstance(logits, np.ndarray):
            np.copyto(logits, base)
        else:
            logits.copy_(base)

    def apply(self, logits, mask) -> None:
        raise NotImplementedError

    def version(self) -> str:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(self.name)
        except PackageNotFoundError:
            return "?"


class _BackendApiEngine(Engine):
    """An engine whose module speaks the grammar-backend API that vLLM and SGLang expect
    (strictgen and xgrammar both do): `lib.GrammarMatcher`, `lib.allocate_token_bitmask`,
    `lib.apply_token_bitmask_inplace`, `matcher.fill_next_token_bitmask`, `matcher.accept_token`."""

    lib = None  # the module, set by the subclass

    def matcher(self, artefact):
        return self.lib.GrammarMatcher(artefact)

    def alloc_mask(self):
        return self.lib.allocate_token_bitmask(1, self.V)

    def fill(self, matcher, mask):
        matcher.fill_next_token_bitmask(mask)

    def accept(self, matcher, token_id):
        return matcher.accept_token(token_id)

    def apply(self, logits, mask):
        self.lib.apply_token_bitmask_inplace(logits, mask)


class StrictgenEngine(_BackendApiEngine):
    name = "strictgen"

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        import strictgen as sg

        self.lib = sg
        self.apply_note = "strictgen.apply_token_bitmask_inplace on " + ("torch" if self.use_torch else "numpy") + " logits"

    def preprocess(self):
        info = self.vocab.build_info()
        info.trie  # noqa: B018  (built once per vocabulary, cached on the TokenizerInfo)
        return info

    def adopt(self, state) -> None:
        from strictgen.grammar.schema.dialects import import_lazy_modules

        self.state = state
        self._set_info(state)
        import_lazy_modules()  # untimed, as a server's start does (serve.grammars.warm_up)

    def new_compiler(self):
        return self.lib.GrammarCompiler(self.state)

    has_any_order = True

    def compile(self, compiler, case, any_order=None):
        if self.fmt == "json":
            g = compiler.compile_json()
        elif self.any_order if any_order is None else any_order:
            g = compiler.compile_json_schema(case.schema, any_order=True)
        else:
            g = compiler.compile_json_schema(case.schema)
        return g, self.lib.GrammarMatcher(g)

    def version(self) -> str:
        import strictgen

        return strictgen.__version__


@contextlib.contextmanager
def _capture_fd2():
    """Collect what C++ code writes to file descriptor 2 (xgrammar's warnings) instead of printing it."""
    out: list[str] = []
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield out
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.extend(tmp.read().decode("utf-8", "replace").splitlines())


def xgrammar_tokenizer_info(xgr, info):
    """xgrammar's TokenizerInfo over the same bytes strictgen uses. xgrammar takes a token whose
    bytes are empty as special (never text); stop tokens are passed explicitly."""
    eos = set(info.eos_token_ids)
    special = info.is_special
    vocab = [b"" if special[i] and i not in eos else tb for i, tb in enumerate(info.all_token_bytes)]
    return xgr.TokenizerInfo(encoded_vocab=vocab, vocab_type=xgr.VocabType.RAW, vocab_size=info.vocab_size,
                             stop_token_ids=list(info.eos_token_ids))


class XGrammarEngine(_BackendApiEngine):
    name = "xgrammar"

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        try:
            import torch  # noqa: F401  (xgrammar's bitmasks are torch tensors)
            import xgrammar
        except Exception as exc:  # ImportError, or a broken install
            raise EngineUnavailable(f"xgrammar is not importable: {type(exc).__name__}: {exc}") from exc
        self.lib = xgrammar
        self.use_torch = True
        self.apply_note = "xgrammar.apply_token_bitmask_inplace (CPU kernel) on torch logits"
        self.warnings: dict[str, int] = {}

    def preprocess(self):
        xinfo = xgrammar_tokenizer_info(self.lib, self.info)
        return xinfo, self.lib.GrammarCompiler(xinfo, max_threads=1)

    def new_compiler(self):
        return self.lib.GrammarCompiler(self.state[0], max_threads=1)

    has_any_order = True

    def compile(self, compiler, case, any_order=None):
        text = "{}" if self.fmt == "json" else case.schema_text
        g = compiler.compile_json_schema(text, strict_mode=False, any_order=self.any_order if any_order is None else any_order)
        return g, self.lib.GrammarMatcher(g)

    def quiet(self):
        return _capture_fd2()  # xgrammar logs its approximations to fd 2


class LLTokenizerSource:
    """What ``llguidance.TokenizerWrapper`` wants: token bytes, special ids, EOS, and an encoder."""

    def __init__(self, info, encode):
        self.eos_token_id = int(info.eos_token_ids[0])
        self.bos_token_id = None
        self.tokens = list(info.all_token_bytes)
        self.special_token_ids = list(info.special_token_ids)
        self._encode = encode

    def __call__(self, text):
        if isinstance(text, bytes):  # tells TokenizerWrapper to hand us str
            raise TypeError("str only")
        return self._encode(text)


class LLGuidanceEngine(Engine):
    name = "llguidance"

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        try:
            import llguidance
            import llguidance.numpy as llnp
        except Exception as exc:
            raise EngineUnavailable(f"llguidance is not importable: {type(exc).__name__}: {exc}") from exc
        self.llg, self.llnp = llguidance, llnp
        # llguidance.torch's apply is a torch.compile kernel (a C++ toolchain and seconds of JIT on CPU);
        # its numpy helper is the CPU path.
        self.use_torch = False
        self.apply_note = "llguidance.numpy.apply_token_bitmask_inplace on numpy logits"

    def preprocess(self):
        src = LLTokenizerSource(self.info, self.vocab.encode)
        return self.llg.LLTokenizer(self.llg.TokenizerWrapper(src), n_vocab=self.info.vocab_size,
                                    eos_token=list(self.info.eos_token_ids))

    def new_compiler(self):
        return {}  # llguidance has no compiler object; the JSON-schema-to-grammar text is cached here

    def compile(self, compiler, case, any_order=None):
        key = "{}" if self.fmt == "json" else case.schema_text
        grammar = compiler.get(key)
        if grammar is None:
            grammar = self.llg.LLMatcher.grammar_from_json_schema(key)
            compiler[key] = grammar
        m = self.llg.LLMatcher(self.state, grammar, log_level=0)
        if m.is_error():
            compiler.pop(key, None)
            raise ValueError(m.get_error())
        return grammar, m

    def matcher(self, artefact):
        return self.llg.LLMatcher(self.state, artefact, log_level=0)

    def alloc_mask(self):
        return self.llnp.allocate_token_bitmask(1, self.V)

    def fill(self, matcher, mask):
        self.llnp.fill_next_token_bitmask(matcher, mask)

    def accept(self, matcher, token_id):
        return matcher.consume_token(token_id) and not matcher.is_error()

    def apply(self, logits, mask):
        self.llnp.apply_token_bitmask_inplace(logits, mask)


ENGINE_CLASSES = {"strictgen": StrictgenEngine, "xgrammar": XGrammarEngine, "llguidance": LLGuidanceEngine}
