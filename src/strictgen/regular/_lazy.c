/* Lazy subset construction: the DFA of an NFA snapshot, row by row on demand. Bytes are grouped
 * into classes (maximal runs that no edge boundary splits); a subset keeps only its "kernel" NFA
 * states (those with byte or call edges, and the final state). See _regular.h. */
#include "_regular.h"

static int cmp_pair(const void *a, const void *b) {
    const int32_t *x = (const int32_t *)a, *y = (const int32_t *)b;
    if (x[0] != y[0])
        return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* CSR of `count` records of `width` ints keyed by their first int (stable); `start` gets n + 1. */
static int csr(const int32_t *recs, Py_ssize_t count, int width, int32_t n, int32_t **start, int32_t ***cols, int ncols, const int *which) {
    *start = (int32_t *)calloc((size_t)n + 1, sizeof(int32_t));
    if (!*start)
        return -1;
    for (Py_ssize_t i = 0; i < count; i++)
        (*start)[recs[i * width] + 1]++;
    for (int32_t s = 0; s < n; s++)
        (*start)[s + 1] += (*start)[s];
    int32_t *fill = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!fill)
        return -1;
    memcpy(fill, *start, sizeof(int32_t) * ((size_t)n + 1));
    for (int c = 0; c < ncols; c++) {
        *cols[c] = (int32_t *)malloc(sizeof(int32_t) * ((size_t)count + 1));
        if (!*cols[c]) {
            free(fill);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        int32_t at = fill[recs[i * width]]++;
        for (int c = 0; c < ncols; c++)
            (*cols[c])[at] = recs[i * width + which[c]];
    }
    free(fill);
    return 0;
}

static int32_t lazy_closure(Lazy *L, const int32_t *seeds, Py_ssize_t nseeds);

/* L (zeroed, as allocated) over a snapshot of `a` from `start` to `final` (states of a); -1 with
 * an exception set, what was allocated then freed by lazy_clear. */
int lazy_init(Lazy *L, const NFA *a, int32_t start, int32_t final, Py_ssize_t max_states) {
    int32_t n = L->n = a->num_states;
    L->start = start, L->final = final, L->max_states = max_states;
    uint8_t boundary[257] = {0};
    Py_ssize_t ne = a->edges.len / 4;
    for (Py_ssize_t i = 0; i < ne; i++) {
        boundary[a->edges.data[4 * i + 1]] = 1;
        boundary[a->edges.data[4 * i + 2] + 1] = 1;
    }
    int c = 0;
    for (int b = 0; b < 256; b++) {
        if (b && boundary[b])
            c++;
        L->classmap[b] = (uint8_t)c;
    }
    L->k = c + 1;
    int32_t **ecols[3] = {&L->e_clo, &L->e_chi, &L->e_dst};
    int ewhich[3] = {1, 2, 3};
    int32_t **pcols[1] = {&L->eps_dst};
    int pwhich[1] = {1};
    int32_t **ccols[2] = {&L->c_callee, &L->c_dst};
    int cwhich[2] = {1, 2};
    if (csr(a->edges.data, ne, 4, n, &L->e_start, ecols, 3, ewhich) < 0 || csr(a->eps.data, a->eps.len / 2, 2, n, &L->eps_start, pcols, 1, pwhich) < 0 ||
        csr(a->calls.data, a->calls.len / 3, 3, n, &L->c_start, ccols, 2, cwhich) < 0)
        goto nomem;
    for (Py_ssize_t i = 0; i < ne; i++) {
        L->e_clo[i] = L->classmap[L->e_clo[i]];
        L->e_chi[i] = L->classmap[L->e_chi[i]];
    }
    L->kernel = (uint8_t *)calloc((size_t)n + 1, 1);
    L->stamp = (int32_t *)calloc((size_t)n + 1, sizeof(int32_t));
    L->single = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!L->kernel || !L->stamp || !L->single)
        goto nomem;
    for (int32_t s = 0; s <= n; s++)
        L->single[s] = -3;
    for (int32_t s = 0; s < n; s++)
        L->kernel[s] = L->e_start[s + 1] > L->e_start[s] || L->c_start[s + 1] > L->c_start[s];
    L->kernel[final] = 1;
    L->initial = lazy_closure(L, &start, 1);
    return L->initial == -2 ? -1 : 0;
nomem:
    vec_no_memory();
    return -1;
}

