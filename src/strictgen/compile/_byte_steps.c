/* Steps of a few bytes without rows: the questions the string shortcuts of the token masks ask
 * (token_mask.py) about a state, the UTF-8 target and a counter's chain, answered by stepping only
 * the bytes they need. See _machine.h.
 *
 * Why apart from the rows: a counted string (`maxLength: 100`) asks, at its first mask, for the
 * states its loop bytes step along (~35-100 of them) and whether every multi-byte character steps
 * each one to the next. Computing full rows for that (256 targets each, of the counter's states
 * and of every state inside a character: ~7 per place) was ~400 us of a ~570 us first mask on
 * DeepSeek; stepping only the loop bytes, the lead bytes and the continuation bytes, one union of
 * closures per distinct target vector, interns the same states and computes no row. Rows stay
 * what the walks compute on demand. */
#include "_machine.h"

#define LOCAL_STACKS 8

/* The states that bytes[0..n) lead to from `state` (0: dead) in out: read from its row if it is
 * computed, else stepped without computing it; consecutive bytes whose targets (one per stack) are
 * equal share one union. -1 on error (NeedRule for a rule not built yet: nothing half-done kept). */
int machine_step_some(Machine *m, int32_t state, const uint8_t *bytes, Py_ssize_t n, int32_t *out) {
    const int32_t *row = computed_row(m, state);
    if (row) {
        for (Py_ssize_t i = 0; i < n; i++)
            out[i] = row[bytes[i]];
        return 0;
    }
    Py_ssize_t len = m->state_len.data[state], k = 0;
    /* the stacks but the empty one, their top frames' DFA rows and class maps (top_frames), this
     * byte's targets and the byte before's */
    int32_t stacks_local[LOCAL_STACKS], targets_local[2 * LOCAL_STACKS];
    const int32_t *dfa_local[LOCAL_STACKS];
    const uint8_t *cmap_local[LOCAL_STACKS];
    int32_t *stacks = stacks_local, *targets = targets_local;
    const int32_t **dfa_rows = dfa_local;
    const uint8_t **cmaps = cmap_local;
    if (len > LOCAL_STACKS) {
        stacks = (int32_t *)malloc(sizeof(int32_t) * (size_t)len * 3);
        dfa_rows = (const int32_t **)malloc(sizeof(int32_t *) * (size_t)len);
        cmaps = (const uint8_t **)malloc(sizeof(uint8_t *) * (size_t)len);
        if (!stacks || !dfa_rows || !cmaps) {
            free(stacks), free((void *)dfa_rows), free((void *)cmaps);
            PyErr_NoMemory();
            return -1;
        }
        targets = stacks + len;
    }
    k = top_frames(m, state, stacks, dfa_rows, cmaps);
    int32_t *now = targets, *before = targets + k;
    int failed = 0, have_before = 0;
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        int live = 0;
        for (Py_ssize_t j = 0; j < k; j++) {
            now[j] = dfa_rows[j][cmaps[j][bytes[i]]];
            live |= now[j] >= 0;
        }
        if (have_before && !memcmp(now, before, sizeof(int32_t) * (size_t)k)) {
            out[i] = out[i - 1];
            continue;
        }
        out[i] = live ? union_state(m, stacks, now, k) : 0;
        failed = out[i] < 0;
        int32_t *t = before;
        before = now, now = t, have_before = 1;
    }
    if (stacks != stacks_local) {
        free(stacks);
        free((void *)dfa_rows);
        free((void *)cmaps);
    }
    return failed ? -1 : 0;
}

/* Valid multi-byte UTF-8 (RFC 3629): lead bytes, the range of the first continuation byte, and
 * how many continuation bytes follow the lead in all. */
static const uint8_t UTF8_FORMS[8][5] = {
    {0xC2, 0xDF, 0x80, 0xBF, 1}, {0xE0, 0xE0, 0xA0, 0xBF, 2}, {0xE1, 0xEC, 0x80, 0xBF, 2}, {0xED, 0xED, 0x80, 0x9F, 2},
    {0xEE, 0xEF, 0x80, 0xBF, 2}, {0xF0, 0xF0, 0x90, 0xBF, 3}, {0xF1, 0xF3, 0x80, 0xBF, 3}, {0xF4, 0xF4, 0x80, 0x8F, 3},
};

