/* Moore's rounds on the partition of _partition.h: refinement round by round (horizon classes)
 * and minimisation to the fixpoint with the history of its splits (a rule's horizon classes read
 * it instead of refining again). See _regular.h. */
#include "_regular.h"
#include "_partition.h"

static int32_t *refine_partition(Partition *pp, const DFA *d, const Py_ssize_t *rows, const int32_t *runs, long rounds, double deadline, long *stable_out, int32_t *parent,
                                 int32_t *born);

/* refine(rounds): Moore's refinement from the initial partition (accepting, callees), at most
 * `rounds` rounds: each state's class (n int32, malloc'd), and in *stable_out the first round
 * that changed nothing, or -1.
 *
 * Moore's rounds by Hopcroft's splitters: round r splits every block by the blocks round r - 1
 * made, but for the heaviest part of each block that split (its states are known from the others:
 * the states of the block before the round less theirs). Two states of one block go to blocks of
 * one round-(r - 2) block on every letter, so they stay together exactly when, on every letter,
 * they agree on membership of those parts: the classes after round r are Moore's. Round 1 splits
 * by every initial block (missing edges part from present ones). A splitter costs the in-runs of
 * its states (its weight), and a state's in-runs are read again only when its block is not the
 * heaviest part of a split, which halves that weight: O(runs x log runs) in all, however many
 * rounds a long counter takes (Moore's signatures cost rounds x states; on (a|b)*a(a|b){14} that
 * was 4x Hopcroft, now under 2x).
 *
 * rounds < 0: until nothing changes (then the classes are those of the minimal DFA). With `parent`
 * and `born` (room for n each), the history of the splits: a class keeps its id when it splits
 * (for the part that stays), so every id ever made is a class at the end; born[c] is the round
 * that split class c off parent[c] (0 and -1 for the initial classes). The classes after round
 * r are then each final class's first ancestor born by round r. */
int32_t *dfa_refine(const DFA *d, long rounds, double deadline, long *stable_out, int32_t *parent, int32_t *born) {
    Partition p;
    if (partition_init(&p, d) < 0) {
        partition_free(&p);
        return NULL;
    }
    return refine_partition(&p, d, p.rows, p.runs, rounds, deadline, stable_out, parent, born);
}

/* Moore's round 1 on p, the initial partition of d (rows, runs: its rows' runs, partition_init's),
 * in one pass over the rows: a state's class after round 1 is its initial block and, letter by
 * letter, the initial block its edge enters (or none), so the states of an initial block with
 * equal rows read by blocks (runs of one block merged; the block each call returns to) stay
 * together. The classes splitting by every initial block gives, without reading every state's
 * in-runs scattered over the table's targets (that round was about a third of minimising the
 * bench's rules: every state is in a splitter). Recorded as partition_split records a split:
 * each part of an initial block but its first (in elems order) is a new block, appended to
 * *splits as (X, Z, X's size, Z's). -1 when out of memory. */
