/* NFA building: states, byte-range, epsilon and call edges, literals, and copies of other
 * automata (splice an NFA, embed a DFA) in flat arrays. See _regular.h. */
#include "_regular.h"

int32_t nfa_add_states(NFA *a, Py_ssize_t n) {
    if (n < 0 || n > INT32_MAX - a->num_states) {
        vec_no_memory();
        return -1;
    }
    int32_t first = a->num_states;
    a->num_states += (int32_t)n;
    return first;
}

int nfa_add_range(NFA *a, int32_t s, int lo, int hi, int32_t t) {
    if (vec_reserve(&a->edges, a->edges.len + 4) < 0)
        return -1;
    int32_t *e = a->edges.data + a->edges.len;
    e[0] = s, e[1] = lo, e[2] = hi, e[3] = t;
    a->edges.len += 4;
    return 0;
}

/* The bytes data[0:len] (uint8s, or int32s with `wide`) from s to t through len - 1 new states;
 * none: an epsilon edge. */
static int nfa_add_bytes(NFA *a, int32_t s, const void *data, int wide, Py_ssize_t len, int32_t t) {
    if (!len)
        return nfa_add_eps(a, s, t);
    if (len - 1 > INT32_MAX - a->num_states) {
        vec_no_memory();
        return -1;
    }
    if (vec_reserve(&a->edges, a->edges.len + 4 * len) < 0)
        return -1;
    int32_t first = a->num_states, cur = s;
    a->num_states += (int32_t)(len - 1);
    int32_t *e = a->edges.data + a->edges.len;
    for (Py_ssize_t i = 0; i < len; i++) {
        int32_t nxt = i == len - 1 ? t : first + (int32_t)i, byte = wide ? ((const int32_t *)data)[i] : ((const uint8_t *)data)[i];
        e[4 * i] = cur, e[4 * i + 1] = byte, e[4 * i + 2] = byte, e[4 * i + 3] = nxt;
        cur = nxt;
    }
    a->edges.len += 4 * len;
    return 0;
}

/* The bytes of `data` from s to t (literals are most of a JSON grammar's pieces: one call each). */
int nfa_add_literal(NFA *a, int32_t s, const uint8_t *data, Py_ssize_t len, int32_t t) { return nfa_add_bytes(a, s, data, 0, len, t); }

/* The same from bytes held as int32s (a lowering program's), each checked to be a byte: 0, -1
 * with an exception, or 1 for a value that is not a byte (the NFA unchanged). */
int nfa_add_literal32(NFA *a, int32_t s, const int32_t *data, Py_ssize_t len, int32_t t) {
    for (Py_ssize_t i = 0; i < len; i++)
        if (data[i] < 0 || data[i] > 255)
            return 1;
    return nfa_add_bytes(a, s, data, 1, len, t);
}

int nfa_add_eps(NFA *a, int32_t s, int32_t t) {
    return vec_push(&a->eps, s) < 0 || vec_push(&a->eps, t) < 0 ? -1 : 0;
}

int nfa_add_call(NFA *a, int32_t s, int32_t callee, int32_t t) {
    return vec_push(&a->calls, s) < 0 || vec_push(&a->calls, callee) < 0 || vec_push(&a->calls, t) < 0 ? -1 : 0;
}

/* from's records appended to v, the fields flagged in `shift` (a record is `width` ints, at most
 * 4) plus base; record by record (a remainder an int was 1.6% of a median compile's automaton) */
static int vec_extend_shifted(Vec *v, const Vec *from, int width, const int *shift, int32_t base) {
    if (vec_reserve(v, v->len + from->len) < 0)
        return -1;
    int32_t add[4];
    for (int f = 0; f < width; f++)
        add[f] = shift[f] ? base : 0;
    const int32_t *src = from->data;
    int32_t *to = v->data + v->len;
    for (Py_ssize_t r = 0; r + width <= from->len; r += width)
        for (int f = 0; f < width; f++)
            to[r + f] = src[r + f] + add[f];
    v->len += from->len;
    return 0;
}

