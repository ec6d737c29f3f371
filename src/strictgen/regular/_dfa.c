/* DFA storage and the operations on whole tables: building from rows of targets, sub-automata,
 * co-reachability and trim. See _regular.h. */
#include "_regular.h"

DFA *dfa_new(int32_t n, int32_t k, Py_ssize_t ncalls) {
    PyGILState_STATE gil = PyGILState_Ensure();
    DFA *d = (DFA *)DFAType.tp_alloc(&DFAType, 0);
    PyGILState_Release(gil);
    if (!d)
        return NULL;
    d->n = n, d->k = k;
    d->table = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n * (size_t)k + 1));
    d->acc = (uint8_t *)calloc((size_t)n + 1, 1);
    d->call_start = (int32_t *)calloc((size_t)n + 1, sizeof(int32_t));
    d->call_callee = (int32_t *)malloc(sizeof(int32_t) * ((size_t)ncalls + 1));
    d->call_ret = (int32_t *)malloc(sizeof(int32_t) * ((size_t)ncalls + 1));
    if (!d->table || !d->acc || !d->call_start || !d->call_callee || !d->call_ret) {
        gil = PyGILState_Ensure();
        Py_DECREF(d);
        PyErr_NoMemory();
        PyGILState_Release(gil);
        return NULL;
    }
    return d;
}

DFA *dfa_ref(DFA *d) {
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_INCREF(d);
    PyGILState_Release(gil);
    return d;
}

void dfa_clear(DFA *d) {
    vec_free(&d->embed_edges);
    free(d->table);
    free(d->acc);
    free(d->call_start);
    free(d->call_callee);
    free(d->call_ret);
}

/* Byte classes of n rows of 256 targets: bytes whose columns agree. The columns are hashed row by
 * row (the table is stored by rows: a column at a time read it 1 KB apart), classes are made by
 * hash, and one more pass over the rows checks them; a collision falls back to comparing
 * columns. Fills classmap and rep (each class's first byte); the number of classes. */
static int column_classes(const int32_t *t, Py_ssize_t n, uint8_t *classmap, int *rep) {
    int k = 0;
    uint64_t colhash[256] = {0};
    for (Py_ssize_t s = 0; s < n; s++) {
        const int32_t *row = t + s * 256;
        for (int b = 0; b < 256; b++)
            colhash[b] = (colhash[b] ^ (uint32_t)row[b]) * 0x9e3779b97f4a7c15ULL;
    }
    for (int b = 0; b < 256; b++) {
        int found = -1;
        for (int c = 0; c < k && found < 0; c++)
            if (colhash[b] == colhash[rep[c]])
                found = c;
        if (found < 0)
            rep[k] = b, found = k++;
        classmap[b] = (uint8_t)found;
    }
    int agree = 1;
    for (Py_ssize_t s = 0; s < n && agree; s++) {
        const int32_t *row = t + s * 256;
        for (int b = 0; b < 256; b++)
            agree &= row[b] == row[rep[classmap[b]]];
    }
    if (agree)
        return k;
    k = 0;
    for (int b = 0; b < 256; b++) {
        int found = -1;
        for (int c = 0; c < k && found < 0; c++) {
            int same = 1;
            for (Py_ssize_t s = 0; s < n && same; s++)
                same = t[s * 256 + b] == t[s * 256 + rep[c]];
            if (same)
                found = c;
        }
        if (found < 0)
            rep[k] = b, found = k++;
        classmap[b] = (uint8_t)found;
    }
    return k;
}

/* A DFA without calls from n >= 1 rows of next states (targets checked by the caller: -1 dead or
 * below n): 256 a row when classmap is NULL, else k a row, one per class of classmap. */
DFA *dfa_from_rows(const int32_t *rows, const uint8_t *accepting, Py_ssize_t n, const uint8_t *classmap, int k) {
    uint8_t cls[256];
    int rep[256];
    if (classmap)
        memcpy(cls, classmap, 256);
    else
        k = column_classes(rows, n, cls, rep);
    DFA *d = dfa_new((int32_t)n, k, 0);
    if (!d)
        return NULL;
    memcpy(d->classmap, cls, 256);
    for (Py_ssize_t s = 0; s < n; s++) {
        for (int c = 0; c < k; c++)
            d->table[s * k + c] = classmap ? rows[s * k + c] : rows[s * 256 + rep[c]];
        d->acc[s] = accepting[s] != 0;
    }
    return d;
}