void lazy_clear(Lazy *L) {
    free(L->e_start), free(L->e_clo), free(L->e_chi), free(L->e_dst);
    free(L->eps_start), free(L->eps_dst);
    free(L->c_start), free(L->c_callee), free(L->c_dst);
    free(L->kernel), free(L->stamp), free(L->single);
    interner_free(&L->subsets);
    vec_free(&L->acc), vec_free(&L->row_of), vec_free(&L->rows);
    vec_free(&L->call_off), vec_free(&L->call_len), vec_free(&L->call_pool);
    vec_free(&L->stack), vec_free(&L->scratch), vec_free(&L->pairs), vec_free(&L->out);
}


static int32_t lazy_closure_of(Lazy *L, const int32_t *seeds, Py_ssize_t nseeds);

/* xs sorted: by insertion where short (most closures hold a few states; qsort's calls of its
 * comparator were a tenth of determinising), else by qsort */
static void sort_ints(int32_t *xs, Py_ssize_t n) {
    if (n > 16) {
        qsort(xs, (size_t)n, sizeof(int32_t), cmp_int32);
        return;
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        int32_t x = xs[i];
        Py_ssize_t j = i;
        for (; j > 0 && xs[j - 1] > x; j--)
            xs[j] = xs[j - 1];
        xs[j] = x;
    }
}

/* The subset of the kernel states that the seeds reach by epsilon edges: its id, -1 when empty,
 * -2 with an exception set. The closure of one NFA state is remembered by that state: most rows
 * of a rule's automaton step its embedded DFAs and literals, one NFA state to the next, and each
 * such step cost a walk, a sort and a lookup of the subset. */
static int32_t lazy_closure(Lazy *L, const int32_t *seeds, Py_ssize_t nseeds) {
    if (nseeds != 1)
        return lazy_closure_of(L, seeds, nseeds);
    int32_t got = L->single[seeds[0]];
    if (got == -3) {
        got = lazy_closure_of(L, seeds, 1);
        if (got != -2)
            L->single[seeds[0]] = got;
    }
    return got;
}

static int32_t lazy_closure_of(Lazy *L, const int32_t *seeds, Py_ssize_t nseeds) {
    if (++L->stamp_now == INT32_MAX) {
        memset(L->stamp, 0, sizeof(int32_t) * (size_t)L->n);
        L->stamp_now = 1;
    }
    int32_t mark = L->stamp_now;
    L->stack.len = L->out.len = 0;
    for (Py_ssize_t i = 0; i < nseeds; i++) {
        int32_t q = seeds[i];
        if (L->stamp[q] != mark) {
            L->stamp[q] = mark;
            if (vec_push(&L->stack, q) < 0)
                return -2;
        }
    }
    while (L->stack.len) {
        int32_t q = L->stack.data[--L->stack.len];
        if (L->kernel[q] && vec_push(&L->out, q) < 0)
            return -2;
        for (int32_t j = L->eps_start[q]; j < L->eps_start[q + 1]; j++) {
            int32_t t = L->eps_dst[j];
            if (L->stamp[t] != mark) {
                L->stamp[t] = mark;
                if (vec_push(&L->stack, t) < 0)
                    return -2;
            }
        }
    }
    if (!L->out.len)
        return -1;
    sort_ints(L->out.data, L->out.len);
    int added;
    int32_t id = intern(&L->subsets, L->out.data, L->out.len, L->max_states, &added);
    if (id < 0)
        return -2;
    if (added) {
        int accepting = L->stamp[L->final] == mark;
        if (vec_push(&L->acc, accepting) < 0 || vec_push(&L->row_of, -1) < 0 || vec_push(&L->call_off, 0) < 0 || vec_push(&L->call_len, 0) < 0)
            return -2;
    }
    return id;
}

static int32_t NO_ROW_[1];
#define NO_ROW NO_ROW_ /* single_row: the general way must make this row */