int partition_first_round(Partition *p, const DFA *d, const Py_ssize_t *rows, const int32_t *runs, int32_t dead, Vec *splits) {
    int32_t n = p->n, nblocks = p->nblocks;
    Vec key = {0}; /* the keys met, state s's from key_at[s] to key_at[s + 1] (empty where an earlier state has it) */
    int ok = -1;
    int32_t mask = 1;
    while (mask < 2 * n)
        mask = 2 * mask + 1;
    int32_t *cls = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1)), *count = (int32_t *)calloc((size_t)n + 1, sizeof(int32_t));
    int32_t *start = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1)), *order = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *moved = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1)), *key_at = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    uint32_t *hashes = (uint32_t *)malloc(sizeof(uint32_t) * ((size_t)n + 1));
    int32_t *slots = (int32_t *)malloc(sizeof(int32_t) * ((size_t)mask + 1)); /* open addressing: the first state of each key */
    if (!cls || !count || !start || !order || !moved || !key_at || !hashes || !slots) {
        vec_no_memory();
        goto done;
    }
    memset(slots, 0xff, sizeof(int32_t) * ((size_t)mask + 1));
    /* room for every state's key at once (their lengths' bound below, summed): grown state by
     * state, the keys were copied as the vector doubled */
    if (vec_reserve(&key, (Py_ssize_t)n + rows[n] + 2 * (Py_ssize_t)d->call_start[n]) < 0)
        goto done;
    for (int32_t s = 0; s < n; s++) { /* the key: block, runs (first, end, block), then (-2 - callee, block) pairs */
        Py_ssize_t a = d->call_start[s], b = d->call_start[s + 1];
        int32_t *first = key.data + key.len, *at = first, *last = NULL;
        key_at[s] = (int32_t)key.len;
        *at++ = p->blk[s];
        for (Py_ssize_t r = rows[s]; r < rows[s + 1]; r += 3) {
            int32_t to = p->blk[runs[r + 2]];
            if (to == dead)
                continue; /* as a missing edge */
            if (last && last[1] == runs[r] && last[2] == to)
                last[1] = runs[r + 1];
            else
                last = at, at[0] = runs[r], at[1] = runs[r + 1], at[2] = to, at += 3;
        }
        for (Py_ssize_t j = a; j < b; j++) /* one call edge per callee, in callee order (Lazy makes one per callee) */
            at[0] = -2 - d->call_callee[j], at[1] = p->blk[d->call_ret[j]], at += 2;
        int32_t len = (int32_t)(at - first);
        uint64_t h = hash_ints(first, len);
        Py_ssize_t i = (Py_ssize_t)(h & (uint64_t)mask);
        hashes[s] = (uint32_t)h, cls[s] = s;
        for (int32_t t; (t = slots[i]) >= 0; i = (i + 1) & mask)
            if (hashes[t] == (uint32_t)h && key_at[t + 1] - key_at[t] == len && same_ints(key.data + key_at[t], first, len)) {
                cls[s] = t;
                break;
            }
        if (cls[s] == s) /* a new key: kept */
            slots[i] = s, key.len += len;
        key_at[s + 1] = (int32_t)key.len;
    }
    for (int32_t X = 0; X < nblocks; X++) {
        int32_t lo = p->bfirst[X], hi = p->bend[X], parts = 0;
        for (int32_t e = lo; e < hi && X != dead; e++)
            if (count[cls[p->elems[e]]]++ == 0)
                order[parts++] = cls[p->elems[e]];
        if (parts > 1) { /* the parts in order of first appearance, each a run of elems */
            for (int32_t g = 0, at = lo; g < parts; g++)
                start[order[g]] = at, at += count[order[g]];
            for (int32_t e = lo; e < hi; e++)
                moved[start[cls[p->elems[e]]]++] = p->elems[e];
            for (int32_t e = lo; e < hi; e++)
                p->elems[e] = moved[e], p->loc[moved[e]] = e;
            p->bend[X] = lo + count[order[0]];
            for (int32_t g = 1, at = p->bend[X]; g < parts; g++) {
                int32_t Z = p->nblocks++, m = count[order[g]];
                int64_t w = 0;
                p->bfirst[Z] = at, p->bend[Z] = at + m;
                for (int32_t e = at; e < at + m; e++) {
                    int32_t s = p->elems[e];
                    p->blk[s] = Z, w += p->istart[s + 1] - p->istart[s];
                }
                p->weight[Z] = w, p->weight[X] -= w;
                if (vec_push(splits, X) < 0 || vec_push(splits, Z) < 0 || vec_push(splits, count[order[0]]) < 0 || vec_push(splits, m) < 0)
                    goto done;
                at += m;
            }
        }
        for (int32_t g = 0; g < parts; g++)
            count[order[g]] = 0;
    }
    ok = 0;
