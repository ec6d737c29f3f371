/* Minimisation (Hopcroft) of DFAs with call edges on a partition refined by splitters, that
 * partition (_partition.h; Moore's rounds in _rounds.c refine it too) and the quotient both
 * minimisations end with. See _regular.h. */
#include "_regular.h"
#include "_partition.h"

/* The quotient of d by the blocks blk[s] (equivalent states share a block; 0 <= blk < nblocks),
 * numbered breadth first from the start's block: the numbering Hopcroft and Moore both give, so
 * either minimisation yields the same DFA. In new_id (nblocks entries, or NULL) each block's
 * state, -1 for a block the start does not reach. A new reference (d itself when it is the
 * quotient already). Where blocks merge states, each block's row is written as the walk numbers
 * its targets (one pass over the rows: the walk and a copy after it read every row twice, a
 * quarter of minimising the bench's rules). The walk reads the rows' runs (the partition's, see
 * partition_init: (first, end, target) in class order, state s's from rows[s] to rows[s + 1]), which
 * meet the targets in the order the classes do: rule DFAs' rows are mostly missing edges, and a
 * walk over every class was a tenth of minimising them. */
DFA *dfa_quotient(DFA *d, const int32_t *blk, int32_t nblocks, int32_t *new_id_out, const Py_ssize_t *rows, const int32_t *runs, int32_t dead) {
    int32_t n = d->n, k = d->k;
    DFA *result = NULL, *out = NULL;
    int32_t *new_id = new_id_out ? new_id_out : (int32_t *)malloc(sizeof(int32_t) * ((size_t)nblocks + 1));
    int32_t *rep = (int32_t *)malloc(sizeof(int32_t) * ((size_t)nblocks + 1));
    int32_t *order = (int32_t *)malloc(sizeof(int32_t) * ((size_t)nblocks + 1));
    int32_t *state_id = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!new_id || !rep || !order || !state_id) {
        vec_no_memory();
        goto done;
    }
    for (int32_t b = 0; b < nblocks; b++)
        new_id[b] = -1, rep[b] = -1;
    int merged = 0; /* two states in one block (block ids may outnumber states: some blocks empty) */
    for (int32_t s = n - 1; s >= 0; s--) /* any member stands for its block: the first one */
        merged |= rep[blk[s]] >= 0, rep[blk[s]] = s;
    if (merged && !(out = dfa_new(nblocks < n ? nblocks : n, k, d->call_start[n]))) /* rows written as numbered; calls at most d's */
        goto done;
    if (out)
        memcpy(out->classmap, d->classmap, 256);
    int32_t m = 0;
    Py_ssize_t at = 0; /* calls written */
    order[m] = blk[0], new_id[blk[0]] = m++;
    for (int32_t i = 0; i < m; i++) {
        int32_t s = rep[order[i]];
        int32_t *to = out ? out->table + (Py_ssize_t)i * k : NULL;
        if (to)
            memset(to, 0xff, sizeof(int32_t) * (size_t)k);
        for (Py_ssize_t r = rows[s]; r < rows[s + 1]; r += 3) {
            int32_t t = runs[r + 2];
            if (blk[t] == dead)
                continue; /* an edge trimming drops */
            if (new_id[blk[t]] < 0)
                order[m] = blk[t], new_id[blk[t]] = m++;
            if (to)
                for (int32_t c = runs[r], id = new_id[blk[t]]; c < runs[r + 1]; c++)
                    to[c] = id;
        }
        if (out)
            out->acc[i] = d->acc[s], out->call_start[i] = (int32_t)at;
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
            int32_t t = d->call_ret[j];
            if (blk[t] == dead)
                continue;
            if (new_id[blk[t]] < 0)
                order[m] = blk[t], new_id[blk[t]] = m++;
            if (out)
                out->call_callee[at] = d->call_callee[j], out->call_ret[at++] = new_id[blk[t]];
        }
    }
    if (out) { /* blocks the start does not reach (never after a trim) have rows unwritten: dropped */
        out->call_start[m] = (int32_t)at;
        out->n = m;
        result = out, out = NULL;
        goto done;
    }
    for (int32_t i = 0; i < m; i++) /* representatives as old states */
        order[i] = rep[order[i]];
    int same = m == n; /* already minimal and numbered breadth first: the DFA itself */
    for (int32_t s = 0; s < n; s++) {
        state_id[s] = new_id[blk[s]];
        same = same && state_id[s] == s;
    }
    result = same ? dfa_ref(d) : dfa_subset(d, order, m, state_id, NULL);
