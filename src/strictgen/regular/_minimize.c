/* Minimisation (Hopcroft) and refinement (Moore rounds, for horizon classes) of DFAs with call
 * edges. See _regular.h. */
#include "_regular.h"

/* The quotient of d by the blocks blk[s] (equivalent states share a block; 0 <= blk < nblocks),
 * numbered breadth first from the start's block: the numbering Hopcroft and Moore both give, so
 * either minimisation yields the same DFA. In new_id (nblocks entries, or NULL) each block's
 * state, -1 for a block the start does not reach. A new reference (d itself when it is the
 * quotient already). */
static DFA *quotient(DFA *d, const int32_t *blk, int32_t nblocks, int32_t *new_id_out) {
    int32_t n = d->n, k = d->k;
    DFA *result = NULL;
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
    for (int32_t s = n - 1; s >= 0; s--) /* any member stands for its block: the first one */
        rep[blk[s]] = s;
    int32_t m = 0;
    order[m] = blk[0], new_id[blk[0]] = m++;
    for (int32_t i = 0; i < m; i++) {
        int32_t s = rep[order[i]];
        for (int32_t c = 0; c < k; c++) {
            int32_t t = d->table[(Py_ssize_t)s * k + c];
            if (t >= 0 && new_id[blk[t]] < 0)
                order[m] = blk[t], new_id[blk[t]] = m++;
        }
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
            int32_t t = d->call_ret[j];
            if (new_id[blk[t]] < 0)
                order[m] = blk[t], new_id[blk[t]] = m++;
        }
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
    if (new_id != new_id_out)
        free(new_id);
    free(rep), free(order), free(state_id);
    return result;
}

/* Hopcroft's partition refinement on the partial automaton; letters are the byte classes and one
 * letter per callee (a call edge is a transition to its return state). Every initial block starts
 * in the work list, which makes the "smaller half" rule exact without a sink state. States that
 * cannot reach acceptance should be trimmed first (else they stay apart from missing edges). The
 * minimal DFA, numbered breadth first from the start (0); a new reference (d itself if it is). */