/* The states inside a character that one question met, with the targets of their continuation
 * bytes 0x80..0xBF, stepped once each: the forms of a character share them (after E1 and after EE
 * the same bytes are awaited), so no form steps a state another has stepped. */
#define MAX_INSIDE 32
typedef struct {
    int32_t state[MAX_INSIDE], targets[MAX_INSIDE][64];
    int count;
} Inside;

/* The targets of bytes 0x80..0xBF from `state` (one of `inside`'s, or stepped now and kept there
 * while it has room: `scratch` otherwise); NULL on error. */
static const int32_t *continuations(Machine *m, Inside *inside, int32_t state, int32_t *scratch) {
    for (int i = 0; i < inside->count; i++)
        if (inside->state[i] == state)
            return inside->targets[i];
    static const uint8_t CONTINUATION[64] = {
        0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8B, 0x8C, 0x8D, 0x8E, 0x8F,
        0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F,
        0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF,
        0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xBB, 0xBC, 0xBD, 0xBE, 0xBF,
    };
    int32_t *out = scratch;
    if (inside->count < MAX_INSIDE) {
        inside->state[inside->count] = state;
        out = inside->targets[inside->count];
    }
    if (machine_step_some(m, state, CONTINUATION, 64, out) < 0)
        return NULL;
    if (out != scratch)
        inside->count++;
    return out;
}

/* Put in `to` the distinct states that `targets[0..n)` name; 1 if one is dead, -1 on error, else 0. */
static int add_distinct(Vec *to, const int32_t *targets, Py_ssize_t n) {
    for (Py_ssize_t b = 0; b < n; b++) {
        if (targets[b] == 0)
            return 1;
        Py_ssize_t j = 0;
        while (j < to->len && to->data[j] != targets[b])
            j++;
        if (j == to->len && vec_push(to, targets[b]) < 0)
            return -1;
    }
    return 0;
}

/* The one state every valid multi-byte character leads to from `state`, found by stepping its lead
 * bytes once and each state inside a character once (`continuations`), form by form; 0 if there is
 * none (some character is dead, or characters end apart), -1 on error. */
static int32_t find_utf8_target(Machine *m, int32_t state) {
    uint8_t lead_bytes[0xF5 - 0xC2];
    int32_t leads[0xF5 - 0xC2], scratch[64];
    for (int b = 0xC2; b < 0xF5; b++)
        lead_bytes[b - 0xC2] = (uint8_t)b;
    if (machine_step_some(m, state, lead_bytes, 0xF5 - 0xC2, leads) < 0)
        return -1;
    Inside *inside = (Inside *)malloc(sizeof(Inside));
    if (!inside) {
        PyErr_NoMemory();
        return -1;
    }
    inside->count = 0;
    Vec a = {NULL, 0, 0}, b = {NULL, 0, 0};
    int32_t reached = 0;
    int status = 0;
    for (int f = 0; f < 8 && status == 0; f++) {
        Vec *from = &a, *to = &b;
        from->len = 0;
        status = add_distinct(from, leads + UTF8_FORMS[f][0] - 0xC2, UTF8_FORMS[f][1] - UTF8_FORMS[f][0] + 1);
        for (int k = 0; k < UTF8_FORMS[f][4] && status == 0; k++) {
            int lo = k ? 0 : UTF8_FORMS[f][2] - 0x80, hi = k ? 0x3F : UTF8_FORMS[f][3] - 0x80;
            to->len = 0;
            for (Py_ssize_t i = 0; i < from->len && status == 0; i++) {
                const int32_t *targets = continuations(m, inside, from->data[i], scratch);
                status = targets ? add_distinct(to, targets + lo, hi - lo + 1) : -1;
            }
            Vec *t = from;
            from = to;
            to = t;
        }
        if (status == 0 && (from->len != 1 || (reached && from->data[0] != reached)))
            status = 1;
        if (status == 0)
            reached = from->data[0];
    }
    free(inside);
    free(a.data);
    free(b.data);
    return status < 0 ? -1 : status ? 0 : reached;
}

