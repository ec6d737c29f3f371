"""Finding and loading a model: the embedded default, a GGUF file or a Hugging Face folder."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from pathlib import Path

from strictgen.errors import ModelError

from .model import Model

RUNTIMES = ("auto", "llama.cpp", "transformers")


def has_llama_cpp() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def resolve_model_path(spec: str | Path = "default") -> Path:
    """The file or folder a --model value names ("default": the embedded SmolLM2 GGUF)."""
    if str(spec) == "default":
        from strictgen.tokenizer.info import smollm2_gguf_path

        try:
            return smollm2_gguf_path()
        except ModelError:
            raise
        except Exception as exc:  # StrictgenError naming the pip command
            raise ModelError(f"the embedded default model is missing: {exc}") from exc
    path = Path(spec).expanduser()
    if not path.exists():
        raise ModelError(f"no model at {path}: give a GGUF file, a Hugging Face model folder, or 'default'")
    if path.is_dir() and not (path / "config.json").is_file():
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return ggufs[0]
        raise ModelError(f"{path} has no config.json and {len(ggufs)} .gguf files: name the model file")
    return path


def choose_runtime(path: Path, runtime: str = "auto") -> str:
    if runtime not in RUNTIMES:
        raise ModelError(f"unknown runtime {runtime!r}; choose one of {', '.join(RUNTIMES)}")
    is_gguf = path.is_file() and path.suffix.lower() == ".gguf"
    if runtime == "llama.cpp":
        if not is_gguf:
            raise ModelError(f"llama.cpp needs a GGUF file, not {path}")
        if not has_llama_cpp():
            raise ModelError("llama-cpp-python is not installed: pip install 'strictgen[llama]' (builds from source)")
        return runtime
    if runtime == "transformers":
        return runtime
    return "llama.cpp" if is_gguf and has_llama_cpp() else "transformers"


class _Progress:
    """A line on stderr that shows loading is under way (dots while it lasts on a terminal)."""

    def __init__(self, what: str, enabled: bool):
        self.what = what
        self.enabled = enabled
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        self.t0 = time.perf_counter()
        if self.enabled:
            sys.stderr.write(f"loading {self.what} ")
            sys.stderr.flush()
            if sys.stderr.isatty():
                self._thread = threading.Thread(target=self._dots, daemon=True)
                self._thread.start()
        return self

    def _dots(self):
        while not self._stop.wait(0.5):
            sys.stderr.write(".")
            sys.stderr.flush()

    def __exit__(self, exc_type, exc, tb):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.enabled:
            status = "failed" if exc_type else f"done in {time.perf_counter() - self.t0:.1f} s"
            sys.stderr.write(f" {status}\n")
            sys.stderr.flush()
        return False


def load_model(
    spec: str | Path = "default",
    *,
    runtime: str = "auto",
    n_ctx: int = 4096,
    threads: int | None = None,
    progress: bool = False,
) -> Model:
    """Load a model: "default" (embedded SmolLM2-135M-Instruct), a GGUF file, or a Hugging Face folder.

    runtime "auto" takes llama.cpp for GGUF files when llama-cpp-python is installed, else transformers."""
    path = resolve_model_path(spec)
    chosen = choose_runtime(path, runtime)
    with _Progress(f"{path.name} ({chosen})", progress):
        if chosen == "llama.cpp":
            from .llama_cpp_runtime import LlamaCppModel

            return LlamaCppModel(path, n_ctx=n_ctx, threads=threads)
        from .transformers_runtime import TransformersModel

        return TransformersModel(path, threads=threads)