DFA *dfa_minimize(DFA *d, double deadline) {
    int32_t n = d->n, k = d->k;
    Py_ssize_t ncalls = d->call_start[n];
    DFA *result = NULL;
    Interner keys = {0};
    Vec keybuf = {0};
    /* letters: byte classes, then callees by first appearance (sorted by callee id) */
    int32_t max_callee = -1;
    for (Py_ssize_t j = 0; j < ncalls; j++)
        if (d->call_callee[j] > max_callee)
            max_callee = d->call_callee[j];
    int32_t *callee_letter = (int32_t *)malloc(sizeof(int32_t) * ((size_t)max_callee + 2));
    int32_t *blk = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *elems = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *loc = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *bfirst = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *bend = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *bmarked = (int32_t *)calloc((size_t)n + 1, sizeof(int32_t));
    uint8_t *inwork = (uint8_t *)calloc((size_t)n + 1, 1);
    int32_t *work = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *touched = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *key = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *istart = NULL, *isrc = NULL, *iletter = NULL, *lstart = NULL, *lsrc = NULL, *lcount = NULL, *used = NULL, *cur = NULL;
    if (!callee_letter || !blk || !elems || !loc || !bfirst || !bend || !bmarked || !inwork || !work || !touched || !key) {
        vec_no_memory();
        goto done;
    }
    for (int32_t c = 0; c <= max_callee; c++)
        callee_letter[c] = -1;
    int32_t letters = k;
    for (Py_ssize_t j = 0; j < ncalls; j++)
        if (callee_letter[d->call_callee[j]] < 0)
            callee_letter[d->call_callee[j]] = letters++;
    /* initial blocks: (accepting, the callees called) */
    for (int32_t s = 0; s < n; s++) {
        int added;
        int32_t id;
        Py_ssize_t a = d->call_start[s], b = d->call_start[s + 1];
        /* the key: accepting flag then the callees (already sorted) */
        keybuf.len = 0;
        if (vec_reserve(&keybuf, 1 + (b - a)) < 0)
            goto done;
        keybuf.data[keybuf.len++] = d->acc[s];
        for (Py_ssize_t j = a; j < b; j++)
            keybuf.data[keybuf.len++] = d->call_callee[j];
        id = intern(&keys, keybuf.data, keybuf.len, -1, &added);
        if (id < 0)
            goto done;
        key[s] = id;
    }
    int32_t nblocks = (int32_t)keys.start.len;
    /* counting sort of states by key gives the initial blocks */
    {
        int32_t *cnt = (int32_t *)calloc((size_t)nblocks + 1, sizeof(int32_t));
        if (!cnt) {
            vec_no_memory();
            goto done;
        }
        for (int32_t s = 0; s < n; s++)
            cnt[key[s]]++;
        int32_t at = 0;
        for (int32_t b = 0; b < nblocks; b++)
            bfirst[b] = at, at += cnt[b], bend[b] = bfirst[b];
        free(cnt);
        for (int32_t s = 0; s < n; s++) {
            int32_t b = key[s];
            elems[bend[b]] = s, loc[s] = bend[b]++, blk[s] = b;
        }
    }
    /* inverse transitions by target: (source, letter) */
    Py_ssize_t total = 0;
    istart = (int32_t *)calloc((size_t)n + 2, sizeof(int32_t));
    if (!istart) {
        vec_no_memory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < (Py_ssize_t)n * k; i++)
        if (d->table[i] >= 0)
            istart[d->table[i] + 1]++, total++;
    for (Py_ssize_t j = 0; j < ncalls; j++)
        istart[d->call_ret[j] + 1]++, total++;
    for (int32_t s = 0; s < n; s++)
        istart[s + 1] += istart[s];
    isrc = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    iletter = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    lstart = (int32_t *)malloc(sizeof(int32_t) * ((size_t)letters + 2));
    lsrc = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    lcount = (int32_t *)calloc((size_t)letters + 1, sizeof(int32_t));
    used = (int32_t *)malloc(sizeof(int32_t) * ((size_t)letters + 1));
    cur = (int32_t *)malloc(sizeof(int32_t) * ((size_t)letters + 1));
    if (!isrc || !iletter || !lstart || !lsrc || !lcount || !used || !cur) {
        vec_no_memory();
        goto done;
    }
    {
        int32_t *fill = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
        if (!fill) {
            vec_no_memory();
            goto done;
        }
        memcpy(fill, istart, sizeof(int32_t) * (size_t)n);
        for (int32_t s = 0; s < n; s++) {
            for (int32_t c = 0; c < k; c++) {
                int32_t t = d->table[(Py_ssize_t)s * k + c];
                if (t >= 0)
                    isrc[fill[t]] = s, iletter[fill[t]++] = c;
            }
            for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
                int32_t t = d->call_ret[j];
                isrc[fill[t]] = s, iletter[fill[t]++] = callee_letter[d->call_callee[j]];
            }
        }
        free(fill);
    }
    Py_ssize_t wtop = 0;
    for (int32_t b = 0; b < nblocks; b++)
        work[wtop++] = b, inwork[b] = 1;
    long rounds = 0;
    while (wtop) {
        if (!(++rounds & 1023) && past(deadline))
            goto done;
        int32_t B = work[--wtop];
        inwork[B] = 0;
        /* the incoming transitions of B's states, bucketed by letter */
        Py_ssize_t m = 0;
        for (int32_t i = bfirst[B]; i < bend[B]; i++)
            m += istart[elems[i] + 1] - istart[elems[i]];
        if (!m)
            continue;
        /* only the letters B is entered by (a block's work is its in-edges, not the alphabet;
         * the order letters split in does not change the coarsest partition) */
        int32_t nused = 0;
        for (int32_t i = bfirst[B]; i < bend[B]; i++)
            for (int32_t j = istart[elems[i]]; j < istart[elems[i] + 1]; j++)
                if (lcount[iletter[j]]++ == 0)
                    used[nused++] = iletter[j];
        for (int32_t u = 0, at = 0; u < nused; u++) {
            int32_t a = used[u];
            lstart[a] = cur[a] = at;
            at += lcount[a];
        }
        /* B's members may move while splitting: snapshot the sources first */
        for (int32_t i = bfirst[B]; i < bend[B]; i++)
            for (int32_t j = istart[elems[i]]; j < istart[elems[i] + 1]; j++)
                lsrc[cur[iletter[j]]++] = isrc[j];
        for (int32_t u = 0; u < nused; u++) {
            int32_t a = used[u], ntouched = 0, a_end = lstart[a] + lcount[a];
            lcount[a] = 0;
            for (int32_t j = lstart[a]; j < a_end; j++) {
                int32_t s = lsrc[j], X = blk[s];
                /* move s into X's marked prefix */
                int32_t p = loc[s], q = bfirst[X] + bmarked[X];
                if (p < q)
                    continue; /* already marked (cannot happen: one transition per letter) */
                int32_t other = elems[q];
                elems[q] = s, loc[s] = q, elems[p] = other, loc[other] = p;
                if (!bmarked[X]++)
                    touched[ntouched++] = X;
            }
            for (int32_t i = 0; i < ntouched; i++) {
                int32_t X = touched[i];
                int32_t marked = bmarked[X];
                bmarked[X] = 0;
                if (marked == bend[X] - bfirst[X])
                    continue;
                int32_t Z = nblocks++;
                bfirst[Z] = bfirst[X], bend[Z] = bfirst[X] + marked;
                bfirst[X] = bend[Z];
                for (int32_t e = bfirst[Z]; e < bend[Z]; e++)
                    blk[elems[e]] = Z;
                if (inwork[X] || marked <= bend[X] - bfirst[X]) {
                    work[wtop++] = Z, inwork[Z] = 1;
                } else {
                    work[wtop++] = X, inwork[X] = 1;
                }
            }
        }
    }
    result = quotient(d, blk, nblocks, NULL);
