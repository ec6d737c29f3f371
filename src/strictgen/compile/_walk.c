/* The vocabulary-trie walk of token_mask.py, as a loop in C.
 *
 * Why C: the walk visits each live trie node once and does one table lookup per child. In numpy
 * it had to go a whole depth at a time, and the ~20 array operations per depth cost more than the
 * work itself for the small frontiers of most grammar states (profiled: ~60% of first-pass mask
 * time). The machine's rows stay owned by the machine (`_machine.c`): a row not computed yet is
 * computed when the walk first needs it, so the determinisation stays lazy.
 *
 * walk(machine, resolve, nodes, node_byte, tokens, roots, state, out) -> n
 *   machine     the C machine (`_machine.Machine`): its rows are read in place, without the GIL,
 *               and a row not computed yet is computed through the machine's C API (the capsule
 *               `_machine._C_API`: no Python call, no copy of its tables)
 *   resolve     callable(rule) building a lazy rule the machine asks for (NeedRule), after which
 *               the walk goes on where it was; None: NeedRule is raised
 *   nodes       int32, 4 per flat node id (a flat array): its children's ids [start, end) and the
 *               slice [start, end) of `tokens` ending at it (one record: the walk reads a node at once)
 *   node_byte   uint8 [nodes]: the byte on the edge into each node
 *   tokens      int64: token ids grouped by end node
 *   roots       int64: the flat ids of the depth-0 nodes to start from
 *   state       the machine state before the token's first byte
 *   out         int64 [>= len(tokens)]: receives the ids of the tokens whose bytes the machine
 *               accepts from `state`; n of them are written
 * walk_bits(...) takes the same arguments but sets the tokens' bits in `out`, an int32 bitmask
 * (bit i of word i // 32 is token i, as token masks are packed), and returns how many it set;
 * the plain mask of a state needs no id list, no bool vector and no packing then.
 * The GIL is released while walking and taken back only for the callback.
 *
 * walk_loop_bits(..., out, loop_state, loop_bytes, inside, lex_tokens, lex_bounds, flat, starts, lengths, multibyte)
 *   walk_bits() for a walk that may reach a state looping on a set of bytes (a key's "any other
 *   name" once a known name's first letters are left behind): at a node reached in loop_state,
 *   its subtree's tokens (lex_tokens[lex_bounds[2n] : lex_bounds[2n + 1]], int32; the trie's
 *   `lex_order`) are read, not walked: those made of loop bytes (`inside`, an int32 bitmask like
 *   out; token_mask.py's loop_inside) stay on the loop and are set unseen, the others have the
 *   rest of their bytes (flat, starts, lengths: the vocabulary's, uint8/int64/int64) stepped from
 *   loop_state. Only at nodes entered by one of `loop_bytes` (the bytes loop_state loops on, a
 *   bytes object), below which tokens are mostly loop bytes; with `multibyte` (inside counts
 *   whole non-ASCII characters) at every node that ends on a character boundary instead, where
 *   such a token's rest is whole characters too.
 *
 * plain_mask(..., state, out, blocked, eos) -> bool: the whole first-time mask of a state no
 *   string shortcut takes, in one call (see plain_mask below).
 *
 * char_targets(machine, resolve, state, chars, out) -> None
 *   the state each of a vocabulary's distinct multi-byte characters leads to from `state` (DEAD
 *   where the machine rejects it): chars, uint8, 4 per character (its UTF-8 bytes, zero-padded;
 *   the first byte tells the width, `VocabTrie.char_table`); out, int32, one per character. A
 *   loop that takes all but a few characters (`[^:\s]+`: a few Unicode spaces leave it) has its
 *   inside set made of whole characters from this (`TokenMasker._char_inside`): ~3 row reads a
 *   character, and rows shared by characters with one lead byte are read from the cache.
 */
#include "_machine.h"

#define DEAD 0

static const MachineCAPI *machine_api; /* the machine's C API, imported with this module */

/* The machine whose rows a walk reads, and how it builds the lazy rules it meets. */
typedef struct {
    Machine *machine;
    PyObject *resolve;
} Rows;

