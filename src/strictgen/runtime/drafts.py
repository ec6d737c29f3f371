"""Speculative decoding under a grammar: draft tokens checked and masked in one call.

An engine that decodes several draft tokens per step (EAGLE, n-gram, MTP) verifies them in one
forward pass of the target model, and needs, for every draft position, the mask the matcher
would give after the draft tokens before it: the target samples the token after each accepted
prefix from that row. The matcher never moves: it is where it was when a call returns.

A draft (`fill_draft_bitmasks`, `validate_tokens`, and the tree form) is walked in C with the GIL
released (`_mask_store.walk_draft`, `walk_tree`): each text token stepped over the machine's
computed rows, each row copied from the grammar's store of masks. Where C stops (a mask not stored
yet, a row not computed yet) Python computes it (the trie walk, itself C without the GIL) and C
goes on from there (an EOS is decided in C by the row before it, as `accept_token` decides it:
accepted where the grammar can end, nothing after it); where only the matcher can tell (a special
token, a uniqueItems tracker, a terminated matcher) the draft is walked with the matcher's own
`accept_token` and put back with `rollback`. Either way each row *is* the mask a fresh matcher
gives after accepting the same tokens. The cost per draft token is measured by
scripts/draft_cost.py.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Sequence

import numpy as np

from strictgen.compile import _mask_store
from strictgen.compile.machine import DEAD

if TYPE_CHECKING:
    from .matcher import GrammarMatcher

ENDED = -1  # GrammarMatcher.text_step's answer for an EOS the grammar accepts: the draft ends there


def _rows(bitmask) -> np.ndarray:
    """`bitmask` (numpy or CPU torch int32, 2-D) as a writable numpy view."""
    target = bitmask if isinstance(bitmask, np.ndarray) else bitmask.numpy()
    if target.ndim != 2:
        raise ValueError(f"draft masks need a 2-D bitmask (rows, words), not shape {tuple(target.shape)}")
    return target


def _write(target: np.ndarray, row: int, mask: np.ndarray) -> None:
    target[row, : len(mask)] = mask
    target[row, len(mask) :] = 0  # a wider row (a model vocabulary padded further) allows nothing past the grammar's


def validate_tokens(matcher: "GrammarMatcher", tokens: Sequence[int]) -> int:
    """How many leading tokens of `tokens` the grammar accepts from the matcher's state; the
    matcher does not move."""
    plain, ids = matcher.plain_row(), _draft_ids(tokens)
    if plain is None or ids is None:
        return _validate_by_matcher(matcher, tokens)
    state = plain[1]
    core, vocab = matcher.draft_source()
    pos = 0
    while True:
        status, pos, state = _mask_store.walk_draft(core, None, vocab, ids, pos, state, None, 0)
        if status != _mask_store.STEP:
            return pos
        after = matcher.text_step(state, int(ids[pos]))
        if after is None:
            return _validate_by_matcher(matcher, tokens)
        if after == DEAD:
            return pos
        if after == ENDED:  # an EOS the grammar accepts: nothing after it is
            return pos + 1
        pos, state = pos + 1, after


def _validate_by_matcher(matcher: "GrammarMatcher", tokens: Sequence[int]) -> int:
    kept = 0
    try:
        for tok in tokens:
            if not matcher.accept_token(int(tok)):
                break
            kept += 1
    finally:
        if kept:
            matcher.rollback(kept)
    return kept


def fill_draft_bitmasks(matcher: "GrammarMatcher", draft: Sequence[int], bitmask, start_row: int = 0) -> int:
    """Row start_row + k of `bitmask` := the mask after accepting draft[:k], for k = 0 .. len(draft)
    while the draft is accepted. Stops at the first token the grammar refuses (the row before it,
    which refuses it, is the last written). Returns the number of rows written: len(draft) + 1 for
    a draft accepted whole, else (accepted prefix) + 1. The matcher does not move."""
    target = _rows(bitmask)
    if start_row < 0 or start_row + len(draft) + 1 > target.shape[0]:
        raise ValueError(f"bitmask of {target.shape[0]} rows cannot hold {len(draft) + 1} draft rows from row {start_row}")
    plain, ids = matcher.plain_row(), _draft_ids(draft)
    if plain is None or ids is None or target.dtype != np.int32 or target.strides[1] != target.itemsize:
        return _fill_by_matcher(matcher, draft, target, start_row)
    masker, state = plain
    core, vocab = matcher.draft_source()
    pos = 0
    while True:
        status, pos, state = _mask_store.walk_draft(core, masker.store, vocab, ids, pos, state, target, start_row)
        if status == _mask_store.MISS:  # computed here (and stored), then the token after it stepped here
            _write(target, start_row + pos, masker.mask(state))
            if pos == len(ids):
                return pos + 1
        elif status != _mask_store.STEP:  # DONE or REFUSED: rows up to pos written
            return pos + 1
        after = matcher.text_step(state, int(ids[pos]))
        if after is None:
            return _fill_by_matcher(matcher, draft, target, start_row)
        if after == DEAD:
            return pos + 1
        if after == ENDED:  # an EOS the grammar accepts: the row after it is EOS only, and nothing after it is accepted
            _write(target, start_row + pos + 1, masker.eos_only)
            return pos + 2
        pos, state = pos + 1, after


def _draft_ids(draft: Sequence[int]) -> np.ndarray | None:
    """The draft as int64 ids for C, or None when it holds ids no int64 holds (refused by the matcher)."""
    try:
        return np.ascontiguousarray(draft, dtype=np.int64).reshape(-1)
    except OverflowError:
        return None


def walk_source(compiled) -> tuple:
    """(the C machine, the vocabulary as walk_draft reads it) for a compiled grammar."""
    info = compiled.tokenizer_info
    facts = info.trie.facts
    vocab = (facts.starts, facts.lengths, facts.flat, info.is_special, compiled.masker.eos, info.vocab_size, compiled.has_special_tokens)
    return compiled.machine.walk_source()[0], vocab


def _fill_by_matcher(matcher: "GrammarMatcher", draft: Sequence[int], target: np.ndarray, start_row: int) -> int:
    """fill_draft_bitmasks by the matcher's own accept_token and rollback (trackers, EOS, specials)."""
    masks = [matcher.next_token_mask()]  # shared read-only rows: written below in one copy
    try:
        for tok in draft:
            if not matcher.accept_token(int(tok)):
                break
            masks.append(matcher.next_token_mask())
    finally:
        if len(masks) > 1:
            matcher.rollback(len(masks) - 1)
    block = target[start_row : start_row + len(masks)]
    block[:, : len(masks[0])] = masks  # one numpy call for every row, not two per row
    block[:, len(masks[0]) :] = 0  # a wider row (a model vocabulary padded further) allows nothing past the grammar's
    return len(masks)


