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

static int buffer_of(PyObject *obj, Py_buffer *view, Py_ssize_t item, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len % item) {
        PyErr_Format(PyExc_ValueError, "%s: a buffer of %zd-byte items expected", what, item);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The buffers a call reads: the vocabulary's bytes, starts and lengths, and (trie) the ids. */
typedef struct {
    Py_buffer flat, starts, lengths, ids;
} Views;

/* Release the buffers of `all` that were acquired (a zeroed Py_buffer has no obj). */
static void buffers_release(Py_buffer *const *all, int n) {
    for (int i = 0; i < n; i++)
        if (all[i]->obj)
            PyBuffer_Release(all[i]);
}

static void views_release(Views *w) {
    Py_buffer *all[] = {&w->flat, &w->starts, &w->lengths, &w->ids};
    buffers_release(all, 4);
}

/* Views of the arguments (ids may be NULL); -1 with an exception set if one is not right. */
static int views_get(Views *w, PyObject *flat, PyObject *starts, PyObject *lengths, PyObject *ids) {
    if (buffer_of(flat, &w->flat, 1, "flat") < 0 || buffer_of(starts, &w->starts, 8, "starts") < 0 || buffer_of(lengths, &w->lengths, 8, "lengths") < 0 ||
        (ids && buffer_of(ids, &w->ids, 8, "ids") < 0))
        return -1;
    if (w->lengths.len != w->starts.len) {
        PyErr_SetString(PyExc_ValueError, "starts and lengths differ in length");
        return -1;
    }
    return 0;
}

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

static PyObject *bytes_of(const void *data, Py_ssize_t size) { return PyBytes_FromStringAndSize((const char *)data, size); }

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

/* loop_cuts(flat, starts, lengths, ids, is_loop, in_whole_char, char_width, skip_first) -> int64 bytes
 * For each token of `ids`: how many of its bytes its leading run of loop bytes (`is_loop`, 256
 * flags) covers, counting with `in_whole_char` (None: no) every byte of a whole multi-byte
 * character as a loop byte, and not counting the first byte (with `char_width`, the whole first
 * character) when `skip_first`. Only the tokens' own bytes are read (a numpy version judged all
 * of the vocabulary's bytes for a few thousand tokens). */
static PyObject *vocab_loop_cuts(PyObject *self, PyObject *args) {
    PyObject *flat_obj, *starts_obj, *lengths_obj, *ids_obj, *loop_obj, *inside_obj, *width_obj;
    int skip_first;
    if (!PyArg_ParseTuple(args, "OOOOOOOp", &flat_obj, &starts_obj, &lengths_obj, &ids_obj, &loop_obj, &inside_obj, &width_obj, &skip_first))
        return NULL;
    Views w = {0};
    Py_buffer lb = {0}, ib = {0}, cb = {0};
    PyObject *result = NULL;
    int64_t *out = NULL;
    if (views_get(&w, flat_obj, starts_obj, lengths_obj, ids_obj) < 0 || buffer_of(loop_obj, &lb, 1, "is_loop") < 0)
        goto done;
    if ((inside_obj != Py_None && buffer_of(inside_obj, &ib, 1, "in_whole_char") < 0) || (width_obj != Py_None && buffer_of(width_obj, &cb, 1, "char_width") < 0))
        goto done;
    if (lb.len != 256 || (ib.obj && ib.len != w.flat.len) || (cb.obj && cb.len != w.flat.len)) {
        PyErr_SetString(PyExc_ValueError, "loop_cuts: is_loop needs 256 flags, the per-byte facts one per byte");
        goto done;
    }
    const uint8_t *flat = (const uint8_t *)w.flat.buf, *is_loop = (const uint8_t *)lb.buf;
    const uint8_t *in_char = (const uint8_t *)ib.buf;
    const int8_t *width = (const int8_t *)cb.buf;
    const int64_t *starts = (const int64_t *)w.starts.buf, *lengths = (const int64_t *)w.lengths.buf, *ids = (const int64_t *)w.ids.buf;
    Py_ssize_t n = w.ids.len / 8, ntokens = w.starts.len / 8;
    out = (int64_t *)malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (!out) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t t = ids[i];
        if (t < 0 || t >= ntokens || starts[t] < 0 || lengths[t] < 0 || starts[t] + lengths[t] > w.flat.len) {
            PyErr_Format(PyExc_ValueError, "loop_cuts: token %lld is not in the vocabulary", (long long)t);
            goto done;
        }
        int64_t a = starts[t], e = starts[t] + lengths[t], at = a;
        if (skip_first && at < e) {
            int first = width ? width[at] : 0;
            at += first > 1 ? first : 1;
        }
        while (at < e && (is_loop[flat[at]] || (in_char && in_char[at])))
            at++;
        out[i] = (at < e ? at : e) - a;
    }
    result = bytes_of(out, (Py_ssize_t)sizeof(int64_t) * n);
done:
    views_release(&w);
    {
        Py_buffer *held[] = {&lb, &ib, &cb};
        buffers_release(held, 3);
    }
    free(out);
    return result;
}