done:
    interner_free(&keys);
    vec_free(&keybuf);
    free(callee_letter), free(blk), free(elems), free(loc), free(bfirst), free(bend), free(bmarked), free(inwork), free(work), free(touched), free(key);
    free(istart), free(isrc), free(iletter), free(lstart), free(lsrc), free(lcount), free(used), free(cur);
    return result;
}

/* s's signature under the classes `cls`: its own class; the class after each letter (-1: no
 * move) as runs, (first letter, class) wherever it changes (a string body's state moves the same
 * way on most letters: a short signature is cheap to hash and compare); -2; then (callee, class
 * of the return state) for each call edge. `runs` holds each state's row once as runs of equal
 * targets, (first letter, target) from runs[2 * run_start[s]]: a signature costs its runs, not
 * the alphabet, and a state is signed again in every round one of its targets splits. */
static int refine_signature(const DFA *d, const int32_t *cls, const int32_t *run_start, const int32_t *runs, int32_t s, Vec *sig) {
    int32_t nruns = run_start[s + 1] - run_start[s];
    sig->len = 0;
    if (vec_reserve(sig, 2 + 2 * nruns + 2 * (d->call_start[s + 1] - d->call_start[s])) < 0)
        return -1;
    int32_t *out = sig->data;
    Py_ssize_t len = 0;
    const int32_t *run = runs + 2 * (Py_ssize_t)run_start[s];
    out[len++] = cls[s];
    int32_t prev = -1;
    for (int32_t i = 0; i < nruns; i++) {
        int32_t t = run[2 * i + 1], v = t >= 0 ? cls[t] : -1;
        if (v != prev)
            out[len++] = run[2 * i], out[len++] = v, prev = v;
    }
    out[len++] = -2;
    for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
        out[len++] = d->call_callee[j];
        out[len++] = cls[d->call_ret[j]];
    }
    sig->len = len;
    return 0;
}

static void interner_clear(Interner *t) {
    t->pool.len = t->start.len = t->len.len = 0;
    if (t->slots)
        memset(t->slots, 0xff, sizeof(int32_t) * (size_t)(t->mask + 1));
}