/* Add to frames[0..*count) the distinct frames `stack`'s DFA steps `from` to on bytes lo..hi; 1 if
 * one is dead, 2 when the set outgrows `cap`, else 0. */
static int frame_spread(Machine *m, int32_t from, int lo, int hi, int32_t *frames, int *count, int cap) {
    const int32_t *dfa_row = m->frame_row[from];
    const uint8_t *cmap = m->classmaps + (Py_ssize_t)m->rule_of[from] * 256;
    for (int b = lo; b <= hi; b++) {
        int32_t g = dfa_row[cmap[b]];
        if (g < 0)
            return 1;
        int j = 0;
        while (j < *count && frames[j] != g)
            j++;
        if (j == *count) {
            if (j == cap)
                return 2;
            frames[(*count)++] = g;
        }
    }
    return 0;
}

/* The UTF-8 target of a state where one stack alone reads lead bytes (a counted string's place:
 * the character rule's start; the counter's frame waits for a quote) and its characters stay
 * inside its top frame's rule: every frame inside a character calls nothing and does not accept,
 * so its closure is itself, and the characters are stepped in the rule's DFA alone, interning
 * nothing but the one end (the next place). 0 if some character is dead, -1 on error, -2 when
 * this cannot tell (more stacks read lead bytes, a call or an accepting frame inside a character,
 * characters that end in different frames). */
static int32_t frame_utf8_target(Machine *m, int32_t state) {
    Py_ssize_t len = m->state_len.data[state];
    const int32_t *nodes = m->state_pool.data + m->state_start.data[state];
    int32_t stack = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        int32_t frame = nodes[i] ? m->node_frame.data[nodes[i]] : -1;
        const uint8_t *cmap = frame < 0 ? NULL : m->classmaps + (Py_ssize_t)m->rule_of[frame] * 256;
        int live = 0;
        for (int b = 0xC2; cmap && b < 0xF5 && !live; b++)
            live = m->frame_row[frame][cmap[b]] >= 0;
        if (live && stack)
            return -2;
        if (live)
            stack = nodes[i];
    }
    if (stack == 0)
        return 0; /* no stack reads a lead byte: every character is dead */
    int32_t top = m->node_frame.data[stack], end = -1;
    for (int f = 0; f < 8; f++) {
        int32_t a[64], b[64];
        int na = 0, nb = 0;
        int status = frame_spread(m, top, UTF8_FORMS[f][0], UTF8_FORMS[f][1], a, &na, 64);
        for (int k = 0; k < UTF8_FORMS[f][4] && status == 0; k++) {
            int lo = k ? 0x80 : UTF8_FORMS[f][2], hi = k ? 0xBF : UTF8_FORMS[f][3];
            nb = 0;
            for (int i = 0; i < na && status == 0; i++) {
                int32_t g = a[i];
                if (m->flags[g] & ACCEPTING || m->call_start[g] != m->call_start[g + 1])
                    return -2; /* its closure is more than itself */
                status = frame_spread(m, g, lo, hi, b, &nb, 64);
            }
            memcpy(a, b, sizeof(int32_t) * (size_t)nb);
            na = nb;
        }
        if (status == 1)
            return 0;
        if (status == 2 || na != 1 || (end >= 0 && a[0] != end))
            return -2;
        end = a[0];
    }
    return union_state(m, &stack, &end, 1);
}

/* find_utf8_target, remembered per state (utf8_memo: the answer + 1, 0 = not asked yet): the
 * answer never changes, and a counted string asks it of each place at every mask along it. */
int32_t utf8_target(Machine *m, int32_t state) {
    Vec *memo = &m->utf8_memo;
    if (state < memo->len && memo->data[state])
        return memo->data[state] - 1;
    int32_t got = frame_utf8_target(m, state);
    if (got == -2)
        got = find_utf8_target(m, state);
    if (got < 0)
        return -1;
    Py_ssize_t states = m->state_start.len;
    if (memo->len < states) {
        if (vec_reserve(memo, states) < 0)
            return -1;
        memset(memo->data + memo->len, 0, sizeof(int32_t) * (size_t)(states - memo->len));
        memo->len = states;
    }
    memo->data[state] = got + 1;
    return got;
}

