/* Preparing a vocabulary in C: the trie's arrays (trie.py) and the per-token facts
 * (token_facts.py).
 *
 * Why C: built in numpy, one pass per depth over the tokens still longer than it, a trie paid
 * ~10 array operations per depth whatever its size: a 6,400-suffix trie of a string body took
 * 7 ms of the first mask fill that needed it (its tokens run 128 bytes deep), and the
 * vocabulary's own trie was a third of preparing a vocabulary. The facts took ~15 whole-vocabulary
 * numpy passes over int64 copies of the bytes, another third.
 *
 * trie(flat, starts, lengths, ids) -> (sizes, node_byte, node_parent, token_node, walk_nodes, node_tokens)
 *   flat        uint8: the vocabulary's bytes laid end to end
 *   starts      int64 [tokens]: where each token's bytes start in `flat`
 *   lengths     int64 [tokens]: each token's length (> 0 for every token of `ids`)
 *   ids         int64: the tokens to put in the trie, in any order
 * Nodes are numbered depth by depth, and within a depth in the lexicographic order of the
 * prefixes they stand for (children of one node are consecutive, by byte). Returns, as numpy-ready
 * bytes: sizes int64 [depth] (nodes per depth), node_byte uint8 [nodes] (the byte into the node),
 * node_parent int64 [nodes] (the parent's id, -1 at depth 0), token_node int64 [tokens] (the node
 * a token ends at; the number of nodes for tokens not in `ids`), walk_nodes int32 [nodes x 4]
 * (children's ids [start, end), then the slice [start, end) of node_tokens ending at the node)
 * and node_tokens int64 (the tokens of `ids`, grouped by end node, by id within one node).
 *
 * chars(flat, starts, lengths, char_width) -> (chars, by_char, bounds)
 *   char_width  int8 [len(flat)]: the width of the whole multi-byte character starting at each
 *               byte, 0 where none does (TokenFacts.char_width)
 * The vocabulary's distinct whole multi-byte characters, in order of first appearance: chars,
 * uint8, 4 per character (its bytes, zero-padded); by_char, int32, the tokens holding each
 * character (each once, by id), character i's in [bounds[i], bounds[i + 1]) of bounds, int64.
 * What a loop that takes all but a few characters needs (trie.py's `char_table`): two passes
 * over the bytes, ~1-2 ms, where numpy's unique and argsort took ~20.
 *
 * How: breadth first over groups of tokens that share a prefix (one node each). A group is split
 * by its next byte (an insertion sort for small groups, counting for large ones); each run of one
 * byte is a child node, and its tokens that go on form the child's group one depth down. Groups
 * are kept in node order, so the nodes come out in the order above. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../regular/_vec.h"
#include "_buffers.h"

typedef struct {
    int64_t *data;
    Py_ssize_t len, cap;
} Vec64;

static int vec64_push(Vec64 *v, int64_t x) {
    if (v->len == v->cap) {
        Py_ssize_t cap = v->cap ? 2 * v->cap : 1024;
        int64_t *data = (int64_t *)realloc(v->data, sizeof(int64_t) * (size_t)cap);
        if (!data) {
            PyErr_NoMemory();
            return -1;
        }
        v->data = data, v->cap = cap;
    }
    v->data[v->len++] = x;
    return 0;
}

typedef struct {
    const uint8_t *flat;
    const int64_t *starts, *lengths;
    Py_ssize_t flat_len, ntokens;
} Vocab;

/* A token in a group: where its next byte is in `flat`, where its bytes end, its id (kept
 * together so that a depth reads one array in order, not the token tables at random). */
typedef struct {
    int32_t pos, end, token;
} Entry;

/* Sort group[0:n] by next byte (small groups by insertion, others by counting into `tmp`), so
 * equal bytes are consecutive and in byte order. */
