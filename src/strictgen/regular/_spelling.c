/* Every JSON spelling of a string language, on its byte-level DFA (see grammar/json_spelling.py,
 * which holds the policy; this is the work, in C because it visits every state and character).
 *
 * spell(table, accepting, max_states, all_spellings, deadline) -> (table, accepting, classmap) | None | False
 *   table: int32 bytes, 256 next states per state (-1 dead), state 0 the start, over raw UTF-8.
 *   Result: the DFA, by byte class (classmap None: 256 wide), of the JSON string bodies (between the quotes) decoding into the
 *   language: raw characters except '"', '\\' and U+0000..U+001F, short escapes, \uXXXX in either
 *   case, surrogate pairs. Beside every state between characters sits a trie of escapes that
 *   leads where the escaped character leads; tries are hash-consed by what they lead to.
 *   With all_spellings false, printable ASCII is only raw and only other characters get escapes.
 *   None: more than max_states states would be needed. False: the deadline passed.
 *   The result's classes are the raw table's runs of bytes with equal columns, cut around every
 *   byte an escape reads: rows of k, not 256, entries (a 30,000-state result was 30 MB to write,
 *   copy and read again for its classes, most of spelling's time). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "_vec.h"

enum { LIMIT = -2, LATE = -3, NOMEM = -4 };

static int too_many(void) { return -1; } /* never: these interners have no bound */
#include "_intern.h"

/* the id of xs[0:n] in t (added when new); NOMEM on failure */
static int32_t table_id(Interner *t, const int32_t *xs, Py_ssize_t n, int *added) {
    int32_t id = intern(t, xs, n, -1, added);
    return id < 0 ? NOMEM : id;
}

typedef struct {
    const int32_t *raw;
    int32_t n, max_states, all;
    double deadline;
    Vec rows, acc;        /* the result: k entries a state (by cls); 0/1 a state */
    int32_t k;
    uint8_t cls[256];     /* the result's byte classes */
    Interner tries;         /* (width, (lo, hi, cont)...) -> id; trie_state[id] its state */
    Vec trie_state;
    Interner lows;          /* low-surrogate signatures -> id; pair_state[id] the state after the high */
    Vec pair_state;
    Interner escs;          /* (8 short targets, \u's trie) -> id; esc_state[id] the state after '\\' */
    Vec esc_state;
    int32_t *cont_at;     /* (state, k) -> offset of its runs in cont_pool, or -1 */
    Vec cont_pool;        /* per memo entry: count, then (lo, hi, target) triples */
} Sp;

/* A cont below -1 in a signature stands for a high surrogate: -(2 + id of its low signature). */
#define PAIR(id) (-2 - (id))
#define PAIR_ID(c) (-2 - (c))

static int32_t new_state(Sp *sp) {
    int32_t m = (int32_t)(sp->rows.len / sp->k);
    if (m >= sp->max_states)
        return LIMIT;
    if (!(m & 1023) && sp->deadline > 0 && now() > sp->deadline)
        return LATE;
    if (vec_reserve(&sp->rows, sp->rows.len + sp->k) < 0 || vec_push(&sp->acc, 0) < 0)
        return NOMEM;
    memset(sp->rows.data + sp->rows.len, 0xff, sizeof(int32_t) * (size_t)sp->k);
    sp->rows.len += sp->k;
    return m;
}

/* b is a byte an escape reads, a class of its own */
static void set_edge(Sp *sp, int32_t s, int b, int32_t t) { sp->rows.data[(Py_ssize_t)s * sp->k + sp->cls[b]] = t; }

/* The result's classes (into cls; their number): runs of bytes whose raw columns are equal, cut
 * around the bytes escapes read (each its own class) and after the controls (dead everywhere). */
static int32_t out_classes(const int32_t *raw, int32_t n, uint8_t *cls) {
    static const char apart[] = "\"\\/bfnrtu0123456789abcdefABCDEF";
    uint8_t cut[257] = {0};
    cut[0] = cut[0x20] = 1;
    for (const char *c = apart; *c; c++)
        cut[(uint8_t)*c] = cut[(uint8_t)*c + 1] = 1;
    for (int32_t s = 0; s < n; s++) {
        const int32_t *row = raw + (Py_ssize_t)s * 256;
        for (int b = 1; b < 256; b++)
            cut[b] |= row[b] != row[b - 1];
    }
    int32_t k = -1;
    for (int b = 0; b < 256; b++)
        cls[b] = (uint8_t)(k += cut[b]);
    return k + 1;
}