/* cut_groups(flat, starts, lengths, ids, cuts) -> (starts, ends, owners, bounds) as bytes
 * The non-empty suffixes flat[starts[t] + cuts[i] : starts[t] + lengths[t]] of the tokens t =
 * ids[i] (cuts: int64, from loop_cuts), grouped by first byte by a counting sort (in id order
 * within a group): suffix starts, ends and owners as int32, and the 257 int64 group bounds
 * (byte b's suffixes are [bounds[b], bounds[b + 1])) that compile/_walk.c's walk_cuts reads. */
static PyObject *vocab_cut_groups(PyObject *self, PyObject *args) {
    PyObject *flat_obj, *starts_obj, *lengths_obj, *ids_obj, *cuts_obj;
    if (!PyArg_ParseTuple(args, "OOOOO", &flat_obj, &starts_obj, &lengths_obj, &ids_obj, &cuts_obj))
        return NULL;
    Views w = {0};
    Py_buffer cb = {0};
    PyObject *result = NULL;
    int32_t *out_starts = NULL, *out_ends = NULL, *owners = NULL;
    int64_t bounds[257] = {0};
    if (views_get(&w, flat_obj, starts_obj, lengths_obj, ids_obj) < 0 || buffer_of(cuts_obj, &cb, 8, "cuts") < 0)
        goto done;
    const uint8_t *flat = (const uint8_t *)w.flat.buf;
    const int64_t *starts = (const int64_t *)w.starts.buf, *lengths = (const int64_t *)w.lengths.buf, *ids = (const int64_t *)w.ids.buf;
    const int64_t *cuts = (const int64_t *)cb.buf;
    Py_ssize_t n = w.ids.len / 8, ntokens = w.starts.len / 8;
    if (cb.len != w.ids.len || w.flat.len > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "cut_groups: one cut per id, and a vocabulary under 2 GiB");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) { /* count each group, checking every suffix */
        int64_t t = ids[i];
        if (t < 0 || t >= ntokens || starts[t] < 0 || lengths[t] < 0 || starts[t] + lengths[t] > w.flat.len || cuts[i] < 0 || cuts[i] > lengths[t]) {
            PyErr_Format(PyExc_ValueError, "cut_groups: token %lld or its cut is not in the vocabulary", (long long)t);
            goto done;
        }
        if (cuts[i] < lengths[t])
            bounds[flat[starts[t] + cuts[i]] + 1]++;
    }
    for (int b = 0; b < 256; b++)
        bounds[b + 1] += bounds[b];
    Py_ssize_t total = (Py_ssize_t)bounds[256];
    out_starts = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    out_ends = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    owners = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    if (!out_starts || !out_ends || !owners) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t fill[256];
    memcpy(fill, bounds, sizeof(fill));
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t t = ids[i];
        if (cuts[i] == lengths[t])
            continue;
        int64_t at = fill[flat[starts[t] + cuts[i]]]++;
        out_starts[at] = (int32_t)(starts[t] + cuts[i]);
        out_ends[at] = (int32_t)(starts[t] + lengths[t]);
        owners[at] = (int32_t)t;
    }
    result = Py_BuildValue("(NNNN)", bytes_of(out_starts, (Py_ssize_t)sizeof(int32_t) * total), bytes_of(out_ends, (Py_ssize_t)sizeof(int32_t) * total),
                           bytes_of(owners, (Py_ssize_t)sizeof(int32_t) * total), bytes_of(bounds, (Py_ssize_t)sizeof(bounds)));
done:
    views_release(&w);
    if (cb.obj)
        PyBuffer_Release(&cb);
    free(out_starts), free(out_ends), free(owners);
    return result;
}

/* made_of(byte_sets, want, complete) -> bool bytes: per token, whether every byte it uses is in
 * `want` (a 256-bit set, 4 uint64); with `complete` (per token, it is whole UTF-8; None: no),
 * also a whole-UTF-8 token whose ASCII bytes are all in `want` (its other bytes make whole
 * characters). One pass, where numpy made four over strided columns. */
static PyObject *vocab_made_of(PyObject *self, PyObject *args) {
    PyObject *sets_obj, *want_obj, *complete_obj;
    if (!PyArg_ParseTuple(args, "OOO", &sets_obj, &want_obj, &complete_obj))
        return NULL;
    Py_buffer sb = {0}, wb = {0}, cb = {0};
    PyObject *result = NULL;
    uint8_t *out = NULL;
    if (buffer_of(sets_obj, &sb, 32, "byte_sets") < 0 || buffer_of(want_obj, &wb, 8, "want") < 0 || (complete_obj != Py_None && buffer_of(complete_obj, &cb, 1, "complete") < 0))
        goto done;
    Py_ssize_t n = sb.len / 32;
    if (wb.len != 32 || (cb.obj && cb.len != n)) {
        PyErr_SetString(PyExc_ValueError, "made_of: want needs 4 words, complete one flag per token");
        goto done;
    }
    const uint64_t *sets = (const uint64_t *)sb.buf, *want = (const uint64_t *)wb.buf;
    const uint8_t *complete = (const uint8_t *)cb.buf;
    out = (uint8_t *)malloc((size_t)n + 1);
    if (!out) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t t = 0; t < n; t++) {
        const uint64_t *x = sets + 4 * t;
        int ascii = ((x[0] & ~want[0]) | (x[1] & ~want[1])) == 0;
        out[t] = (uint8_t)(ascii && ((((x[2] & ~want[2]) | (x[3] & ~want[3])) == 0) || (complete && complete[t])));
    }
    result = bytes_of(out, n);