/* refine(rounds): Moore's refinement from the initial partition (accepting, callees), at most
 * `rounds` rounds: each state's class (n int32, malloc'd), and in *stable_out the round after
 * which nothing changed, or -1.
 *
 * Incremental: a round recomputes only the predecessors of the states whose class changed in the
 * round before (the others keep their signature), so a long counter, which splits one state a
 * round, costs its splits rather than rounds x states x letters. Within a block, the states not
 * recomputed share one signature (that of any of them); recomputed states with another signature
 * move to new blocks. Blocks live in one array (elems, ordered by block; pos is the inverse).
 *
 * rounds < 0: until nothing changes (then the classes are those of the minimal DFA). With `parent`
 * and `born` (room for n each), the history of the splits: a class keeps its id when it splits
 * (for the part that stays), so every id ever made is a class at the end; born[c] is the round
 * that split class c off parent[c] (0 and -1 for the initial classes). The classes after round
 * r are then each final class's first ancestor born by round r. */
int32_t *dfa_refine(const DFA *d, long rounds, double deadline, long *stable_out, int32_t *parent, int32_t *born) {
    int32_t n = d->n, k = d->k;
    size_t N = (size_t)n + 1;
    int32_t *result = NULL;
    int32_t *cls = (int32_t *)malloc(sizeof(int32_t) * N), *elems = (int32_t *)malloc(sizeof(int32_t) * N);
    int32_t *pos = (int32_t *)malloc(sizeof(int32_t) * N), *bstart = (int32_t *)malloc(sizeof(int32_t) * N);
    int32_t *bend = (int32_t *)malloc(sizeof(int32_t) * N), *mcount = (int32_t *)calloc(N, sizeof(int32_t));
    int32_t *keep = (int32_t *)malloc(sizeof(int32_t) * N), *sigid = (int32_t *)malloc(sizeof(int32_t) * N);
    int32_t *pred_start = (int32_t *)calloc(N + 1, sizeof(int32_t)), *pred = NULL;
    int32_t *run_start = (int32_t *)malloc(sizeof(int32_t) * (N + 1)), *runs = NULL;
    uint8_t *mark = (uint8_t *)calloc(N, 1);
    int32_t *members = (int32_t *)malloc(sizeof(int32_t) * N);
    /* by signature id (a round interns at most one per candidate and one per touched block) */
    int32_t *gcount = (int32_t *)calloc(2 * N + 1, sizeof(int32_t)), *gat = (int32_t *)malloc(sizeof(int32_t) * (2 * N + 1));
    int32_t *gblock = (int32_t *)malloc(sizeof(int32_t) * (2 * N + 1));
    Vec sig = {0}, cand = {0}, changed = {0}, next_changed = {0}, touched = {0}, gids = {0};
    Interner t = {0};
    int added;
    if (!cls || !elems || !pos || !bstart || !bend || !mcount || !keep || !sigid || !pred_start || !run_start || !mark || !members || !gcount || !gat || !gblock) {
        vec_no_memory();
        goto done;
    }
    { /* every row as runs of equal targets, in one pass over the table */
        Vec r = {0};
        for (int32_t s = 0; s < n; s++) {
            const int32_t *row = d->table + (Py_ssize_t)s * k;
            run_start[s] = (int32_t)(r.len / 2);
            if (vec_reserve(&r, r.len + 2 * (Py_ssize_t)k) < 0) {
                vec_free(&r);
                goto done;
            }
            int32_t *out = r.data + r.len, *at = out;
            for (int32_t c = 0, prev = INT32_MIN; c < k; c++)
                if (row[c] != prev)
                    *at++ = c, *at++ = prev = row[c];
            r.len += at - out;
        }
        run_start[n] = (int32_t)(r.len / 2);
        runs = r.data; /* owned from here: freed with the rest */
    }
    for (int32_t s = 0; s < n; s++) { /* the initial partition */
        sig.len = 0;
        if (vec_push(&sig, d->acc[s]) < 0)
            goto done;
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++)
            if (vec_push(&sig, d->call_callee[j]) < 0)
                goto done;
        int32_t id = intern(&t, sig.data, sig.len, -1, &added);
        if (id < 0)
            goto done;
        cls[s] = id;
    }
    int32_t nblocks = (int32_t)t.start.len;
    for (int32_t b = 0; parent && b < nblocks; b++)
        parent[b] = -1, born[b] = 0;
    for (int32_t b = 0; b <= nblocks; b++)
        bstart[b] = 0;
    for (int32_t s = 0; s < n; s++)
        bstart[cls[s] + 1]++;
    for (int32_t b = 0; b < nblocks; b++)
        bstart[b + 1] += bstart[b];
    for (int32_t b = 0; b < nblocks; b++)
        bend[b] = bstart[b];
    for (int32_t s = 0; s < n; s++) {
        pos[s] = bend[cls[s]]++;
        elems[pos[s]] = s;
    }
    /* predecessors over runs of letters and call returns, as CSR (a state once per run) */
    for (int32_t s = 0; s < n; s++) {
        for (int32_t i = run_start[s]; i < run_start[s + 1]; i++) {
            int32_t x = runs[2 * i + 1];
            if (x >= 0)
                pred_start[x + 1]++;
        }
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++)
            pred_start[d->call_ret[j] + 1]++;
    }
    for (int32_t s = 0; s < n; s++)
        pred_start[s + 1] += pred_start[s];
    pred = (int32_t *)malloc(sizeof(int32_t) * ((size_t)pred_start[n] + 1));
    if (!pred) {
        vec_no_memory();
        goto done;
    }
    for (int32_t s = 0; s < n; s++)
        mcount[s] = pred_start[s]; /* fill cursors; zeroed again below */
    for (int32_t s = 0; s < n; s++) {
        for (int32_t i = run_start[s]; i < run_start[s + 1]; i++) {
            int32_t x = runs[2 * i + 1];
            if (x >= 0)
                pred[mcount[x]++] = s;
        }
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++)
            pred[mcount[d->call_ret[j]]++] = s;
    }
    memset(mcount, 0, sizeof(int32_t) * N);
    long stable = -1;
    for (long r = 1; rounds < 0 || r <= rounds; r++) {
        if (past(deadline))
            goto done;
        if (nblocks == n) { /* every state apart already: round r changes nothing */
            stable = r;
            break;
        }
        cand.len = 0;
        if (r == 1) {
            if (vec_reserve(&cand, n) < 0)
                goto done;
            for (int32_t s = 0; s < n; s++)
                mark[s] = 1, cand.data[cand.len++] = s;
        } else {
            for (Py_ssize_t i = 0; i < changed.len; i++) {
                int32_t x = changed.data[i];
                for (int32_t j = pred_start[x]; j < pred_start[x + 1]; j++)
                    if (!mark[pred[j]]) {
                        mark[pred[j]] = 1;
                        if (vec_push(&cand, pred[j]) < 0)
                            goto done;
                    }
            }
        }
        interner_clear(&t);
        touched.len = 0;
        for (Py_ssize_t i = 0; i < cand.len; i++) {
            int32_t s = cand.data[i], b = cls[s];
            if (refine_signature(d, cls, run_start, runs, s, &sig) < 0 || (sigid[s] = intern(&t, sig.data, sig.len, -1, &added)) < 0)
                goto done;
            if (mcount[b] == 0 && vec_push(&touched, b) < 0)
                goto done;
            int32_t at = bstart[b] + mcount[b]++, other = elems[at]; /* candidates to the block's front */
            elems[pos[s]] = other, pos[other] = pos[s];
            elems[at] = s, pos[s] = at;
        }
        for (Py_ssize_t i = 0; i < touched.len; i++) { /* the signature that stays, before any split */
            int32_t b = touched.data[i];
            keep[b] = -1;
            if (bstart[b] + mcount[b] < bend[b]) {
                if (refine_signature(d, cls, run_start, runs, elems[bstart[b] + mcount[b]], &sig) < 0 || (keep[b] = intern(&t, sig.data, sig.len, -1, &added)) < 0)
                    goto done;
            }
        }
        next_changed.len = 0;
        for (Py_ssize_t i = 0; i < touched.len; i++) {
            int32_t b = touched.data[i], m = mcount[b], lo = bstart[b];
            mcount[b] = 0;
            /* the recomputed states by signature, in the order first met (counting, not sorting:
             * round 1 groups every state) */
            gids.len = 0;
            for (int32_t j = 0; j < m; j++) {
                int32_t s = elems[lo + j], id = sigid[s];
                members[j] = s;
                if (gcount[id]++ == 0 && vec_push(&gids, id) < 0)
                    goto done;
            }
            int32_t stay = keep[b];
            if (stay < 0) { /* every state was recomputed: the largest group keeps the block */
                int32_t best = 0;
                for (Py_ssize_t g = 0; g < gids.len; g++)
                    if (gcount[gids.data[g]] > best)
                        best = gcount[gids.data[g]], stay = gids.data[g];
            }
            int32_t w = lo;
            for (Py_ssize_t g = 0; g < gids.len; g++) { /* each other group a new block, from lo on */
                int32_t id = gids.data[g];
                if (id == stay)
                    continue;
                int32_t nb = nblocks++;
                if (parent)
                    parent[nb] = b, born[nb] = (int32_t)r;
                gblock[id] = nb, gat[id] = bstart[nb] = w;
                w += gcount[id];
                bend[nb] = w;
            }
            bstart[b] = gat[stay] = w; /* the staying group last, before the states not recomputed */
            gblock[stay] = b;
            for (int32_t j = 0; j < m; j++) {
                int32_t s = members[j], id = sigid[s], at = gat[id]++;
                elems[at] = s, pos[s] = at;
                if (id != stay) {
                    cls[s] = gblock[id];
                    if (vec_push(&next_changed, s) < 0)
                        goto done;
                }
            }
            for (Py_ssize_t g = 0; g < gids.len; g++)
                gcount[gids.data[g]] = 0;
        }
        for (Py_ssize_t i = 0; i < cand.len; i++)
            mark[cand.data[i]] = 0;
        if (next_changed.len == 0) {
            stable = r;
            break;
        }
        Vec tmp = changed;
        changed = next_changed, next_changed = tmp;
    }
    *stable_out = stable;
    result = cls, cls = NULL;