static void sort_group(const uint8_t *flat, Entry *group, Py_ssize_t n, Entry *tmp) {
    if (n < 48) {
        for (Py_ssize_t i = 1; i < n; i++) {
            Entry x = group[i];
            uint8_t b = flat[x.pos];
            Py_ssize_t j = i;
            while (j > 0 && flat[group[j - 1].pos] > b)
                group[j] = group[j - 1], j--;
            group[j] = x;
        }
        return;
    }
    Py_ssize_t count[257] = {0};
    for (Py_ssize_t i = 0; i < n; i++)
        count[flat[group[i].pos] + 1]++;
    for (int b = 0; b < 256; b++)
        count[b + 1] += count[b];
    for (Py_ssize_t i = 0; i < n; i++)
        tmp[count[flat[group[i].pos]]++] = group[i];
    memcpy(group, tmp, sizeof(Entry) * (size_t)n);
}


static PyObject *vocab_trie(PyObject *self, PyObject *args) {
    PyObject *flat_obj, *starts_obj, *lengths_obj, *ids_obj;
    if (!PyArg_ParseTuple(args, "OOOO", &flat_obj, &starts_obj, &lengths_obj, &ids_obj))
        return NULL;
    Views w = {0};
    PyObject *result = NULL;
    Entry *cur = NULL, *next = NULL, *tmp = NULL;
    int64_t *token_node = NULL, *node_tokens = NULL;
    int32_t *walk = NULL;
    Vec64 sizes = {0}, parents = {0}, groups = {0}, next_groups = {0};
    Vec node_byte = {0}; /* int32 per node here; packed to uint8 at the end */
    if (views_get(&w, flat_obj, starts_obj, lengths_obj, ids_obj) < 0)
        goto done;
    Vocab v = {(const uint8_t *)w.flat.buf, (const int64_t *)w.starts.buf, (const int64_t *)w.lengths.buf, w.flat.len, w.starts.len / 8};
    const int64_t *ids = (const int64_t *)w.ids.buf;
    Py_ssize_t n = w.ids.len / 8;
    if (v.flat_len > INT32_MAX || v.ntokens > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "the vocabulary is too large");
        goto done;
    }
    cur = (Entry *)malloc(sizeof(Entry) * ((size_t)n + 1));
    next = (Entry *)malloc(sizeof(Entry) * ((size_t)n + 1));
    tmp = (Entry *)malloc(sizeof(Entry) * ((size_t)n + 1));
    token_node = (int64_t *)malloc(sizeof(int64_t) * ((size_t)v.ntokens + 1));
    if (!cur || !next || !tmp || !token_node) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t t = ids[i];
        if (t < 0 || t >= v.ntokens || v.lengths[t] <= 0 || v.starts[t] < 0 || v.starts[t] + v.lengths[t] > v.flat_len) {
            PyErr_Format(PyExc_ValueError, "token %lld is not a non-empty token of the vocabulary", (long long)t);
            goto done;
        }
        cur[i].pos = (int32_t)v.starts[t], cur[i].end = (int32_t)(v.starts[t] + v.lengths[t]), cur[i].token = (int32_t)t;
    }
    for (Py_ssize_t t = 0; t < v.ntokens; t++)
        token_node[t] = -1;
    /* groups at this depth: (begin, end, parent node) triples into `cur` */
    if (n && (vec64_push(&groups, 0) < 0 || vec64_push(&groups, n) < 0 || vec64_push(&groups, -1) < 0))
        goto done;
    int64_t nodes = 0;
    for (int64_t depth = 0; groups.len; depth++) { /* `depth` is where the nodes made now lie */
        int64_t depth_start = nodes;
        Py_ssize_t filled = 0;
        next_groups.len = 0;
        for (Py_ssize_t g = 0; g < groups.len; g += 3) {
            Entry *group = cur + groups.data[g];
            Py_ssize_t size = groups.data[g + 1] - groups.data[g];
            int64_t parent = groups.data[g + 2];
            sort_group(v.flat, group, size, tmp);
            for (Py_ssize_t i = 0, e; i < size; i = e) {
                uint8_t b = v.flat[group[i].pos];
                for (e = i + 1; e < size && v.flat[group[e].pos] == b; e++)
                    ;
                int64_t node = nodes++;
                if (vec_push(&node_byte, b) < 0 || vec64_push(&parents, parent) < 0)
                    goto done;
                Py_ssize_t begin = filled;
                for (Py_ssize_t j = i; j < e; j++) {
                    Entry x = group[j];
                    if (x.pos + 1 == x.end)
                        token_node[x.token] = node;
                    else
                        x.pos++, next[filled++] = x;
                }
                if (filled > begin && (vec64_push(&next_groups, begin) < 0 || vec64_push(&next_groups, filled) < 0 || vec64_push(&next_groups, node) < 0))
                    goto done;
            }
        }
        if (vec64_push(&sizes, nodes - depth_start) < 0)
            goto done;
        Entry *swap = cur;
        cur = next, next = swap;
        Vec64 gswap = groups;
        groups = next_groups, next_groups = gswap;
    }
    /* walk records: children ranges (children of a node are consecutive), then token slices */
    walk = (int32_t *)calloc((size_t)nodes * 4 + 1, sizeof(int32_t));
    node_tokens = (int64_t *)malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (!walk || !node_tokens) {
        PyErr_NoMemory();
        goto done;
    }
    if (nodes > INT32_MAX / 2 || n > INT32_MAX / 2) {
        PyErr_SetString(PyExc_OverflowError, "the trie is too large");
        goto done;
    }
    for (int64_t x = nodes - 1; x >= 0; x--) {
        int64_t p = parents.data[x];
        if (p >= 0) {
            if (walk[4 * p + 1] == 0)
                walk[4 * p + 1] = (int32_t)x + 1;
            walk[4 * p] = (int32_t)x;
        }
    }
    for (Py_ssize_t t = 0; t < v.ntokens; t++)
        if (token_node[t] >= 0)
            walk[4 * token_node[t] + 3]++;
    int32_t at = 0;
    for (int64_t x = 0; x < nodes; x++) {
        int32_t c = walk[4 * x + 3];
        walk[4 * x + 2] = at, walk[4 * x + 3] = at;
        at += c;
    }
    for (Py_ssize_t t = 0; t < v.ntokens; t++) {
        if (token_node[t] >= 0)
            node_tokens[walk[4 * token_node[t] + 3]++] = t;
        else
            token_node[t] = nodes;
    }
    uint8_t *packed = (uint8_t *)malloc((size_t)nodes + 1);
    if (!packed) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t x = 0; x < nodes; x++)
        packed[x] = (uint8_t)node_byte.data[x];
    result = Py_BuildValue("(NNNNNN)", bytes_of(sizes.data, sizeof(int64_t) * sizes.len), bytes_of(packed, (Py_ssize_t)nodes),
                           bytes_of(parents.data, (Py_ssize_t)sizeof(int64_t) * nodes), bytes_of(token_node, (Py_ssize_t)sizeof(int64_t) * v.ntokens),
                           bytes_of(walk, (Py_ssize_t)sizeof(int32_t) * 4 * nodes), bytes_of(node_tokens, (Py_ssize_t)sizeof(int64_t) * n));
    free(packed);