/* A DFA with the states kept[0..m-1] (old ids, in that order; new id = position) of d. */
DFA *dfa_subset(const DFA *d, const int32_t *kept, int32_t m, const int32_t *new_id, const uint8_t *call_ok) {
    Py_ssize_t ncalls = 0;
    for (int32_t i = 0; i < m; i++)
        for (int32_t j = d->call_start[kept[i]]; j < d->call_start[kept[i] + 1]; j++)
            ncalls += new_id[d->call_ret[j]] >= 0 && (!call_ok || call_ok[j]);
    DFA *out = dfa_new(m ? m : 1, d->k, ncalls);
    if (!out)
        return NULL;
    memcpy(out->classmap, d->classmap, 256);
    if (!m) {
        for (int32_t c = 0; c < d->k; c++)
            out->table[c] = -1;
        return out;
    }
    Py_ssize_t at = 0;
    for (int32_t i = 0; i < m; i++) {
        int32_t s = kept[i];
        const int32_t *row = d->table + (Py_ssize_t)s * d->k;
        int32_t *to = out->table + (Py_ssize_t)i * d->k;
        for (int32_t c = 0; c < d->k; c += 8) { /* eight at a time: a run of -1 copied as it is */
            if (c + 8 <= d->k && eight_missing(row + c)) {
                memcpy(to + c, row + c, 8 * sizeof(int32_t));
                continue;
            }
            for (int32_t e = c + 8 < d->k ? c + 8 : d->k, j = c; j < e; j++)
                to[j] = row[j] >= 0 ? new_id[row[j]] : -1;
        }
        out->acc[i] = d->acc[s];
        out->call_start[i] = (int32_t)at;
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
            if (new_id[d->call_ret[j]] >= 0 && (!call_ok || call_ok[j])) {
                out->call_callee[at] = d->call_callee[j];
                out->call_ret[at++] = new_id[d->call_ret[j]];
            }
        }
    }
    out->call_start[m] = (int32_t)at;
    return out;
}

/* Each state's targets (>= 0) where its row changes target, in class order: one scan of the table
 * that trimming's three passes (predecessors counted and filled, the numbering walk) then read
 * instead of the whole rows. (start[n + 1] into targets, malloc'd; 0 or -1 on error.) */
static int row_runs(const DFA *d, int32_t **start_out, Vec *targets) {
    int32_t n = d->n, k = d->k;
    int32_t *start = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!start) {
        vec_no_memory();
        return -1;
    }
    for (int32_t s = 0; s < n; s++) {
        const int32_t *row = d->table + (Py_ssize_t)s * k;
        start[s] = (int32_t)targets->len;
        if (vec_reserve(targets, targets->len + k) < 0) {
            free(start);
            return -1;
        }
        int32_t *at = targets->data + targets->len;
        for (int32_t c = 0, prev = -1; c < k; c += 8) { /* eight at a time: a run of -1 skipped */
            if (prev < 0 && c + 8 <= k && eight_missing(row + c))
                continue;
            for (int32_t e = c + 8 < k ? c + 8 : k, j = c; j < e; j++) { /* without branches: rows change at random */
                int32_t t = row[j];
                *at = t, at += (t != prev) & (t >= 0), prev = t;
            }
        }
        targets->len = at - targets->data;
    }
    start[n] = (int32_t)targets->len;
    *start_out = start;
    return 0;
}