done:
    if (out) {
        PyGILState_STATE gil = PyGILState_Ensure();
        Py_DECREF(out);
        PyGILState_Release(gil);
    }
    if (new_id != new_id_out)
        free(new_id);
    free(rep), free(order), free(state_id);
    return result;
}


void partition_free(Partition *p) {
    free(p->weight), free(p->blk), free(p->elems), free(p->loc), free(p->bfirst), free(p->bend), free(p->bmarked), free(p->touched);
    free(p->istart), free(p->isrc), free(p->ifirst), free(p->iend), free(p->odd);
    free(p->lcount), free(p->lstart), free(p->used), free(p->lsrc), free(p->snap);
    free(p->rows), free(p->runs);
}

/* The next run of row (k classes) from *at on: consecutive classes with one target; its target,
 * its first class in *first, and *at moved to its end; -1 past the row's end. */
static inline int32_t next_run(const int32_t *row, int32_t k, int32_t *at, int32_t *first) {
    int32_t c = *at;
    for (;;) {
        if (c + 8 <= k && eight_missing(row + c))
            c += 8;
        else if (c >= k)
            return *at = c, -1;
        else if (row[c] < 0)
            c++;
        else
            break;
    }
    int32_t t = row[c];
    *first = c++;
    while (c < k && row[c] == t)
        c++;
    *at = c;
    return t;
}

/* The initial blocks (accepting, the callees called), numbered in order of first appearance,
 * the in-edges and the rows' runs (p->rows, p->runs, which the quotient walks). -1 (with
 * MemoryError) when out of memory. */
