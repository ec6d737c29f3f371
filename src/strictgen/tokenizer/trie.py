"""The vocabulary as a trie in flat numpy arrays, one set of arrays per depth.

Mask computation walks this trie breadth-first together with the grammar's automaton, a whole
depth at a time in numpy, pruning subtrees whose prefix is already rejected. Nodes of one depth
are stored in lexicographic order, so the children of a node are one contiguous slice of the next
depth: that is what lets numpy expand all live nodes' children at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np


class VocabTrie:
    def __init__(self, token_bytes: list[bytes], excluded: np.ndarray):
        """`excluded[i]` marks tokens never matched as text (special, padding, empty)."""
        self._token_bytes = token_bytes
        self._excluded = np.asarray(excluded, dtype=bool)
        self._byte_sets: np.ndarray | None = None
        self._splits: OrderedDict[bytes, tuple[np.ndarray, VocabTrie | None]] = OrderedDict()
        self._lock = threading.Lock()
        by_text: dict[bytes, list[int]] = {}
        for tid, data in enumerate(token_bytes):
            if data and not excluded[tid]:
                by_text.setdefault(data, []).append(tid)
        level_bytes: list[list[int]] = []
        level_parent: list[list[int]] = []
        path: list[int] = []
        prev = b""
        end_node: dict[bytes, int] = {}
        for text in sorted(by_text):
            common = 0
            limit = min(len(prev), len(text))
            while common < limit and prev[common] == text[common]:
                common += 1
            del path[common:]
            for depth in range(common, len(text)):
                if depth == len(level_bytes):
                    level_bytes.append([])
                    level_parent.append([])
                level_bytes[depth].append(text[depth])
                level_parent[depth].append(path[depth - 1] if depth else -1)
                path.append(len(level_bytes[depth]) - 1)
            end_node[text] = path[len(text) - 1]
            prev = text
        self.depth = len(level_bytes)
        self.bytes = [np.asarray(b, dtype=np.uint8) for b in level_bytes]
        self.parent = [np.asarray(p, dtype=np.int64) for p in level_parent]
        sizes = [len(b) for b in level_bytes]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.num_nodes = int(self.offsets[-1])
        # children of node i at depth d: positions child_start[d][i] : child_end[d][i] of depth d+1
        self.child_start: list[np.ndarray] = []
        self.child_end: list[np.ndarray] = []
        for d in range(self.depth - 1):
            ids = np.arange(sizes[d])
            self.child_start.append(np.searchsorted(self.parent[d + 1], ids, "left"))
            self.child_end.append(np.searchsorted(self.parent[d + 1], ids, "right"))
        # every token's end node as a flat index; excluded tokens point at an extra, never-live slot
        self.token_node = np.full(len(token_bytes), self.num_nodes, dtype=np.int64)
        for text, tids in by_text.items():
            self.token_node[tids] = self.offsets[len(text) - 1] + end_node[text]
        self.num_tokens = len(token_bytes)

    # ---- tokens made only of bytes a state loops on --------------------------------------------

    def byte_sets(self) -> np.ndarray:
        """(tokens, 4) uint64: the set of byte values each token uses, as a 256-bit set."""
        if self._byte_sets is None:
            lengths = np.fromiter((len(t) for t in self._token_bytes), dtype=np.int64, count=len(self._token_bytes))
            flat = np.frombuffer(b"".join(self._token_bytes), dtype=np.uint8).astype(np.int64)
            owner = np.repeat(np.arange(len(lengths)), lengths)
            sets = np.zeros((len(lengths), 4), dtype=np.uint64)
            for word in range(4):
                sel = (flat >> 6) == word
                np.bitwise_or.at(sets[:, word], owner[sel], np.left_shift(np.uint64(1), (flat[sel] & 63).astype(np.uint64)))
            self._byte_sets = sets
        return self._byte_sets

    def loop_split(self, loop_bytes: bytes, min_fraction: float = 0.2) -> tuple[np.ndarray, "VocabTrie | None"]:
        """For a state that loops on `loop_bytes`: (bool mask of the text tokens made only of those
        bytes, a trie of every other text token). Tokens of the first kind are allowed from such a
        state without looking at them; only the second trie needs walking. The trie is None when
        the first kind is under `min_fraction` of the vocabulary: then the full trie is as good.
        Cached per byte set."""
        with self._lock:
            got = self._splits.get(loop_bytes)
            if got is not None:
                self._splits.move_to_end(loop_bytes)
                return got
        want = np.zeros(4, dtype=np.uint64)
        for b in loop_bytes:
            want[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
        sets = self.byte_sets()
        inside = ~((sets & ~want) != 0).any(axis=1)
        inside &= ~self._excluded
        inside &= self.token_node < self.num_nodes  # empty tokens are not text
        rest = VocabTrie(self._token_bytes, self._excluded | inside) if inside.sum() >= min_fraction * len(inside) else None
        got = (inside, rest)
        with self._lock:
            self._splits[loop_bytes] = got
            while len(self._splits) > 32:
                self._splits.popitem(last=False)
        return got