static int push3(Vec *v, int32_t lo, int32_t hi, int32_t t) {
    if (v->len >= 3 && v->data[v->len - 1] == t && v->data[v->len - 2] + 1 == lo) { /* merge a run */
        v->data[v->len - 2] = hi;
        return 0;
    }
    if (vec_reserve(v, v->len + 3) < 0)
        return NOMEM;
    v->data[v->len++] = lo, v->data[v->len++] = hi, v->data[v->len++] = t;
    return 0;
}

/* (payload lo, hi, target) runs for the k continuation bytes read from `state`, appended to out */
static int continuations(Sp *sp, int32_t state, int k, Vec *out) {
    Py_ssize_t at = sp->cont_at[(Py_ssize_t)state * 4 + k];
    if (at < 0) {
        Vec runs = {0};
        int32_t p = 1 << (6 * (k - 1));
        const int32_t *row = sp->raw + (Py_ssize_t)state * 256;
        for (int c = 0; c < 64; c++) {
            int32_t t = row[0x80 + c];
            if (t < 0)
                continue;
            if (k == 1) {
                if (push3(&runs, c, c, t) < 0)
                    return vec_free(&runs), NOMEM;
            } else {
                Vec sub = {0};
                if (continuations(sp, t, k - 1, &sub) < 0)
                    return vec_free(&runs), vec_free(&sub), NOMEM;
                for (Py_ssize_t i = 0; i < sub.len; i += 3)
                    if (push3(&runs, c * p + sub.data[i], c * p + sub.data[i + 1], sub.data[i + 2]) < 0)
                        return vec_free(&runs), vec_free(&sub), NOMEM;
                vec_free(&sub);
            }
        }
        at = sp->cont_pool.len;
        if (vec_push(&sp->cont_pool, (int32_t)runs.len) < 0 || vec_reserve(&sp->cont_pool, sp->cont_pool.len + runs.len) < 0)
            return vec_free(&runs), NOMEM;
        if (runs.len)
            memcpy(sp->cont_pool.data + sp->cont_pool.len, runs.data, sizeof(int32_t) * (size_t)runs.len);
        sp->cont_pool.len += runs.len;
        sp->cont_at[(Py_ssize_t)state * 4 + k] = (int32_t)at;
        vec_free(&runs);
    }
    int32_t count = sp->cont_pool.data[at];
    for (int32_t i = 0; i < count; i += 3) {
        const int32_t *r = sp->cont_pool.data + at + 1 + i;
        if (push3(out, r[0], r[1], r[2]) < 0)
            return NOMEM;
    }
    return 0;
}

/* (code point lo, hi, target) for the whole characters read from a state between characters */
static int characters(Sp *sp, int32_t s, Vec *out) {
    static const int leads[3][4] = {{0xC2, 0xDF, 1, 0x1F}, {0xE0, 0xEF, 2, 0x0F}, {0xF0, 0xF4, 3, 0x07}};
    const int32_t *row = sp->raw + (Py_ssize_t)s * 256;
    out->len = 0;
    for (int b = 0; b < 0x80; b++)
        if (row[b] >= 0 && push3(out, b, b, row[b]) < 0)
            return NOMEM;
    for (int l = 0; l < 3; l++)
        for (int b = leads[l][0]; b <= leads[l][1]; b++) {
            if (row[b] < 0)
                continue;
            int k = leads[l][2];
            int32_t base = (b & leads[l][3]) << (6 * k);
            Vec sub = {0};
            if (continuations(sp, row[b], k, &sub) < 0)
                return vec_free(&sub), NOMEM;
            for (Py_ssize_t i = 0; i < sub.len; i += 3)
                if (push3(out, base + sub.data[i], base + sub.data[i + 1], sub.data[i + 2]) < 0)
                    return vec_free(&sub), NOMEM;
            vec_free(&sub);
        }
    return 0;
}

static int32_t trie(Sp *sp, const int32_t *sig, Py_ssize_t count, int width);

