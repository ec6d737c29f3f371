/* Canonical return frames: frames whose futures are equal are pushed as one (fuzz finding D).
 *
 * Why: in `root ::= a | "(" root ")"`, `a ::= "x" | "(" root ")"`, the frames "root after ( root"
 * and "a after ( root" both expect `)` and then return. As different frames, k brackets make every
 * sequence over the two: 2**k stacks in one state. Pushed as one frame, they make one stack.
 *
 * A frame's future is what its rule's DFA can still do from it: the bytes it reads, where it
 * accepts (pops), the calls it makes (the callee's language is fixed by the callee's identity) and
 * the frames those calls return to, which are in the same DFA. So a numbered walk of the states
 * reachable from a frame, each written as (accepting, its byte ranges with the targets' numbers,
 * its calls as (callee rule, the return's number)), is a signature: equal signatures mean
 * isomorphic sub-automata, hence equal futures (the rules' DFAs are minimal, so most equal futures
 * also have equal signatures). Byte ranges, not classes: each rule has its own byte classes.
 *
 * Signatures are interned per machine as rules are appended; a frame takes the frame that first
 * had its signature, which is never a frame appended later, so a rule added at run time never
 * changes a canonical frame that stacks already hold. Only return frames are walked (the others
 * are never pushed below a call), only up to MAX_FUTURE_STATES states (a long future keeps its own
 * frame: merging is for short tails like `")"`), and never in a rule whose frames a run-time
 * tracker reads (`RulePart.keep`). */
#include "_machine.h"

#define MAX_FUTURE_STATES 64

static uint64_t sig_hash(Machine *m, int32_t id) {
    return hash_nodes(m->sig_pool.data + m->sig_start.data[id], m->sig_len.data[id]);
}

/* The frame that first had signature `sig`, or `frame` if none did (then `frame` has it now);
 * -1 on error. */
static int32_t intern_future(Machine *m, const int32_t *sig, Py_ssize_t len, int32_t frame) {
    if (!m->sig_slots) {
        if (!(m->sig_slots = (int32_t *)malloc(sizeof(int32_t) * 256))) {
            PyErr_NoMemory();
            return -1;
        }
        memset(m->sig_slots, 0xff, sizeof(int32_t) * 256);
        m->sig_mask = 255;
    }
    Py_ssize_t i = (Py_ssize_t)(hash_nodes(sig, len) & (uint64_t)m->sig_mask);
    for (;;) {
        int32_t id = m->sig_slots[i];
        if (id < 0)
            break;
        if (m->sig_len.data[id] == len && !memcmp(m->sig_pool.data + m->sig_start.data[id], sig, sizeof(int32_t) * (size_t)len))
            return m->sig_frame.data[id];
        i = (i + 1) & m->sig_mask;
    }
    int32_t id = (int32_t)m->sig_start.len;
    if (vec_reserve(&m->sig_pool, m->sig_pool.len + len) < 0 || vec_push(&m->sig_start, (int32_t)m->sig_pool.len) < 0
        || vec_push(&m->sig_len, (int32_t)len) < 0 || vec_push(&m->sig_frame, frame) < 0)
        return -1;
    memcpy(m->sig_pool.data + m->sig_pool.len, sig, sizeof(int32_t) * (size_t)len);
    m->sig_pool.len += len;
    if (2 * (Py_ssize_t)m->sig_start.len > m->sig_mask + 1)
        return rehash(m, &m->sig_slots, &m->sig_mask, (int32_t)m->sig_start.len, sig_hash) < 0 ? -1 : frame;
    m->sig_slots[i] = id;
    return frame;
}

/* The rule's classmap as runs of bytes of one class: runs[3k..3k+2] = (lo, hi, class), in byte
 * order; their count. A row's byte ranges are then read per run, not per byte. */
static int class_runs(const RulePart *p, int32_t *runs) {
    int count = 0;
    for (int b = 0; b < 256; b++) {
        if (count && (int32_t)p->classmap[b] == runs[3 * count - 1])
            runs[3 * count - 2] = b;
        else
            runs[3 * count] = b, runs[3 * count + 1] = b, runs[3 * count + 2] = p->classmap[b], count++;
    }
    return count;
}

/* State i's transitions as (lo, hi, local target) byte-range triples, appended to `ranges` the
 * first time it is asked for (e_start[i] < 0 until then; e_len[i] its triples' int count): only
 * the states near return frames are ever walked, so most states of a big rule are never ranged.
 * `runs`: class_runs's. 0, or -1 on error. */
static int state_ranges(const RulePart *p, int width, const int32_t *runs, int num_runs, int32_t i, Vec *ranges, int32_t *e_start, int32_t *e_len) {
    if (e_start[i] >= 0)
        return 0;
    Py_ssize_t from = ranges->len;
    if (vec_reserve(ranges, from + 3 * (Py_ssize_t)num_runs) < 0)
        return -1;
    int32_t *out = ranges->data + from, len = 0, run = -1;
    const int32_t *row = p->table + (Py_ssize_t)i * width;
    for (int k = 0; k < 3 * num_runs; k += 3) {
        int32_t t = row[runs[k + 2]];
        if (t >= 0 && t == run)
            out[len - 2] = runs[k + 1];
        else if (t >= 0)
            out[len] = runs[k], out[len + 1] = runs[k + 1], out[len + 2] = t, len += 3;
        run = t;
    }
    ranges->len = from + len;
    e_start[i] = (int32_t)from, e_len[i] = len;
    return 0;
}

