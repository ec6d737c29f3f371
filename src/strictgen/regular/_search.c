/* Products and search: the product of two DFAs, a shortest member of a DFA, and a shortest
 * member of a product of Lazy automata (each taken positively or complemented), found without
 * building whole DFAs. See _regular.h. */
#include "_regular.h"

/* The bytes on the breadth-first search's path to `node` (parent and byte per discovered node)
 * into `out`; 1, or -1 with an exception. */
static int witness(const Vec *parent, const Vec *byte, int32_t node, Vec *out) {
    Py_ssize_t len = 0;
    for (int32_t x = node; parent->data[x] >= 0; x = parent->data[x])
        len++;
    if (vec_reserve(out, len) < 0)
        return -1;
    out->len = len;
    for (int32_t x = node; parent->data[x] >= 0; x = parent->data[x])
        out->data[--len] = byte->data[x];
    return 1;
}

/* The pairs reachable from (0, 0) of a and b (both without calls): a and b, or a and not b
 * (`diff`); a missing edge of b is its dead state, so `a and not b` keeps running. */
DFA *dfa_product(const DFA *a, const DFA *b, int diff, Py_ssize_t max_states, double deadline) {
    uint8_t cls[256];
    int rep[256], k = 0;
    for (int x = 0; x < 256; x++) {
        int found = -1;
        for (int c = 0; c < k && found < 0; c++)
            if (a->classmap[x] == a->classmap[rep[c]] && b->classmap[x] == b->classmap[rep[c]])
                found = c;
        if (found < 0)
            rep[k] = x, found = k++;
        cls[x] = (uint8_t)found;
    }
    Interner pairs = {0};
    Vec table = {0}, acc = {0};
    DFA *result = NULL;
    int added;
    int32_t start[2] = {0, 0};
    if (intern(&pairs, start, 2, max_states, &added) < 0)
        goto done;
    for (int32_t x = 0; x < pairs.start.len; x++) {
        if (!(x & 255) && past(deadline))
            goto done;
        Py_ssize_t len;
        int32_t sa = interned(&pairs, x, &len)[0], sb = interned(&pairs, x, &len)[1];
        int accepting = a->acc[sa] && (diff ? !(sb >= 0 && b->acc[sb]) : (sb >= 0 && b->acc[sb]));
        if (vec_push(&acc, accepting) < 0 || vec_reserve(&table, table.len + k) < 0)
            goto done;
        for (int c = 0; c < k; c++) {
            int32_t ta = a->table[(Py_ssize_t)sa * a->k + a->classmap[rep[c]]];
            int32_t tb = sb >= 0 ? b->table[(Py_ssize_t)sb * b->k + b->classmap[rep[c]]] : -1;
            int32_t got = -1;
            if (ta >= 0 && (tb >= 0 || diff)) {
                int32_t key2[2] = {ta, tb};
                got = intern(&pairs, key2, 2, max_states, &added);
                if (got < 0)
                    goto done;
            }
            table.data[table.len++] = got;
        }
    }
    int32_t n = (int32_t)pairs.start.len;
    DFA *d = dfa_new(n, k, 0);
    if (!d)
        goto done;
    memcpy(d->classmap, cls, 256);
    memcpy(d->table, table.data, sizeof(int32_t) * (size_t)n * (size_t)k);
    for (int32_t s = 0; s < n; s++)
        d->acc[s] = (uint8_t)acc.data[s];
    result = d;
done:
    interner_free(&pairs);
    vec_free(&table), vec_free(&acc);
    return result;
}

/* A shortest accepted byte string (calls not followed), breadth first over the states: 1 and
 * the string in `out`, 0 when the language is empty, -1 with an exception. */