done:
    views_release(&w);
    free(cur), free(next), free(tmp), free(token_node), free(node_tokens), free(walk);
    free(sizes.data), free(parents.data), free(groups.data), free(next_groups.data);
    vec_free(&node_byte);
    return result;
}

/* facts(flat, starts, lengths) -> (char_width, in_whole_char, complete_utf8, char_counts, byte_sets)
 * By byte of `flat`: the width of the whole, valid multi-byte UTF-8 character starting there and
 * ending inside its token (0: none), int8; whether the byte lies in such a character, bool. By
 * token: it decodes as UTF-8, bool; its characters (complete tokens) or bytes (others), int64; the
 * byte values it uses as a 256-bit set, 4 uint64 (bit b & 63 of word b >> 6). Valid as Python's
 * decoder has it: no overlongs (C0, C1, E0 80-9F, F0 80-8F), no surrogates (ED A0-BF), nothing
 * above U+10FFFF (F4 90-BF, F5-FF). Tokens must tile `flat` in order (token t's bytes start at
 * starts[t]; the facts of bytes outside every token are 0). */
static PyObject *vocab_facts(PyObject *self, PyObject *args) {
    PyObject *flat_obj, *starts_obj, *lengths_obj;
    if (!PyArg_ParseTuple(args, "OOO", &flat_obj, &starts_obj, &lengths_obj))
        return NULL;
    Views w = {0};
    PyObject *result = NULL;
    int8_t *width = NULL;
    uint8_t *inside = NULL, *complete = NULL;
    int64_t *chars = NULL;
    uint64_t *sets = NULL;
    if (views_get(&w, flat_obj, starts_obj, lengths_obj, NULL) < 0)
        goto done;
    const uint8_t *flat = (const uint8_t *)w.flat.buf;
    const int64_t *starts = (const int64_t *)w.starts.buf, *lengths = (const int64_t *)w.lengths.buf;
    Py_ssize_t nbytes = w.flat.len, n = w.starts.len / 8;
    width = (int8_t *)calloc((size_t)nbytes + 1, 1);
    inside = (uint8_t *)calloc((size_t)nbytes + 1, 1);
    complete = (uint8_t *)calloc((size_t)n + 1, 1);
    chars = (int64_t *)calloc((size_t)n + 1, sizeof(int64_t));
    sets = (uint64_t *)calloc((size_t)n * 4 + 1, sizeof(uint64_t));
    if (!width || !inside || !complete || !chars || !sets) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t t = 0; t < n; t++) {
        int64_t a = starts[t], e = starts[t] + lengths[t];
        if (lengths[t] < 0 || a < 0 || e > nbytes) {
            PyErr_Format(PyExc_ValueError, "token %zd lies outside the bytes", t);
            goto done;
        }
        int whole = 1;
        int64_t count = 0;
        uint64_t *set = sets + 4 * t;
        for (int64_t i = a; i < e; i++)
            set[flat[i] >> 6] |= (uint64_t)1 << (flat[i] & 63);
        for (int64_t i = a; i < e;) { /* every byte a character may start at: none starts inside one */
            uint8_t b = flat[i];
            int w = b < 0x80 ? 1 : (b >= 0xC2 && b <= 0xDF) ? 2 : (b >= 0xE0 && b <= 0xEF) ? 3 : (b >= 0xF0 && b <= 0xF4) ? 4 : 0;
            int ok = w > 0 && i + w <= e;
            for (int k = 1; ok && k < w; k++)
                ok = (flat[i + k] & 0xC0) == 0x80;
            if (ok && w >= 3) {
                uint8_t second = flat[i + 1];
                ok = !((b == 0xE0 && second < 0xA0) || (b == 0xED && second > 0x9F) || (b == 0xF0 && second < 0x90) || (b == 0xF4 && second > 0x8F));
            }
            if (ok) {
                count++;
                if (w >= 2) {
                    width[i] = (int8_t)w;
                    for (int k = 0; k < w; k++)
                        inside[i + k] = 1;
                }
                i += w;
            } else { /* a byte no whole character starts at (the token is not UTF-8); the next may */
                whole = 0;
                i++;
            }
        }
        complete[t] = (uint8_t)whole;
        chars[t] = whole ? count : lengths[t];
    }
    result = Py_BuildValue("(NNNNN)", bytes_of(width, nbytes), bytes_of(inside, nbytes), bytes_of(complete, n), bytes_of(chars, (Py_ssize_t)sizeof(int64_t) * n),
                           bytes_of(sets, (Py_ssize_t)sizeof(uint64_t) * 4 * n));
