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
 * A return frame's signature is found when a call first returns there (a closure pushes it), not
 * when its rule is appended: most return frames of a grammar are never pushed by the documents
 * it meets, and walking all of them was half of building the machine at compile time (0.16 ms of
 * 0.3 ms a bench compile, measured). Signatures are interned per machine; a frame takes the frame
 * that first had its signature, and canon[g] never changes once found, so neither a rule added at
 * run time nor a later signature changes a canonical frame that stacks already hold. Which frame
 * of a class of equal futures stands for it may depend on the order documents meet them; the
 * machine's language does not (equal futures). Only return frames are walked (the others are never
 * pushed below a call), only up to MAX_FUTURE_STATES states (a long future keeps its own frame:
 * merging is for short tails like `")"`; most long ones are settled without a walk by a search
 * whose findings stay, `future_is_long`), and never in a rule whose frames a run-time tracker
 * reads (`RulePart.keep`). */
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

/* Rule `rule`'s classmap as runs of bytes of one class: runs[3k..3k+2] = (lo, hi, class), in byte
 * order; their count. A row's byte ranges are then read per run, not per byte. */
static int class_runs(const uint8_t *classmap, int32_t *runs) {
    int count = 0;
    for (int b = 0; b < 256; b++) {
        if (count && (int32_t)classmap[b] == runs[3 * count - 1])
            runs[3 * count - 2] = b;
        else
            runs[3 * count] = b, runs[3 * count + 1] = b, runs[3 * count + 2] = classmap[b], count++;
    }
    return count;
}

/* Frame f's transitions as (lo, hi, target frame) byte-range triples in m->range_pool, made the
 * first time a signature walk meets f (range_start[f] < 0 until then) and kept: the walks from a
 * rule's return frames overlap (each reads up to MAX_FUTURE_STATES frames past its own).
 * `runs`: class_runs of f's rule. Its triples' start, or -1 on error (*len: their int count). */
static Py_ssize_t frame_ranges(Machine *m, int32_t f, const int32_t *runs, int num_runs, int32_t *len) {
    while (m->range_start.len < m->num_frames) /* frames appended since: not ranged */
        if (vec_push(&m->range_start, -1) < 0 || vec_push(&m->range_len, 0) < 0)
            return -1;
    if (m->range_start.data[f] >= 0) {
        *len = m->range_len.data[f];
        return m->range_start.data[f];
    }
    Py_ssize_t from = m->range_pool.len;
    if (from + 3 * (Py_ssize_t)num_runs > INT32_MAX) {
        PyErr_NoMemory();
        return -1;
    }
    if (vec_reserve(&m->range_pool, from + 3 * (Py_ssize_t)num_runs) < 0)
        return -1;
    int32_t *out = m->range_pool.data + from, n = 0, run = -1;
    const int32_t *row = m->frame_row[f];
    for (int k = 0; k < 3 * num_runs; k += 3) {
        int32_t t = row[runs[k + 2]];
        if (t >= 0 && t == run)
            out[n - 2] = runs[k + 1];
        else if (t >= 0)
            out[n] = runs[k], out[n + 1] = runs[k + 1], out[n + 2] = t, n += 3;
        run = t;
    }
    m->range_pool.len = from + n;
    m->range_start.data[f] = (int32_t)from, m->range_len.data[f] = n;
    *len = n;
    return from;
}

/* The signature of frame `g` in m->sig_scratch (see the file's comment), read from the machine's
 * own arrays (global frames, numbered by the walk): 0 if its future is longer than
 * MAX_FUTURE_STATES, 1 if found, -1 on error. Frames are numbered in m->future_num (-1 for frames
 * not met), which is left as it was found. */
static int signature(Machine *m, int32_t g, const int32_t *runs, int num_runs) {
    Vec *sig = &m->sig_scratch, *num = &m->future_num;
    while (num->len < m->num_frames) /* frames appended since the last signature: not met */
        if (vec_push(num, -1) < 0)
            return -1;
    int32_t order[MAX_FUTURE_STATES], met = 1, status = 1;
    sig->len = 0;
    order[0] = g;
    num->data[g] = 0;
    for (int32_t q = 0; q < met && status == 1; q++) {
        int32_t f = order[q], calls = m->call_start[f + 1] - m->call_start[f], len;
        Py_ssize_t at = frame_ranges(m, f, runs, num_runs, &len);
        if (at < 0 || vec_reserve(sig, sig->len + 3 + len + 2 * calls) < 0) {
            status = -1;
            break;
        }
        sig->data[sig->len++] = (m->flags[f] & ACCEPTING) != 0;
        sig->data[sig->len++] = len / 3;
        const int32_t *edge = m->range_pool.data + at;
        for (int32_t e = 0; e < len && status == 1; e += 3) {
            int32_t t = edge[e + 2];
            if (num->data[t] < 0) {
                if (met == MAX_FUTURE_STATES)
                    status = 0;
                else
                    num->data[order[met] = t] = met, met++;
            }
            sig->data[sig->len++] = edge[e], sig->data[sig->len++] = edge[e + 1], sig->data[sig->len++] = num->data[t];
        }
        sig->data[sig->len++] = calls;
        for (int32_t c = m->call_start[f]; c < m->call_start[f + 1] && status == 1; c++) {
            int32_t r = m->call_ret[c], callee = m->call_callee[c];
            if (num->data[r] < 0) {
                if (met == MAX_FUTURE_STATES)
                    status = 0;
                else
                    num->data[order[met] = r] = met, met++;
            }
            /* the callee's rule: a static rule's start frame holds it, a lazy one is -(rule + 1) */
            sig->data[sig->len++] = callee >= 0 ? m->rule_of[callee] : -callee - 1, sig->data[sig->len++] = num->data[r];
        }
    }
    for (int32_t q = 0; q < met; q++)
        num->data[order[q]] = -1;
    return status;
}