/* Check a walk's machine, resolver and start state. */
static int rows_get(Rows *rows, PyObject *machine, PyObject *resolve, int state) {
    if (!PyObject_TypeCheck(machine, machine_api->type)) {
        PyErr_SetString(PyExc_TypeError, "the walk reads a strictgen.compile._machine.Machine");
        return -1;
    }
    if (resolve != Py_None && !PyCallable_Check(resolve)) {
        PyErr_SetString(PyExc_TypeError, "resolve must be callable or None");
        return -1;
    }
    rows->machine = (Machine *)machine;
    rows->resolve = resolve;
    if (state < 0 || state >= machine_api->num_states(rows->machine)) {
        PyErr_SetString(PyExc_ValueError, "state out of range");
        return -1;
    }
    return 0;
}

/* The row of `state` (a state of the machine), computed with the GIL taken back when needed.
 * Returns NULL with a Python error set when that failed. Called without the GIL. */
static const int32_t *row_of(Rows *rows, int32_t state, PyThreadState **saved) {
    const int32_t *row = computed_row(rows->machine, state);
    if (row)
        return row;
    PyEval_RestoreThread(*saved);
    row = machine_api->row(rows->machine, state, rows->resolve);
    *saved = PyEval_SaveThread();
    return row;
}

/* The arrays walk() reads (and the one it writes), in argument order after machine and resolve;
 * `nodes` is read as a flat array of 4 int32 per node. */
enum { NODES, NODE_BYTE, TOKENS, ROOTS, OUT, NUM_ARRAYS };
static const struct {
    const char *name;
    Py_ssize_t itemsize;
    int writable;
} ARRAYS[NUM_ARRAYS] = {
    {"nodes", 4, 0}, {"node_byte", 1, 0}, {"tokens", 8, 0}, {"roots", 8, 0}, {"out", 8, 1},
};

/* The frontiers of the breadth-first walk: (node, state) pairs of this depth and of the next.
 * They start small and double when full: most states' frontiers are a few nodes, and buffers
 * sized for the whole trie cost a fresh mapping (and its page faults) on every walk. */
typedef struct {
    int32_t *node[2];
    int32_t *state[2];
    uint32_t *tail[2]; /* the last four bytes of each node's prefix (at_char_boundary) */
    Py_ssize_t cap[2];
} Frontiers;

static void frontiers_free(Frontiers *f) {
    for (int i = 0; i < 2; i++) {
        free(f->node[i]);
        free(f->state[i]);
        free(f->tail[i]);
        f->node[i] = NULL;
        f->state[i] = NULL;
        f->tail[i] = NULL;
    }
}

/* Make room for `size` entries in frontier i, keeping its contents; 0, or -1 when out of memory. */
static int frontier_reserve(Frontiers *f, int i, Py_ssize_t size) {
    if (size <= f->cap[i])
        return 0;
    Py_ssize_t cap = f->cap[i] ? 2 * f->cap[i] : 1024;
    while (cap < size)
        cap *= 2;
    int32_t *node = (int32_t *)realloc(f->node[i], sizeof(int32_t) * (size_t)cap);
    if (node)
        f->node[i] = node;
    int32_t *state = (int32_t *)realloc(f->state[i], sizeof(int32_t) * (size_t)cap);
    if (state)
        f->state[i] = state;
    uint32_t *tail = (uint32_t *)realloc(f->tail[i], sizeof(uint32_t) * (size_t)cap);
    if (tail)
        f->tail[i] = tail;
    if (!node || !state || !tail)
        return -1;
    f->cap[i] = cap;
    return 0;
}

/* What walk_loop_bits adds: the loop state and the arrays its subtrees are read with. */
typedef struct {
    int32_t state;
    int multibyte;
    uint8_t is_loop[256]; /* the bytes the state loops on */
    const uint32_t *inside;
    const int32_t *lex, *bounds;
    const uint8_t *flat;
    const int64_t *starts, *lengths;
    Py_ssize_t num_inside, num_lex, num_flat, num_tokens;
} Loop;

/* Node `n`, `read` bytes deep, reached the loop state: set the bits of its subtree's tokens that
 * the machine accepts (those made of loop bytes unseen, the others' rest stepped from the loop
 * state); returns how many, -1 with a Python error set (a row that failed), or -2 (an array out
 * of range: the caller raises). Called without the GIL. */
