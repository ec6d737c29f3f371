"""The vocabulary as a trie in flat numpy arrays, one set of arrays per depth.

Mask computation walks this trie breadth-first together with the grammar's automaton, a whole
depth at a time in numpy, pruning subtrees whose prefix is already rejected. Nodes of one depth
are stored in lexicographic order, so the children of a node are one contiguous slice of the next
depth: that is what lets numpy expand all live nodes' children at once.
"""

from __future__ import annotations

import numpy as np


class VocabTrie:
    def __init__(self, token_bytes: list[bytes], excluded: np.ndarray):
        """`excluded[i]` marks tokens never matched as text (special, padding, empty)."""
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