done:
    views_release(&w);
    free(width), free(inside), free(complete), free(chars), free(sets);
    return result;
}

/* lex_order(walk_nodes, node_tokens, num_roots) -> (lex_tokens, lex_bounds)
 * The trie's tokens in the lexicographic order of their bytes, where every node's subtree (the
 * tokens its prefix starts) is one slice: lex_tokens int32 [text tokens], and lex_bounds int32
 * [nodes x 2], node x's slice [lo, hi). A walk that reaches a state looping on a set of bytes
 * reads a subtree's tokens from that slice, without visiting its nodes (compile/_walk.c).
 * `walk_nodes` and `node_tokens` are trie()'s, `num_roots` the nodes at depth 0. Two passes over
 * the nodes, no stack: a node's children have higher ids than the node (they lie a depth below),
 * so sizes are summed from the last node back and slices handed out from the first forward. */
static PyObject *vocab_lex_order(PyObject *self, PyObject *args) {
    PyObject *walk_obj, *tokens_obj;
    Py_ssize_t num_roots;
    if (!PyArg_ParseTuple(args, "OOn", &walk_obj, &tokens_obj, &num_roots))
        return NULL;
    Py_buffer wb = {0}, tb = {0};
    PyObject *result = NULL;
    int32_t *lex = NULL, *bounds = NULL;
    if (buffer_of(walk_obj, &wb, 16, "walk_nodes") < 0 || buffer_of(tokens_obj, &tb, 8, "node_tokens") < 0)
        goto done;
    const int32_t *walk = (const int32_t *)wb.buf;
    const int64_t *node_tokens = (const int64_t *)tb.buf;
    Py_ssize_t nodes = wb.len / 16, n = tb.len / 8;
    if (num_roots < 0 || num_roots > nodes || nodes >= INT32_MAX / 2 || n >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "lex_order: a root count or sizes out of range");
        goto done;
    }
    for (Py_ssize_t x = 0; x < nodes; x++) { /* children lie after their parent, token slices in range */
        const int32_t *r = walk + 4 * x;
        if ((r[0] < r[1] && (r[0] <= x || r[1] > nodes)) || r[2] < 0 || r[2] > r[3] || r[3] > n) {
            PyErr_SetString(PyExc_ValueError, "lex_order: a walk record out of range");
            goto done;
        }
    }
    lex = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    bounds = (int32_t *)malloc(sizeof(int32_t) * (2 * (size_t)nodes + 1));
    if (!lex || !bounds) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t x = nodes - 1; x >= 0; x--) { /* bounds[2x + 1]: the subtree's size, for now */
        const int32_t *r = walk + 4 * x;
        int64_t size = r[3] - r[2];
        for (int32_t c = r[0]; c < r[1]; c++)
            size += bounds[2 * c + 1];
        if (size > n) {
            PyErr_SetString(PyExc_ValueError, "lex_order: a node is in two subtrees");
            goto done;
        }
        bounds[2 * x] = -1; /* set when its parent is reached (a node below no root keeps it) */
        bounds[2 * x + 1] = (int32_t)size;
    }
    int64_t at = 0;
    for (Py_ssize_t x = 0; x < num_roots; x++) /* the roots' slices one after another */
        bounds[2 * x] = (int32_t)at, at += bounds[2 * x + 1];
    for (Py_ssize_t x = 0; x < nodes; x++) { /* a node's own tokens, then its children's subtrees */
        const int32_t *r = walk + 4 * x;
        int32_t lo = bounds[2 * x], pos = lo;
        if (lo < 0 || (int64_t)lo + bounds[2 * x + 1] > n) { /* a node below no root */
            PyErr_SetString(PyExc_ValueError, "lex_order: a node out of every root's subtree");
            goto done;
        }
        for (int32_t k = r[2]; k < r[3]; k++)
            lex[pos++] = (int32_t)node_tokens[k];
        for (int32_t c = r[0]; c < r[1]; c++)
            bounds[2 * c] = pos, pos += bounds[2 * c + 1];
        bounds[2 * x + 1] = lo + bounds[2 * x + 1];
    }
    result = Py_BuildValue("(NN)", bytes_of(lex, (Py_ssize_t)sizeof(int32_t) * n), bytes_of(bounds, (Py_ssize_t)sizeof(int32_t) * 2 * nodes));
