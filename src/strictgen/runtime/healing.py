"""Token healing: which tokens continue a backed-off boundary token.

Forced text (jump-forward, or a prompt) ends on a token the model did not choose. Where the
tokenizer would have merged that token with what follows (`"` + `_id` → `"_id`), the model, having
seen the boundary token, is pushed off the tokenizations it was trained on. Healing backs the
boundary token off and lets the model choose among the tokens that *begin with* its bytes (itself
included), so the model continues from its own tokenization. This module answers the vocabulary
question quickly: the tokens extending given bytes (a range of the byte-sorted vocabulary), and
which of them a mask row allows.
"""

from __future__ import annotations

import bisect
import threading
import weakref

import numpy as np

from strictgen.lru import BoundedLRU
from strictgen.tokenizer.info import TokenizerInfo

_TOP = b"\xff" * 256  # sorts after every token that starts with a given prefix
# the prefixes asked for come from prompts and outputs, so their answers are kept in an LRU
PREFIXES_KEPT, PREFIX_BYTES_KEPT = 4096, 1 << 26


class TokenPrefixes:
    """The text tokens of one vocabulary sorted by bytes, for prefix-range lookups."""

    def __init__(self, info: TokenizerInfo):
        tb = info.all_token_bytes
        special = info.is_special
        order = sorted((b, i) for i, b in enumerate(tb) if b and not special[i])
        self._keys = [b for b, _ in order]
        self._ids = np.fromiter((i for _, i in order), dtype=np.int64, count=len(order))
        self._cache: BoundedLRU[np.ndarray] = BoundedLRU(PREFIXES_KEPT, PREFIX_BYTES_KEPT, lambda ids: ids.nbytes)

    def extending(self, prefix: bytes) -> np.ndarray:
        """Ids of the tokens that start with `prefix` and are longer (read-only, cached)."""
        got = self._cache.get(prefix)
        if got is None:
            lo = bisect.bisect_right(self._keys, prefix)  # past the token equal to prefix
            hi = bisect.bisect_right(self._keys, prefix + _TOP, lo)
            got = np.sort(self._ids[lo:hi])
            got.flags.writeable = False
            self._cache.put(prefix, got)  # racing builders store equal arrays
        return got


def allowed_in(row: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The ids whose bit is set in the packed int32 mask row."""
    if not len(ids):
        return ids
    words = row.view(np.uint32)[ids >> 5]
    return ids[((words >> (ids & 31).astype(np.uint32)) & 1).astype(bool)]


def restrict_logits(logits: np.ndarray, ids: np.ndarray) -> None:
    """Keep only `ids` choosable in `logits` (in place; the others become -inf)."""
    keep = logits[ids].copy()
    logits.fill(-np.inf)
    logits[ids] = keep


_INDEX: "weakref.WeakKeyDictionary[TokenizerInfo, TokenPrefixes]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def token_prefixes(info: TokenizerInfo) -> TokenPrefixes:
    """The prefix index of a vocabulary, built once (a lookup takes no lock once built)."""
    index = _INDEX.get(info)
    if index is None:
        with _LOCK:  # one build per vocabulary even when requests start together
            index = _INDEX.get(info) or _INDEX.setdefault(info, TokenPrefixes(info))
    return index
