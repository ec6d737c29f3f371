"""The vocabulary as a trie in flat numpy arrays, nodes numbered depth by depth.

Mask computation walks this trie together with the grammar's automaton (breadth first, in C:
compile/_walk.c), pruning subtrees whose prefix is already rejected. Nodes of one depth are stored
in lexicographic order, so the children of a node are one contiguous slice of the next depth. The
arrays are built in C (`_vocab.c`), for the vocabulary and for its sub-tries (the tokens a state
does not loop on, the suffixes left after a loop) alike.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from strictgen.lru import BoundedLRU

from . import _loops, _vocab
from .token_facts import TokenFacts, typed_array


# how many splits of each kind a trie keeps (the LRU of `_cached`): packed masks are small (a bit
# per token) and every string of every grammar asks for one; suffix tries and sub-tries are large
_SPLITS_KEPT = {"entries": 1024, "empty": 1024, "chars": 256, "char_inside": 256}  # other kinds: 64
INSIDE_COUNTS_KEPT = 4096  # loops whose inside-token count a trie keeps (`loop_inside_count`)

# The loop nearly every JSON grammar meets: a string's body as the JSON Schema emitter writes it
# (every printable ASCII byte but `"` and `\`, and every whole non-ASCII character; an escape
# leaves it). Its splits depend on the vocabulary alone, so they are built with the vocabulary's
# other tables (`prepare_common_loops`) and stored with them (`arrays`), not in a first mask fill.
# Other loops (a format's, a pattern's) differ from schema to schema and stay built on first use.
JSON_STRING_BODY = bytes(b for b in range(0x20, 0x80) if b not in b'"\\')
COMMON_LOOPS = ((JSON_STRING_BODY, True),)  # (loop bytes, multibyte) as `loop_inside` takes them
_TRIE_ARRAYS = (("offsets", np.int64), ("node_byte", np.uint8), ("node_parent", np.int64), ("token_node", np.int64),
                ("node_tokens", np.int64), ("walk_nodes", np.int32))


def words_for(vocab_size: int) -> int:
    """int32 words in one token bitmask row."""
    return (vocab_size + 31) // 32


def pack_bits(allowed: np.ndarray, vocab_size: int) -> np.ndarray:
    """A bool vector (length ≥ vocab_size) as an int32 bitmask row: bit i of word i//32 is token i."""
    padded = np.zeros(words_for(vocab_size) * 32, dtype=bool)
    padded[:vocab_size] = allowed[:vocab_size]
    return np.packbits(padded, bitorder="little").view("<i4").astype(np.int32, copy=False)


def _entering_of(grouped: tuple[np.ndarray, ...], first: np.ndarray, by_char: bool) -> np.ndarray:
    """The packed set of `grouped` (`VocabTrie._grouped`) less the tokens whose first byte is not
    in `first` (bool per byte value), but, with `by_char`, those starting with a whole character:
    the tokens of the set that enter a loop (`VocabTrie.entering`), in one C pass over the groups
    left out (`_loops.drop_entries`)."""
    packed, order, starts, cut_ends, ends = grouped
    out = np.empty_like(packed)
    _loops.drop_entries(packed, order, starts, cut_ends if by_char else ends, np.ascontiguousarray(first, dtype=np.uint8), out)
    return out


def _char_width(data: bytes, i: int) -> int:
    """The length of the whole, valid multi-byte UTF-8 character at data[i], or 0 if none is there."""
    b = data[i]
    width = 2 if 0xC2 <= b <= 0xDF else 3 if 0xE0 <= b <= 0xEF else 4 if 0xF0 <= b <= 0xF4 else 0
    if not width:
        return 0
    try:
        return width if len(data[i : i + width].decode("utf-8")) == 1 else 0
    except UnicodeDecodeError:
        return 0