def fill_draft_tree_bitmasks(
    matcher: "GrammarMatcher",
    tokens: Sequence[int],
    first_child: Sequence[int],
    next_sibling: Sequence[int],
    bitmask,
    start_row: int = 0,
    time_budget: float | None = None,
) -> int:
    """Masks for a draft tree in the layout SGLang's EAGLE worker passes (`draft_tokens`,
    `retrieve_next_token`, `retrieve_next_sibling`): node 0 is the root, the token the target
    model chose last (already accepted: its token is not accepted again); first_child[i] and
    next_sibling[i] are node numbers or -1. Row start_row + i := the mask after accepting the
    tokens on the path from the root to node i (exact, as for a linear draft). A node whose token
    its parent's mask refuses keeps a row of zeros, and so does every node below it: the verifier
    never reaches them. A node after an EOS gets the EOS-only row of a terminated matcher (and a
second EOS below it a row of zeros: no matcher accepts it).

    `time_budget` (seconds; None: no limit) bounds the walk, as xgrammar's `time_threshold`: once
    it has run out, each node not yet visited is cut: its row stays zero and its token's bit is
    cleared in its parent's row, so the verifier can never step into a node without a mask (that
    parent's row is then a subset of the exact one: sound, not exact). A node that is the only
    token its parent allows is visited anyway, so no row is ever left empty by a cut. Returns the
    number of nodes given their mask, the root included. The matcher does not move."""
    target = _rows(bitmask)
    n = len(tokens)
    if not (len(first_child) == len(next_sibling) == n):
        raise ValueError(f"a draft tree needs as many first_child ({len(first_child)}) and next_sibling ({len(next_sibling)}) entries as tokens ({n})")
    if n == 0:
        return 0
    if start_row < 0 or start_row + n > target.shape[0]:
        raise ValueError(f"bitmask of {target.shape[0]} rows cannot hold a draft tree of {n} nodes from row {start_row}")
    rows = target[start_row : start_row + n]
    deadline = None if time_budget is None else time.perf_counter() + time_budget
    plain, arrays = matcher.plain_row(), _tree_arrays(tokens, first_child, next_sibling)
    if plain is not None and arrays is not None and target.dtype == np.int32 and target.strides[1] == target.itemsize:
        visited = _tree_in_c(matcher, plain, arrays, rows, deadline)
        if visited is not None:
            return visited
    return _tree_by_matcher(matcher, tokens, first_child, next_sibling, rows, deadline)


