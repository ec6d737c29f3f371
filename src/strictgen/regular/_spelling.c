/* Every JSON spelling of a string language, on its byte-level DFA (see grammar/json_spelling.py,
 * which holds the policy; this is the work, in C because it visits every state and character).
 *
 * spell(table, accepting, max_states, all_spellings, deadline, classmap) -> (table, accepting, classmap) | None | False
 *   table: int32 bytes, k next states per state (-1 dead), state 0 the start, over raw UTF-8, by the
 *   byte classes of classmap (k = its largest class + 1; None: 256 wide), as DFA.compact() gives it.
 *   Result: the DFA, by byte class, of the JSON string bodies (between the quotes) decoding into the
 *   language: raw characters except '"', '\\' and U+0000..U+001F, short escapes, \uXXXX in either
 *   case, surrogate pairs. Beside every state between characters sits a trie of escapes that
 *   leads where the escaped character leads; tries are hash-consed by what they lead to.
 *   With all_spellings false, printable ASCII is only raw and only other characters get escapes.
 *   None: more than max_states states would be needed. False: the deadline passed.
 *   The result's classes are the raw table's runs of bytes in one class, cut around every byte an
 *   escape reads: rows of k, not 256, entries (a 30,000-state result was 30 MB to write, copy and
 *   read again for its classes, most of spelling's time); the raw table is read by class too, never
 *   widened to 256 (that and the 256-wide scans were a third of a small spelling's time). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "_vec.h"
#include "_gil.h"

enum { LIMIT = -2, LATE = -3, NOMEM = -4 };

static int too_many(void) { return -1; } /* never: these interners have no bound */
#include "_intern.h"
#include "_columns.h"

/* the id of xs[0:n] in t (added when new); NOMEM on failure */
static int32_t table_id(Interner *t, const int32_t *xs, Py_ssize_t n, int *added) {
    int32_t id = intern(t, xs, n, -1, added);
    return id < 0 ? NOMEM : id;
}