/* A copy of `b` (new states) whose paths so -> to now lead s -> t: the way a fragment built once
 * is used again, at C speed. `b` is not `a`. */
int nfa_splice(NFA *a, const NFA *b, int32_t so, int32_t to, int32_t s, int32_t t) {
    if (b->num_states > INT32_MAX - a->num_states) {
        vec_no_memory();
        return -1;
    }
    int32_t base = a->num_states;
    static const int edge_shift[4] = {1, 0, 0, 1}, eps_shift[2] = {1, 1}, call_shift[3] = {1, 0, 1};
    if (vec_extend_shifted(&a->edges, &b->edges, 4, edge_shift, base) < 0 || vec_extend_shifted(&a->eps, &b->eps, 2, eps_shift, base) < 0 ||
        vec_extend_shifted(&a->calls, &b->calls, 3, call_shift, base) < 0)
        return -1;
    a->num_states += b->num_states;
    return nfa_add_eps(a, s, base + so) < 0 || nfa_add_eps(a, base + to, t) < 0 ? -1 : 0;
}

/* The DFA's moves as byte ranges (runs of equal targets), listed once: a piece of a grammar is
 * embedded at each of its uses, often thousands of times a compile. Each row is read by the
 * classmap's runs of bytes (bytes in a row with one class; a JSON piece's classmap has tens of
 * them), not byte by byte: 256 classmap reads a state were 4% of the bench's rule builds. */
int dfa_embed_edges(DFA *d) {
    if (d->embed_edges.len || !d->n)
        return 0;
    int32_t seg_lo[257], seg_cls[256], nseg = 0; /* the classmap's runs: [seg_lo[i], seg_lo[i + 1]) */
    for (int b = 0; b < 256; b++)
        if (!b || d->classmap[b] != d->classmap[b - 1])
            seg_lo[nseg] = b, seg_cls[nseg++] = d->classmap[b];
    seg_lo[nseg] = 256;
    for (int32_t q = 0; q < d->n; q++) {
        const int32_t *row = d->table + (Py_ssize_t)q * d->k;
        if (vec_reserve(&d->embed_edges, d->embed_edges.len + 4 * (Py_ssize_t)nseg) < 0)
            return -1;
        int32_t *e = d->embed_edges.data + d->embed_edges.len;
        for (int32_t i = 0; i < nseg;) { /* a maximal run of segments with one target */
            int32_t tgt = row[seg_cls[i]], j = i + 1;
            while (j < nseg && row[seg_cls[j]] == tgt)
                j++;
            if (tgt >= 0)
                e[0] = q, e[1] = seg_lo[i], e[2] = seg_lo[j] - 1, e[3] = tgt, e += 4;
            i = j;
        }
        d->embed_edges.len = e - d->embed_edges.data;
    }
    return 0;
}

/* The DFA's language between s and t (new states): an epsilon edge into its start, one out of
 * each accepting state. */
int nfa_embed(NFA *a, DFA *d, int32_t s, int32_t t) {
    if (d->n > INT32_MAX - a->num_states) {
        vec_no_memory();
        return -1;
    }
    if (dfa_embed_edges(d) < 0)
        return -1;
    int32_t base = a->num_states;
    a->num_states += d->n;
    if (nfa_add_eps(a, s, base) < 0)
        return -1;
    for (int32_t q = 0; q < d->n; q++)
        if (d->acc[q] && nfa_add_eps(a, base + q, t) < 0)
            return -1;
    Py_ssize_t m = d->embed_edges.len;
    if (vec_reserve(&a->edges, a->edges.len + m) < 0)
        return -1;
    const int32_t *src = d->embed_edges.data;
    int32_t *e = a->edges.data + a->edges.len;
    for (Py_ssize_t i = 0; i < m; i += 4)
        e[i] = base + src[i], e[i + 1] = src[i + 1], e[i + 2] = src[i + 2], e[i + 3] = base + src[i + 3];
    a->edges.len += m;
    return 0;
}

void nfa_clear(NFA *a) {
    vec_free(&a->edges);
    vec_free(&a->eps);
    vec_free(&a->calls);
}