/* For each state: can it reach acceptance by bytes and calls of productive rules? (ok[n]) */
static uint8_t *dfa_can_finish(const DFA *d, const int32_t *run_start, const int32_t *run_tgt, const uint8_t *productive, Py_ssize_t nprod, uint8_t **call_ok_out) {
    int32_t n = d->n;
    Py_ssize_t ncalls = d->call_start[n];
    uint8_t *ok = (uint8_t *)calloc((size_t)n + 1, 1);
    uint8_t *call_ok = (uint8_t *)calloc((size_t)ncalls + 1, 1);
    int32_t *pstart = (int32_t *)calloc((size_t)n + 2, sizeof(int32_t));
    int32_t *preds = NULL, *work = NULL;
    if (!ok || !call_ok || !pstart)
        goto nomem;
    for (Py_ssize_t j = 0; j < ncalls; j++) {
        int32_t callee = d->call_callee[j];
        call_ok[j] = !productive || (callee < nprod && productive[callee]);
    }
    /* predecessor lists (a state once per run of a target) */
    Py_ssize_t total = 0;
    for (int32_t s = 0; s < n; s++) {
        for (int32_t i = run_start[s]; i < run_start[s + 1]; i++)
            pstart[run_tgt[i] + 1]++, total++;
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++)
            if (call_ok[j])
                pstart[d->call_ret[j] + 1]++, total++;
    }
    for (int32_t s = 0; s < n; s++)
        pstart[s + 1] += pstart[s];
    preds = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    work = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!preds || !work)
        goto nomem;
    int32_t *fill = work; /* reused below as the work stack */
    memcpy(fill, pstart, sizeof(int32_t) * (size_t)n);
    for (int32_t s = 0; s < n; s++) {
        for (int32_t i = run_start[s]; i < run_start[s + 1]; i++)
            preds[fill[run_tgt[i]]++] = s;
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++)
            if (call_ok[j])
                preds[fill[d->call_ret[j]]++] = s;
    }
    Py_ssize_t top = 0;
    for (int32_t s = 0; s < n; s++)
        if (d->acc[s])
            ok[s] = 1, work[top++] = s;
    while (top) {
        int32_t t = work[--top];
        for (int32_t j = pstart[t]; j < pstart[t + 1]; j++)
            if (!ok[preds[j]])
                ok[preds[j]] = 1, work[top++] = preds[j];
    }
    free(pstart), free(preds), free(work);
    *call_ok_out = call_ok;
    return ok;
nomem:
    free(ok), free(call_ok), free(pstart), free(preds), free(work);
    vec_no_memory();
    return NULL;
}

/* A mark per state (zeroed) and a work stack for n states: 0, or -1 with MemoryError (nothing kept) */
static int marks_and_stack(int32_t n, uint8_t **marks, int32_t **stack) {
    *marks = (uint8_t *)calloc((size_t)n + 1, 1);
    *stack = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (*marks && *stack)
        return 0;
    free(*marks), free(*stack);
    vec_no_memory();
    return -1;
}

/* Can the start state reach acceptance (calls only to rules flagged in `productive`, 0/1 per
 * rule; NULL: every call counts)? Forward from the start, stopping at the first accepting state:
 * the fixed point over a grammar's rules asks this again and again, and most rules finish within
 * a few states. 1, 0, or -1 with an exception. */
int dfa_start_can_finish(const DFA *d, const uint8_t *productive, Py_ssize_t nprod) {
    int32_t n = d->n, k = d->k;
    uint8_t *seen;
    int32_t *work;
    int found = 0;
    if (marks_and_stack(n, &seen, &work) < 0)
        return -1;
    Py_ssize_t top = 0;
    seen[0] = 1, work[top++] = 0;
    while (top && !found) {
        int32_t s = work[--top];
        if (d->acc[s]) {
            found = 1;
            break;
        }
        const int32_t *row = d->table + (Py_ssize_t)s * k;
        for (int32_t c = 0; c < k; c++)
            if (row[c] >= 0 && !seen[row[c]])
                seen[row[c]] = 1, work[top++] = row[c];
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
            int32_t callee = d->call_callee[j], t = d->call_ret[j];
            if ((!productive || (callee < nprod && productive[callee])) && !seen[t])
                seen[t] = 1, work[top++] = t;
        }
    }
    free(seen), free(work);
    return found;
}

/* Only the states reachable from the start (by bytes and kept calls) that can still reach
 * acceptance; calls of unproductive rules dropped (productive as for dfa_start_can_finish).
 * Start stays 0; an empty language gives one dead, non-accepting state. A new reference. */