/* After a high surrogate: "\u" and a low surrogate out of low signature `id`. */
static int32_t pair(Sp *sp, int32_t id) {
    if (sp->pair_state.data[id] >= 0)
        return sp->pair_state.data[id];
    int32_t got = new_state(sp), u;
    if (got < 0)
        return got;
    sp->pair_state.data[id] = got;
    if ((u = new_state(sp)) < 0)
        return u;
    set_edge(sp, got, '\\', u);
    /* the signature lives in the pool, which trie() does not grow: a stable pointer */
    int32_t child = trie(sp, sp->lows.pool.data + sp->lows.start.data[id], sp->lows.len.data[id], 4);
    if (child < 0)
        return child;
    set_edge(sp, u, 'u', child);
    return got;
}

/* The state reading `width` hex digits, then going where sig ((lo, hi, cont) triples over
 * disjoint, ascending value ranges) sends their value. */
static int32_t trie(Sp *sp, const int32_t *sig, Py_ssize_t count, int width) {
    if (width == 0) {
        int32_t cont = sig[2];
        return cont >= 0 ? cont : pair(sp, PAIR_ID(cont));
    }
    Vec key = {0};
    if (vec_reserve(&key, 1 + count) < 0)
        return NOMEM;
    key.data[0] = width;
    memcpy(key.data + 1, sig, sizeof(int32_t) * (size_t)count);
    int added;
    int32_t id = table_id(&sp->tries, key.data, 1 + count, &added);
    vec_free(&key);
    if (id < 0)
        return id;
    if (!added)
        return sp->trie_state.data[id];
    int32_t got = new_state(sp);
    if (got < 0 || vec_push(&sp->trie_state, got) < 0)
        return got < 0 ? got : NOMEM;
    int32_t p = 1 << (4 * (width - 1));
    Vec sub = {0};
    for (int d = 0; d < 16; d++) {
        int32_t base = d * p, top = base + p - 1;
        sub.len = 0;
        for (Py_ssize_t i = 0; i < count; i += 3) {
            int32_t lo = sig[i], hi = sig[i + 1];
            if (lo <= top && hi >= base) {
                if (vec_reserve(&sub, sub.len + 3) < 0)
                    return vec_free(&sub), NOMEM;
                sub.data[sub.len++] = (lo > base ? lo : base) - base;
                sub.data[sub.len++] = (hi < top ? hi : top) - base;
                sub.data[sub.len++] = sig[i + 2];
            }
        }
        if (!sub.len)
            continue;
        int32_t child = trie(sp, sub.data, sub.len, width - 1);
        if (child < 0)
            return vec_free(&sub), child;
        set_edge(sp, got, "0123456789abcdef"[d], child);
        set_edge(sp, got, "0123456789ABCDEF"[d], child);
    }
    vec_free(&sub);
    return got;
}

static int cmp_lo(const void *a, const void *b) {
    int32_t x = ((const int32_t *)a)[0], y = ((const int32_t *)b)[0];
    return x < y ? -1 : x > y;
}

static int32_t target_of(const Vec *chars, int32_t cp) {
    for (Py_ssize_t i = 0; i < chars->len; i += 3)
        if (chars->data[i] <= cp && cp <= chars->data[i + 1])
            return chars->data[i + 2];
    return -1;
}

/* Append the high-surrogate entries for the supplementary runs (offsets above U+10000, ascending):
 * one low signature per high surrogate; neighbours with the same signature share an entry. */