int dfa_shortest(const DFA *d, Vec *out) {
    int32_t n = d->n, k = d->k;
    Vec parent = {0}, byte = {0}, order = {0};
    int result = -1;
    int32_t *id = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    uint8_t *seen_class = (uint8_t *)calloc((size_t)k + 1, 1);
    if (!id || !seen_class) {
        vec_no_memory();
        goto done;
    }
    for (int32_t s = 0; s < n; s++)
        id[s] = -1;
    /* one representative byte per class, the smallest */
    int reps[256], nreps = 0;
    for (int b = 0; b < 256; b++)
        if (!seen_class[d->classmap[b]])
            seen_class[d->classmap[b]] = 1, reps[nreps++] = b;
    if (vec_push(&order, 0) < 0 || vec_push(&parent, -1) < 0 || vec_push(&byte, 0) < 0)
        goto done;
    id[0] = 0;
    for (int32_t i = 0; i < order.len; i++) {
        int32_t s = order.data[i];
        if (d->acc[s]) {
            result = witness(&parent, &byte, i, out);
            goto done;
        }
        for (int r = 0; r < nreps; r++) {
            int32_t t = d->table[(Py_ssize_t)s * k + d->classmap[reps[r]]];
            if (t >= 0 && id[t] < 0) {
                id[t] = (int32_t)order.len;
                if (vec_push(&order, t) < 0 || vec_push(&parent, i) < 0 || vec_push(&byte, reps[r]) < 0)
                    goto done;
            }
        }
    }
    result = 0;
done:
    free(id), free(seen_class);
    vec_free(&parent), vec_free(&byte), vec_free(&order);
    return result;
}

/* A shortest byte string in every language L[i] with pos[i] set and in none of the others (m >= 1
 * of them): 1 and the string in `out`, 0 when there is none, -1 with an exception. Breadth first
 * over tuples of subsets, rows computed only for the tuples reached; stops at the first member. */
int lazy_find_member(Lazy **L, const int *pos, Py_ssize_t m, Py_ssize_t max_states, double deadline, Vec *out) {
    int result = -1;
    int32_t *tuple = (int32_t *)malloc(sizeof(int32_t) * ((size_t)m + 1));
    Interner seen = {0};
    Vec parent = {0}, byte = {0};
    if (!tuple) {
        vec_no_memory();
        goto done;
    }
    /* combined byte classes: bytes alike in every operand; rep[c] is the class's first byte */
    int rep[256], k = 0;
    for (int b = 0; b < 256; b++) {
        int found = -1;
        for (int c = 0; c < k && found < 0; c++) {
            int same = 1;
            for (Py_ssize_t i = 0; i < m && same; i++)
                same = L[i]->classmap[b] == L[i]->classmap[rep[c]];
            if (same)
                found = c;
        }
        if (found < 0)
            rep[k] = b, found = k++;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        tuple[i] = L[i]->initial;
        if (pos[i] && tuple[i] < 0) {
            result = 0;
            goto done;
        }
    }
    int added;
    if (intern(&seen, tuple, m, max_states, &added) < 0 || vec_push(&parent, -1) < 0 || vec_push(&byte, 0) < 0)
        goto done;
    for (int32_t x = 0; x < seen.start.len; x++) {
        if (!(x & 255) && past(deadline))
            goto done;
        Py_ssize_t len;
        int ok = 1;
        const int32_t *t = interned(&seen, x, &len);
        for (Py_ssize_t i = 0; i < m && ok; i++)
            ok = t[i] >= 0 ? L[i]->acc.data[t[i]] == pos[i] : !pos[i];
        if (ok) {
            result = witness(&parent, &byte, x, out);
            goto done;
        }
        for (int c = 0; c < k; c++) {
            int live = 1;
            for (Py_ssize_t i = 0; i < m && live; i++) {
                int32_t s = interned(&seen, x, &len)[i];
                if (s < 0) {
                    tuple[i] = -1; /* a complemented language that died accepts everything after */
                    continue;
                }
                const int32_t *row = lazy_row(L[i], s);
                if (!row)
                    goto done;
                tuple[i] = row[L[i]->classmap[rep[c]]];
                live = tuple[i] >= 0 || !pos[i];
            }
            if (!live)
                continue;
            int32_t id = intern(&seen, tuple, m, max_states, &added);
            if (id < 0)
                goto done;
            if (added && (vec_push(&parent, x) < 0 || vec_push(&byte, rep[c]) < 0))
                goto done;
        }
    }
    result = 0;
done:
    free(tuple);
    interner_free(&seen);
    vec_free(&parent), vec_free(&byte);
    return result;
}