int partition_init(Partition *p, const DFA *d) {
    int32_t n = d->n, k = d->k;
    size_t N = (size_t)n + 1;
    Py_ssize_t ncalls = d->call_start[n];
    Interner keys = {0};
    Vec keybuf = {0}, runs = {0};
    int ok = -1;
    memset(p, 0, sizeof(*p));
    p->n = n;
    int32_t max_callee = -1;
    for (Py_ssize_t j = 0; j < ncalls; j++)
        if (d->call_callee[j] > max_callee)
            max_callee = d->call_callee[j];
    int32_t *callee_letter = (int32_t *)malloc(sizeof(int32_t) * ((size_t)max_callee + 2));
    Py_ssize_t *rows = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * (N + 1));
    p->blk = (int32_t *)malloc(sizeof(int32_t) * N), p->elems = (int32_t *)malloc(sizeof(int32_t) * N);
    p->loc = (int32_t *)malloc(sizeof(int32_t) * N), p->bfirst = (int32_t *)malloc(sizeof(int32_t) * N);
    p->bend = (int32_t *)malloc(sizeof(int32_t) * N), p->bmarked = (int32_t *)calloc(N, sizeof(int32_t));
    p->touched = (int32_t *)malloc(sizeof(int32_t) * N), p->snap = (int32_t *)malloc(sizeof(int32_t) * N);
    p->istart = (int32_t *)calloc(N + 1, sizeof(int32_t)), p->weight = (int64_t *)calloc(N, sizeof(int64_t));
    if (!p->weight || !callee_letter || !rows || !p->blk || !p->elems || !p->loc || !p->bfirst || !p->bend || !p->bmarked || !p->touched || !p->snap || !p->istart) {
        vec_no_memory();
        goto done;
    }
    for (int32_t c = 0; c <= max_callee; c++)
        callee_letter[c] = -1;
    int32_t letters = k;
    for (Py_ssize_t j = 0; j < ncalls; j++)
        if (callee_letter[d->call_callee[j]] < 0)
            callee_letter[d->call_callee[j]] = letters++;
    p->letters = letters;
    int32_t plain[2] = {-1, -1}; /* the block of (not) accepting states without calls: most states */
    for (int32_t s = 0; s < n; s++) { /* the key: accepting flag then the callees (sorted) */
        int added;
        Py_ssize_t a = d->call_start[s], b = d->call_start[s + 1];
        if (a == b && d->acc[s] <= 1 && plain[d->acc[s]] >= 0) {
            p->blk[s] = plain[d->acc[s]];
            continue;
        }
        keybuf.len = 0;
        if (vec_reserve(&keybuf, 1 + (b - a)) < 0)
            goto done;
        keybuf.data[keybuf.len++] = d->acc[s];
        for (Py_ssize_t j = a; j < b; j++)
            keybuf.data[keybuf.len++] = d->call_callee[j];
        if ((p->blk[s] = intern(&keys, keybuf.data, keybuf.len, -1, &added)) < 0)
            goto done;
        if (a == b && d->acc[s] <= 1)
            plain[d->acc[s]] = p->blk[s];
    }
    int32_t nblocks = p->nblocks = (int32_t)keys.start.len;
    for (int32_t b = 0; b < nblocks; b++) /* counting sort of the states by block */
        p->bend[b] = 0;
    for (int32_t s = 0; s < n; s++)
        p->bend[p->blk[s]]++;
    for (int32_t b = 0, at = 0; b < nblocks; b++) {
        p->bfirst[b] = at, at += p->bend[b];
        p->bend[b] = p->bfirst[b];
    }
    for (int32_t s = 0; s < n; s++) {
        int32_t b = p->blk[s];
        p->elems[p->bend[b]] = s, p->loc[s] = p->bend[b]++;
    }
    /* the rows' runs, (first, end, target) from rows[s] on, in one scan of the table; by runs where
     * that reads fewer sources per splitter (a run is read at its first class and, but at the row's
     * end, at its end), else every class edge is a run of its own, read once */
    Py_ssize_t total = 0, edges = 0, reads = 0;
    /* room for 8 runs a state (3.3 on average over the bench's minimisations; 31 of 598 need
     * more): grown from empty by doubling, the runs were copied about as often as written */
    if (vec_reserve(&runs, 3 * (8 * (Py_ssize_t)n + k)) < 0)
        goto done;
    for (int32_t s = 0; s < n; s++) {
        const int32_t *row = d->table + (Py_ssize_t)s * k;
        rows[s] = runs.len;
        if (vec_reserve(&runs, runs.len + 3 * (Py_ssize_t)k) < 0)
            goto done;
        int32_t *at = runs.data + runs.len;
        for (int32_t c = 0, first, t; (t = next_run(row, k, &c, &first)) >= 0; at += 3) {
            at[0] = first, at[1] = c, at[2] = t;
            p->istart[t + 1]++, total++, edges += c - first, reads += 1 + (c < k);
        }
        runs.len = at - runs.data;
    }
    rows[n] = runs.len;
    p->by_runs = reads < edges;
    if (!p->by_runs) {
        for (Py_ssize_t i = 0; i < runs.len; i += 3)
            p->istart[runs.data[i + 2] + 1] += runs.data[i + 1] - runs.data[i] - 1;
        total = edges;
    }
    for (Py_ssize_t j = 0; j < ncalls; j++)
        p->istart[d->call_ret[j] + 1]++, total++;
    for (int32_t s = 0; s < n; s++)
        p->weight[p->blk[s]] += p->istart[s + 1];
    for (int32_t s = 0; s < n; s++)
        p->istart[s + 1] += p->istart[s];
    p->isrc = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1)), p->ifirst = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    if (p->by_runs) /* else no ends: each in-edge is one letter */
        p->iend = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    p->lsrc = (int32_t *)malloc(sizeof(int32_t) * ((p->by_runs ? 2 : 1) * (size_t)total + 1));
    p->odd = (uint8_t *)calloc(N, 1), p->k = k;
    p->lcount = (int32_t *)calloc((size_t)letters + 1, sizeof(int32_t)), p->lstart = (int32_t *)calloc((size_t)letters + 1, sizeof(int32_t));
    p->used = (int32_t *)malloc(sizeof(int32_t) * ((size_t)letters + 1));
    if (!p->isrc || !p->ifirst || (p->by_runs && !p->iend) || !p->odd || !p->lsrc || !p->lcount || !p->lstart || !p->used) {
        vec_no_memory();
        goto done;
    }
    int32_t *fill = p->touched; /* scratch here: the fill cursors */
    memcpy(fill, p->istart, sizeof(int32_t) * (size_t)n);
    for (int32_t s = 0; s < n; s++) {
        for (Py_ssize_t i = rows[s]; i < rows[s + 1]; i += 3) {
            int32_t first = runs.data[i], end = runs.data[i + 1], t = runs.data[i + 2];
            if (p->by_runs)
                p->isrc[fill[t]] = s, p->ifirst[fill[t]] = first, p->iend[fill[t]++] = end;
            else
                for (int32_t c = first; c < end; c++)
                    p->isrc[fill[t]] = s, p->ifirst[fill[t]++] = c;
        }
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
            int32_t t = d->call_ret[j], letter = callee_letter[d->call_callee[j]];
            if (p->iend)
                p->iend[fill[t]] = letter + 1;
            p->isrc[fill[t]] = s, p->ifirst[fill[t]++] = letter;
        }
    }
    /* each letter's region of lsrc: room for every in-run that starts there or (by runs) ends
     * there before the row's end, what partition_split reads at that letter from any splitter */
    for (Py_ssize_t j = 0; j < total; j++) {
        p->lstart[p->ifirst[j] + 1]++;
        if (p->by_runs && p->iend[j] < k)
            p->lstart[p->iend[j] + 1]++;
    }
    for (int32_t a = 0; a < letters; a++)
        p->lstart[a + 1] += p->lstart[a];
    ok = 0;
    p->rows = rows, p->runs = runs.data, rows = NULL, runs = (Vec){0};