static int surrogates(Sp *sp, const Vec *supp, Vec *sig) {
    Vec lows = {0};
    int32_t high = -1;
    for (Py_ssize_t i = 0; i <= supp->len; i += 3) {
        int32_t lo = i < supp->len ? supp->data[i] : -1, hi = i < supp->len ? supp->data[i + 1] : -1, t = i < supp->len ? supp->data[i + 2] : -1;
        while (1) {
            int32_t h = lo >= 0 ? lo >> 10 : -1;
            if (h != high && high >= 0) { /* close the high surrogate's signature */
                int added;
                int32_t id = table_id(&sp->lows, lows.data, lows.len, &added);
                if (id < 0 || (added && vec_push(&sp->pair_state, -1) < 0))
                    return vec_free(&lows), NOMEM;
                int32_t cp = 0xD800 + high;
                Py_ssize_t n = sig->len;
                if (n >= 3 && sig->data[n - 1] == PAIR(id) && sig->data[n - 2] + 1 == cp)
                    sig->data[n - 2] = cp;
                else if (push3(sig, cp, cp, PAIR(id)) < 0)
                    return vec_free(&lows), NOMEM;
                lows.len = 0;
            }
            high = h;
            if (lo < 0)
                break;
            if (!lows.len && !(lo & 0x3FF) && hi >= ((h << 10) | 0x3FF)) {
                /* whole high surrogates h..h_end read every low one towards t: one signature, one
                 * entry (a state reading any character met 1,024 of them, one intern each) */
                int32_t h_end = ((hi + 1) >> 10) - 1, full[3] = {0xDC00, 0xDFFF, t};
                int added;
                int32_t id = table_id(&sp->lows, full, 3, &added);
                if (id < 0 || (added && vec_push(&sp->pair_state, -1) < 0) || push3(sig, 0xD800 + h, 0xD800 + h_end, PAIR(id)) < 0)
                    return vec_free(&lows), NOMEM;
                high = -1;
                if (((h_end << 10) | 0x3FF) == hi)
                    break;
                lo = (h_end + 1) << 10;
                continue;
            }
            int32_t last = hi < ((h << 10) | 0x3FF) ? hi : ((h << 10) | 0x3FF);
            if (push3(&lows, 0xDC00 + (lo & 0x3FF), 0xDC00 + (last & 0x3FF), t) < 0)
                return vec_free(&lows), NOMEM;
            if (last == hi)
                break;
            lo = last + 1;
        }
        if (lo < 0)
            break;
    }
    vec_free(&lows);
    return 0;
}