class VocabTrie:
    def __init__(self, token_bytes: list[bytes], excluded: np.ndarray, facts: TokenFacts | None = None):
        """`excluded[i]` marks tokens never matched as text (special, padding, empty). `facts`:
        the tokens' TokenFacts when made already (a vocabulary's, made with its trie so that no
        mask fill pays for them); a trie of loop suffixes makes its own only if asked."""
        self._token_bytes = token_bytes
        if facts is not None:
            self.__dict__["facts"] = facts  # its bytes laid end to end serve the trie too
            flat, starts, lengths = facts.flat, facts.starts, facts.lengths
        else:
            lengths = np.fromiter(map(len, token_bytes), dtype=np.int64, count=len(token_bytes))
            flat = np.frombuffer(b"".join(token_bytes), dtype=np.uint8)
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        excluded = np.asarray(excluded, dtype=bool)
        self._start(flat, starts, lengths, excluded, np.flatnonzero((lengths > 0) & ~excluded))

    @classmethod
    def of_slices(cls, flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> "VocabTrie":
        """The trie of the byte strings flat[starts[i] : starts[i] + lengths[i]] (token i; the
        empty ones are not in it), without making them into bytes objects unless asked."""
        out = object.__new__(cls)
        lengths = np.ascontiguousarray(lengths, dtype=np.int64)
        out._start(flat, np.ascontiguousarray(starts, dtype=np.int64), lengths, lengths == 0, np.flatnonzero(lengths > 0))
        return out

    def _start(self, flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray, excluded: np.ndarray, ids: np.ndarray | None) -> None:
        """What every trie holds (the tokens' bytes as slices of `flat`, empty caches) and the
        arrays of the trie of tokens `ids` (None: `from_arrays` sets them); __init__, of_slices,
        subtrie and from_arrays all end here."""
        self._excluded = excluded
        self._splits: dict[str, BoundedLRU] = {}  # per kind of split (key[0]): an LRU
        self._inside_counts: BoundedLRU[int] = BoundedLRU(INSIDE_COUNTS_KEPT)
        self._kept: dict[tuple, object] = {}  # the common loops' splits (COMMON_LOOPS), outside the LRUs
        self._lock = threading.Lock()
        self._flat, self._starts, self._lengths = flat, starts, lengths
        if ids is not None:
            self._adopt(ids)

    @functools.cached_property
    def _token_bytes(self) -> list[bytes]:
        """The tokens' bytes, made from the slices when the trie was built from them (of_slices)."""
        data = self._flat.tobytes()
        return [data[a : a + n] for a, n in zip(self._starts.tolist(), self._lengths.tolist())]

    @functools.cached_property
    def facts(self) -> TokenFacts:
        """Per-token facts of the vocabulary (token_facts.py; shared with sub-tries)."""
        return TokenFacts(self._token_bytes, self._lengths)

    def _adopt(self, ids: np.ndarray) -> None:
        """The arrays of the trie of tokens `ids`, built in C (`_vocab.trie`)."""
        sizes, node_byte, node_parent, token_node, walk, node_tokens = _vocab.trie(self._flat, self._starts, self._lengths, ids.astype(np.int64))
        offsets = np.concatenate([[0], np.cumsum(np.frombuffer(sizes, dtype=np.int64))]).astype(np.int64)
        self._set_tables(offsets, np.frombuffer(node_byte, dtype=np.uint8), np.frombuffer(node_parent, dtype=np.int64), np.frombuffer(token_node, dtype=np.int64),
                         np.frombuffer(node_tokens, dtype=np.int64), np.frombuffer(walk, dtype=np.int32))

    def _set_tables(self, offsets, node_byte, node_parent, token_node, node_tokens, walk_nodes) -> None:
        """The trie's arrays, from `_adopt`'s build or a stored copy (`from_arrays`)."""
        self.depth = len(offsets) - 1
        self.offsets = offsets
        self.num_nodes = int(self.offsets[-1])
        self.node_byte = node_byte  # by flat node id (offsets[d] + index within depth d)
        self._node_parent = node_parent
        self.roots = np.arange(offsets[1] if self.depth else 0, dtype=np.int64)  # the depth-0 nodes' flat ids
        # every token's end node as a flat id; tokens not in the trie point at an extra, never-live slot
        self.token_node = token_node
        self.num_tokens = len(self.token_node)
        self.node_tokens = node_tokens  # the text tokens grouped by end node
        self.num_text_tokens = len(self.node_tokens)
        # what the C walk reads of a node, side by side (one cache line, not four arrays): 4 int32
        # per flat node id, its children's flat ids [start, end) and its slice of node_tokens
        self.walk_nodes = walk_nodes

    @functools.cached_property
    def lex_order(self) -> tuple[np.ndarray, np.ndarray]:
        """(the text tokens in the lexicographic order of their bytes, int32; each node's subtree
        as a slice [lo, hi) of them, int32, 2 per flat node id). A walk that reaches a state
        looping on a set of bytes reads the tokens below that node from their slice instead of
        visiting its nodes (`TokenMasker._entering`). Built in C (`_vocab.lex_order`: two passes
        over the nodes, ~1 ms for a vocabulary), with the vocabulary (`prepare_common_loops`)."""
        tokens, bounds = _vocab.lex_order(self.walk_nodes, self.node_tokens, len(self.roots))
        return np.frombuffer(tokens, dtype=np.int32), np.frombuffer(bounds, dtype=np.int32)

    def _per_depth(self, flat: np.ndarray, shift: bool) -> list[np.ndarray]:
        """`flat` (by flat node id) cut into depths; with `shift`, node ids in it made local to
        the depth above (-1 stays -1)."""
        o = self.offsets.tolist()
        return [flat[o[d] : o[d + 1]] - (o[d - 1] if shift and d else 0) for d in range(self.depth)]

    @functools.cached_property
    def bytes(self) -> list[np.ndarray]:
        """Each depth's node bytes."""
        return self._per_depth(self.node_byte, False)

    @functools.cached_property
    def parent(self) -> list[np.ndarray]:
        """Each depth's node parents, as indices within the depth above (-1 at depth 0)."""
        return self._per_depth(self._node_parent, True)

    @functools.cached_property
    def child_start(self) -> list[np.ndarray]:
        """Children of node i at depth d: positions child_start[d][i] : child_end[d][i] of depth d + 1."""
        return self._children_bound(0)

    @functools.cached_property
    def child_end(self) -> list[np.ndarray]:
        return self._children_bound(1)

    def _children_bound(self, column: int) -> list[np.ndarray]:
        """Column 0 (first child) or 1 (past the last) of the walk records, per depth but the
        deepest, as positions within the depth below."""
        below = np.repeat(self.offsets[1:], np.diff(self.offsets))  # each node's depth-below offset
        return self._per_depth(self.walk_nodes.reshape(-1, 4)[:, column] - below, False)[:-1]

    def subtrie(self, keep: np.ndarray) -> "VocabTrie":
        """The trie of the tokens where `keep` is True (and already in this trie)."""
        out = object.__new__(VocabTrie)
        if "_token_bytes" in self.__dict__:  # else made from the same slices when asked
            out.__dict__["_token_bytes"] = self._token_bytes
        out.__dict__["facts"] = self.facts  # the same vocabulary: its facts are shared
        out._start(self._flat, self._starts, self._lengths, self._excluded | ~keep, np.flatnonzero(keep & (self.token_node < self.num_nodes)))
        return out

    @property
    def first_bytes(self) -> np.ndarray:
        """Each token's first byte (0 for empty tokens, which are never text)."""
        return self.facts.first_bytes

    @property
    def token_bytes(self) -> list[bytes]:
        """Every token's bytes, by token id (the whole vocabulary, also for a sub-trie)."""
        return self._token_bytes

    # ---- tokens made only of bytes a state loops on --------------------------------------------

    def byte_sets(self) -> np.ndarray:
        """(tokens, 4) uint64: the set of byte values each token uses, as a 256-bit set."""
        return self.facts.byte_sets

    @property
    def complete_utf8(self) -> np.ndarray:
        """Per token: its bytes are whole, valid UTF-8 characters."""
        return self.facts.complete_utf8

    @property
    def starts_whole_char(self) -> np.ndarray:
        """Per token: it starts with a whole, valid multi-byte UTF-8 character."""
        return self.facts.starts_whole_char

    @property
    def char_counts(self) -> np.ndarray:
        """Per token: its number of characters when it is whole UTF-8, else its length in bytes."""
        return self.facts.char_counts

    @functools.cached_property
    def max_multibyte_chars(self) -> int:
        """The most characters in a whole-UTF-8 token that has a non-ASCII character."""
        multibyte = self.complete_utf8 & (self.char_counts < self._lengths)
        return int(self.char_counts[multibyte].max()) if multibyte.any() else 0

    @functools.cached_property
    def split_lead_trie(self) -> "VocabTrie":
        """The tokens that start with a UTF-8 lead byte but not with a whole character (a byte
        fallback cut inside a character): the few that `starts_whole_char` shortcuts cannot cover."""
        lead = (self.first_bytes >= 0xC2) & (self.first_bytes <= 0xF4)
        return self.subtrie(lead & ~self.starts_whole_char)

    @functools.cached_property
    def char_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The vocabulary's distinct whole multi-byte characters: (their bytes, uint8, 4 per
        character, zero-padded; the tokens holding each, int32, character i's in
        [bounds[i], bounds[i + 1]); bounds, int64). Built in C (`_vocab.chars`, ~5 ms) with the
        vocabulary (`prepare_common_loops`): loops that take all but a few characters read it
        (`char_loop_inside`)."""
        facts = self.facts
        chars, by_char, bounds = _vocab.chars(facts.flat, facts.starts, facts.lengths, facts.char_width)
        return np.frombuffer(chars, dtype=np.uint8), np.frombuffer(by_char, dtype=np.int32), np.frombuffer(bounds, dtype=np.int64)

    def char_loop_inside(self, loop_bytes: bytes, leaving: np.ndarray) -> np.ndarray:
        """`packed_inside(loop_bytes, True)` for a state that loops on every whole character but
        `leaving` (indices into `char_table`): the tokens made of loop bytes and whole characters,
        less those holding a leaving one (packed, read-only, cached). `[^:\\s]+` loops on every
        character but a few Unicode spaces: its inside set is then ~all of the vocabulary's
        non-ASCII tokens, which a walk reads as slices (`TokenMasker._live_loop_bits`) rather than
        stepping them node by node."""

        def build() -> np.ndarray:
            _, by_char, bounds = self.char_table
            keep = self.loop_inside(loop_bytes, True).copy()
            starts, ends = bounds[leaving], bounds[leaving + 1]
            held = np.concatenate([by_char[a:b] for a, b in zip(starts.tolist(), ends.tolist())]) if len(leaving) else by_char[:0]
            keep[held] = False
            return pack_bits(keep, len(self._token_bytes))

        return self._cached(("char_inside", loop_bytes, np.asarray(leaving, dtype=np.int64).tobytes()), build)

    def loop_suffixes(self, loop_bytes: bytes, multibyte: bool, skip_first: bool) -> tuple["VocabTrie", np.ndarray, np.ndarray]:
        """For the tokens outside `loop_inside(loop_bytes, multibyte)`: what is left of each after
        its longest leading run of loop bytes (or, with `multibyte`, whole non-ASCII characters),
        the first byte (with `multibyte`, a whole first character) not counted when `skip_first`. From a state that loops on them, a token is
        valid exactly when that suffix is; suffixes repeat a lot (`",`, `":`, `"}` end thousands
        of tokens), so they are walked as a trie of their own. Returns (suffix trie, the
        token owning each suffix (the trie's "token" ids are suffix indices), the tokens whose
        suffix is empty, i.e. that end inside the loop)."""
        return self._cached(("suffixes", loop_bytes, multibyte, skip_first), lambda: self._loop_suffixes(loop_bytes, multibyte, skip_first))

    def _outside_cuts(self, loop_bytes: bytes, multibyte: bool, skip_first: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """The text tokens outside `loop_inside`, and where each one's run of loop bytes ends
        (`TokenFacts.loop_cuts`; None when that cannot be read off the bytes alone)."""
        inside = self.loop_inside(loop_bytes, multibyte)
        ids = np.flatnonzero(~inside & ~self._excluded & (self.token_node < self.num_nodes))
        return ids, self.facts.loop_cuts(ids, loop_bytes, multibyte, skip_first)

    def _loop_suffixes(self, loop_bytes: bytes, multibyte: bool, skip_first: bool):
        ids, cuts = self._outside_cuts(loop_bytes, multibyte, skip_first)
        if cuts is not None:  # read off the vocabulary's bytes in numpy; the suffixes stay slices of them
            facts = self.facts
            rest = facts.lengths[ids] - cuts
            return VocabTrie.of_slices(facts.flat, facts.starts[ids] + cuts, rest), ids.astype(np.int64), ids[rest == 0].astype(np.int64)
        looping = set(loop_bytes)
        suffixes = []
        owner: list[int] = []
        for tid in ids.tolist():
            data = self._token_bytes[tid]
            i = ((multibyte and _char_width(data, 0)) or 1) if skip_first else 0
            while i < len(data):
                if data[i] in looping:
                    i += 1
                    continue
                width = _char_width(data, i) if multibyte else 0
                if not width:
                    break
                i += width
            suffixes.append(data[i:])
            owner.append(tid)
        owners = np.asarray(owner, dtype=np.int64)
        empty = np.fromiter((not x for x in suffixes), dtype=bool, count=len(suffixes))
        return VocabTrie(suffixes, empty), owners, owners[empty]

    def loop_entries(self, loop_bytes: bytes, multibyte: bool, first: np.ndarray, by_char: bool) -> np.ndarray:
        """The tokens a string-like state allows without looking at them, as a packed bitmask
        (`pack_bits`; read-only, cached): made only of loop bytes (`loop_inside`), entering the
        loop by a first byte where `first` (bool per byte value) holds or, with `by_char`, by a
        whole first character. Every string of a kind shares one such set."""
        return self._cached(("entries", loop_bytes, multibyte, first.tobytes(), by_char),
                            lambda: _entering_of(self.inside_by_first_byte(loop_bytes, multibyte), first, by_char))

    def inside_by_first_byte(self, loop_bytes: bytes, multibyte: bool) -> tuple[np.ndarray, ...]:
        """What `loop_entries` takes away from, per loop kind: `loop_inside` packed, and its token
        ids grouped by first byte, in each group the ones cut inside their first character before
        those that start with a whole one: (packed, ids, group starts, ends of the cut ones, ends).
        Cached."""

        return self._cached(("by_first", loop_bytes, multibyte), lambda: self._by_first(loop_bytes, multibyte))

    def _by_first(self, loop_bytes: bytes, multibyte: bool) -> tuple[np.ndarray, ...]:
        return self._grouped(self.loop_inside(loop_bytes, multibyte), self.packed_inside(loop_bytes, multibyte))

    def _grouped(self, tokens: np.ndarray, packed: np.ndarray) -> tuple[np.ndarray, ...]:
        """`tokens` (bool per token; `packed`: the same set packed) grouped by first byte, as
        `inside_by_first_byte` gives them, for `_entering_of`."""
        # a counting sort in C on the key 2 * first byte + starts whole (`_loops.by_first`)
        ids, bounds = _loops.by_first(tokens, self.first_bytes, self.starts_whole_char)
        bounds = np.frombuffer(bounds, dtype=np.int64)
        out = (packed, np.frombuffer(ids, dtype=np.int64), bounds[0:512:2].copy(), bounds[1:512:2].copy(), bounds[2:513:2].copy())
        for a in out:
            a.setflags(write=False)
        return out

    def packed_inside(self, loop_bytes: bytes, multibyte: bool) -> np.ndarray:
        """`loop_inside` as a packed bitmask (read-only, cached; the first item of
        `inside_by_first_byte`): what a walk with the loop tests tokens against, which needs no
        grouping by first byte (~0.3 ms more per loop kind)."""
        kept = self._kept.get(("by_first", loop_bytes, multibyte))
        if kept is not None:
            return kept[0]
        return self._cached(("packed", loop_bytes, multibyte), lambda: pack_bits(self.loop_inside(loop_bytes, multibyte), len(self._token_bytes)))

    def entering(self, first: np.ndarray, by_char: bool, tokens: np.ndarray | None = None) -> np.ndarray:
        """Per token (of `tokens`, or of the vocabulary): it enters a loop by its first byte (where
        `first`, bool per byte value, holds) or, with `by_char`, by a whole first character."""
        enters = first[self.first_bytes if tokens is None else self.first_bytes[tokens]]
        if by_char:
            enters |= self.starts_whole_char if tokens is None else self.starts_whole_char[tokens]
        return enters

    def loop_suffix_entries(self, loop_bytes: bytes, multibyte: bool, skip_first: bool, first: np.ndarray, by_char: bool, empty: np.ndarray) -> np.ndarray:
        """The tokens `empty` whose suffix is empty (after their first character, they stay on
        the loop: the last item of `loop_suffixes`) and that enter it (`entering`), as a packed
        bitmask (read-only, cached): allowed
        unseen like `loop_entries`; only the others' suffixes are walked. Built as `loop_entries`
        is, from `empty` grouped by first byte once per loop kind: a new set of first bytes then
        costs the groups it leaves out (~77 µs a set in numpy before, 90 sets in the bench's
        first pass on DeepSeek)."""

        def grouped() -> tuple[np.ndarray, ...]:
            tokens = np.zeros(len(self._token_bytes), dtype=bool)
            tokens[empty] = True
            return self._grouped(tokens, pack_bits(tokens, len(self._token_bytes)))

        return self._cached(("empty", loop_bytes, multibyte, skip_first, first.tobytes(), by_char),
                            lambda: _entering_of(self._cached(("empty_by_first", loop_bytes, multibyte, skip_first), grouped), first, by_char))

    def at_most_chars(self, length: int) -> np.ndarray:
        """The packed bitmask of the tokens of at most `length` characters (`char_counts`; cached)."""
        return self._cached(("chars", length), lambda: pack_bits(self.char_counts <= length, len(self._token_bytes)))

    def loop_inside_count(self, loop_bytes: bytes, multibyte: bool = False) -> int:
        """How many tokens `loop_inside` holds: whether a shortcut pays is asked of many more
        states than take one, so the counts have their own cache (the masks' LRU churns)."""
        key = (loop_bytes, multibyte)
        got = self._inside_counts.peek(key)
        if got is None:
            got = int(np.count_nonzero(self.loop_inside(loop_bytes, multibyte)))
            self._inside_counts.put(key, got)
        return got

    def loop_inside(self, loop_bytes: bytes, multibyte: bool = False) -> np.ndarray:
        """For a state that loops on `loop_bytes` (and, with `multibyte`, on every non-ASCII
        character): the bool mask of the text tokens made only of those bytes or characters. Such
        tokens are allowed from the state without looking at them; the others are walked
        (`loop_suffixes`, `loop_rest`, or the whole trie). Cached per key."""
        return self._cached(("inside", loop_bytes, multibyte), lambda: self._loop_inside(loop_bytes, multibyte))

    def _loop_inside(self, loop_bytes: bytes, multibyte: bool) -> np.ndarray:
        # the loop bytes as a 256-bit set (bit b & 63 of word b >> 6), in one numpy pass: a
        # numpy scalar operation per byte was half of this function for a format's 80 bytes
        bits = np.zeros(256, dtype=bool)
        bits[np.frombuffer(loop_bytes, dtype=np.uint8)] = True
        want = np.packbits(bits, bitorder="little").view("<u8").astype(np.uint64)
        # with multibyte, whole characters: only the ASCII bytes (words 0 and 1) must be loop bytes
        made = _loops.made_of(self.byte_sets(), want, self.complete_utf8 if multibyte else None)
        inside = np.frombuffer(made, dtype=bool) & ~self._excluded
        inside &= self.token_node < self.num_nodes  # empty tokens are not text
        return inside

    def loop_rest(self, loop_bytes: bytes, multibyte: bool = False, first: np.ndarray | None = None) -> "VocabTrie":
        """The trie of the text tokens outside `loop_inside(loop_bytes, multibyte)`, only those
        whose first byte is in `first` (bool per byte value; None: all) when given (cached).
        Where most tokens are outside (an identifier's `[A-Za-z0-9_]` leaves 78% of Qwen's, most
        starting with a space), the tokens a state walks are the few that enter its loop: their
        trie is a tenth of the others' to build (~2 ms, not 19)."""
        if first is None:
            return self._cached(("rest", loop_bytes, multibyte), lambda: self.subtrie(~self.loop_inside(loop_bytes, multibyte)))
        first = np.asarray(first, dtype=bool)
        return self._cached(("rest", loop_bytes, multibyte, first.tobytes()),
                            lambda: self.subtrie(~self.loop_inside(loop_bytes, multibyte) & first[self.first_bytes]))

    def _cached(self, key, build):
        """The split `key` (an LRU per kind, key[0], shared by threads), built on a miss; arrays
        are made read-only, since every grammar shares them. Two threads missing at once both
        build, and the results are equal. The common loops' splits are kept apart, for good."""
        got = self._kept.get(key)
        if got is not None:
            return got
        with self._lock:
            lru = self._splits.get(key[0])
            if lru is None:
                lru = self._splits[key[0]] = BoundedLRU(_SPLITS_KEPT.get(key[0], 64))
        got = lru.get(key)
        if got is None:
            got = build()
            if isinstance(got, np.ndarray):
                got.setflags(write=False)
            lru.put(key, got)
        return got

    # ---- the loops every JSON grammar meets, built with the vocabulary ----------------------

    def prepare_common_loops(self) -> None:
        """Build the splits of COMMON_LOOPS that a mask fill would build on first use (the tokens
        inside the loop, grouped by first byte; the suffixes of the others, from the loop and
        from a state entering it; the trie of the others), and keep them for good. Called where
        the vocabulary's trie is built (TokenizerInfo.trie), so that no first request pays for
        them inside a fill (~4-5 ms on Qwen and DeepSeek)."""
        for loop_bytes, multibyte in COMMON_LOOPS:  # in this order: each build reads the ones before
            inside = self._loop_inside(loop_bytes, multibyte)
            inside.setflags(write=False)
            self._kept[("inside", loop_bytes, multibyte)] = inside
            self._kept[("by_first", loop_bytes, multibyte)] = self._by_first(loop_bytes, multibyte)
            for skip_first in (False, True):
                self._kept[("suffixes", loop_bytes, multibyte, skip_first)] = self._loop_suffixes(loop_bytes, multibyte, skip_first)
            self._kept[("rest", loop_bytes, multibyte)] = self.subtrie(~inside)  # a counted string's (maxLength)
        self._prepare_first_fill_tables()

    def _prepare_first_fill_tables(self) -> None:
        """Build now, with the vocabulary's other tables, what the first fills would build on
        first use: `lex_order` (~1-4 ms) and `char_table` (~5 ms), read by the first fill that
        walks a loop, and `max_multibyte_chars`, `split_lead_trie` and `bytes` (~1.5 ms together
        on Qwen and DeepSeek), read by the first counted string, the first key entered by a
        whole character and the first restricted walk. They are built again, not stored: as
        quick as reading them."""
        for name in ("lex_order", "char_table", "max_multibyte_chars", "split_lead_trie", "bytes"):
            if name not in self.__dict__:
                getattr(self, name)  # a cached_property keeps it in __dict__

    def _common_loop_arrays(self) -> dict[str, np.ndarray]:
        """The kept splits of `prepare_common_loops` as named arrays, under "loops.<i>." for
        COMMON_LOOPS[i]: those of a loop whose suffixes are slices of the vocabulary's bytes, but
        the trie of the tokens outside it (`_restore_common_loops` builds it again)."""
        out: dict[str, np.ndarray] = {}
        for i, (loop_bytes, multibyte) in enumerate(COMMON_LOOPS):
            splits = [self._kept.get(("suffixes", loop_bytes, multibyte, skip)) for skip in (False, True)]
            if any(got is None or got[0]._flat is not self._flat for got in splits):
                continue  # not prepared, or suffixes of their own bytes: built on first use
            at = f"loops.{i}."
            out[at + "inside"] = self._kept[("inside", loop_bytes, multibyte)]
            out.update((f"{at}by_first.{j}", a) for j, a in enumerate(self._kept[("by_first", loop_bytes, multibyte)]))
            for skip, (sub, owner, empty) in enumerate(splits):
                out.update((f"{at}suffixes.{skip}.{name}", a) for name, a in sub._tables().items())
                out.update(((f"{at}suffixes.{skip}.starts", sub._starts), (f"{at}suffixes.{skip}.lengths", sub._lengths),
                            (f"{at}suffixes.{skip}.owner", owner), (f"{at}suffixes.{skip}.empty", empty)))
        return out

    def _restore_common_loops(self, arrays: dict[str, np.ndarray]) -> None:
        """Keep the splits `_common_loop_arrays` gave (checked like the trie: the C walk and bit
        setters read them unchecked; ValueError). A loop not stored is built on first use."""
        n = len(self._lengths)

        def ids(name: str) -> np.ndarray:
            """Token ids of the vocabulary (int64)."""
            a = typed_array(arrays, name, np.int64)
            if len(a) and (a.min() < 0 or a.max() >= n):
                raise ValueError(f"{name}: an id out of range")
            return a

        for i, (loop_bytes, multibyte) in enumerate(COMMON_LOOPS):
            at = f"loops.{i}."
            if at + "inside" not in arrays:
                continue
            inside = typed_array(arrays, at + "inside", np.bool_)
            packed, order = typed_array(arrays, at + "by_first.0", np.int32), ids(at + "by_first.1")
            bounds = [typed_array(arrays, f"{at}by_first.{j}", np.int64) for j in (2, 3, 4)]
            if len(inside) != n or len(packed) != words_for(n) or any(len(b) != 256 for b in bounds):
                raise ValueError(f"{at}: splits of inconsistent sizes")
            starts, cut_ends, ends = bounds
            if (starts < 0).any() or (starts > cut_ends).any() or (cut_ends > ends).any() or (ends > len(order)).any():
                raise ValueError(f"{at}by_first: a group out of range")
            kept = {("inside", loop_bytes, multibyte): inside, ("by_first", loop_bytes, multibyte): (packed, order, *bounds)}
            # built again, not stored: its arrays span the vocabulary (1.6 MB for Qwen, as long to
            # read and checksum as to build, ~1 ms)
            kept[("rest", loop_bytes, multibyte)] = self.subtrie(~inside)
            for skip in (0, 1):
                name = f"{at}suffixes.{skip}."
                sub_starts, sub_lengths = typed_array(arrays, name + "starts", np.int64), typed_array(arrays, name + "lengths", np.int64)
                if len(sub_lengths) != len(sub_starts) or (len(sub_starts) and (sub_lengths.min() < 0 or sub_starts.min() < 0
                                                                                  or (sub_starts + sub_lengths).max() > len(self._flat))):
                    raise ValueError(f"{name}: a suffix out of range")
                sub = object.__new__(VocabTrie)
                sub._start(self._flat, sub_starts, sub_lengths, sub_lengths == 0, None)
                sub._set_tables(*_checked_tables({k[len(name):]: a for k, a in arrays.items() if k.startswith(name)}, len(sub_lengths)))
                owner = ids(name + "owner")
                if len(owner) != len(sub_lengths):
                    raise ValueError(f"{name}owner: of another size")
                kept[("suffixes", loop_bytes, multibyte, bool(skip))] = (sub, owner, ids(name + "empty"))
            self._kept.update(kept)

    # ---- a stored copy (compile/disk_cache.py keeps a vocabulary's tables across restarts) ----

    def _tables(self) -> dict[str, np.ndarray]:
        """The trie's own arrays (`_set_tables`), by name."""
        return {"offsets": self.offsets, "node_byte": self.node_byte, "node_parent": self._node_parent, "token_node": self.token_node,
                "node_tokens": self.node_tokens, "walk_nodes": self.walk_nodes}

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays this trie is made of, its facts' under "facts.", its common loops' splits
        under "loops.": what `from_arrays` takes back."""
        out = self._tables()
        out.update(("facts." + name, a) for name, a in self.facts.arrays().items())
        out.update(self._common_loop_arrays())
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], token_bytes: list[bytes], excluded: np.ndarray) -> "VocabTrie":
        """The vocabulary trie that `arrays()` gave for these `token_bytes` and `excluded` tokens
        (VocabTrie(token_bytes, excluded)), without building it. The arrays are checked for
        types, sizes and ranges, since the C walk reads them unchecked (ValueError); that they
        are this vocabulary's is the caller's key (a content hash of the vocabulary)."""
        facts = TokenFacts.from_arrays({k[6:]: a for k, a in arrays.items() if k.startswith("facts.")}, len(token_bytes))
        excluded = np.asarray(excluded, dtype=bool)
        if len(excluded) != len(token_bytes):
            raise ValueError("trie arrays of inconsistent sizes")
        tables = _checked_tables(arrays, len(token_bytes))
        out = object.__new__(cls)
        out.__dict__["_token_bytes"] = token_bytes
        out.__dict__["facts"] = facts
        out._start(facts.flat, facts.starts, facts.lengths, excluded, None)
        out._set_tables(*tables)
        out._restore_common_loops(arrays)
        out._prepare_first_fill_tables()
        return out


def _checked_tables(arrays: dict[str, np.ndarray], num_tokens: int) -> tuple[np.ndarray, ...]:
    """The arrays of `_set_tables` (by their `VocabTrie._tables` names) of a trie over `num_tokens`
    tokens, checked for types, sizes and ranges (ValueError), since the C walk reads them unchecked."""
    offsets, node_byte, node_parent, token_node, node_tokens, walk = (typed_array(arrays, name, dtype) for name, dtype in _TRIE_ARRAYS)
    nodes = int(offsets[-1]) if len(offsets) else -1
    if (len(offsets) < 1 or offsets[0] != 0 or (np.diff(offsets) < 0).any() or len(node_byte) != nodes or len(node_parent) != nodes
            or len(walk) != 4 * nodes or len(token_node) != num_tokens):
        raise ValueError("trie arrays of inconsistent sizes")
    text = len(node_tokens)
    if nodes and (node_parent.min() < -1 or node_parent.max() >= nodes):
        raise ValueError("a node parent out of range")
    if len(token_node) and (token_node.min() < 0 or token_node.max() > nodes):
        raise ValueError("a token's node out of range")
    if text and (node_tokens.min() < 0 or node_tokens.max() >= num_tokens):
        raise ValueError("a node's token out of range")
    highest = walk.reshape(-1, 4).max(axis=0) if nodes else None  # one pass: children's ids, then token slices
    if nodes and (walk.min() < 0 or highest[:2].max() > nodes or highest[2:].max() > text):
        raise ValueError("a walk record out of range")
    return offsets, node_byte, node_parent, token_node, node_tokens, walk