done:
    vec_free(&key);
    free(cls), free(count), free(start), free(order), free(moved), free(key_at), free(hashes), free(slots);
    return ok;
}

/* dfa_refine's rounds on p, a partition of d's states just made (freed here); rows and runs: the
 * rows' runs partition_init made (p's, or kept apart from it by the caller) */
static int32_t *refine_partition(Partition *pp, const DFA *d, const Py_ssize_t *rows, const int32_t *runs, long rounds, double deadline, long *stable_out, int32_t *parent,
                                 int32_t *born) {
    int32_t n = d->n;
    int32_t *result = NULL;
    Partition p = *pp;
    Vec splits = {0}, splitters = {0}, next = {0}; /* splitters: (first, end) ranges of copy */
    int32_t *family = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));      /* by block made this round: the block it came from */
    int32_t *largest = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));     /* by that block: its heaviest part */
    int32_t *round_of = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));    /* by block: the round that made it */
    int32_t *copy = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));        /* the round's splitters' states */
    if (!family || !largest || !round_of || !copy) {
        vec_no_memory();
        goto done;
    }
    for (int32_t b = 0; b < p.nblocks; b++) {
        round_of[b] = 0;
        if (parent)
            parent[b] = -1, born[b] = 0;
    }
    long stable = -1;
    for (long r = 1; rounds < 0 || r <= rounds; r++) {
        if (past(deadline))
            goto done;
        if (p.nblocks == n) { /* every state apart already: round r changes nothing */
            stable = r;
            break;
        }
        splits.len = 0;
        if (r == 1) { /* by every initial block: one pass over the rows does it */
            if (partition_first_round(&p, d, rows, runs, -1, &splits) < 0)
                goto done;
        } else {
            int32_t at = 0; /* the splitters' states, copied before the round moves them */
            splitters.len = 0;
            for (Py_ssize_t i = 0; i < next.len; i++) {
                int32_t b = next.data[i], m = p.bend[b] - p.bfirst[b];
                memcpy(copy + at, p.elems + p.bfirst[b], sizeof(int32_t) * (size_t)m);
                if (vec_push(&splitters, at) < 0 || vec_push(&splitters, at + m) < 0)
                    goto done;
                at += m;
            }
            for (Py_ssize_t i = 0; i < splitters.len; i += 2)
                if (partition_split(&p, copy + splitters.data[i], splitters.data[i + 1] - splitters.data[i], &splits) < 0)
                    goto done;
        }
        if (splits.len == 0) {
            stable = r;
            break;
        }
        /* the next splitters: every part of each block that split this round but its heaviest */
        for (Py_ssize_t i = 0; i < splits.len; i += 4) {
            int32_t X = splits.data[i], Z = splits.data[i + 1], root = round_of[X] == r ? family[X] : X;
            round_of[Z] = (int32_t)r, family[Z] = root, largest[root] = root;
            if (parent)
                parent[Z] = X, born[Z] = (int32_t)r;
        }
        for (Py_ssize_t i = 0; i < splits.len; i += 4) {
            int32_t Z = splits.data[i + 1], big = largest[family[Z]];
            if (p.weight[Z] > p.weight[big])
                largest[family[Z]] = Z;
        }
        next.len = 0;
        for (Py_ssize_t i = 0; i < splits.len; i += 4) {
            int32_t Z = splits.data[i + 1];
            if (Z != largest[family[Z]] && vec_push(&next, Z) < 0)
                goto done;
        }
        for (Py_ssize_t i = 0; i < splits.len; i += 4) { /* the block the parts came from, once */
            int32_t root = family[splits.data[i + 1]];
            if (largest[root] != root && largest[root] >= 0 && vec_push(&next, root) < 0)
                goto done;
            largest[root] = -1;
        }
    }
    *stable_out = stable;
    result = p.blk, p.blk = NULL;