typedef struct {
    const int32_t *raw;   /* n rows of kin entries, by the input's classes */
    int32_t kin;
    uint8_t cin[256];     /* the input's byte classes */
    int32_t nruns;        /* the input's runs of bytes of one class: run_lo[i]..run_lo[i + 1] - 1 */
    int16_t run_lo[257];
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

/* raw state s's next state on byte b */
static inline int32_t raw_next(const Sp *sp, int32_t s, int b) { return sp->raw[(Py_ssize_t)s * sp->kin + sp->cin[b]]; }

static inline int push3(Vec *v, int32_t lo, int32_t hi, int32_t t) {
    if (v->len >= 3 && v->data[v->len - 1] == t && v->data[v->len - 2] + 1 == lo) { /* merge a run */
        v->data[v->len - 2] = hi;
        return 0;
    }
    if (vec_reserve(v, v->len + 3) < 0)
        return NOMEM;
    v->data[v->len++] = lo, v->data[v->len++] = hi, v->data[v->len++] = t;
    return 0;
}

/* (lo - base, hi - base, target) for state s's runs of bytes lo..hi in [from, to], appended to out:
 * a run at a time, not a byte (a state's ASCII was 128 reads and appends) */
static int byte_runs(const Sp *sp, int32_t s, int from, int to, int base, Vec *out) {
    for (int32_t i = 0; i < sp->nruns; i++) {
        int lo = sp->run_lo[i] > from ? sp->run_lo[i] : from, hi = sp->run_lo[i + 1] - 1 < to ? sp->run_lo[i + 1] - 1 : to;
        if (lo > hi)
            continue;
        int32_t t = raw_next(sp, s, lo);
        if (t >= 0 && push3(out, lo - base, hi - base, t) < 0)
            return NOMEM;
    }
    return 0;
}

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
static const char apart[] = "\"\\/bfnrtu0123456789abcdefABCDEF"; /* the bytes escapes read */

/* The result's classes (into cls; their number): runs of bytes in one input class, cut around the
 * bytes escapes read (each its own class) and after the controls (dead everywhere). */
static int32_t out_classes(const uint8_t *cin, uint8_t *cls) {
    uint8_t cut[257] = {0};
    cut[0] = cut[0x20] = 1;
    for (const char *c = apart; *c; c++)
        cut[(uint8_t)*c] = cut[(uint8_t)*c + 1] = 1;
    for (int b = 1; b < 256; b++)
        cut[b] |= cin[b] != cin[b - 1];
    int32_t k = -1;
    for (int b = 0; b < 256; b++)
        cls[b] = (uint8_t)(k += cut[b]);
    return k + 1;
}

/* (payload lo, hi, target) runs for the k continuation bytes read from `state`, each payload plus
 * `base`, appended to out (the runs are remembered by (state, k) in cont_pool) */
static int continuations(Sp *sp, int32_t state, int k, int32_t base, Vec *out) {
    Py_ssize_t at = sp->cont_at[(Py_ssize_t)state * 4 + k];
    if (at < 0) {
        Vec runs = {0};
        int32_t p = 1 << (6 * (k - 1));
        if (k == 1 && byte_runs(sp, state, 0x80, 0xBF, 0x80, &runs) < 0)
            return vec_free(&runs), NOMEM;
        for (int c = 0; k > 1 && c < 64; c++) {
            int32_t t = raw_next(sp, state, 0x80 + c);
            if (t >= 0 && continuations(sp, t, k - 1, c * p, &runs) < 0)
                return vec_free(&runs), NOMEM;
        }
        at = sp->cont_pool.len;
        if (vec_reserve(&sp->cont_pool, sp->cont_pool.len + 1 + runs.len) < 0)
            return vec_free(&runs), NOMEM;
        sp->cont_pool.data[sp->cont_pool.len++] = (int32_t)runs.len;
        if (runs.len)
            memcpy(sp->cont_pool.data + sp->cont_pool.len, runs.data, sizeof(int32_t) * (size_t)runs.len);
        sp->cont_pool.len += runs.len;
        sp->cont_at[(Py_ssize_t)state * 4 + k] = (int32_t)at;
        vec_free(&runs);
    }
    int32_t count = sp->cont_pool.data[at];
    for (int32_t i = 0; i < count; i += 3) {
        const int32_t *r = sp->cont_pool.data + at + 1 + i;
        if (push3(out, base + r[0], base + r[1], r[2]) < 0)
            return NOMEM;
    }
    return 0;
}

/* (code point lo, hi, target) for the whole characters read from a state between characters */
static int characters(Sp *sp, int32_t s, Vec *out) {
    static const int leads[3][4] = {{0xC2, 0xDF, 1, 0x1F}, {0xE0, 0xEF, 2, 0x0F}, {0xF0, 0xF4, 3, 0x07}};
    out->len = 0;
    if (byte_runs(sp, s, 0, 0x7F, 0, out) < 0)
        return NOMEM;
    for (int l = 0; l < 3; l++)
        for (int b = leads[l][0]; b <= leads[l][1]; b++) {
            int32_t t = raw_next(sp, s, b);
            int k = leads[l][2];
            if (t >= 0 && continuations(sp, t, k, (b & leads[l][3]) << (6 * k), out) < 0)
                return NOMEM;
        }
    return 0;
}

static int32_t trie(Sp *sp, const int32_t *key, Py_ssize_t len);

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
    /* the key (4, signature) lives in the pool, which trie() does not grow: a stable pointer */
    int32_t child = trie(sp, sp->lows.pool.data + sp->lows.start.data[id], sp->lows.len.data[id]);
    if (child < 0)
        return child;
    set_edge(sp, u, 'u', child);
    return got;
}

/* The state reading key[0] (the width) hex digits, then going where the signature key[1..len)
 * ((lo, hi, cont) triples over disjoint, ascending value ranges) sends their value. The key is
 * its interning key as it is: no copy a call. */