/* How many places j of states[0..n) in a row, from the first, every multi-byte character steps
 * from states[j] to states[j + 1] (at most n - 1); -1 on error. */
Py_ssize_t utf8_chain(Machine *m, const int32_t *states, Py_ssize_t n) {
    Py_ssize_t j = 0;
    for (; j + 1 < n; j++) {
        int32_t got = utf8_target(m, states[j]);
        if (got < 0)
            return -1;
        if (got != states[j + 1])
            break;
    }
    return j;
}

/* The states c0 = state, c1, ... that the bytes loop[0..n) step along together, for at most
 * `limit` steps, appended to `out` until every loop byte is dead; 1 when they part ways (or some
 * die and others not) first, -1 on error, else 0. Only the loop bytes are stepped: no row. */
#define CLASS_MAPS_SEEN 8

/* The distinct byte classes that loop[0..n) fall in under one rule's class map: what a chain's
 * places read of that rule (a JSON string's ~200 loop bytes fall in a few classes, split only by
 * what the rule's escapes read elsewhere). */
typedef struct {
    const uint8_t *cmap;
    int n;
    uint8_t classes[256];
} LoopClasses;

/* Whether every top frame of `state` sends all of loop[0..n) to one target: then the loop bytes
 * step together (the same union), and stepping loop[0] alone tells where all of them go. Each
 * frame's DFA row is read at the loop's distinct classes under its rule's map (`seen`, found once
 * per map and chain: a counter's places are frames of one or two rules), not at n bytes. 0 when
 * they may part ways or too many maps are met: the caller steps every byte then. */
static int loop_steps_as_one(const Machine *m, int32_t state, const uint8_t *loop, Py_ssize_t n, LoopClasses *seen, int *num_seen) {
    for (Py_ssize_t i = 0; i < m->state_len.data[state]; i++) {
        int32_t node = m->state_pool.data[m->state_start.data[state] + i];
        if (node == 0)
            continue; /* the empty stack reads no byte */
        int32_t frame = m->node_frame.data[node];
        const uint8_t *cmap = m->classmaps + (Py_ssize_t)m->rule_of[frame] * 256;
        LoopClasses *lc = NULL;
        for (int j = 0; j < *num_seen && !lc; j++)
            lc = seen[j].cmap == cmap ? &seen[j] : NULL;
        if (!lc) {
            if (*num_seen == CLASS_MAPS_SEEN)
                return 0;
            lc = &seen[(*num_seen)++];
            uint8_t met[256] = {0};
            lc->cmap = cmap;
            lc->n = 0;
            for (Py_ssize_t b = 0; b < n; b++)
                if (!met[cmap[loop[b]]]++)
                    lc->classes[lc->n++] = cmap[loop[b]];
        }
        const int32_t *row = m->frame_row[frame];
        for (int c = 1; c < lc->n; c++)
            if (row[lc->classes[c]] != row[lc->classes[0]])
                return 0;
    }
    return 1;
}

int machine_chain(Machine *m, int32_t state, const uint8_t *loop, Py_ssize_t n, int limit, Vec *out) {
    int32_t targets[256];
    LoopClasses seen[CLASS_MAPS_SEEN];
    int num_seen = 0;
    for (int step = 0;; step++) {
        if (vec_push(out, state) < 0)
            return -1;
        if (step == limit)
            return 0;
        if (loop_steps_as_one(m, state, loop, n, seen, &num_seen)) { /* one byte steps for all */
            if (machine_step_some(m, state, loop, 1, targets) < 0)
                return -1;
            if (targets[0] == 0)
                return 0;
            state = targets[0];
            continue;
        }
        if (machine_step_some(m, state, loop, n, targets) < 0)
            return -1;
        int same = 1, all_dead = 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            same &= targets[i] == targets[0];
            all_dead &= targets[i] == 0;
        }
        if (all_dead)
            return 0;
        if (!same)
            return 1;
        state = targets[0];
    }
}