def _tree_arrays(tokens, first_child, next_sibling) -> tuple | None:
    """The tree as int64 arrays for C, or None when it holds ids no int64 holds."""
    try:
        return tuple(np.ascontiguousarray(a, dtype=np.int64).reshape(-1) for a in (tokens, first_child, next_sibling))
    except OverflowError:
        return None


def _tree_in_c(matcher: "GrammarMatcher", plain: tuple, arrays: tuple, rows: np.ndarray, deadline: float | None) -> int | None:
    """fill_draft_tree_bitmasks walked in C (`_mask_store.walk_tree`, GIL released), Python
    answering where it stops (a mask to compute, a token to step over rows not computed yet);
    None where only the matcher can tell (a special token): the caller walks the tree then."""
    masker, state = plain
    n = len(arrays[0])
    rows[:] = 0
    _write(rows, 0, masker.mask(state))
    node_state = np.zeros(n, dtype=np.int32)
    node_state[0] = state
    parent, stack = np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32)
    core, vocab = matcher.draft_source()
    depth, visited, resume, resume_row = -1, 1, -1, None
    while True:
        status, node, depth, added = _mask_store.walk_tree(core, masker.store, vocab, *arrays, rows, masker.eos_only, node_state, parent, stack,
                                                           depth, resume, resume_row, -1.0 if deadline is None else deadline)
        visited += added
        if status == _mask_store.DONE:
            return visited
        if status == _mask_store.MISS:
            resume = int(node_state[node])
            resume_row = masker.mask(resume)
            continue
        after = matcher.text_step(int(node_state[parent[node]]), int(arrays[0][node]))  # STEP
        if after is None or after == ENDED:  # (C decides EOS in a tree itself)
            return None
        resume, resume_row = after, None


def _tree_by_matcher(matcher: "GrammarMatcher", tokens, first_child, next_sibling, rows: np.ndarray, deadline: float | None) -> int:
    """fill_draft_tree_bitmasks by the matcher's own accept_token and rollback (trackers, specials)."""
    first = [int(c) for c in first_child]
    sibling = [int(s) for s in next_sibling]
    ids = [int(t) for t in tokens]
    rows[:] = 0
    _write(rows, 0, matcher.next_token_mask())
    visited = 1
    depth = 0  # tokens accepted beyond the root, rolled back on the way up
    work: list = [(c, 0) for c in reversed(_children(0, first, sibling))]  # (node, parent); None: go up
    try:
        while work:
            item = work.pop()
            if item is None:
                matcher.rollback(1)
                depth -= 1
                continue
            node, parent = item
            tok = ids[node]
            if not _has_bit(rows[parent], tok):
                continue  # refused: its row and its subtree's stay zero
            if deadline is not None and time.perf_counter() > deadline and not _only_allowed(rows[parent], tok):
                _clear_bit(rows[parent], tok)  # cut: the verifier cannot enter it
                continue
            if not matcher.accept_token(tok):
                continue  # EOS again after EOS: a terminated matcher's row allows it, yet it ends nothing more
            depth += 1
            visited += 1
            _write(rows, node, matcher.next_token_mask())
            work.append(None)
            work.extend((c, node) for c in reversed(_children(node, first, sibling)))
    finally:
        if depth:
            matcher.rollback(depth)
    return visited