done:
    free(cls), free(elems), free(pos), free(bstart), free(bend), free(mcount), free(keep), free(sigid);
    free(pred_start), free(pred), free(run_start), free(runs), free(mark), free(members), free(gcount), free(gat), free(gblock);
    vec_free(&sig), vec_free(&cand), vec_free(&changed), vec_free(&next_changed), vec_free(&touched), vec_free(&gids);
    interner_free(&t);
    return result;
}

/* The minimal DFA of a trimmed d by Moore's refinement to its fixpoint (the same DFA as
 * dfa_minimize), and the history of its splits by state of the result (see dfa_refine): in
 * *born_out and *parent_out (malloc'd, n of the result each) the round each state's class split
 * off and the state it split from, or NULL for both where some class is unreachable (never after
 * a trim). What this buys over Hopcroft: the classes of every round come with it, where horizon
 * classes (compile/automaton.py) took one more refinement after minimising. */
DFA *dfa_minimize_rounds(DFA *d, double deadline, int32_t **born_out, int32_t **parent_out) {
    int32_t n = d->n;
    long stable;
    DFA *result = NULL;
    int32_t *parent = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1)), *born = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *new_id = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1)), *cls = NULL;
    int32_t *b2 = NULL, *p2 = NULL;
    *born_out = *parent_out = NULL;
    if (!parent || !born || !new_id) {
        vec_no_memory();
        goto done;
    }
    if (!(cls = dfa_refine(d, -1, deadline, &stable, parent, born)))
        goto done;
    int32_t nblocks = 0;
    for (int32_t s = 0; s < n; s++)
        if (cls[s] >= nblocks)
            nblocks = cls[s] + 1;
    b2 = (int32_t *)malloc(sizeof(int32_t) * ((size_t)nblocks + 1)), p2 = (int32_t *)malloc(sizeof(int32_t) * ((size_t)nblocks + 1));
    if (!b2 || !p2) {
        vec_no_memory();
        goto done;
    }
    if (!(result = quotient(d, cls, nblocks, new_id)))
        goto done;
    if (result->n == nblocks) { /* else some class is unreachable: no history */
        for (int32_t b = 0; b < nblocks; b++)
            b2[new_id[b]] = born[b], p2[new_id[b]] = parent[b] < 0 ? -1 : new_id[parent[b]];
        *born_out = b2, *parent_out = p2;
        b2 = p2 = NULL;
    }
done:
    free(parent), free(born), free(new_id), free(cls), free(b2), free(p2);
    return result;
}