static Py_ssize_t loop_subtree(Rows *rows, const Loop *loop, int32_t n, Py_ssize_t read, uint32_t *bits, uint64_t num_bits, PyThreadState **saved) {
    int32_t lo = loop->bounds[2 * (Py_ssize_t)n], hi = loop->bounds[2 * (Py_ssize_t)n + 1];
    if (lo < 0 || lo > hi || hi > loop->num_lex)
        return -2;
    Py_ssize_t found = 0;
    for (int32_t i = lo; i < hi; i++) {
        int32_t tok = loop->lex[i];
        if (tok < 0 || (uint64_t)tok >= num_bits || (Py_ssize_t)tok >= loop->num_inside || (Py_ssize_t)tok >= loop->num_tokens)
            return -2;
        uint32_t bit = (uint32_t)1 << (tok & 31);
        if (!(loop->inside[tok >> 5] & bit)) { /* not made of loop bytes: its rest, from the loop state */
            int64_t p = loop->starts[tok] + read, end = loop->starts[tok] + loop->lengths[tok];
            if (loop->starts[tok] < 0 || p > end || end > loop->num_flat)
                return -2;
            int32_t s = loop->state;
            for (; p < end && s != DEAD; p++) {
                const int32_t *row = row_of(rows, s, saved);
                if (!row)
                    return -1;
                s = row[loop->flat[p]];
            }
            if (s == DEAD)
                continue;
        }
        bits[tok >> 5] |= bit;
        found++;
    }
    return found;
}

/* Whether a node `read` bytes deep (read >= 1) ends on a character boundary: its prefix, whose
 * last four bytes are `tail` (the last in the low byte; the walk shifts each node's byte in),
 * does not stop inside a multi-byte character. Only there do the rests of tokens made of loop
 * bytes and whole characters stay on a loop that takes every character (a prefix that is not
 * UTF-8 has no such token below it, whatever this says). From the path, not read off the node's
 * first token (its slice, its bytes: four dependent loads that missed the cache, ~1/9 of a
 * string shortcut's mask). Called without the GIL. */
static int at_char_boundary(uint32_t tail, Py_ssize_t read) {
    Py_ssize_t last = read - 1; /* where the last character starts: at most 3 continuation bytes back */
    int back = 0;
    for (int k = 0; k < 3 && last > 0 && ((tail >> (8 * back)) & 0xC0) == 0x80; k++)
        last--, back++;
    uint8_t b = (uint8_t)(tail >> (8 * back));
    int width = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
    return last + width == read;
}

/* A node with at most this many children, in a state whose row is not computed, has its children's
 * bytes stepped (MachineCAPI.step) instead: most states a walk passes below the first byte are met
 * once, at one node, and need a few of their 256 targets (a row interns the target of every byte
 * class of the state). */
#define FEW_CHILDREN 8

/* What a level of the walk needs from the machine, found before the level is expanded and asked
 * under one take of the GIL: a row computed for each state that lacks one, or the targets of a
 * few children's bytes (FEW_CHILDREN), `step_at[i]` their offset in `targets` for entry i of the
 * level (else the entry reads its state's row). Taking the GIL back once per row cost a wait at
 * every row while another thread held it (a rule build ahead of a batch fill,
 * runtime/prefetch.py: each take waits up to a switch interval); once per level, a walk of depth
 * d waits at most d times. */
typedef struct {
    int32_t *step_at, *targets;
    Py_ssize_t cap, targets_cap;
} LevelAsks;
#define NEEDS_ROW -2 /* step_at: the entry's state needs its row computed (-1: nothing to ask) */

/* Whether entry (n, s) of a level, its prefix ending in `tail`, is read by the loop's subtree
 * reading, not expanded (see walk_levels). */
static int loop_reads(const Loop *loop, const uint8_t *node_byte, int32_t n, int32_t s, uint32_t tail, Py_ssize_t read) {
    if (!loop || s != loop->state)
        return 0;
    return loop->multibyte ? at_char_boundary(tail, read) : loop->is_loop[node_byte[n]];
}

