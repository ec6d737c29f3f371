"""Special tokens a grammar names (`<|python_tag|>`, `<[128010]>`), bound to one vocabulary.

The machine reads bytes, and every byte can be text. A special token is read as a stand-in: the
byte 0xFF, which no UTF-8 text contains, then its id in three bytes. The token itself advances
the machine by its stand-in (as a marker token advances by its text, CompiledGrammar's
`marker_tokens`), so it is allowed exactly where the grammar names it. Text can never spell a
stand-in: in a grammar that has them, the text tokens holding a 0xFF byte (byte-fallback tokens)
are never allowed, and jump-forward stops before a stand-in (the token is the model's to emit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from strictgen.errors import GrammarSyntaxError
from strictgen.grammar.ir import Expr, Grammar, SpecialToken, alt, children, lit

if TYPE_CHECKING:
    from strictgen.tokenizer.info import TokenizerInfo

STAND_IN = 0xFF
"""The first byte of every stand-in: never part of UTF-8 text."""

MAX_IDS = 1 << 16
"""The most token ids one reference may name (`<[0-99999]>` is a mistake, not a grammar)."""


def stand_in(token_id: int) -> bytes:
    return bytes((STAND_IN,)) + token_id.to_bytes(3, "big")


def bind_special_tokens(grammar: Grammar, info: "TokenizerInfo") -> tuple[Grammar, dict[int, bytes]]:
    """`grammar` with its special-token references replaced by their stand-ins, and the stand-in
    of each token named (empty, and `grammar` itself, when it names none)."""
    if not grammar.special_tokens:
        return grammar, {}
    names = _special_names(info)
    eos_names = {info.token_bytes(i).decode("utf-8", "replace") for i in info.eos_token_ids if i < len(info.all_token_bytes)}
    used: dict[int, bytes] = {}
    done: dict[int, Expr] = {}

    def resolve(node: SpecialToken) -> Expr:
        ids = [names.get(node.name)] if node.name else _ids(node, info)
        if ids == [None]:
            if node.name in eos_names:
                raise GrammarSyntaxError(f"{node.name!r} is an end-of-sequence token: EOS is allowed exactly where the grammar can end")
            sample = ", ".join(sorted(names)[:8])
            raise GrammarSyntaxError(f"the vocabulary has no special token {node.name!r} (it has {len(names)}: {sample}, ...)")
        for i in ids:
            used[i] = stand_in(i)
        return alt(*(lit(used[i]) for i in ids))

    def walk(e: Expr) -> Expr:
        got = done.get(id(e))
        if got is not None:
            return got
        if isinstance(e, SpecialToken):
            out = resolve(e)
        elif children(e):
            kids = tuple(walk(c) for c in children(e))
            out = e if all(a is b for a, b in zip(kids, children(e))) else _rebuilt(e, kids)
        else:
            out = e
        done[id(e)] = out
        return out

    rules = {name: walk(body) for name, body in grammar.rules.items()}
    return Grammar(rules, grammar.root, grammar.markers), used


def text_tokens_with_stand_in_byte(info: "TokenizerInfo") -> np.ndarray:
    """Ids of the text tokens that contain byte 0xFF: never allowed beside stand-ins."""
    special = info.is_special
    return np.asarray([i for i, data in enumerate(info.all_token_bytes) if not special[i] and STAND_IN in data], dtype=np.int64)


def _rebuilt(e: Expr, kids: tuple[Expr, ...]) -> Expr:
    if hasattr(e, "items"):
        return type(e)(kids)
    if hasattr(e, "base"):
        return type(e)(*kids)
    return type(e)(kids[0], *(getattr(e, f) for f in e.__dataclass_fields__ if f != "item"))


def _special_names(info: "TokenizerInfo") -> dict[str, int]:
    """Special tokens by their text, EOS left out (EOS is allowed where the grammar can end)."""
    eos = set(info.eos_token_ids)
    out = {}
    for i in info.special_token_ids:
        if i < len(info.all_token_bytes) and i not in eos:
            data = info.token_bytes(i)
            if data:
                out.setdefault(data.decode("utf-8", "replace"), i)
    return out


def _ids(node: SpecialToken, info: "TokenizerInfo") -> list[int]:
    ids: list[int] = []
    for lo, hi in node.ids:
        if hi - lo + 1 + len(ids) > MAX_IDS:
            raise GrammarSyntaxError(f"a token reference may name at most {MAX_IDS} ids")
        ids.extend(range(lo, hi + 1))
    eos = set(info.eos_token_ids)
    for i in ids:
        if i >= info.vocab_size:
            raise GrammarSyntaxError(f"token id {i} is past the vocabulary ({info.vocab_size} tokens)")
        if i in eos:
            raise GrammarSyntaxError(f"token {i} is an end-of-sequence token: EOS is allowed exactly where the grammar can end")
        if not info.is_special[i]:
            raise GrammarSyntaxError(f"token {i} ({info.token_bytes(i)!r}) is not a special token: write its text instead")
    return ids
