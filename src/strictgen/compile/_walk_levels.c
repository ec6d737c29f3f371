/* The trie walk itself: breadth-first over the trie's levels from a machine state, the rows a level
 * needs asked for at once, a loop state's subtrees read from their lexicographic slices. Why C, and
 * what the arguments mean: _walk.c's top comment; what the two files share: _walk.h. */
#include "_walk.h"

/* row_of's slow path (_walk.h): the row computed with the GIL taken back. */
const int32_t *row_computed_now(Rows *rows, int32_t state, PyThreadState **saved) {
    PyEval_RestoreThread(*saved);
    const int32_t *row = machine_api->row(rows->machine, state, rows->resolve);
    *saved = PyEval_SaveThread();
    return row;
}

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

/* frontier_reserve's slow path: frontier i grown to hold `size` entries (more than it does). */
static int frontier_grow(Frontiers *f, int i, Py_ssize_t size) {
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

/* Make room for `size` entries in frontier i, keeping its contents; 0, or -1 when out of memory.
 * Asked once per expanded node: the check inline, the growth apart (a call per node was ~1% of a
 * first pass's instructions, callgrind). */
static inline int frontier_reserve(Frontiers *f, int i, Py_ssize_t size) {
    return size <= f->cap[i] ? 0 : frontier_grow(f, i, size);
}

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

/* See _walk.h. */
Py_ssize_t walk_levels(Rows *rows, Py_buffer *views, int32_t state, int as_bits, const Loop *loop) {
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
                if (!as_bits)
                    for (; k < end; k++)
                        out[found++] = tokens[k];
                else
                    for (found += end > k ? end - k : 0; k < end; k++) {
                        uint64_t tok = (uint64_t)tokens[k];
                        if (tok < num_bits)
                            bits[tok >> 5] |= (uint32_t)1 << (tok & 31);
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