/* Whether frame g's future reaches more than MAX_FUTURE_STATES frames, the case where its
 * signature walk gives up: 1 if it is known to (then the walk is not needed), 0 if not known,
 * -1 on error. Why: most walks gave up (91% of DeepSeek's first pass, 61 frames walked each),
 * the return frames of one long rule each walking much the same long tail.
 *
 * A depth-first search from g, of at most SEARCH_FRAMES frames, marks frames that reach too many,
 * each for a reason that holds whatever else is true, so a mark is exact and stays: a frame whose
 * subtree in the search (the frames first met while it was on the stack, all reachable from it)
 * holds more than MAX_FUTURE_STATES; every frame on the stack when the search meets a marked
 * frame (they all reach it); every frame on the stack whose subtree is already past the bound
 * when the search stops at SEARCH_FRAMES. A search from the first return frame of a long rule
 * thus marks the return frames down its path too, and a later search stops at the first marked
 * frame it meets. A frame not marked is walked as before, which decides. */
#define SEARCH_FRAMES (4 * MAX_FUTURE_STATES)

static int future_is_long(Machine *m, int32_t g) {
    Py_ssize_t old = m->future_long.len, n = m->num_frames;
    if (old < n) { /* frames appended since: not searched */
        if (vec_reserve(&m->future_long, n) < 0 || vec_reserve(&m->search_mark, n) < 0 || vec_reserve(&m->search_num, n) < 0)
            return -1;
        memset(m->future_long.data + old, 0, sizeof(int32_t) * (size_t)(n - old));
        memset(m->search_mark.data + old, 0, sizeof(int32_t) * (size_t)(n - old));
        m->future_long.len = m->search_mark.len = m->search_num.len = n;
    }
    int32_t *marked = m->future_long.data;
    if (marked[g])
        return 1;
    if (m->search_stamp == INT32_MAX) {
        memset(m->search_mark.data, 0, sizeof(int32_t) * (size_t)m->search_mark.len);
        m->search_stamp = 0;
    }
    /* the rule's classes: its rows' length (read by class, not by byte range: the search meets
     * many frames no walk does, and ranging one costs more) */
    int32_t width = classmap_width(m->classmaps + (Py_ssize_t)m->rule_of[g] * 256);
    int32_t stamp = ++m->search_stamp, *met = m->search_mark.data, *num = m->search_num.data, count = 0;
    Vec *stack = &m->search_stack; /* (frame, next edge) pairs */
    stack->len = 0;
    if (vec_push(stack, g) < 0 || vec_push(stack, 0) < 0)
        return -1;
    met[g] = stamp, num[g] = count++;
    while (stack->len) {
        int32_t f = stack->data[stack->len - 2], k = stack->data[stack->len - 1];
        const int32_t *row = m->frame_row[f];
        while (k < width && (row[k] < 0 || met[row[k]] == stamp)) /* most classes are dead or met */
            k++;
        if (k >= width + m->call_start[f + 1] - m->call_start[f]) { /* f's subtree is complete */
            stack->len -= 2;
            if (count - num[f] > MAX_FUTURE_STATES)
                marked[f] = 1;
            continue;
        }
        stack->data[stack->len - 1] = k + 1;
        int32_t w = k < width ? row[k] : m->call_ret[m->call_start[f] + k - width];
        if (met[w] == stamp)
            continue;
        if (marked[w] || count == SEARCH_FRAMES) {
            int stopped = !marked[w];
            for (Py_ssize_t i = 0; i < stack->len; i += 2)
                if (!stopped || count - num[stack->data[i]] > MAX_FUTURE_STATES)
                    marked[stack->data[i]] = 1;
            break;
        }
        if (vec_push(stack, w) < 0 || vec_push(stack, 0) < 0)
            return -1;
        met[w] = stamp, num[w] = count++;
    }
    return marked[g];
}

int machine_canon_frames(Machine *m, const RulePart *p, int32_t b0) {
    /* UNKNOWN_FUTURE: found by canonical_frame when a call first returns there */
    int32_t unknown = p->keep || p->num_calls == 0 ? 0 : 1;
    for (Py_ssize_t i = 0; i < p->n; i++)
        m->canon[b0 + i] = unknown ? UNKNOWN_FUTURE : b0 + (int32_t)i;
    return 0;
}

int32_t canonical_frame(Machine *m, int32_t ret) {
    int32_t known = m->canon[ret];
    if (known != UNKNOWN_FUTURE)
        return known;
    int got = future_is_long(m, ret); /* 1: known to be too long, as its walk would find */
    if (got == 0) {
        int32_t runs[3 * 256];
        got = signature(m, ret, runs, class_runs(m->classmaps + (Py_ssize_t)m->rule_of[ret] * 256, runs));
    } else if (got == 1)
        got = 0; /* signature's answer for a future too long */
    int32_t frame = got == 1 ? intern_future(m, m->sig_scratch.data, m->sig_scratch.len, ret) : got == 0 ? ret : -1;
    if (frame >= 0)
        m->canon[ret] = frame;
    return frame;
}