done:
    free(callee_letter), free(rows);
    interner_free(&keys);
    vec_free(&keybuf), vec_free(&runs);
    return ok;
}

/* Split every block by "enters S on letter a", for each letter a S is entered by, where S is
 * states[0..m) (read before any split: the caller's copy, which splits do not move). Each split is
 * appended to *splits as (X, the new block Z, X's size and Z's then). -1 when out of memory.
 *
 * By runs: with M_a the states entering S on byte class a, splitting by every M_a parts the same
 * states as splitting by every D_a = M_(a-1) xor M_a (M_(-1) empty): each family is the other's
 * running xor. D_a is the sources of the runs into S that start or end at a, less those counted
 * twice (a source's run into S ends where its next run into S starts), so each run is read at
 * most twice, whatever its length, and a letter no run starts or ends at costs nothing. A callee's
 * letter splits by M_a itself (one source may call a callee twice: no xor there). */
int partition_split(Partition *p, const int32_t *states, int32_t m, Vec *splits) {
    /* the arrays in locals that nothing else writes: through p, every byte store (odd) made the
     * compiler load them again, in the loops that are most of minimising */
    const int32_t *restrict istart = p->istart, *restrict isrc = p->isrc, *restrict ifirst = p->ifirst, *restrict iend = p->iend;
    int32_t *restrict lcount = p->lcount, *restrict used = p->used, *restrict lsrc = p->lsrc;
    const int32_t *restrict lstart = p->lstart;
    int32_t *restrict blk = p->blk, *restrict elems = p->elems, *restrict loc = p->loc, *restrict bfirst = p->bfirst, *restrict bend = p->bend;
    int32_t *restrict bmarked = p->bmarked, *restrict touched = p->touched;
    uint8_t *restrict odd = p->odd;
    int32_t nused = 0, k = p->by_runs ? p->k : 0; /* k 0: every letter split by M_a */
    /* the sources by letter, each into its letter's fixed region (partition_init's lstart): one
     * pass (a pass counting them first, to pack the regions, was a third of splitting) */
    for (int32_t i = 0; i < m; i++)
        for (int32_t j = istart[states[i]], end = istart[states[i] + 1]; j < end; j++) {
            int32_t a = ifirst[j], e, src = isrc[j], c = lcount[a]++;
            if (c == 0)
                used[nused++] = a;
            lsrc[lstart[a] + c] = src;
            if (k && (e = iend[j]) < k) {
                if ((c = lcount[e]++) == 0)
                    used[nused++] = e;
                lsrc[lstart[e] + c] = src;
            }
        }
    for (int32_t u = 0; u < nused; u++) {
        int32_t a = used[u], ntouched = 0, a_start = lstart[a], a_end = a_start + lcount[a];
        lcount[a] = 0;
        if (a < k)
            for (int32_t j = a_start; j < a_end; j++)
                odd[lsrc[j]] ^= 1;
        for (int32_t j = a_start; j < a_end; j++) { /* move each source into its block's marked prefix */
            int32_t s = lsrc[j], X = blk[s];
            if (a < k) {
                if (!odd[s])
                    continue; /* a run ends and one starts here: s enters S on a - 1 and a alike */
                odd[s] = 0;
            }
            int32_t marked = bmarked[X], q = bfirst[X] + marked, here = loc[s];
            if (here < q)
                continue; /* marked already (a second call edge of one callee) */
            int32_t other = elems[q];
            elems[q] = s, loc[s] = q, elems[here] = other, loc[other] = here;
            bmarked[X] = marked + 1;
            if (!marked)
                touched[ntouched++] = X;
        }
        for (int32_t i = 0; i < ntouched; i++) {
            int32_t X = touched[i], marked = bmarked[X];
            bmarked[X] = 0;
            if (marked == bend[X] - bfirst[X])
                continue;
            int32_t Z = p->nblocks++;
            bfirst[Z] = bfirst[X], bend[Z] = bfirst[X] + marked;
            bfirst[X] = bend[Z];
            int64_t w = 0;
            for (int32_t e = bfirst[Z]; e < bend[Z]; e++) {
                int32_t s = elems[e];
                blk[s] = Z, w += istart[s + 1] - istart[s];
            }
            p->weight[Z] = w, p->weight[X] -= w;
            if (vec_push(splits, X) < 0 || vec_push(splits, Z) < 0 || vec_push(splits, bend[X] - bfirst[X]) < 0 || vec_push(splits, marked) < 0)
                return -1;
        }
    }
    return 0;
}