/* Into `row` (k entries), the row of a subset of one NFA state q whose byte edges read disjoint
 * classes (an embedded DFA's or a literal's state: most of a rule's): each class goes to the
 * closure of its edge's target, asked in class order as the general way asks (so subsets are
 * numbered alike), without its pairs and sort. `row`, NO_ROW when edges overlap (the row then
 * holds nothing to keep); NULL with an exception set. Edges listed in class order (an embedded
 * DFA's are) are read edge by edge: a walk over every class was most of this, rows being mostly
 * missing edges. */
static int32_t *single_row(Lazy *L, int32_t q, int32_t *row) {
    int32_t k = L->k, first = L->e_start[q], end = L->e_start[q + 1];
    memset(row, 0xff, sizeof(int32_t) * (size_t)k);
    int sorted = 1;
    for (int32_t j = first + 1; j < end && sorted; j++)
        sorted = L->e_clo[j] > L->e_chi[j - 1];
    if (sorted) {
        int32_t last = -1, last_id = -1;
        for (int32_t j = first; j < end; j++) {
            int32_t t = L->e_dst[j];
            if (t != last) {
                if ((last_id = lazy_closure(L, &t, 1)) == -2)
                    return NULL;
                last = t;
            }
            for (int32_t c = L->e_clo[j]; c <= L->e_chi[j]; c++)
                row[c] = last_id;
        }
        return row;
    }
    for (int32_t j = L->e_start[q]; j < L->e_start[q + 1]; j++)
        for (int32_t c = L->e_clo[j]; c <= L->e_chi[j]; c++) {
            if (row[c] >= 0)
                return NO_ROW;
            row[c] = L->e_dst[j];
        }
    int32_t last = -1, last_id = -1;
    for (int32_t c = 0; c < k; c++) {
        int32_t t = row[c];
        if (t < 0)
            continue;
        if (t != last) {
            last_id = lazy_closure(L, &t, 1);
            if (last_id == -2)
                return NULL;
            last = t;
        }
        row[c] = last_id;
    }
    return row;
}