/* The state after a backslash for a state whose characters are `chars`, or -1 for none. */
static int32_t escapes(Sp *sp, Vec *chars) {
    static const int32_t short_cp[8] = {0x22, 0x5C, 0x2F, 0x08, 0x0C, 0x0A, 0x0D, 0x09};
    static const char short_letter[8] = {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'};
    static const int32_t not_plain[4][2] = {{0, 0x1F}, {0x22, 0x22}, {0x5C, 0x5C}, {0x7F, 0x10FFFF}};
    Vec kept = {0}, sig = {0}, supp = {0};
    int32_t result = NOMEM;
    Vec *use = chars;
    if (!sp->all) { /* printable ASCII other than '"' and '\\' only raw */
        for (Py_ssize_t i = 0; i < chars->len; i += 3)
            for (int j = 0; j < 4; j++) {
                int32_t a = chars->data[i] > not_plain[j][0] ? chars->data[i] : not_plain[j][0];
                int32_t b = chars->data[i + 1] < not_plain[j][1] ? chars->data[i + 1] : not_plain[j][1];
                if (a <= b && push3(&kept, a, b, chars->data[i + 2]) < 0)
                    goto done;
            }
        use = &kept;
    }
    for (Py_ssize_t i = 0; i < use->len; i += 3) {
        int32_t lo = use->data[i], hi = use->data[i + 1], t = use->data[i + 2];
        int32_t a = lo, b = hi < 0xD7FF ? hi : 0xD7FF;
        if (a <= b && push3(&sig, a, b, t) < 0)
            goto done;
        a = lo > 0xE000 ? lo : 0xE000, b = hi < 0xFFFF ? hi : 0xFFFF;
        if (a <= b && push3(&sig, a, b, t) < 0)
            goto done;
        if (hi >= 0x10000 && push3(&supp, (lo > 0x10000 ? lo : 0x10000) - 0x10000, hi - 0x10000, t) < 0)
            goto done;
    }
    if (surrogates(sp, &supp, &sig) < 0)
        goto done;
    qsort(sig.data, (size_t)(sig.len / 3), 3 * sizeof(int32_t), cmp_lo);
    int32_t short_target[8];
    int any_short = 0;
    for (int j = 0; j < 8; j++)
        any_short |= (short_target[j] = target_of(use, short_cp[j])) >= 0;
    if (!sig.len && !any_short) {
        result = -1;
        goto done;
    }
    int32_t key[9];  /* what the state after '\\' leads to: states with equal keys are one */
    memcpy(key, short_target, sizeof(short_target));
    key[8] = -1;
    if (sig.len && (key[8] = trie(sp, sig.data, sig.len, 4)) < 0) {
        result = key[8];
        goto done;
    }
    int added;
    int32_t id = table_id(&sp->escs, key, 9, &added), e;
    if (id < 0)
        goto done;
    if (!added) {
        result = sp->esc_state.data[id];
        goto done;
    }
    if ((e = new_state(sp)) < 0 || vec_push(&sp->esc_state, e) < 0) {
        result = e < 0 ? e : NOMEM;
        goto done;
    }
    for (int j = 0; j < 8; j++)
        if (short_target[j] >= 0)
            set_edge(sp, e, short_letter[j], short_target[j]);
    if (key[8] >= 0)
        set_edge(sp, e, 'u', key[8]);
    result = e;
done:
    vec_free(&kept), vec_free(&sig), vec_free(&supp);
    return result;
}

static int any_at(const int32_t *row, int lo, int hi) {
    for (int b = lo; b <= hi; b++)
        if (row[b] >= 0)
            return 1;
    return 0;
}

static int reads_forbidden(const int32_t *row) { return any_at(row, 0, 0x1F) || row[0x22] >= 0 || row[0x5C] >= 0; }

static int same_column(const Sp *sp, Py_ssize_t n, int32_t a, int32_t b) {
    for (Py_ssize_t s = 0; s < n; s++)
        if (sp->rows.data[s * sp->k + a] != sp->rows.data[s * sp->k + b])
            return 0;
    return 1;
}

/* Classes whose columns came out equal (the escapes' bytes, apart while the tries were made, and
 * runs the raw table had apart) become one, numbered by first byte, and the rows shrink to them:
 * what minimising and every later step cost grows with the classes (65 against 33 for a
 * 30,000-state result made its minimisation 1.7x as long). */
static void merge_classes(Sp *sp) {
    int32_t k = sp->k, m = 0, to[256], rep[256];
    Py_ssize_t n = sp->rows.len / k;
    uint64_t h[256];
    for (int32_t c = 0; c < k; c++)
        h[c] = 0x9e3779b97f4a7c15ULL;
    for (Py_ssize_t s = 0; s < n; s++) {
        const int32_t *row = sp->rows.data + s * k;
        for (int32_t c = 0; c < k; c++)
            h[c] = (h[c] ^ (uint32_t)row[c]) * 0x632be59bd9b4e019ULL;
    }
    for (int32_t c = 0; c < k; c++) { /* classes are in byte order: so are the merged ones */
        to[c] = -1;
        for (int32_t j = 0; j < m && to[c] < 0; j++)
            if (h[rep[j]] == h[c] && same_column(sp, n, rep[j], c))
                to[c] = j;
        if (to[c] < 0)
            rep[m] = c, to[c] = m++;
    }
    if (m == k)
        return;
    for (Py_ssize_t s = 0; s < n; s++) /* in place: a read is never below the writes before it */
        for (int32_t j = 0; j < m; j++)
            sp->rows.data[s * m + j] = sp->rows.data[s * k + rep[j]];
    sp->rows.len = n * m;
    for (int b = 0; b < 256; b++)
        sp->cls[b] = (uint8_t)to[sp->cls[b]];
    sp->k = m;
}

static PyObject *spell(PyObject *self, PyObject *args) {
    Py_buffer table, accepting;
    long max_states;
    int all;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "y*y*lp|d", &table, &accepting, &max_states, &all, &deadline))
        return NULL;
    PyObject *result = NULL;
    Sp sp = {0};
    Vec chars = {0};
    int32_t n = (int32_t)(table.len / (256 * sizeof(int32_t)));
    if ((Py_ssize_t)n * 256 * (Py_ssize_t)sizeof(int32_t) != table.len || accepting.len != n || n == 0) {
        PyErr_SetString(PyExc_ValueError, "spell: a table of 256 int32 entries per state and one accepting byte per state");
        goto out;
    }
    sp.raw = (const int32_t *)table.buf, sp.n = n, sp.all = all, sp.deadline = deadline;
    sp.max_states = max_states > INT32_MAX ? INT32_MAX : (int32_t)max_states;
    const uint8_t *acc = (const uint8_t *)accepting.buf;
    int forbidden = 0, reads_any = 0;
    uint8_t *reads = (uint8_t *)calloc((size_t)n, 1);
    sp.cont_at = (int32_t *)malloc(sizeof(int32_t) * (size_t)n * 4);
    if (!reads || !sp.cont_at) {
        free(reads);
        PyErr_NoMemory();
        goto out;
    }
    memset(sp.cont_at, 0xff, sizeof(int32_t) * (size_t)n * 4);
    for (int32_t s = 0; s < n; s++) {
        const int32_t *row = sp.raw + (Py_ssize_t)s * 256;
        int f = reads_forbidden(row);
        forbidden |= f;
        reads[s] = all ? (any_at(row, 0, 0x7F) || any_at(row, 0xC2, 0xF4)) : (f || any_at(row, 0x7F, 0xF4));
        reads_any |= reads[s];
    }
    if (!forbidden && !reads_any) { /* plain printable ASCII throughout: spelled as itself */
        free(reads);
        result = Py_BuildValue("(y#y#O)", (const char *)table.buf, table.len, (const char *)accepting.buf, accepting.len, Py_None);
        goto out;
    }
    int32_t code = 0;
    int32_t k = sp.k = out_classes(sp.raw, n, sp.cls);
    if (vec_reserve(&sp.rows, (Py_ssize_t)n * k) < 0 || vec_reserve(&sp.acc, n) < 0) {
        code = NOMEM;
        goto spelled;
    }
    for (int32_t s = 0; s < n; s++) { /* a class's bytes share their raw column: its first byte's */
        const int32_t *row = sp.raw + (Py_ssize_t)s * 256;
        int32_t *out = sp.rows.data + (Py_ssize_t)s * k;
        for (int b = 0; b < 256; b++)
            out[sp.cls[b]] = row[b];
    }
    sp.rows.len = (Py_ssize_t)n * k;
    for (int32_t s = 0; s < n; s++)
        sp.acc.data[sp.acc.len++] = acc[s] != 0;
    if (forbidden) /* the controls, '"' and '\\' are classes of their own */
        for (int32_t s = 0; s < n; s++) {
            int32_t *row = sp.rows.data + (Py_ssize_t)s * k;
            for (int b = 0; b < 0x20; b++)
                row[sp.cls[b]] = -1;
            row[sp.cls[0x22]] = row[sp.cls[0x5C]] = -1;
        }
    for (int32_t s = 0; s < n; s++) { /* mid-character states read no lead byte: only these get escapes */
        if (!reads[s])
            continue;
        if (!(s & 255) && deadline > 0 && now() > deadline) {
            code = LATE;
            goto spelled;
        }
        if (characters(&sp, s, &chars) < 0) {
            code = NOMEM;
            goto spelled;
        }
        int32_t e = escapes(&sp, &chars);
        if (e < -1) {
            code = e;
            goto spelled;
        }
        if (e >= 0)
            set_edge(&sp, s, 0x5C, e);
    }
