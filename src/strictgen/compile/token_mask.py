"""Token masks per machine state: which vocabulary tokens keep the output valid.

A mask is computed by walking the vocabulary trie together with the machine (a breadth-first
loop in C, `_walk.c`; never a Python loop over the vocabulary), with shortcuts that allow whole
classes of tokens in string-like states unseen, then cached per machine state: states are shared
by every matcher of the grammar, so each distinct state pays for its walk once. The cache is a C
store (`_mask_store.c`) that batch and draft fills copy rows out of without the GIL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from strictgen.lru import BoundedLRU
from strictgen.tokenizer.trie import VocabTrie, words_for

from . import _mask_bits, _mask_store, _walk, mask_memory
from .machine import DEAD, HorizonKeys, PushdownMachine

if TYPE_CHECKING:
    from .disk_masks import StoredMasks


# more suffixes than this are not worth a trie of their own (built once per loop kind): the state
# walks the vocabulary instead, reading what comes back to the loop unseen (`_live_loop_bits`)
MAX_SUFFIX_TOKENS = 20_000
CHAR_INSIDES_KEPT = 4096  # loop states whose character-level inside set (`_char_inside`) a masker keeps
ROOT_SETS_KEPT = 64  # (trie, first bytes) sets whose restricted walks' roots (`_roots_from`) a masker keeps
MIN_INSIDE_FRACTION = 0.2  # string-like shortcuts pay when at least this share of tokens is skipped
# a counted string's tokens outside its loop are one trie per loop up to this share of the
# vocabulary (a JSON string body's 4%: 2 ms to build), else one per set of entering first bytes
# (an identifier's 78%: 19 ms as one, ~2 ms as the few entering; scripts/trie_splits.py)
MAX_REST_FRACTION = 0.5


# the lead bytes of valid multi-byte UTF-8 characters (RFC 3629)
_UTF8_LEADS = np.zeros(256, dtype=bool)
_UTF8_LEADS[0xC2:0xF5] = True


class TokenMasker:
    """Caches the allowed-token bitmask of each machine state for one vocabulary."""

    def __init__(self, machine: PushdownMachine, trie: VocabTrie, vocab_size: int, eos_token_ids, max_cached: int = 4096,
                 markers: dict[int, bytes] | None = None, blocked: np.ndarray | None = None):
        self.machine = machine
        # special tokens that stand for their text (CompiledGrammar.marker_tokens): allowed where
        # the machine reads that text, so the horizon covers the longest of them too
        self.markers = sorted((markers or {}).items())
        longest = max((len(b) for _, b in self.markers), default=0)
        self.trie = trie
        self.vocab_size = vocab_size
        self.words = words_for(vocab_size)  # int32 words per mask
        self.eos = np.asarray(sorted(eos_token_ids), dtype=np.int64)
        self.max_cached = max_cached
        # by state, in C (batch and draft fills read it without the GIL); masks are all one size,
        # so the bound on entries bounds bytes
        self.store = _mask_store.MaskStore(self.words, max_cached)
        self._horizon = HorizonKeys(machine, max(trie.depth, longest) + 1)  # the most bytes a token reads
        # text tokens never allowed (special_tokens.py: those holding a stand-in's first byte)
        self.blocked = None
        if blocked is not None and len(blocked):
            self.blocked = np.zeros(self.words, dtype=np.int32)
            _mask_bits.set_bits(self.blocked, blocked)
            self.blocked = ~self.blocked
        self.eos_only = self._with_eos(np.zeros(self.words, dtype=np.int32))

    def _with_eos(self, packed: np.ndarray) -> np.ndarray:
        _mask_bits.set_bits(packed, self.eos)
        return packed

    def cached(self, state: int) -> np.ndarray | None:
        """The packed mask of `state` if it is cached, else None (nothing is computed). A peek:
        one read of the store, no aging (a caller that goes on to use the mask asks `mask`,
        which ages it, or ages the masks it used with `age`)."""
        return self.store.peek(state)

    def age(self, states) -> None:
        """Mark the cached masks of `states` recently used (what `mask` does on a hit), under one
        lock for all of them; states not cached are passed over.

        Only once the cache is half full: below that no entry is near eviction, and an entry read
        then and never again gets old the same way as one never read (at least half the bound of
        new masks come before eviction can reach either, and any read among them ages it), so
        a warm batch of a grammar with few states pays no lock and no aging at all. The store's
        eviction is CLOCK: aging sets a used bit that the next eviction sweep clears."""
        if 2 * len(self.store) >= self.max_cached:
            self.store.touch(list(set(states)))

    def horizon_key(self, state: int):
        """The key `state` shares its mask by: states with equal keys (no token tells them apart)
        have one mask, so a batch computes one of them and the others are hits. The state itself
        when no rule of the grammar merges states."""
        return self._horizon.key(state)

    def mask(self, state: int, key=None) -> np.ndarray:
        """The packed mask of `state` (read-only; shared). `key`: its `horizon_key` when the
        caller has it already (a batch fill groups its misses by key), else found here on a miss."""
        got = self.store.get(state)  # one read; a hit ages the entry
        if got is not None:
            return got
        # states that no token can tell apart (a long counted string, a token further on) share one
        if key is None:
            key = self._horizon.key(state)
        shared = self._shared if key != state else None
        got = shared.peek(key) if shared is not None else None
        if got is None and self.stored is not None:
            got = self.stored.find(state)  # a mask another process computed (disk_masks.py)
            if got is not None:
                got.setflags(write=False)  # shared by every matcher, and not ours to change
        if got is None:  # kept masks are read-only already (0.2 us a setflags call saved)
            got = mask_memory.keep(self._compute(state))  # the array holding these words already, if any
            self._horizon.sync()  # a rule this walk built is paid for here, not by the next mask
        self.store.put(state, got)
        if key != state:  # nothing more when no horizon key merges states
            if shared is None:
                shared = self._shared_masks()
            shared.put(key, got)
        return got

    def _shared_masks(self) -> BoundedLRU[np.ndarray]:
        """The masks by horizon key, made when a key first merges states: most grammars never
        do, and a BoundedLRU made in every `__init__` was ~18% of the masker's set-up. Two threads
        that race here may each make one; the loser's single entry is only computed again."""
        shared = self._shared
        if shared is None:
            shared = self._shared = BoundedLRU(self.max_cached)
        return shared

    # by horizon key (a frozenset, when a rule merges states): few, and read by Python only
    # (made on first use, `_shared_masks`)
    _shared: BoundedLRU[np.ndarray] | None = None

    def deferred_rules(self) -> list[int]:
        """The rules the compile deferred that are not built yet, nearest the root first (the
        compile's order, which is roughly the order a document enters them). Members of families
        are not among them: they are known only once a walk meets them."""
        machine = self.machine
        lazy = machine.automaton.lazy
        if lazy is None:
            return []
        return [r for r in range(len(machine.automaton.rules), len(lazy.names)) if r not in machine.added]

    def build_rule(self, index: int) -> None:
        """Build deferred rule `index` and the horizon classes its states' keys need, ahead of the
        first mask that enters it (runtime/prefetch.py): that mask then pays neither."""
        self.machine.build_rule(index)
        self._horizon.sync()

    def _live_tokens(self, state: int, trie: VocabTrie, first_bytes: np.ndarray | None = None) -> np.ndarray:
        """Ids of the tokens of `trie` whose bytes are valid from `state` (a sub-trie's ids are the
        vocabulary's; a suffix trie's are suffix indices).

        A breadth-first walk in C (`_walk.c`) that prunes a subtree as soon as its prefix is
        rejected; rows of the machine not computed yet are computed on the way. `first_bytes`
        (bool per byte value) restricts the walk to tokens starting with those bytes."""
        out = np.empty(len(trie.node_tokens), dtype=np.int64)
        return out[: _walk.walk(*self._walk_args(state, trie, first_bytes), out)]

    def _live_bits(self, state: int, trie: VocabTrie | None = None, first_bytes: np.ndarray | None = None, packed: np.ndarray | None = None) -> np.ndarray:
        """The same walk over a trie of vocabulary ids (the whole vocabulary by default), setting
        the valid tokens' bits in a packed mask (a blank one by default, `mask_memory.blank`):
        no id list, no bool vector, no packing."""
        if packed is None:
            packed = mask_memory.blank(self.words)
        trie = self.trie if trie is None else trie
        _walk.walk_bits(*self._walk_args(state, trie, first_bytes), packed)
        return packed

    def _live_loop_bits(self, state: int, first_bytes: np.ndarray | None, packed: np.ndarray, t: int, loop_key: bytes, multibyte: bool,
                        inside: np.ndarray | None = None) -> None:
        """`_live_bits` over the vocabulary for a walk that may reach t, which loops on the bytes
        `loop_key` (and, with `multibyte`, on every whole character): below a node reached in t,
        the tokens made of loop bytes stay on t and are set unseen, and only the others' rest is
        stepped (`_walk.walk_loop_bits`). A key's first letters of known names lead off t, and
        the tokens starting with them, nearly all of which come back to t a byte later ("n" of
        "name": "nx..." is any other key), cost a walk of thousands of nodes otherwise; a loop
        that leaves too many tokens for a trie of their suffixes is walked this way whole.
        `inside`: the packed tokens that stay on t (default: `packed_inside(loop_key, multibyte)`;
        `_char_inside` for a loop that takes all but a few characters, with `multibyte`)."""
        trie = self.trie
        lex_tokens, lex_bounds = trie.lex_order
        facts = trie.facts
        if inside is None:
            inside = trie.packed_inside(loop_key, multibyte)
        _walk.walk_loop_bits(*self._walk_args(state, trie, first_bytes), packed, t, loop_key, inside, lex_tokens, lex_bounds,
                             facts.flat, facts.starts, facts.lengths, multibyte)

    def _walk_args(self, state: int, trie: VocabTrie, first_bytes: np.ndarray | None) -> tuple:
        if first_bytes is None and trie is self.trie:  # most masks: the whole vocabulary, its arguments made once
            whole = self._whole_walk
            if whole is None:
                whole = self._whole_walk = (*self.machine.walk_source(), trie.walk_nodes, trie.node_byte, trie.node_tokens, trie.roots)
            return (*whole, state)
        roots = trie.roots if first_bytes is None or not trie.depth else self._roots_from(trie, first_bytes)
        return (*self.machine.walk_source(), trie.walk_nodes, trie.node_byte, trie.node_tokens, roots, state)

    # `_walk_args` of the whole vocabulary but the state (the machine's walk source and the trie's
    # arrays never change): ~1 us a mask less than building them again (made on first use)
    _whole_walk: tuple | None = None

    def _roots_from(self, trie: VocabTrie, first_bytes: np.ndarray) -> np.ndarray:
        """The depth-0 nodes of `trie` whose byte is in `first_bytes` (bool per byte value), where a
        restricted walk starts. Remembered per trie and set of bytes: a string state's walks ask
        the same few sets again and again, and the fancy indexing that finds them cost ~3 us a walk
        (a bytes key and a dict read: ~0.25 us)."""
        key = (trie, first_bytes.tobytes())
        memo = self._roots_memo
        if memo is None:
            memo = self._roots_memo = BoundedLRU(ROOT_SETS_KEPT)
        got = memo.peek(key)
        if got is None:
            got = trie.roots[first_bytes[trie.bytes[0]]]
            memo.put(key, got)
        return got

    # `_roots_from` by (trie, first bytes), as asked (made on first use)
    _roots_memo: BoundedLRU[np.ndarray] | None = None

    def _allowed(self, state: int) -> np.ndarray:
        """The packed mask of the tokens valid from `state`, with a shortcut for string-like states.

        Take a state t that many bytes lead to from here (first bytes B1) and that loops on a set
        B of bytes (inside a free string body, t is the body; inside a key that may be a known
        name or any other string, t is "some other key"). A token whose first byte is in B1 and
        whose other bytes are all in B stays on t: it is allowed without looking at it (one cached
        set per kind of string, `VocabTrie.loop_entries`). The rest is walked: tokens with another
        first byte from here, and, from t, only the distinct suffixes left after each token's run
        of loop bytes (`",`, `":`, `"}` end thousands of tokens). Where those are too many for a
        trie of them to pay for its build (a URI's `[^ "#%<>]` leaves 100k tokens, each holding a
        space or a quote), one walk of the vocabulary reads the subtrees that come back to t
        unseen instead, and needs nothing built per loop kind but its inside tokens. When t
        also loops on every non-ASCII character, tokens may enter t through one too: from t
        itself, or from a state whose every such character leads to t (a key's first character).
        Other states walk the whole trie."""
        machine, trie = self.machine, self.trie
        for t, width in machine.widest(state, 2):
            if width < _walk.PLAIN_WIDTH:  # no loop worth a shortcut (`_compute` took such a state in C already)
                break
            loop_key = machine.group(t, t)
            if len(loop_key) < 8:
                counted = self._counted_allowed(state, t)
                if counted is not None:
                    return counted
                continue
            multibyte = machine.utf8_target(t) == t  # a free string body loops on every character
            inside_count = trie.loop_inside_count(loop_key, multibyte)
            if inside_count < MIN_INSIDE_FRACTION * trie.num_text_tokens:
                continue  # too little to skip: the full walk is as good
            if trie.num_text_tokens - inside_count > MAX_SUFFIX_TOKENS:  # too many suffixes for a trie
                packed = mask_memory.blank(self.words)
                inside = None if multibyte else self._char_inside(t, loop_key)
                self._live_loop_bits(state, None, packed, t, loop_key, multibyte or inside is not None, inside)
                return packed
            skip_first = t != state
            # the suffixes as a trie (shared prefixes), built once per kind
            suffixes, owner, empty = trie.loop_suffixes(loop_key, multibyte, skip_first)
            first = machine.compute_row(state) == t
            if multibyte and t == state:
                first = first | _UTF8_LEADS  # tokens may start with a whole character too
            if skip_first:
                packed, _, by_char = self._entering(state, t, first, loop_key, multibyte, loops=True)
            else:  # from t itself a token with another first byte is its own suffix: walked below, from here
                packed, by_char = mask_memory.blank_copy(trie.loop_entries(loop_key, multibyte, first, False)), False
            # only what follows each token's run of loop bytes needs walking, from t; tokens with
            # nothing left after it (cached per kind) are allowed when they enter
            packed |= trie.loop_suffix_entries(loop_key, multibyte, skip_first, first, by_char, empty)
            _mask_bits.set_owned_bits(packed, self._live_tokens(t, suffixes), owner, trie.first_bytes, first if skip_first else None,
                                 trie.starts_whole_char if skip_first and by_char else None)
            return packed
        return self._live_bits(state)

    def _counted_allowed(self, state: int, t: int) -> np.ndarray | None:
        """The mask of a state before a counted string (`maxLength`), or None when t is not one.

        From t, the bytes B of t's widest byte group step along a chain c0 = t → c1 → ... → cL-1,
        after which every byte of B is dead (or the chain is longer than any token). When every
        multi-byte character also steps one place along it (JSON Schema counts characters), a
        token of B bytes and whole characters entering t from here is allowed exactly when it
        has at most L characters: such tokens are allowed unseen; the others (a quote, an escape,
        a cut character, another first byte) are walked."""
        machine, trie = self.machine, self.trie
        widest = machine.widest(t, 1)
        if not widest or widest[0][1] < 8:
            return None
        loop_key = machine.group(t, widest[0][0])
        chain = machine.chain(t, loop_key, trie.depth)
        if chain is None:
            return None
        length = len(chain) if len(chain) <= trie.depth else None  # None: longer than any token
        # multi-byte characters count one place each, for as many places as a token has characters
        places = min(len(chain), trie.max_multibyte_chars)
        multibyte = machine.utf8_chain(chain[:places]) == places - 1
        if multibyte and length is not None and length <= trie.max_multibyte_chars:
            multibyte = bool((machine.compute_row(chain[-1])[0xC2:0xF5] == DEAD).all())  # no character past the end
        inside_count = trie.loop_inside_count(loop_key, multibyte)
        if inside_count < MIN_INSIDE_FRACTION * trie.num_text_tokens:
            return None
        first = machine.compute_row(state) == t
        packed, walk_first, _ = self._entering(state, t, first, loop_key, multibyte, length)
        # the tokens outside the loop that enter t: all of them as one trie kept per loop when few,
        # else only those with the first bytes walked (a trie per set of them: a fraction to build)
        outside = trie.num_text_tokens - inside_count
        rest = trie.loop_rest(loop_key, multibyte, ~walk_first if outside > MAX_REST_FRACTION * trie.num_text_tokens else None)
        return self._live_bits(state, rest, ~walk_first, packed)

    def _char_inside(self, t: int, loop_key: bytes) -> np.ndarray | None:
        """For a state t that loops on its bytes `loop_key` and on most but not all whole
        characters (`[^:\\s]+`: a few Unicode spaces leave it, so `utf8_target` has no answer):
        the packed tokens that stay on t, made of loop bytes and whole characters that step t
        back to t (`VocabTrie.char_loop_inside`), or None when most characters leave t. Each of
        the vocabulary's distinct characters is stepped from t once (`_walk.char_targets`: ~3 row
        reads each; the answer remembered by t); the walk then reads the slices of the ~55k
        non-ASCII tokens that stay rather than stepping each of them node by node (a warm mask
        1.1 ms -> 0.25 ms on DeepSeek, 0.4 ms on Qwen)."""
        memo = self._char_insides
        if memo is None:
            memo = self._char_insides = BoundedLRU(CHAR_INSIDES_KEPT)
        got = memo.peek(t)  # (answer,): an answer of None is kept too
        if got is None:  # t's loop bytes are always `loop_key` (group(t, t)): the answer is t's
            leaving = self._leaving(t)
            got = (None if leaving is None else self.trie.char_loop_inside(loop_key, leaving),)
            memo.put(t, got)
        return got[0]

    def _leaving(self, t: int) -> np.ndarray | None:
        """The vocabulary's characters (`VocabTrie.char_table` indices) that do not step t back
        to t, or None when most of them leave (no shortcut then): already when most lead bytes
        are dead from t (`[a-z]+`), which costs one row read, not a step of every character."""
        if 2 * int((self.machine.compute_row(t)[0xC2:0xF5] != DEAD).sum()) <= 0xF5 - 0xC2:
            return None
        chars = self.trie.char_table[0]
        targets = np.empty(len(chars) // 4, dtype=np.int32)
        _walk.char_targets(*self.machine.walk_source(), t, chars, targets)
        leaving = np.flatnonzero(targets != t)
        return leaving if 2 * len(leaving) <= len(targets) else None

    # `_char_inside` by loop state, as asked (made on first use)
    _char_insides: BoundedLRU[tuple[np.ndarray | None]] | None = None

    def _entering(self, state: int, t: int, first: np.ndarray, loop_key: bytes, multibyte: bool, length: int | None = None, loops: bool = False):
        """What both string shortcuts share: the tokens that enter t from `state` and stay on its
        loop bytes (and whole characters, with `multibyte`), at most `length` characters long,
        allowed unseen; every token whose first byte does not enter t walked. From a key's first
        character on, whole characters enter t too (`by_char`): then only the tokens cut inside
        their first character are walked among those. `loops`: t loops on its bytes (not a
        counted string's chain), so the walk reads what comes back to t unseen too
        (`_live_loop_bits`). Returns (the packed mask so far, the first bytes walked, by_char)."""
        trie = self.trie
        by_char = multibyte and t != state and self.machine.utf8_target(state) == t
        walk_first = ~first & ~_UTF8_LEADS if by_char else ~first
        packed = mask_memory.blank_copy(trie.loop_entries(loop_key, multibyte, first, by_char))
        if length is not None:
            packed &= trie.at_most_chars(length)
        if by_char:
            self._live_bits(state, trie.split_lead_trie, None, packed)
        if loops:
            self._live_loop_bits(state, walk_first, packed, t, loop_key, multibyte)
        else:
            self._live_bits(state, trie, walk_first, packed)
        return packed, walk_first, by_char

    def _compute(self, state: int) -> np.ndarray:
        """The mask of `state`, written into a `mask_memory.blank` row for `mask_memory.keep`."""
        if state == DEAD:
            return mask_memory.blank(self.words)
        # the common case in one C call: a state no string shortcut takes, zeroed and walked whole,
        # its blocked tokens cleared and EOS set where it accepts (else the row goes back unused)
        packed = mask_memory.scratch(self.words)
        if _walk.plain_mask(*self._walk_args(state, self.trie, None), packed, self.blocked, self.eos):
            return self._with_markers(state, packed)
        mask_memory.give_back(packed)
        packed = self._allowed(state)
        if self.blocked is not None:
            packed &= self.blocked
        packed = self._with_markers(state, packed)
        return self._with_eos(packed) if self.machine.accepting[state] else packed

    def _with_markers(self, state: int, packed: np.ndarray) -> np.ndarray:
        """`packed` with the bits of the marker tokens whose text the machine reads from `state`."""
        if self.markers:
            step = self.machine.step_bytes
            live = [i for i, data in self.markers if step(state, data) != DEAD]
            if live:
                _mask_bits.set_bits(packed, np.asarray(live, dtype=np.int64))
        return packed

    # ---- masks kept across processes (compile/disk_masks.py names them by byte paths) ----

    def cached_states(self) -> list[int]:
        """The machine states whose masks are cached now (not the keys states share masks by)."""
        return self.store.states()

    def num_cached(self) -> int:
        """How many masks (and shared keys) are cached: how much a store of them would hold."""
        return len(self.store) + (len(self._shared) if self._shared is not None else 0)

    # the masks a disk cache holds for this grammar (disk_masks.StoredMasks), asked on a miss
    # before computing; set by StoredMasks.attach after a restart's load
    stored: "StoredMasks | None" = None