/* The row of subset s, not computed yet (lazy_row in _regular.h asks first). */
const int32_t *lazy_compute_row(Lazy *L, int32_t s) {
    int32_t k = L->k;
    Py_ssize_t n;
    const int32_t *sub = interned(&L->subsets, s, &n);
    Vec *pairs = &L->pairs, *scratch = &L->scratch;
    /* the row is written past the end of `rows` and counted in only once complete (a failure
     * leaves no half row behind); nothing on the way (closures, interning) touches `rows` */
    if (vec_reserve(&L->rows, L->rows.len + k) < 0)
        return NULL;
    int32_t *row = L->rows.data + L->rows.len;
    if (n == 1) {
        int32_t *got = single_row(L, sub[0], row);
        if (got == NULL)
            return NULL;
        if (got != NO_ROW)
            goto calls;
    }
    /* The classes [lo, hi) the edges read, cut into segments where an edge starts or ends: every
     * class of a segment enters the same targets, so each segment's list is made once, the edges'
     * targets counting-sorted by segment in the order the edges come (the list each of its classes
     * had, when lists were made class by class: for edges over many classes, such as a string
     * body's, that writing and a compare of each class's list with the one before were most of
     * these rows). Closures are asked in class order, a segment's only where its list is not the
     * one before's, as class by class they were: subsets are numbered alike. */
    int32_t lo = k, hi = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        for (int32_t j = L->e_start[sub[i]]; j < L->e_start[sub[i] + 1]; j++) {
            lo = L->e_clo[j] < lo ? L->e_clo[j] : lo;
            hi = L->e_chi[j] + 1 > hi ? L->e_chi[j] + 1 : hi;
        }
    memset(row, 0xff, sizeof(int32_t) * (size_t)k);
    if (hi <= lo)
        goto calls; /* no byte edges */
    if (vec_reserve(scratch, 3 * (Py_ssize_t)k + 4) < 0)
        return NULL;
    int32_t *seg = scratch->data; /* by class in [lo, hi]: a segment starts there (1), then its segment */
    memset(seg + lo, 0, sizeof(int32_t) * ((size_t)(hi - lo) + 1));
    for (Py_ssize_t i = 0; i < n; i++)
        for (int32_t j = L->e_start[sub[i]]; j < L->e_start[sub[i] + 1]; j++)
            seg[L->e_clo[j]] = 1, seg[L->e_chi[j] + 1] = 1;
    int32_t nseg = 0;
    for (int32_t c = lo; c < hi; c++)
        nseg += seg[c], seg[c] = nseg - 1;
    Py_ssize_t np_ = 0; /* the lists' total length */
    for (Py_ssize_t i = 0; i < n; i++)
        for (int32_t j = L->e_start[sub[i]]; j < L->e_start[sub[i] + 1]; j++)
            np_ += seg[L->e_chi[j]] - seg[L->e_clo[j]] + 1;
    if (vec_reserve(scratch, 3 * (Py_ssize_t)k + 4 + np_) < 0)
        return NULL;
    seg = scratch->data;
    int32_t *count = seg + k + 1, *segid = count + k + 2, *sorted = segid + k + 1; /* count: the segments' starts in sorted */
    memset(count, 0, sizeof(int32_t) * ((size_t)nseg + 2));
    for (Py_ssize_t i = 0; i < n; i++) /* count[b + 1]: how many edges read segment b, as differences */
        for (int32_t j = L->e_start[sub[i]]; j < L->e_start[sub[i] + 1]; j++)
            count[seg[L->e_clo[j]] + 1]++, count[seg[L->e_chi[j]] + 2]--;
    for (int32_t b = 1; b < nseg; b++) /* the counts */
        count[b + 1] += count[b];
    for (int32_t b = 0; b < nseg; b++) /* the starts; segid: the fill cursors for now */
        count[b + 1] += count[b], segid[b] = count[b];
    for (Py_ssize_t i = 0; i < n; i++)
        for (int32_t j = L->e_start[sub[i]]; j < L->e_start[sub[i] + 1]; j++)
            for (int32_t b = seg[L->e_clo[j]], t = L->e_dst[j]; b <= seg[L->e_chi[j]]; b++)
                sorted[segid[b]++] = t;
    /* `seg`, `count`, `segid` and `sorted` live in scratch, which lazy_closure does not touch */
    for (int32_t b = 0; b < nseg; b++) {
        int32_t a = count[b], e = count[b + 1];
        if (a == e)
            segid[b] = -1;
        else if (b > 0 && e - a == a - count[b - 1] && !memcmp(sorted + a, sorted + count[b - 1], sizeof(int32_t) * (size_t)(e - a)))
            segid[b] = segid[b - 1];
        else if ((segid[b] = lazy_closure(L, sorted + a, e - a)) == -2)
            return NULL;
    }
    for (int32_t c = lo; c < hi; c++)
        row[c] = segid[seg[c]];
calls: /* (callee, target) pairs of the subset, grouped by callee */
    sub = interned(&L->subsets, s, &n);
    pairs->len = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t q = sub[i];
        for (int32_t j = L->c_start[q]; j < L->c_start[q + 1]; j++) {
            if (vec_push(pairs, L->c_callee[j]) < 0 || vec_push(pairs, L->c_dst[j]) < 0)
                return NULL;
        }
    }
    Py_ssize_t ncalls = pairs->len / 2;
    int32_t off = (int32_t)L->call_pool.len, len = 0;
    if (ncalls) {
        qsort(pairs->data, (size_t)ncalls, 2 * sizeof(int32_t), cmp_pair);
        if (vec_reserve(scratch, ncalls) < 0)
            return NULL;
        Py_ssize_t i = 0;
        while (i < ncalls) {
            int32_t callee = pairs->data[2 * i];
            Py_ssize_t j = i;
            while (j < ncalls && pairs->data[2 * j] == callee) {
                scratch->data[j - i] = pairs->data[2 * j + 1];
                j++;
            }
            int32_t id = lazy_closure(L, scratch->data, j - i);
            if (id == -2)
                return NULL;
            if (id >= 0) {
                if (vec_push(&L->call_pool, callee) < 0 || vec_push(&L->call_pool, id) < 0)
                    return NULL;
                len++;
            }
            i = j;
        }
    }
    L->call_off.data[s] = off, L->call_len.data[s] = len;
    L->row_of.data[s] = (int32_t)L->rows.len;
    L->rows.len += k;
    return L->rows.data + L->row_of.data[s];
}

/* Room for `subsets` subsets in the arrays kept per subset, and their interner's table sized
 * for them: grown by doubling from empty, their reallocations' copies and the interner's rehashes
 * were ~4% of determinising the bench's rules (CPU time, interleaved). */