/* Fill `asks` for the level of `width` entries (nodes, states) `read` bytes deep (not the first),
 * computing what it needs with the GIL taken back once if anything; 0, -1 with a Python error set,
 * or -3 out of memory. Entries the expansion will refuse (bad records) are left to it. Called
 * without the GIL. */
static int ask_level(Rows *rows, LevelAsks *asks, const int32_t *level_node, const int32_t *level_state, const uint32_t *level_tail, Py_ssize_t width,
                     const int32_t *nodes, const uint8_t *node_byte, Py_ssize_t num_nodes, const Loop *loop, Py_ssize_t read,
                     PyThreadState **saved) {
    if (width > asks->cap) {
        int32_t *grown = (int32_t *)realloc(asks->step_at, sizeof(int32_t) * (size_t)width);
        if (!grown)
            return -3;
        asks->step_at = grown;
        asks->cap = width;
    }
    Py_ssize_t used = 0, rows_missing = 0;
    for (Py_ssize_t i = 0; i < width; i++) {
        int32_t n = level_node[i], s = level_state[i];
        const int32_t *record = nodes + 4 * (Py_ssize_t)n;
        int32_t lo = record[0], hi = record[1];
        asks->step_at[i] = -1;
        if (lo >= hi || lo < 0 || hi > num_nodes || loop_reads(loop, node_byte, n, s, level_tail[i], read) != 0 || computed_row(rows->machine, s))
            continue;
        if (hi - lo > FEW_CHILDREN) {
            asks->step_at[i] = NEEDS_ROW;
            rows_missing = 1;
            continue;
        }
        if (used + FEW_CHILDREN > asks->targets_cap) {
            Py_ssize_t cap = asks->targets_cap ? 2 * asks->targets_cap : 64 * FEW_CHILDREN;
            int32_t *grown = (int32_t *)realloc(asks->targets, sizeof(int32_t) * (size_t)cap);
            if (!grown)
                return -3;
            asks->targets = grown;
            asks->targets_cap = cap;
        }
        asks->step_at[i] = (int32_t)used;
        used += hi - lo;
    }
    if (!used && !rows_missing)
        return 0;
    PyEval_RestoreThread(*saved);
    int failed = 0;
    for (Py_ssize_t i = 0; i < width && !failed; i++) {
        int32_t s = level_state[i];
        const int32_t *record = nodes + 4 * (Py_ssize_t)level_node[i];
        if (asks->step_at[i] >= 0)
            failed = machine_api->step(rows->machine, s, node_byte + record[0], record[1] - record[0], asks->targets + asks->step_at[i], rows->resolve) < 0;
        else if (asks->step_at[i] == NEEDS_ROW)
            failed = !machine_api->row(rows->machine, s, rows->resolve);
    }
    *saved = PyEval_SaveThread();
    return failed ? -1 : 0;
}

/* Walk from `state`: the tokens under every live node go to `out`; returns how many, or -1 with
 * a Python error set. `loop` (NULL: none) reads the subtrees of nodes reached in its state
 * (walk_loop_bits; as_bits only). Called with the GIL; releases it while walking. */