/* The signature of local state `s` in m->sig_scratch (see the file's comment); 0 if its future
 * is longer than MAX_FUTURE_STATES, 1 if found, -1 on error. `num` (n entries of -1) numbers
 * the states met, `order` lists them; both are left as they were given. The states' byte ranges
 * come from state_ranges (`runs`, `ranges`, `e_start`, `e_len`), computed as the walk meets them. */
static int signature(Machine *m, const RulePart *p, int width, const int32_t *runs, int num_runs, int32_t s, Vec *ranges, int32_t *e_start, int32_t *e_len, int32_t *num, int32_t *order) {
    Vec *sig = &m->sig_scratch;
    sig->len = 0;
    int32_t met = 1, status = 1;
    order[0] = s;
    num[s] = 0;
    for (int32_t q = 0; q < met && status == 1; q++) {
        int32_t i = order[q];
        if (state_ranges(p, width, runs, num_runs, i, ranges, e_start, e_len) < 0) {
            status = -1;
            break;
        }
        int32_t edges = e_len[i] / 3, calls = p->call_start[i + 1] - p->call_start[i];
        if (vec_reserve(sig, sig->len + 3 + 3 * edges + 2 * calls) < 0) {
            status = -1;
            break;
        }
        sig->data[sig->len++] = p->accepting[i] != 0;
        sig->data[sig->len++] = edges;
        const int32_t *edge = ranges->data + e_start[i];
        for (int32_t e = 0; e < e_len[i] && status == 1; e += 3) {
            int32_t t = edge[e + 2];
            if (num[t] < 0) {
                if (met == MAX_FUTURE_STATES)
                    status = 0;
                else
                    num[order[met] = t] = met, met++;
            }
            sig->data[sig->len++] = edge[e], sig->data[sig->len++] = edge[e + 1], sig->data[sig->len++] = num[t];
        }
        sig->data[sig->len++] = calls;
        for (int32_t c = p->call_start[i]; c < p->call_start[i + 1] && status == 1; c++) {
            int32_t r = p->ret[c];
            if (num[r] < 0) {
                if (met == MAX_FUTURE_STATES)
                    status = 0;
                else
                    num[order[met] = r] = met, met++;
            }
            sig->data[sig->len++] = p->callee[c], sig->data[sig->len++] = num[r];
        }
    }
    for (int32_t q = 0; q < met; q++)
        num[order[q]] = -1;
    return status;
}

int machine_canon_frames(Machine *m, const RulePart *p, int width, int32_t b0) {
    Py_ssize_t n = p->n;
    for (Py_ssize_t i = 0; i < n; i++)
        m->canon[b0 + i] = b0 + (int32_t)i;
    if (p->keep || p->num_calls == 0)
        return 0;
    /* the states' byte ranges, made as walks meet them (state_ranges), and which states calls return to */
    Vec ranges = {NULL, 0, 0};
    int32_t *e_start = (int32_t *)malloc(sizeof(int32_t) * (size_t)n), *e_len = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    int32_t *num = (int32_t *)malloc(sizeof(int32_t) * (size_t)n), *order = (int32_t *)malloc(sizeof(int32_t) * MAX_FUTURE_STATES);
    uint8_t *is_ret = (uint8_t *)calloc((size_t)n, 1);
    Py_ssize_t interned = m->sig_start.len; /* to roll back to on error: no frame of this rule is appended then */
    int status = e_start && e_len && num && order && is_ret ? 0 : -1;
    if (status < 0)
        PyErr_NoMemory();
    for (Py_ssize_t i = 0; status == 0 && i < n; i++)
        num[i] = e_start[i] = -1;
    for (Py_ssize_t c = 0; status == 0 && c < p->num_calls; c++)
        is_ret[p->ret[c]] = 1;
    int32_t runs[3 * 256];
    int num_runs = class_runs(p, runs);
    for (int32_t s = 0; status == 0 && s < n; s++) {
        if (!is_ret[s] || m->flags[b0 + s] & FINAL_ONLY) /* FINAL_ONLY: never pushed (tail calls) */
            continue;
        int got = signature(m, p, width, runs, num_runs, s, &ranges, e_start, e_len, num, order);
        int32_t frame = got == 1 ? intern_future(m, m->sig_scratch.data, m->sig_scratch.len, b0 + s) : got == 0 ? b0 + s : -1;
        if (frame < 0)
            status = -1;
        else
            m->canon[b0 + s] = frame;
    }
    if (status < 0 && m->sig_slots && m->sig_start.len != interned) { /* forget this rule's futures */
        m->sig_pool.len = m->sig_start.data[interned];
        m->sig_start.len = m->sig_len.len = m->sig_frame.len = interned;
        memset(m->sig_slots, 0xff, sizeof(int32_t) * (size_t)(m->sig_mask + 1));
        for (int32_t id = 0; id < (int32_t)interned; id++) {
            Py_ssize_t j = (Py_ssize_t)(sig_hash(m, id) & (uint64_t)m->sig_mask);
            while (m->sig_slots[j] >= 0)
                j = (j + 1) & m->sig_mask;
            m->sig_slots[j] = id;
        }
    }
    free(ranges.data), free(e_start), free(e_len), free(num), free(order), free(is_ret);
    return status;
}