static int32_t trie(Sp *sp, const int32_t *key, Py_ssize_t len) {
    int width = key[0];
    const int32_t *sig = key + 1;
    Py_ssize_t count = len - 1;
    if (width == 0) {
        int32_t cont = sig[2];
        return cont >= 0 ? cont : pair(sp, PAIR_ID(cont));
    }
    int added;
    int32_t id = table_id(&sp->tries, key, len, &added);
    if (id < 0)
        return id;
    if (!added)
        return sp->trie_state.data[id];
    int32_t got = new_state(sp);
    if (got < 0 || vec_push(&sp->trie_state, got) < 0)
        return got < 0 ? got : NOMEM;
    int shift = 4 * (width - 1);
    int32_t p = 1 << shift;
    Vec sub = {0}; /* a digit's key: the width, then at most all of sig's runs */
    if (vec_reserve(&sub, len) < 0)
        return NOMEM;
    sub.data[0] = width - 1;
    /* sig is sorted and disjoint: each digit's runs follow the last digit's (one shared at most) */
    for (Py_ssize_t i = 0, d = 0; i < count; d++) {
        if (d < sig[i] >> shift)
            d = sig[i] >> shift;
        int32_t base = (int32_t)d * p, top = base + p - 1;
        sub.len = 1;
        for (; i < count && sig[i] <= top; i += 3) {
            sub.data[sub.len++] = (sig[i] > base ? sig[i] : base) - base;
            sub.data[sub.len++] = (sig[i + 1] < top ? sig[i + 1] : top) - base;
            sub.data[sub.len++] = sig[i + 2];
        }
        if (sig[i - 2] > top) /* the last run goes on into the next digit */
            i -= 3;
        int32_t child = trie(sp, sub.data, sub.len);
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
    Vec lows = {0}; /* a trie key: 4, then the low surrogates' runs */
    int32_t high = -1;
    if (vec_push(&lows, 4) < 0)
        return NOMEM;
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
                lows.len = 1;
            }
            high = h;
            if (lo < 0)
                break;
            if (lows.len == 1 && !(lo & 0x3FF) && hi >= ((h << 10) | 0x3FF)) {
                /* whole high surrogates h..h_end read every low one towards t: one signature, one
                 * entry (a state reading any character met 1,024 of them, one intern each) */
                int32_t h_end = ((hi + 1) >> 10) - 1, full[4] = {4, 0xDC00, 0xDFFF, t};
                int added;
                int32_t id = table_id(&sp->lows, full, 4, &added);
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
    Vec kept = {0}, sig = {0}, supp = {0}; /* sig: the \\u trie's key, 4 then the runs */
    int32_t result = NOMEM;
    Vec *use = chars;
    if (vec_push(&sig, 4) < 0)
        goto done;
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
    qsort(sig.data + 1, (size_t)(sig.len / 3), 3 * sizeof(int32_t), cmp_lo);
    int32_t short_target[8];
    int any_short = 0;
    for (int j = 0; j < 8; j++)
        any_short |= (short_target[j] = target_of(use, short_cp[j])) >= 0;
    if (sig.len == 1 && !any_short) {
        result = -1;
        goto done;
    }
    int32_t key[9];  /* what the state after '\\' leads to: states with equal keys are one */
    memcpy(key, short_target, sizeof(short_target));
    key[8] = -1;
    if (sig.len > 1 && (key[8] = trie(sp, sig.data, sig.len)) < 0) {
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

/* What reading a byte asks of a state (a bit each): it is a control, '"' or '\\' (read raw only
 * in the input); it starts a character; it is not printable ASCII (DEL or a lead byte); and (not
 * about reading) an escape reads it */
enum { FORBIDDEN = 1, STARTS = 2, NOT_PRINTABLE = 4, APART = 8 };

static uint8_t byte_kind[256]; /* each byte's kinds, set once when the module loads */

static void set_byte_kinds(void) {
    for (int b = 0; b < 256; b++)
        byte_kind[b] = (uint8_t)((b < 0x20 || b == 0x22 || b == 0x5C ? FORBIDDEN : 0) | (b < 0x80 || (b >= 0xC2 && b <= 0xF4) ? STARTS : 0) |
                                 (b >= 0x7F && b <= 0xF4 ? NOT_PRINTABLE : 0) | (b && strchr(apart, b) ? APART : 0));
}

static int same_column(const Sp *sp, Py_ssize_t from, Py_ssize_t to, int32_t a, int32_t b) {
    for (Py_ssize_t s = from; s < to; s++)
        if (sp->rows.data[s * sp->k + a] != sp->rows.data[s * sp->k + b])
            return 0;
    return 1;
}

/* Classes whose columns came out equal (the escapes' bytes, apart while the tries were made, and
 * runs the input had apart) become one, numbered by first byte: rep[j] the first class of merged
 * class j, to[c] the merged class of class c; their number. What minimising and every later step
 * cost grows with the classes (65 against 33 for a 30,000-state result made its minimisation
 * 1.7x as long). Only classes of one group can be equal (`group`: by the raw column their bytes
 * read, see spell()); two of one group that are not `forbidden` have equal raw rows, and escape
 * rows only read the bytes escapes read (`apart`), so two such classes of neither kind are equal
 * unread, and one apart is compared on the escape rows alone. */
static int32_t merged_classes(const Sp *sp, const int32_t *group, const uint8_t *kind, int32_t *rep, int32_t *to) {
    int32_t k = sp->k, m = 0;
    Py_ssize_t n = sp->rows.len / k;
    for (int32_t c = 0; c < k; c++) { /* classes are in byte order: so are the merged ones */
        to[c] = -1;
        for (int32_t j = 0; j < m && to[c] < 0; j++) {
            int32_t r = rep[j], either = kind[r] | kind[c];
            if (group[r] == group[c] && (!either || (same_column(sp, sp->n, n, r, c) && (either & FORBIDDEN ? same_column(sp, 0, sp->n, r, c) : 1))))
                to[c] = j;
        }
        if (to[c] < 0)
            rep[m] = c, to[c] = m++;
    }
    return m;
}

/* The result (table by merged class, accepting, classmap), each written once, straight from the rows */
static PyObject *result_tuple(const Sp *sp, const int32_t *group, const uint8_t *kind) {
    int32_t rep[256], to[256], k = sp->k, m = merged_classes(sp, group, kind, rep, to);
    Py_ssize_t n = sp->rows.len / k;
    PyObject *table = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int32_t) * n * m);
    PyObject *accepting = PyBytes_FromStringAndSize(NULL, n);
    if (!table || !accepting) {
        Py_XDECREF(table), Py_XDECREF(accepting);
        return NULL;
    }
    int32_t *out = (int32_t *)PyBytes_AS_STRING(table);
    for (Py_ssize_t s = 0; s < n; s++)
        for (int32_t j = 0; j < m; j++)
            out[s * m + j] = sp->rows.data[s * k + rep[j]];
    char *acc = PyBytes_AS_STRING(accepting);
    for (Py_ssize_t s = 0; s < n; s++)
        acc[s] = (char)sp->acc.data[s];
    uint8_t cls[256];
    for (int b = 0; b < 256; b++)
        cls[b] = (uint8_t)to[sp->cls[b]];
    return Py_BuildValue("(NNy#)", table, accepting, (const char *)cls, (Py_ssize_t)256);
}

static PyObject *spell(PyObject *self, PyObject *args) {
    Py_buffer table, accepting, classmap = {0};
    long max_states;
    int all;
    double deadline = 0;
    PyObject *classmap_arg = Py_None;
    if (!PyArg_ParseTuple(args, "y*y*lp|dO", &table, &accepting, &max_states, &all, &deadline, &classmap_arg))
        return NULL;
    PyObject *result = NULL;
    Sp sp = {0};
    Vec chars = {0};
    uint8_t *reads = NULL;
    PyThreadState *ts = NULL;
    if (classmap_arg != Py_None && PyObject_GetBuffer(classmap_arg, &classmap, PyBUF_SIMPLE) < 0)
        goto out;
    if (classmap.obj && classmap.len != 256) {
        PyErr_SetString(PyExc_ValueError, "spell: a classmap of 256 bytes");
        goto out;
    }
    for (int b = 0; b < 256; b++) {
        sp.cin[b] = classmap.obj ? ((const uint8_t *)classmap.buf)[b] : (uint8_t)b;
        sp.kin = sp.cin[b] >= sp.kin ? sp.cin[b] + 1 : sp.kin;
        if (!b || sp.cin[b] != sp.cin[b - 1])
            sp.run_lo[sp.nruns++] = (int16_t)b;
    }
    sp.run_lo[sp.nruns] = 256;
    int32_t n = (int32_t)accepting.len, kin = sp.kin;
    if ((Py_ssize_t)n * kin * (Py_ssize_t)sizeof(int32_t) != table.len || n == 0) {
        PyErr_SetString(PyExc_ValueError, "spell: a table of one int32 entry per state and class and one accepting byte per state");
        goto out;
    }
    sp.raw = (const int32_t *)table.buf, sp.n = n, sp.all = all, sp.deadline = deadline;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)n * kin; i++)
        if (sp.raw[i] < -1 || sp.raw[i] >= n) {
            PyErr_SetString(PyExc_ValueError, "spell: a target out of range");
            goto out;
        }
    sp.max_states = max_states > INT32_MAX ? INT32_MAX : (int32_t)max_states;
    const uint8_t *acc = (const uint8_t *)accepting.buf;
    int kinds[256] = {0}, forbidden = 0; /* plain printable ASCII throughout comes out as itself */
    for (int b = 0; b < 256; b++)
        kinds[sp.cin[b]] |= byte_kind[b];
    reads = (uint8_t *)calloc((size_t)n, 1);
    sp.cont_at = (int32_t *)malloc(sizeof(int32_t) * (size_t)n * 4);
    if (!reads || !sp.cont_at) {
        PyErr_NoMemory();
        goto out;
    }
    memset(sp.cont_at, 0xff, sizeof(int32_t) * (size_t)n * 4);
    for (int32_t s = 0; s < n; s++) {
        int read = 0;
        for (int32_t c = 0; c < kin; c++)
            read |= sp.raw[(Py_ssize_t)s * kin + c] >= 0 ? kinds[c] : 0;
        forbidden |= read & FORBIDDEN;
        reads[s] = (read & (all ? STARTS : FORBIDDEN | NOT_PRINTABLE)) != 0;
    }
    /* From here to `spelled` the work is C data only, so a big spelling lets the GIL go (threads
     * building rules at once spell in parallel): the raw table, accepting flags and classmap are
     * held by their Py_buffer views until `out` (exported, so not resizable; spelled_dfa passes
     * bytes, which nothing can change), everything written is this call's own (sp, reads,
     * chars), the byte kinds are read only, the deadline is a plain number; a failure is a
     * status code, and a MemoryError from the vectors takes the GIL for its moment (_vec.h). */
    ts = let_go_if((Py_ssize_t)n * kin);
    int32_t code = 0, canon[256], group[256];
    int32_t k = sp.k = out_classes(sp.cin, sp.cls);
    /* room for the usual result at once (escapes made ~2.4x the raw states on the bench): growing
     * the rows by doubling was a tenth of the time, in copies */
    if (canonical_columns(sp.raw, n, kin, canon) < 0 || vec_reserve(&sp.rows, ((Py_ssize_t)n * 3 + 64) * k) < 0 ||
        vec_reserve(&sp.acc, (Py_ssize_t)n * 3 + 64) < 0) {
        code = NOMEM;
        goto spelled;
    }
    int32_t first[256], dead = kin; /* each output class's first byte; the group of a raw column all dead */
    for (int32_t c = 0; c < kin && dead == kin; c++) {
        Py_ssize_t s = 0;
        while (s < n && sp.raw[s * kin + c] < 0)
            s++;
        dead = s == n ? canon[c] : kin;
    }
    for (int b = 255; b >= 0; b--)
        first[sp.cls[b]] = b;
    /* Output classes whose raw columns differ never merge: a group is the canonical raw column of
     * the class's bytes, and the controls, '"' and '\\' (whose raw edges are dropped, or lead to
     * escapes) join the all-dead column's group, the only one their raw rows can equal. */
    uint8_t kind[256]; /* FORBIDDEN, APART or neither: an escape's byte is a class of its own */
    for (int32_t j = 0; j < k; j++) {
        kind[j] = (uint8_t)(byte_kind[first[j]] & (FORBIDDEN | APART));
        group[j] = kind[j] & FORBIDDEN ? dead : canon[sp.cin[first[j]]];
    }
    for (int32_t s = 0; s < n; s++) { /* a class's bytes share their raw column: its first byte's */
        int32_t *out = sp.rows.data + (Py_ssize_t)s * k;
        for (int32_t j = 0; j < k; j++)
            out[j] = raw_next(&sp, s, first[j]);
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
    take_back(ts);
    if (code == NOMEM) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
    } else if (code == LIMIT) {
        result = Py_None, Py_INCREF(Py_None);
    } else if (code == LATE) {
        result = Py_False, Py_INCREF(Py_False);
    } else {
        result = result_tuple(&sp, group, kind);
    }
out:
    free(reads);
    vec_free(&chars);
    vec_free(&sp.rows), vec_free(&sp.acc), vec_free(&sp.trie_state), vec_free(&sp.pair_state), vec_free(&sp.esc_state), vec_free(&sp.cont_pool);
    interner_free(&sp.tries), interner_free(&sp.lows), interner_free(&sp.escs);
    free(sp.cont_at);
    PyBuffer_Release(&table), PyBuffer_Release(&accepting);
    if (classmap.obj)
        PyBuffer_Release(&classmap);
    return result;
}

static PyMethodDef methods[] = {
    {"columns", columns, METH_VARARGS, "columns(table, classmap): (the distinct columns joined, the classmap onto them by first byte)."},
    {"spell", spell, METH_VARARGS,
     "spell(table, accepting, max_states, all_spellings, deadline=0, classmap=None): the JSON spellings' DFA as "
     "(table, accepting, classmap) bytes; None past max_states; False past the deadline."},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "strictgen.regular._spelling", "Every JSON spelling of a string DFA.", -1, methods};

PyMODINIT_FUNC PyInit__spelling(void) {
    set_byte_kinds();
    return PyModule_Create(&module);
}