def _children(node: int, first: list[int], sibling: list[int]) -> list[int]:
    """The children of `node`, in sibling order; a link that leaves the tree or loops is an error."""
    n = len(first)
    out = []
    child = first[node]
    while child != -1:
        if not 0 < child < n or len(out) >= n:
            raise ValueError(f"draft tree link {child} below node {node} is not a node of the tree (or loops)")
        out.append(child)
        child = sibling[child]
    return out


def _has_bit(row: np.ndarray, token: int) -> bool:
    word = token >> 5
    return 0 <= token and word < len(row) and bool((int(row[word]) >> (token & 31)) & 1)


def _clear_bit(row: np.ndarray, token: int) -> None:
    row.view(np.uint32)[token >> 5] &= np.uint32(~(1 << (token & 31)) & 0xFFFFFFFF)


def _only_allowed(row: np.ndarray, token: int) -> bool:
    """`token` is the one token `row` allows."""
    return int(row.view(np.uint32)[token >> 5]) == 1 << (token & 31) and np.count_nonzero(row) == 1


def forced_draft_tokens(matcher: "GrammarMatcher") -> list[int]:
    """The text the grammar forces next (find_jump_forward_bytes) as vocabulary tokens: a draft
    that needs no draft model. At each point the longest vocabulary token spelling the forced
    text on, that the matcher accepts. The last one is left out when a longer token would read
    on past the forced text (the model would spell the boundary with that one: `"` before a
    free key); where the forced text ends in a state that can only end, an EOS token closes the
    draft. The matcher does not move."""
    if matcher.is_terminated():
        return []
    forced = matcher.find_jump_forward_bytes()
    info = matcher.compiled.tokenizer_info
    row_of = matcher.compiled.machine.compute_row
    out: list[int] = []
    try:
        pos = 0
        longer = np.empty(0, dtype=np.uint8)  # the bytes longer tokens read after the last one
        while pos < len(forced):
            found = _longest_accepted(info.trie, forced, pos, matcher)
            if found is None:
                break
            tok, length, longer = found
            out.append(tok)
            pos += length
        if pos == len(forced) and out:
            row = row_of(matcher.state)
            if len(longer) and (row[longer] != DEAD).any():
                matcher.rollback(1)
                out.pop()
            elif matcher.can_end() and not row.any() and info.eos_token_ids:
                out.append(int(info.eos_token_ids[0]))  # nothing but the end is left (not accepted here)
    finally:
        accepted = len(out) - (1 if out and out[-1] in info.eos_token_ids else 0)
        if accepted:
            matcher.rollback(accepted)
    return out


def _longest_accepted(trie, data: bytes, pos: int, matcher: "GrammarMatcher"):
    """(token, its length, the bytes longer tokens read after it) of the longest vocabulary token
    spelling data[pos:...] that the matcher accepts (the matcher advances by it); None if none.
    Walks the trie down data's bytes: each node's children are a slice sorted by byte."""
    nodes = trie.walk_nodes.reshape(-1, 4)  # per flat node: children [start, end), tokens [start, end)
    node_byte = trie.node_byte
    path = []
    lo, hi = 0, len(trie.roots)
    for b in data[pos : pos + trie.depth]:
        i = lo + int(np.searchsorted(node_byte[lo:hi], b))
        if i >= hi or node_byte[i] != b:
            break
        path.append(i)
        lo, hi = int(nodes[i, 0]), int(nodes[i, 1])
    for length in range(len(path), 0, -1):
        node = path[length - 1]
        for tok in trie.node_tokens[nodes[node, 2] : nodes[node, 3]].tolist():
            if matcher.accept_token(tok):
                return tok, length, node_byte[nodes[node, 0] : nodes[node, 1]]
    return None