/* block b's states, copied to p->snap (splits move elems; the copy stays) */
static int32_t *block_snapshot(Partition *p, int32_t b, int32_t *m) {
    *m = p->bend[b] - p->bfirst[b];
    memcpy(p->snap, p->elems + p->bfirst[b], sizeof(int32_t) * (size_t)*m);
    return p->snap;
}

/* Hopcroft's refinement of p (a partition of d just made; freed here), then the quotient.
 * Every initial block starts in the work list, which makes the "smaller half" rule exact without
 * a sink state. `dead`: the block of the states that cannot reach acceptance (their edges lead
 * only there), never a splitter, so that edges into it part nothing from missing ones, as after
 * trimming; -1 for none (then states that cannot finish stay apart from missing edges: trim
 * first). */
static DFA *hopcroft(DFA *d, Partition *p, int32_t dead, double deadline) {
    int32_t n = d->n;
    DFA *result = NULL;
    Vec splits = {0};
    uint8_t *inwork = (uint8_t *)calloc((size_t)n + 1, 1);
    int32_t *work = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!inwork || !work) {
        vec_no_memory();
        goto done;
    }
    Py_ssize_t wtop = 0;
    int32_t initial = p->nblocks;
    if (partition_first_round(p, d, p->rows, p->runs, dead, &splits) < 0)
        goto done;
    /* stable now for every initial block: of the parts of each, all but the heaviest go to work */
    int32_t *heaviest = (int32_t *)work; /* by initial block, before the work list fills: scratch */
    for (int32_t b = 0; b < initial; b++)
        heaviest[b] = b;
    for (Py_ssize_t i = 0; i < splits.len; i += 4) {
        int32_t X = splits.data[i], Z = splits.data[i + 1];
        if (p->weight[Z] > p->weight[heaviest[X]])
            heaviest[X] = Z;
    }
    for (int32_t b = 0; b < initial; b++)
        inwork[b] = heaviest[b] != b; /* split: X itself goes unless it is the heaviest */
    for (Py_ssize_t i = 0; i < splits.len; i += 4) {
        int32_t X = splits.data[i], Z = splits.data[i + 1];
        inwork[Z] = heaviest[X] != Z;
    }
    for (int32_t b = 0; b < p->nblocks; b++)
        if (inwork[b])
            work[wtop++] = b;
    long steps = 0;
    while (wtop) {
        if (!(++steps & 1023) && past(deadline))
            goto done;
        int32_t B = work[--wtop], m;
        inwork[B] = 0;
        splits.len = 0;
        const int32_t *states = block_snapshot(p, B, &m);
        if (partition_split(p, states, m, &splits) < 0)
            goto done;
        for (Py_ssize_t i = 0; i < splits.len; i += 4) { /* X in the work list: Z too; else the part smaller then */
            int32_t X = splits.data[i], Z = splits.data[i + 1];
            int32_t add = inwork[X] || splits.data[i + 3] <= splits.data[i + 2] ? Z : X;
            if (!inwork[add])
                work[wtop++] = add, inwork[add] = 1;
        }
    }
    result = dfa_quotient(d, p->blk, p->nblocks, NULL, p->rows, p->runs, dead);