DFA *dfa_trim(DFA *d, const uint8_t *productive, Py_ssize_t nprod) {
    uint8_t *call_ok = NULL, *ok = NULL;
    int32_t *run_start = NULL, *new_id = NULL, *order = NULL;
    Vec runs = {0};
    DFA *out = NULL;
    if (row_runs(d, &run_start, &runs) < 0 || !(ok = dfa_can_finish(d, run_start, runs.data, productive, nprod, &call_ok)))
        goto done;
    int32_t n = d->n;
    new_id = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    order = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!new_id || !order) {
        vec_no_memory();
        goto done;
    }
    for (int32_t s = 0; s < n; s++)
        new_id[s] = -1;
    int32_t m = 0;
    if (ok[0]) {
        order[m] = 0, new_id[0] = m++;
        for (int32_t i = 0; i < m; i++) {
            int32_t s = order[i];
            for (int32_t r = run_start[s]; r < run_start[s + 1]; r++) { /* the classes' targets in order */
                int32_t t = runs.data[r];
                if (ok[t] && new_id[t] < 0)
                    order[m] = t, new_id[t] = m++;
            }
            for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
                int32_t t = d->call_ret[j];
                if (call_ok[j] && ok[t] && new_id[t] < 0)
                    order[m] = t, new_id[t] = m++;
            }
        }
    }
    { /* nothing to drop and already numbered breadth first: the DFA itself (DFAs never change) */
        int same = m == n;
        for (int32_t i = 0; same && i < m; i++)
            same = order[i] == i;
        for (Py_ssize_t j = 0; same && j < d->call_start[n]; j++)
            same = call_ok[j];
        if (same) {
            out = dfa_ref(d);
            goto done;
        }
    }
    out = dfa_subset(d, order, m, new_id, call_ok);
done:
    free(ok), free(call_ok), free(new_id), free(order), free(run_start);
    vec_free(&runs);
    return out;
}

/* Flags in ok (n, zeroed) the states that can reach acceptance, back from the accepting states
 * over in-edges (the sources of state t's: isrc[istart[t]..istart[t + 1])), with `work` (n) as
 * the stack; how many. */
int32_t dfa_finishing(const DFA *d, const int32_t *istart, const int32_t *isrc, uint8_t *ok, int32_t *work) {
    Py_ssize_t top = 0;
    int32_t found = 0;
    for (int32_t s = 0; s < d->n; s++)
        if (d->acc[s])
            ok[s] = 1, work[top++] = s;
    while (top) {
        int32_t t = work[--top];
        found++;
        for (int32_t j = istart[t]; j < istart[t + 1]; j++)
            if (!ok[isrc[j]])
                ok[isrc[j]] = 1, work[top++] = isrc[j];
    }
    return found;
}

/* Would dfa_trim give d itself (every call's callee flagged productive, every state reachable and
 * able to finish, numbered breadth first)? Answered from what a minimisation's set-up has made
 * (_minimize.c): each state's in-edges' sources (isrc[istart[t]..istart[t + 1]), calls included:
 * the predecessors trimming would list) and its row's runs ((first, end, target) triples from
 * runs[rows[s]] to runs[rows[s + 1]], in class order: the targets trimming would scan for).
 * 1, 0, or -1 with MemoryError. */
int dfa_is_trim(const DFA *d, const int32_t *istart, const int32_t *isrc, const Py_ssize_t *rows, const int32_t *runs, const uint8_t *productive, Py_ssize_t nprod) {
    int32_t n = d->n;
    for (Py_ssize_t j = 0; productive && j < d->call_start[n]; j++)
        if (d->call_callee[j] >= nprod || !productive[d->call_callee[j]])
            return 0; /* a call trimming drops */
    uint8_t *ok;
    int32_t *work;
    int same = 0;
    if (marks_and_stack(n, &ok, &work) < 0)
        return -1;
    int32_t finish = dfa_finishing(d, istart, isrc, ok, work);
    if (finish == n) { /* every state can finish: numbered breadth first from the start, every one met? */
        memset(ok, 0, (size_t)n);
        int32_t m = 1;
        ok[0] = 1, work[0] = 0, same = 1;
        for (int32_t i = 0; i < m && same; i++) {
            int32_t s = work[i];
            for (Py_ssize_t r = rows[s]; r < rows[s + 1] && same; r += 3) {
                int32_t t = runs[r + 2];
                if (!ok[t])
                    same = t == m, ok[t] = 1, work[m++] = t;
            }
            for (int32_t j = d->call_start[s]; j < d->call_start[s + 1] && same; j++) {
                int32_t t = d->call_ret[j];
                if (!ok[t])
                    same = t == m, ok[t] = 1, work[m++] = t;
            }
        }
        same = same && m == n;
    }
    free(ok), free(work);
    return same;
}