static int lazy_reserve(Lazy *L, Py_ssize_t subsets) {
    Vec *per_subset[] = {&L->acc, &L->row_of, &L->call_off, &L->call_len, &L->subsets.start, &L->subsets.len, &L->subsets.hash};
    for (size_t i = 0; i < sizeof(per_subset) / sizeof(per_subset[0]); i++)
        if (vec_reserve(per_subset[i], subsets) < 0)
            return -1;
    return vec_reserve(&L->subsets.pool, 2 * subsets) < 0 || interner_reserve(&L->subsets, subsets) < 0 ? -1 : 0;
}

/* Every row: the whole DFA (start 0). */
DFA *lazy_determinize(Lazy *L, double deadline) {
    if (L->initial < 0) { /* the empty language: one dead start state */
        DFA *d = dfa_new(1, 1, 0);
        if (d) {
            memset(d->classmap, 0, 256);
            d->table[0] = -1;
        }
        return d;
    }
    /* room for as many rows as the NFA has kernel states (a rule's DFA has about as many, or
     * fewer): growing the rows by doubling copied them and faulted their pages in again, a fifth
     * of determinising the bench's rules. Pages never written cost nothing. */
    Py_ssize_t kernels = 0;
    for (int32_t q = 0; q < L->n; q++)
        kernels += L->kernel[q];
    if (L->max_states >= 0 && kernels > L->max_states)
        kernels = L->max_states;
    if (vec_reserve(&L->rows, (kernels + 1) * (Py_ssize_t)L->k) < 0 || lazy_reserve(L, kernels + 1) < 0)
        return NULL;
    for (int32_t s = 0; s < L->subsets.start.len; s++) {
        if (!(s & 255) && past(deadline))
            return NULL;
        if (!lazy_row(L, s))
            return NULL;
    }
    int32_t n = (int32_t)L->subsets.start.len, k = L->k;
    DFA *d = dfa_new(n, k, L->call_pool.len / 2);
    if (!d)
        return NULL;
    memcpy(d->classmap, L->classmap, 256);
    /* the start closure is subset 0 (interned first). Rows made in subset order (a Lazy used for
     * nothing before, as regular.determinize's) are the table already: the DFA takes them, and
     * the Lazy makes a row again if it is asked for one (a big rule's table was copied and its
     * pages touched twice) */
    int in_order = L->rows.len == (Py_ssize_t)n * k;
    for (int32_t s = 0; s < n && in_order; s++)
        in_order = L->row_of.data[s] == (Py_ssize_t)s * k;
    if (in_order) {
        free(d->table);
        int32_t *rows = (int32_t *)realloc(L->rows.data, sizeof(int32_t) * ((size_t)n * (size_t)k + 1));
        d->table = rows ? rows : L->rows.data;
        L->rows.data = NULL, L->rows.len = L->rows.cap = 0;
        for (int32_t s = 0; s < n; s++)
            L->row_of.data[s] = -1;
    }
    Py_ssize_t at = 0;
    for (int32_t s = 0; s < n; s++) {
        if (!in_order)
            memcpy(d->table + (Py_ssize_t)s * k, L->rows.data + L->row_of.data[s], sizeof(int32_t) * (size_t)k);
        d->acc[s] = (uint8_t)L->acc.data[s];
        d->call_start[s] = (int32_t)at;
        for (int32_t j = 0; j < L->call_len.data[s]; j++, at++) {
            d->call_callee[at] = L->call_pool.data[L->call_off.data[s] + 2 * j];
            d->call_ret[at] = L->call_pool.data[L->call_off.data[s] + 2 * j + 1];
        }
    }
    d->call_start[n] = (int32_t)at;
    return d;
}

/* Is data in the language (calls ignored)? 1, 0, or -1 with an exception. */
int lazy_accepts(Lazy *L, const uint8_t *data, Py_ssize_t len) {
    int32_t s = L->initial;
    for (Py_ssize_t i = 0; i < len && s >= 0; i++) {
        const int32_t *row = lazy_row(L, s);
        if (!row)
            return -1;
        s = row[L->classmap[data[i]]];
    }
    return s >= 0 && L->acc.data[s];
}