done:
    partition_free(p);
    vec_free(&splits);
    free(inwork), free(work);
    return result;
}

/* The minimal DFA of a trimmed d (Hopcroft), numbered breadth first from the start (0); a new
 * reference (d itself if it is). */
DFA *dfa_minimize(DFA *d, double deadline) {
    Partition p;
    if (partition_init(&p, d) < 0) {
        partition_free(&p);
        return NULL;
    }
    return hopcroft(d, &p, -1, deadline);
}

/* The states of p that `live` does not flag, moved into a new block (the elems regrouped by
 * block, the weights counted again); its id. */
static int32_t partition_set_apart(Partition *p, const uint8_t *live) {
    int32_t n = p->n, dead = p->nblocks++;
    for (int32_t s = 0; s < n; s++)
        if (!live[s])
            p->blk[s] = dead;
    for (int32_t b = 0; b < p->nblocks; b++)
        p->bend[b] = 0, p->weight[b] = 0;
    for (int32_t s = 0; s < n; s++)
        p->bend[p->blk[s]]++, p->weight[p->blk[s]] += p->istart[s + 1] - p->istart[s];
    for (int32_t b = 0, at = 0; b < p->nblocks; b++)
        p->bfirst[b] = at, at += p->bend[b], p->bend[b] = p->bfirst[b];
    for (int32_t s = 0; s < n; s++) {
        int32_t b = p->blk[s];
        p->elems[p->bend[b]] = s, p->loc[s] = p->bend[b]++;
    }
    return dead;
}

/* minimize(trim(d, productive)) without the trimmed copy, for a DFA without calls (products, the
 * pieces of schemas): the states that cannot reach acceptance (back from the accepting ones over
 * the partition's in-edges) go into a block that is never a splitter and that the quotient never
 * enters, and unreachable states into no block the quotient reaches. Trimming a product of a long
 * counter copied its whole table (151,000 states x 58 classes: a third of minimising it). With
 * calls, or when the start cannot finish, it trims first. */
DFA *dfa_trim_minimize(DFA *d, const uint8_t *productive, Py_ssize_t nprod, double deadline) {
    int32_t n = d->n;
    Partition p;
    if (d->call_start[n] == 0) {
        if (partition_init(&p, d) < 0) {
            partition_free(&p);
            return NULL;
        }
        uint8_t *live = (uint8_t *)calloc((size_t)n + 1, 1);
        int32_t *work = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
        if (!live || !work) {
            free(live), free(work), partition_free(&p);
            vec_no_memory();
            return NULL;
        }
        int32_t nlive = dfa_finishing(d, p.istart, p.isrc, live, work), dead = -1;
        if (live[0] && nlive < n)
            dead = partition_set_apart(&p, live);
        int start_live = live[0];
        free(live), free(work);
        if (start_live)
            return hopcroft(d, &p, dead, deadline);
        partition_free(&p); /* the empty language: trimming gives its one dead state */
    }
    DFA *trimmed = dfa_trim(d, productive, nprod), *result = NULL;
    if (trimmed) {
        result = dfa_minimize(trimmed, deadline);
        PyGILState_STATE gil = PyGILState_Ensure();
        Py_DECREF(trimmed);
        PyGILState_Release(gil);
    }
    return result;
}