static Py_ssize_t walk_levels(Rows *rows, Py_buffer *views, int32_t state, int as_bits, const Loop *loop) {
    const int32_t *nodes = (const int32_t *)views[NODES].buf;
    const uint8_t *node_byte = (const uint8_t *)views[NODE_BYTE].buf;
    const int64_t *tokens = (const int64_t *)views[TOKENS].buf;
    const int64_t *roots = (const int64_t *)views[ROOTS].buf;
    int64_t *out = (int64_t *)views[OUT].buf;
    uint32_t *bits = (uint32_t *)views[OUT].buf;
    Py_ssize_t num_nodes = views[NODE_BYTE].shape[0], num_roots = views[ROOTS].shape[0], num_tokens = views[TOKENS].shape[0];
    uint64_t num_bits = (uint64_t)views[OUT].shape[0] * 32;
    if ((!as_bits && views[OUT].shape[0] < num_tokens) || views[NODES].len != 16 * num_nodes || num_nodes >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "array lengths do not match the trie");
        return -1;
    }
    for (Py_ssize_t r = 0; r < num_roots; r++)
        if (roots[r] < 0 || roots[r] >= num_nodes) {
            PyErr_SetString(PyExc_ValueError, "root node out of range");
            return -1;
        }
    /* breadth first, one depth at a time: the nodes of a depth are stored in order and children
     * are contiguous, so each level is read front to back (a depth-first order jumped between the
     * depth arrays and missed the cache on every step). The roots are the first level, expanded
     * from `state` like children. */
    Frontiers f = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {0, 0}};
    if (frontier_reserve(&f, 0, 1) < 0 || frontier_reserve(&f, 1, 1) < 0) {
        frontiers_free(&f);
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t found = 0, width = 1;
    int cur = 0, failed = 0, first_level = 1, out_of_range = 0, out_of_memory = 0, bad_trie = 0;
    f.node[cur][0] = -1; /* a virtual parent whose children are the roots */
    f.state[cur][0] = state;
    f.tail[cur][0] = 0;
    Py_ssize_t read = 0; /* the bytes read to reach this level's nodes */
    LevelAsks asks = {NULL, NULL, 0, 0};
    PyThreadState *saved = PyEval_SaveThread();
    while (width && !failed) {
        Py_ssize_t next_width = 0;
        if (!first_level) {
            int asked = ask_level(rows, &asks, f.node[cur], f.state[cur], f.tail[cur], width, nodes, node_byte, num_nodes, loop, read, &saved);
            if (asked < 0) {
                out_of_memory = asked == -3;
                failed = 1;
                break;
            }
        }
        for (Py_ssize_t i = 0; i < width && !failed; i++) {
            int32_t n = f.node[cur][i];
            int32_t s = f.state[cur][i];
            uint32_t tail = f.tail[cur][i];
            Py_ssize_t lo = 0, hi = num_roots;
            if (loop && !first_level && s == loop->state) {
                /* only where the tokens below are mostly loop bytes: after a loop byte (after a
                 * non-ASCII byte of a loop that does not take every character, the tokens below
                 * are mostly more such characters, which the walk steps once per shared prefix),
                 * or on any character boundary of a loop that takes every character */
                int boundary = loop_reads(loop, node_byte, n, s, tail, read);
                Py_ssize_t got = boundary ? loop_subtree(rows, loop, n, read, bits, num_bits, &saved) : 0;
                if (got < 0) {
                    bad_trie = got == -2;
                    failed = 1;
                    break;
                }
                found += got;
                if (boundary)
                    continue;
            }
            if (!first_level) {
                const int32_t *record = nodes + 4 * (Py_ssize_t)n;
                lo = record[0], hi = record[1];
                Py_ssize_t k = record[2], end = record[3];
                if (k < 0 || end > num_tokens || (lo < hi && (lo < 0 || hi > num_nodes))) {
                    bad_trie = failed = 1;
                    break;
                }
                for (; k < end; k++, found++) {
                    if (!as_bits)
                        out[found] = tokens[k];
                    else if ((uint64_t)tokens[k] < num_bits)
                        bits[tokens[k] >> 5] |= (uint32_t)1 << (tokens[k] & 31);
                    else
                        out_of_range = 1;
                }
            }
            if (lo >= hi)
                continue; /* a leaf: its state's row is not needed */
            if (frontier_reserve(&f, 1 - cur, next_width + (hi - lo)) < 0) {
                out_of_memory = failed = 1;
                break;
            }
            int32_t *next_node = f.node[1 - cur];
            int32_t *next_state = f.state[1 - cur];
            uint32_t *next_tail = f.tail[1 - cur];
            if (!first_level && asks.step_at[i] >= 0) { /* a few children: their bytes stepped, maybe no row */
                const int32_t *targets = asks.targets + asks.step_at[i];
                for (Py_ssize_t j = lo; j < hi; j++)
                    if (targets[j - lo] != DEAD) {
                        next_node[next_width] = (int32_t)j;
                        next_tail[next_width] = tail << 8 | node_byte[j];
                        next_state[next_width++] = targets[j - lo];
                    }
                continue;
            }
            const int32_t *row = row_of(rows, s, &saved); /* computed by ask_level but at the first level */
            if (!row) {
                failed = 1;
                break;
            }
            for (Py_ssize_t j = lo; j < hi; j++) {
                int32_t c = (int32_t)(first_level ? roots[j] : j);
                int32_t t = row[node_byte[c]];
                if (t != DEAD) {
                    next_node[next_width] = c;
                    next_tail[next_width] = tail << 8 | node_byte[c];
                    next_state[next_width++] = t;
                }
            }
        }
        cur = 1 - cur;
        width = next_width;
        first_level = 0;
        read++;
    }
    PyEval_RestoreThread(saved);
    frontiers_free(&f);
    free(asks.step_at);
    free(asks.targets);
    if (out_of_memory)
        PyErr_NoMemory();
    if (bad_trie)
        PyErr_SetString(PyExc_ValueError, "a trie node points outside the trie");
    if (out_of_range && !failed) {
        PyErr_SetString(PyExc_ValueError, "a token id does not fit in the bitmask");
        failed = 1;
    }
    return failed ? -1 : found;
}