done:
    {
        Py_buffer *held[] = {&sb, &wb, &cb};
        buffers_release(held, 3);
    }
    free(out);
    return result;
}

/* drop_entries(inside, order, starts, ends, first, out): `out` (int32 bitmask words, as many as
 * `inside`) becomes `inside` without the tokens `order[starts[b]:ends[b]]` (token ids, int64;
 * `starts` and `ends` 256 int64 each) of every byte b not in `first` (256 bytes, 0/1): the
 * tokens whose first byte does not enter a loop. The caller groups the ids by first byte, so a
 * loop's entries for a new set of first bytes cost the groups left out, not a pass over the
 * vocabulary (the key state of every object has its own first bytes). */
static PyObject *vocab_drop_entries(PyObject *self, PyObject *args) {
    PyObject *inside_obj, *order_obj, *starts_obj, *ends_obj, *first_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOOOOO", &inside_obj, &order_obj, &starts_obj, &ends_obj, &first_obj, &out_obj))
        return NULL;
    Py_buffer ib = {0}, ob = {0}, sb = {0}, eb = {0}, fb = {0}, outb = {0};
    PyObject *result = NULL;
    if (buffer_of(inside_obj, &ib, 4, "inside") < 0 || buffer_of(order_obj, &ob, 8, "order") < 0 || buffer_of(starts_obj, &sb, 8, "starts") < 0 ||
        buffer_of(ends_obj, &eb, 8, "ends") < 0 || buffer_of(first_obj, &fb, 1, "first") < 0)
        goto done;
    if (PyObject_GetBuffer(out_obj, &outb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    if (outb.len != ib.len || sb.len != 256 * 8 || eb.len != 256 * 8 || fb.len != 256) {
        PyErr_SetString(PyExc_ValueError, "drop_entries: out as long as inside, 256 starts, ends and first bytes");
        goto done;
    }
    const int64_t *order = (const int64_t *)ob.buf, *starts = (const int64_t *)sb.buf, *ends = (const int64_t *)eb.buf;
    const uint8_t *first = (const uint8_t *)fb.buf;
    uint32_t *bits = (uint32_t *)outb.buf;
    Py_ssize_t norder = ob.len / 8, nbits = ib.len * 8;
    memcpy(bits, ib.buf, (size_t)ib.len);
    for (int b = 0; b < 256; b++) {
        if (first[b])
            continue;
        int64_t lo = starts[b], hi = ends[b];
        if (lo < 0 || hi > norder || lo > hi) {
            PyErr_SetString(PyExc_ValueError, "drop_entries: a group out of range");
            goto done;
        }
        for (int64_t k = lo; k < hi; k++) {
            int64_t t = order[k];
            if (t < 0 || t >= nbits) {
                PyErr_SetString(PyExc_ValueError, "drop_entries: a token id out of range");
                goto done;
            }
            bits[t >> 5] &= ~((uint32_t)1 << (t & 31));
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    {
        Py_buffer *held[] = {&ib, &ob, &sb, &eb, &fb, &outb};
        buffers_release(held, 6);
    }
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

static PyMethodDef methods[] = {
    {"trie", vocab_trie, METH_VARARGS, "trie(flat, starts, lengths, ids): the trie's arrays (see the module docstring)."},
    {"facts", vocab_facts, METH_VARARGS, "facts(flat, starts, lengths): per-byte and per-token UTF-8 facts and byte sets."},
    {"made_of", vocab_made_of, METH_VARARGS, "made_of(byte_sets, want, complete): tokens made only of the bytes in want."},
    {"drop_entries", vocab_drop_entries, METH_VARARGS, "drop_entries(inside, order, starts, ends, first, out): a loop's entries from its inside tokens."},
    {"cut_groups", vocab_cut_groups, METH_VARARGS, "cut_groups(flat, starts, lengths, ids, cuts): non-empty suffixes grouped by first byte."},
    {"loop_cuts", vocab_loop_cuts, METH_VARARGS, "loop_cuts(flat, starts, lengths, ids, is_loop, in_whole_char, char_width, skip_first): run lengths."},
    {"joined", vocab_joined, METH_O, "joined(tokens): (the bytes laid end to end, each one's length as native int64 bytes)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_vocab", "Preparing a vocabulary: the trie's arrays and the per-token facts, in C.", -1, methods};

PyMODINIT_FUNC PyInit__vocab(void) { return PyModule_Create(&module); }