spelled:
    free(reads);
    if (code == NOMEM) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
    } else if (code == LIMIT) {
        result = Py_None, Py_INCREF(Py_None);
    } else if (code == LATE) {
        result = Py_False, Py_INCREF(Py_False);
    } else {
        merge_classes(&sp);
        PyObject *accepting_out = PyBytes_FromStringAndSize(NULL, sp.acc.len);
        if (accepting_out) {
            char *p = PyBytes_AS_STRING(accepting_out);
            for (Py_ssize_t i = 0; i < sp.acc.len; i++)
                p[i] = (char)sp.acc.data[i];
            result = Py_BuildValue("(y#Ny#)", (const char *)sp.rows.data, (Py_ssize_t)(sizeof(int32_t) * (size_t)sp.rows.len), accepting_out,
                                   (const char *)sp.cls, (Py_ssize_t)256);
        }
    }
out:
    vec_free(&chars);
    vec_free(&sp.rows), vec_free(&sp.acc), vec_free(&sp.trie_state), vec_free(&sp.pair_state), vec_free(&sp.esc_state), vec_free(&sp.cont_pool);
    interner_free(&sp.tries), interner_free(&sp.lows), interner_free(&sp.escs);
    free(sp.cont_at);
    PyBuffer_Release(&table), PyBuffer_Release(&accepting);
    return result;
}

static PyMethodDef methods[] = {
    {"spell", spell, METH_VARARGS,
     "spell(table, accepting, max_states, all_spellings, deadline=0): the JSON spellings' DFA as "
     "(table, accepting, classmap) bytes (classmap None: 256 wide); None past max_states; False past the deadline."},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "strictgen.regular._spelling", "Every JSON spelling of a string DFA.", -1, methods};

PyMODINIT_FUNC PyInit__spelling(void) { return PyModule_Create(&module); }