done:
    if (wb.obj)
        PyBuffer_Release(&wb);
    if (tb.obj)
        PyBuffer_Release(&tb);
    free(lex), free(bounds);
    return result;
}

/* joined(tokens) -> (flat, lengths): a list of bytes objects laid end to end, and each one's
 * length as int64 (native order), in one pass: what a vocabulary's fingerprint hashes
 * (info.py), without a Python call per token (~15 ms on Qwen's 151k tokens in Python). */
static PyObject *vocab_joined(PyObject *self, PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "joined() needs a list of bytes");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), total = 0;
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *flat = NULL, *lengths = NULL, *result = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyBytes_Check(items[i])) {
            PyErr_Format(PyExc_TypeError, "token %zd is not bytes", i);
            goto done;
        }
        total += PyBytes_GET_SIZE(items[i]);
    }
    flat = PyBytes_FromStringAndSize(NULL, total);
    lengths = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (!flat || !lengths) goto done;
    char *at = PyBytes_AS_STRING(flat);
    char *len_at = PyBytes_AS_STRING(lengths);
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t size = (int64_t)PyBytes_GET_SIZE(items[i]);
        memcpy(at, PyBytes_AS_STRING(items[i]), (size_t)size);
        memcpy(len_at + i * (Py_ssize_t)sizeof(int64_t), &size, sizeof(int64_t));
        at += size;
    }
    result = PyTuple_Pack(2, flat, lengths);