/* The arrays walk_loop_bits reads after walk_bits' (Loop's), in argument order. */
enum { INSIDE, LEX, LEX_BOUNDS, FLAT, STARTS, LENGTHS, NUM_LOOP_ARRAYS };
static const struct {
    const char *name;
    Py_ssize_t itemsize;
} LOOP_ARRAYS[NUM_LOOP_ARRAYS] = {
    {"inside", 4}, {"lex_tokens", 4}, {"lex_bounds", 4}, {"flat", 1}, {"starts", 8}, {"lengths", 8},
};

static PyObject *walk_into(PyObject *args, int as_bits, int with_loop) {
    PyObject *machine, *resolve, *objs[NUM_ARRAYS], *loop_objs[NUM_LOOP_ARRAYS];
    int state, loop_state = 0, multibyte = 0;
    const char *loop_bytes = NULL;
    Py_ssize_t num_loop_bytes = 0;
    if (with_loop ? !PyArg_ParseTuple(args, "OOOOOOiOiy#OOOOOOp", &machine, &resolve, &objs[NODES], &objs[NODE_BYTE], &objs[TOKENS], &objs[ROOTS],
                                      &state, &objs[OUT], &loop_state, &loop_bytes, &num_loop_bytes, &loop_objs[INSIDE], &loop_objs[LEX],
                                      &loop_objs[LEX_BOUNDS], &loop_objs[FLAT], &loop_objs[STARTS], &loop_objs[LENGTHS], &multibyte)
                  : !PyArg_ParseTuple(args, "OOOOOOiO", &machine, &resolve, &objs[NODES], &objs[NODE_BYTE], &objs[TOKENS], &objs[ROOTS],
                                      &state, &objs[OUT]))
        return NULL;
    Rows rows;
    if (rows_get(&rows, machine, resolve, state) < 0)
        return NULL;
    if (with_loop && (loop_state <= DEAD || loop_state >= machine_api->num_states(rows.machine))) {
        PyErr_SetString(PyExc_ValueError, "loop state out of range");
        return NULL;
    }
    Py_buffer views[NUM_ARRAYS], loop_views[NUM_LOOP_ARRAYS];
    int got = 0, loop_got = 0;
    Py_ssize_t found = -1;
    while (got < NUM_ARRAYS && buffer_of(objs[got], &views[got], got == OUT && as_bits ? 4 : ARRAYS[got].itemsize,
                                         ARRAYS[got].writable, ARRAYS[got].name) == 0)
        got++;
    while (with_loop && got == NUM_ARRAYS && loop_got < NUM_LOOP_ARRAYS &&
           buffer_of(loop_objs[loop_got], &loop_views[loop_got], LOOP_ARRAYS[loop_got].itemsize, 0, LOOP_ARRAYS[loop_got].name) == 0)
        loop_got++;
    if (got == NUM_ARRAYS && !with_loop) {
        found = walk_levels(&rows, views, (int32_t)state, as_bits, NULL);
    } else if (loop_got == NUM_LOOP_ARRAYS) {
        Loop loop = {(int32_t)loop_state, multibyte, {0}, (const uint32_t *)loop_views[INSIDE].buf, (const int32_t *)loop_views[LEX].buf,
                     (const int32_t *)loop_views[LEX_BOUNDS].buf, (const uint8_t *)loop_views[FLAT].buf, (const int64_t *)loop_views[STARTS].buf,
                     (const int64_t *)loop_views[LENGTHS].buf, loop_views[INSIDE].shape[0] * 32, loop_views[LEX].shape[0],
                     loop_views[FLAT].shape[0], loop_views[STARTS].shape[0]};
        for (Py_ssize_t i = 0; i < num_loop_bytes; i++)
            loop.is_loop[(uint8_t)loop_bytes[i]] = 1;
        if (loop_views[LEX_BOUNDS].shape[0] != 2 * views[NODE_BYTE].shape[0] || loop_views[LENGTHS].shape[0] != loop.num_tokens)
            PyErr_SetString(PyExc_ValueError, "walk_loop_bits: lex_bounds or lengths do not match the trie");
        else
            found = walk_levels(&rows, views, (int32_t)state, as_bits, &loop);
    }
    while (loop_got)
        PyBuffer_Release(&loop_views[--loop_got]);
    while (got)
        PyBuffer_Release(&views[--got]);
    return found < 0 ? NULL : PyLong_FromSsize_t(found);
}