done:
    partition_free(&p);
    vec_free(&splits), vec_free(&splitters), vec_free(&next);
    free(family), free(largest), free(round_of), free(copy);
    return result;
}

static DFA *rounds_quotient(DFA *d, Partition *p, double deadline, int32_t **born_out, int32_t **parent_out);

/* The minimal DFA of a trimmed d by Moore's refinement to its fixpoint (the same DFA as
 * dfa_minimize), and the history of its splits by state of the result (see dfa_refine): in
 * *born_out and *parent_out (malloc'd, n of the result each) the round each state's class split
 * off and the state it split from, or NULL for both where some class is unreachable (never after
 * a trim). What this buys over Hopcroft: the classes of every round come with it, where horizon
 * classes (compile/automaton.py) took one more refinement after minimising. */
DFA *dfa_minimize_rounds(DFA *d, double deadline, int32_t **born_out, int32_t **parent_out) {
    Partition p;
    *born_out = *parent_out = NULL;
    if (partition_init(&p, d) < 0) {
        partition_free(&p);
        return NULL;
    }
    return rounds_quotient(d, &p, deadline, born_out, parent_out);
}

/* dfa_minimize_rounds on p, a partition of d's states just made (freed here) */
static DFA *rounds_quotient(DFA *d, Partition *p, double deadline, int32_t **born_out, int32_t **parent_out) {
    int32_t n = d->n;
    long stable;
    DFA *result = NULL;
    int32_t *parent = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1)), *born = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *new_id = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1)), *cls = NULL;
    int32_t *b2 = NULL, *p2 = NULL;
    Py_ssize_t *rows = p->rows; /* the quotient's, kept past the partition (refine_partition frees it) */
    int32_t *runs = p->runs;
    p->rows = NULL, p->runs = NULL;
    *born_out = *parent_out = NULL;
    if (!parent || !born || !new_id) {
        partition_free(p);
        vec_no_memory();
        goto done;
    }
    if (!(cls = refine_partition(p, d, rows, runs, -1, deadline, &stable, parent, born)))
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
    if (!(result = dfa_quotient(d, cls, nblocks, new_id, rows, runs, -1)))
        goto done;
    if (result->n == nblocks) { /* else some class is unreachable: no history */
        for (int32_t b = 0; b < nblocks; b++)
            b2[new_id[b]] = born[b], p2[new_id[b]] = parent[b] < 0 ? -1 : new_id[parent[b]];
        *born_out = b2, *parent_out = p2;
        b2 = p2 = NULL;
    }
done:
    free(parent), free(born), free(new_id), free(cls), free(b2), free(p2), free(rows), free(runs);
    return result;
}

/* dfa_minimize_rounds of dfa_trim(d, productive, nprod), where trimming would keep d as it is
 * (the rules' DFAs but a few) without its scans: the partition's set-up lists the predecessors
 * and row runs trimming would make (a tenth of minimising a rule). Else it trims first. */
DFA *dfa_trim_minimize_rounds(DFA *d, const uint8_t *productive, Py_ssize_t nprod, double deadline, int32_t **born_out, int32_t **parent_out) {
    Partition p;
    *born_out = *parent_out = NULL;
    if (partition_init(&p, d) < 0) {
        partition_free(&p);
        return NULL;
    }
    int trim = dfa_is_trim(d, p.istart, p.isrc, p.rows, p.runs, productive, nprod);
    if (trim == 1)
        return rounds_quotient(d, &p, deadline, born_out, parent_out);
    partition_free(&p);
    if (trim < 0)
        return NULL;
    DFA *trimmed = dfa_trim(d, productive, nprod), *result = NULL;
    if (trimmed) {
        result = dfa_minimize_rounds(trimmed, deadline, born_out, parent_out);
        PyGILState_STATE gil = PyGILState_Ensure();
        Py_DECREF(trimmed);
        PyGILState_Release(gil);
    }
    return result;
}