done:
    Py_XDECREF(flat);
    Py_XDECREF(lengths);
    Py_DECREF(seq);
    return result;
}

/* The code point of the whole character of `width` bytes at `b` (checked by char_width). */
static inline int32_t code_point(const uint8_t *b, int width) {
    int32_t cp = b[0] & (0x7F >> width);
    for (int k = 1; k < width; k++)
        cp = (cp << 6) | (b[k] & 0x3F);
    return cp;
}

static PyObject *vocab_chars(PyObject *self, PyObject *args) {
    PyObject *flat_obj, *starts_obj, *lengths_obj, *width_obj;
    if (!PyArg_ParseTuple(args, "OOOO", &flat_obj, &starts_obj, &lengths_obj, &width_obj))
        return NULL;
    Views w = {{0}, {0}, {0}, {0}};
    Py_buffer wb = {0};
    PyObject *result = NULL;
    int32_t *index = NULL, *count = NULL, *last = NULL, *by_char = NULL;
    uint8_t *chars = NULL;
    int64_t *bounds = NULL;
    Py_ssize_t num_chars = 0;
    if (views_get(&w, flat_obj, starts_obj, lengths_obj, NULL) < 0 || buffer_of(width_obj, &wb, 1, "char_width") < 0)
        goto done;
    const uint8_t *flat = (const uint8_t *)w.flat.buf;
    const int8_t *width = (const int8_t *)wb.buf;
    const int64_t *starts = (const int64_t *)w.starts.buf, *lengths = (const int64_t *)w.lengths.buf;
    Py_ssize_t n = w.starts.len / 8, size = w.flat.len;
    if (wb.len != size || n >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "chars: char_width needs one byte per byte of flat");
        goto done;
    }
    for (Py_ssize_t t = 0; t < n; t++)
        if (starts[t] < 0 || lengths[t] < 0 || starts[t] + lengths[t] > size) {
            PyErr_SetString(PyExc_ValueError, "chars: a token out of flat");
            goto done;
        }
    index = (int32_t *)calloc(0x110000, sizeof(int32_t)); /* code point -> character + 1 */
    Py_ssize_t cap = 1024;
    count = (int32_t *)malloc(sizeof(int32_t) * cap);
    last = (int32_t *)malloc(sizeof(int32_t) * cap);
    chars = (uint8_t *)malloc(4 * (size_t)cap);
    if (!index || !count || !last || !chars)
        goto no_memory;
    for (int pass = 0; pass < 2; pass++) { /* count the tokens of each character, then place them */
        for (Py_ssize_t i = 0; i < num_chars; i++)
            last[i] = -1;
        for (Py_ssize_t t = 0; t < n; t++)
            for (int64_t p = starts[t], end = starts[t] + lengths[t]; p < end; p++) {
                int cw = width[p];
                if (cw < 2 || cw > 4 || p + cw > end)
                    continue;
                int32_t cp = code_point(flat + p, cw), c = index[cp] - 1;
                p += cw - 1;
                if (c < 0) { /* first seen (pass 0 only: pass 1 meets the same characters) */
                    if (num_chars == cap) {
                        cap *= 2;
                        int32_t *c2 = (int32_t *)realloc(count, sizeof(int32_t) * cap), *l2 = c2 ? (int32_t *)realloc(last, sizeof(int32_t) * cap) : NULL;
                        count = c2 ? c2 : count, last = l2 ? l2 : last;
                        uint8_t *ch2 = l2 ? (uint8_t *)realloc(chars, 4 * (size_t)cap) : NULL;
                        if (!ch2)
                            goto no_memory;
                        chars = ch2;
                    }
                    c = (int32_t)num_chars++;
                    index[cp] = c + 1;
                    memset(chars + 4 * (size_t)c, 0, 4);
                    memcpy(chars + 4 * (size_t)c, flat + p - (cw - 1), (size_t)cw);
                    count[c] = 0;
                    last[c] = -1;
                }
                if (last[c] == (int32_t)t)
                    continue; /* a token holding the character twice is listed once */
                last[c] = (int32_t)t;
                if (pass == 0)
                    count[c]++;
                else
                    by_char[bounds[c + 1]++] = (int32_t)t;
            }
        if (pass == 0) { /* bounds[c + 1] runs from character c's start to its end in pass 1 */
            bounds = (int64_t *)malloc(sizeof(int64_t) * ((size_t)num_chars + 2));
            if (!bounds)
                goto no_memory;
            bounds[0] = bounds[1] = 0;
            for (Py_ssize_t c = 0; c < num_chars; c++)
                bounds[c + 2] = bounds[c + 1] + count[c];
            by_char = (int32_t *)malloc(sizeof(int32_t) * ((size_t)bounds[num_chars + 1] + 1));
            if (!by_char)
                goto no_memory;
        }
    }
    result = Py_BuildValue("(NNN)", bytes_of(chars, 4 * num_chars), bytes_of(by_char, sizeof(int32_t) * (size_t)bounds[num_chars]),
                           bytes_of(bounds, sizeof(int64_t) * ((size_t)num_chars + 1)));
    goto done;
no_memory:
    PyErr_NoMemory();
done:
    views_release(&w);
    if (wb.obj)
        PyBuffer_Release(&wb);
    free(index);
    free(count);
    free(last);
    free(chars);
    free(bounds);
    free(by_char);
    return result;
}

static PyMethodDef methods[] = {
    {"trie", vocab_trie, METH_VARARGS, "trie(flat, starts, lengths, ids): the trie's arrays (see the module docstring)."},
    {"facts", vocab_facts, METH_VARARGS, "facts(flat, starts, lengths): per-byte and per-token UTF-8 facts and byte sets."},
    {"lex_order", vocab_lex_order, METH_VARARGS, "lex_order(walk_nodes, node_tokens, num_roots): the tokens in lexicographic order, each node's subtree a slice."},
    {"chars", vocab_chars, METH_VARARGS, "chars(flat, starts, lengths, char_width): the distinct multi-byte characters and the tokens holding each."},
    {"joined", vocab_joined, METH_O, "joined(tokens): (the bytes laid end to end, each one's length as native int64 bytes)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_vocab", "Preparing a vocabulary: the trie's arrays and the per-token facts, in C.", -1, methods};

PyMODINIT_FUNC PyInit__vocab(void) { return PyModule_Create(&module); }