/* char_targets(machine, resolve, state, chars, out): see the top comment. */
static PyObject *char_targets(PyObject *self, PyObject *args) {
    PyObject *machine, *resolve, *chars_obj, *out_obj;
    int state;
    if (!PyArg_ParseTuple(args, "OOiOO", &machine, &resolve, &state, &chars_obj, &out_obj))
        return NULL;
    Rows rows;
    if (rows_get(&rows, machine, resolve, state) < 0)
        return NULL;
    Py_buffer chars, out;
    if (buffer_of(chars_obj, &chars, 1, 0, "chars") < 0)
        return NULL;
    if (buffer_of(out_obj, &out, 4, 1, "out") < 0) {
        PyBuffer_Release(&chars);
        return NULL;
    }
    Py_ssize_t n = out.shape[0];
    int failed = 0;
    if (chars.shape[0] != 4 * n) {
        PyErr_SetString(PyExc_ValueError, "char_targets: chars needs 4 bytes per character of out");
        failed = 1;
    }
    const uint8_t *c = (const uint8_t *)chars.buf;
    int32_t *target = (int32_t *)out.buf;
    PyThreadState *saved = PyEval_SaveThread();
    for (Py_ssize_t i = 0; i < n && !failed; i++, c += 4) {
        int width = c[0] >= 0xF0 ? 4 : c[0] >= 0xE0 ? 3 : c[0] >= 0xC0 ? 2 : 1;
        int32_t s = (int32_t)state;
        for (int k = 0; k < width && s != DEAD; k++) {
            const int32_t *row = row_of(&rows, s, &saved);
            if (!row) {
                failed = 1;
                break;
            }
            s = row[c[k]];
        }
        target[i] = s;
    }
    PyEval_RestoreThread(saved);
    PyBuffer_Release(&chars);
    PyBuffer_Release(&out);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

/* plain_mask(machine, resolve, nodes, node_byte, tokens, roots, state, out, blocked, eos) -> bool
 * The first-time mask of a state that no string shortcut takes (TokenMasker._allowed walks a
 * state whole when no target of its row takes PLAIN_WIDTH bytes or more): out (an int32 bitmask)
 * zeroed, walked into, ANDed with `blocked` (int32 bitmask of the tokens ever allowed, or None)
 * and given the bits of `eos` (int64 ids) when the state accepts; True. False, out untouched,
 * for a state with a wider target (Python tries the shortcuts). Why: the plain path was ~6 calls
 * with Python between them (~12% of a first pass, profiled); now one. */
#define PLAIN_WIDTH 8
static PyObject *plain_mask(PyObject *self, PyObject *args) {
    PyObject *machine, *resolve, *objs[NUM_ARRAYS], *blocked_obj, *eos_obj;
    int state;
    if (!PyArg_ParseTuple(args, "OOOOOOiOOO", &machine, &resolve, &objs[NODES], &objs[NODE_BYTE], &objs[TOKENS], &objs[ROOTS], &state,
                          &objs[OUT], &blocked_obj, &eos_obj))
        return NULL;
    Rows rows;
    if (rows_get(&rows, machine, resolve, state) < 0)
        return NULL;
    const int32_t *row = machine_api->row(rows.machine, state, resolve);
    if (!row)
        return NULL;
    int32_t targets[256];
    int counts[256], n = 0;
    for (int b = 0; b < 256; b++) {
        if (row[b] == DEAD)
            continue;
        int j = 0;
        while (j < n && targets[j] != row[b])
            j++;
        if (j == n)
            targets[n] = row[b], counts[n++] = 0;
        if (++counts[j] >= PLAIN_WIDTH)
            Py_RETURN_FALSE;
    }
    Py_buffer views[NUM_ARRAYS], blocked = {0}, eos = {0};
    int got = 0, ok = 0;
    while (got < NUM_ARRAYS && buffer_of(objs[got], &views[got], got == OUT ? 4 : ARRAYS[got].itemsize, ARRAYS[got].writable, ARRAYS[got].name) == 0)
        got++;
    int have_blocked = got == NUM_ARRAYS && blocked_obj != Py_None && buffer_of(blocked_obj, &blocked, 4, 0, "blocked") == 0;
    int have_eos = got == NUM_ARRAYS && (blocked_obj == Py_None || have_blocked) && buffer_of(eos_obj, &eos, 8, 0, "eos") == 0;
    if (have_eos && have_blocked && blocked.shape[0] != views[OUT].shape[0])
        PyErr_SetString(PyExc_ValueError, "blocked and out differ in length");
    else if (have_eos) {
        uint32_t *bits = (uint32_t *)views[OUT].buf;
        Py_ssize_t width = views[OUT].shape[0];
        memset(bits, 0, (size_t)width * 4);
        ok = walk_levels(&rows, views, (int32_t)state, 1, NULL) >= 0;
        for (Py_ssize_t w = 0; ok && have_blocked && w < width; w++)
            bits[w] &= ((const uint32_t *)blocked.buf)[w];
        const int64_t *id = (const int64_t *)eos.buf;
        for (Py_ssize_t i = 0; ok && rows.machine->accepting.data[state] && i < eos.shape[0]; i++) {
            if ((uint64_t)id[i] >= (uint64_t)width * 32) {
                PyErr_SetString(PyExc_ValueError, "a token id does not fit in the bitmask");
                ok = 0;
            } else
                bits[id[i] >> 5] |= (uint32_t)1 << (id[i] & 31);
        }
    }
    if (have_eos)
        PyBuffer_Release(&eos);
    if (have_blocked)
        PyBuffer_Release(&blocked);
    while (got)
        PyBuffer_Release(&views[--got]);
    if (!ok)
        return PyErr_Occurred() ? NULL : (PyErr_SetString(PyExc_ValueError, "plain_mask failed"), NULL);
    Py_RETURN_TRUE;
}

static PyObject *walk(PyObject *self, PyObject *args) { return walk_into(args, 0, 0); }

static PyObject *walk_bits(PyObject *self, PyObject *args) { return walk_into(args, 1, 0); }

static PyObject *walk_loop_bits(PyObject *self, PyObject *args) { return walk_into(args, 1, 1); }

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "Ids of the tokens whose bytes the machine accepts from a state."},
    {"walk_bits", walk_bits, METH_VARARGS, "walk() setting the tokens' bits in an int32 bitmask instead."},
    {"walk_loop_bits", walk_loop_bits, METH_VARARGS, "walk_bits() reading the subtrees of nodes reached in a loop state from their lexicographic slices."},
    {"char_targets", char_targets, METH_VARARGS, "The state each distinct multi-byte character leads to from a state."},
    {"plain_mask", plain_mask, METH_VARARGS, "The whole first-time mask of a state no string shortcut takes (blocked, EOS), or False."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", "The trie walk of token masks, in C.", -1, methods};

PyMODINIT_FUNC PyInit__walk(void) {
    machine_api = (const MachineCAPI *)PyCapsule_Import(MACHINE_CAPI_NAME, 0);
    PyObject *m = machine_api ? PyModule_Create(&module) : NULL;
    if (m && PyModule_AddIntConstant(m, "PLAIN_WIDTH", PLAIN_WIDTH) < 0)
        Py_CLEAR(m);
    return m;
}
