/* IR -> NFA lowering from a flat program, without the GIL.
 *
 * grammar/automata.py's NFABuilder writes a rule's IR as int32 opcodes in pre-order (what only
 * Python can decide is already decided in it: which pieces are embedded DFAs, which rules are
 * calls, which nodes are shared), and lower() adds the NFA the Python builder would add, state by
 * state, in one pass. Ops (a node's children follow it):
 *
 *   LIT n b1..bn             bytes start -> end (n - 1 new states; n = 0: an epsilon edge)
 *   BYTES n (lo hi)*n        one byte of the ranges
 *   EDGES m e (s lo hi t)*e  a fixed fragment: m new states; in s and t, 0 is start, 1 is end,
 *                            2 + i the i-th new state (a character class's UTF-8 trie)
 *   SEQ n items              n - 1 new states, then the items one after another
 *   ALT n items              n new states, an epsilon edge into each, each item from there
 *   REPEAT min max len item  max -1: unbounded; the item (len ints) run once per copy
 *   CALL callee              a call edge
 *   EMBED i                  DFA i of the list given, embedded (as NFA.embed)
 *   SHARED id at len         node `id` built once towards each end state: a new entry state the
 *                            first time (its program `at` ints from this op), an epsilon edge
 *                            into it each time
 *   TEMPLATE id at len       the program `at` ints from this op built once into an NFA of its
 *                            own (states 0, 1 its ends), spliced in each time (as NFA.splice)
 *   (len: how many ints of the node's program follow inline, 0 for a reference; offsets are
 *   relative, so that a piece of program can be copied into another one whole)
 *
 * A result the Python builder would not give back the same way (past max_states, past the
 * deadline, a template met inside itself, a malformed program) is a status > 0 and the NFA is
 * restored as it was: the caller builds that rule in Python, which raises what it raises today.
 */
#include "_regular.h"

enum { OP_LIT = 1, OP_BYTES, OP_EDGES, OP_SEQ, OP_ALT, OP_REPEAT, OP_CALL, OP_EMBED, OP_SHARED, OP_TEMPLATE };

typedef struct {
    const int32_t *ops;
    Py_ssize_t len;
    DFA **dfas;
    Py_ssize_t ndfas;
    Py_ssize_t max_states;
    double deadline;
    NFA **templates; /* by template id: NULL, BUILDING, or the built fragment */
    Py_ssize_t ntemplates;
    int status;
} Lowering;

static NFA building_mark;
#define BUILDING (&building_mark)

/* one NFA's shared-node entries: (id, end) -> entry state */
typedef struct {
    Interner keys;
    Vec entry;
} Fragments;

static int run(Lowering *w, NFA *a, Fragments *frags, Py_ssize_t pc, int32_t s, int32_t t, Py_ssize_t *next);

static int fail(Lowering *w, int status) {
    if (!w->status)
        w->status = status;
    return -1;
}

/* a's size after it grew from `before` states, checked as the Python builder checks it: the
 * bound, and the deadline each time the states pass a multiple of 1,024 */
static int grown(Lowering *w, const NFA *a, int32_t before) {
    if (a->num_states > w->max_states)
        return fail(w, LOWER_TOO_LARGE);
    if ((a->num_states >> 10) != (before >> 10) && w->deadline > 0 && now() > w->deadline)
        return fail(w, LOWER_TIME);
    return 0;
}

/* n new states of a (checked); the first one's number */
static int32_t grow(Lowering *w, NFA *a, Py_ssize_t n) {
    int32_t before = a->num_states, first = nfa_add_states(a, n);
    if (first < 0)
        return fail(w, LOWER_MEMORY);
    return grown(w, a, before) < 0 ? -1 : first;
}

static int need(Lowering *w, Py_ssize_t pc, Py_ssize_t n) { return n < 0 || pc + n > w->len ? fail(w, LOWER_MALFORMED) : 0; }

static int edge_ok(Lowering *w, int status) { return status < 0 ? fail(w, LOWER_MEMORY) : 0; }

static int32_t fragment_entry(Lowering *w, Fragments *f, int32_t id, int32_t end, int *added) {
    int32_t key[2] = {id, end};
    int32_t got = intern(&f->keys, key, 2, -1, added);
    if (got < 0)
        return fail(w, LOWER_MEMORY);
    if (*added && vec_push(&f->entry, -1) < 0)
        return fail(w, LOWER_MEMORY);
    return got;
}

static void fragments_free(Fragments *f) {
    interner_free(&f->keys);
    vec_free(&f->entry);
}

/* the template's fragment (built on first use into an NFA of its own, as NFABuilder._copy does) */
static NFA *template_of(Lowering *w, int32_t id, Py_ssize_t at) {
    if (id < 0 || id >= w->ntemplates || at < 0 || at >= w->len)
        return fail(w, LOWER_MALFORMED), NULL;
    NFA *b = w->templates[id];
    if (b == BUILDING)
        return fail(w, LOWER_UNSUPPORTED), NULL; /* a rule met inside itself: Python says so */
    if (b)
        return b;
    b = (NFA *)calloc(1, sizeof(NFA));
    if (!b)
        return fail(w, LOWER_MEMORY), NULL;
    w->templates[id] = BUILDING;
    Fragments own = {0};
    Py_ssize_t end;
    int32_t s = grow(w, b, 1), f = s < 0 ? -1 : grow(w, b, 1);
    int ok = f >= 0 && run(w, b, &own, at, s, f, &end) == 0;
    fragments_free(&own);
    if (!ok) {
        nfa_clear(b);
        free(b);
        w->templates[id] = NULL;
        return NULL;
    }
    return w->templates[id] = b;
}

static int run_shared(Lowering *w, NFA *a, Fragments *frags, Py_ssize_t pc, int32_t s, int32_t t) {
    int32_t id = w->ops[pc];
    Py_ssize_t at = pc - 1 + w->ops[pc + 1];
    int added;
    int32_t key = fragment_entry(w, frags, id, t, &added);
    if (key < 0)
        return -1;
    if (added) {
        int32_t entry = grow(w, a, 1);
        Py_ssize_t end;
        if (entry < 0 || at < 0 || need(w, at, 1) < 0 || run(w, a, frags, at, entry, t, &end) < 0)
            return -1;
        frags->entry.data[key] = entry;
    }
    return edge_ok(w, nfa_add_eps(a, s, frags->entry.data[key]));
}

static int run_repeat(Lowering *w, NFA *a, Fragments *frags, Py_ssize_t pc, int32_t s, int32_t t) {
    int32_t min = w->ops[pc], max = w->ops[pc + 1];
    Py_ssize_t item = pc + 3, end;
    int32_t cur = s;
    for (int32_t i = 0; i < min; i++) {
        int32_t nxt = grow(w, a, 1);
        if (nxt < 0 || run(w, a, frags, item, cur, nxt, &end) < 0)
            return -1;
        cur = nxt;
    }
    if (max < 0) { /* a true self-loop on one state (masks exploit it) */
        int32_t loop = grow(w, a, 1);
        return loop < 0 || edge_ok(w, nfa_add_eps(a, cur, loop)) < 0 || run(w, a, frags, item, loop, loop, &end) < 0 ? -1
                                                                                                                     : edge_ok(w, nfa_add_eps(a, loop, t));
    }
    for (int32_t i = min; i < max; i++) {
        int32_t nxt = grow(w, a, 1);
        if (nxt < 0 || edge_ok(w, nfa_add_eps(a, cur, t)) < 0 || run(w, a, frags, item, cur, nxt, &end) < 0)
            return -1;
        cur = nxt;
    }
    return edge_ok(w, nfa_add_eps(a, cur, t));
}

static int run_edges(Lowering *w, NFA *a, Py_ssize_t pc, int32_t s, int32_t t) {
    int32_t m = w->ops[pc], e = w->ops[pc + 1];
    if (need(w, pc + 2, 4 * (Py_ssize_t)e) < 0)
        return -1;
    int32_t first = a->num_states;
    for (int32_t i = 0; i < m; i++) /* one at a time: the Python builder checks each new state */
        if (grow(w, a, 1) < 0)
            return -1;
    const int32_t *x = w->ops + pc + 2;
    for (int32_t i = 0; i < e; i++, x += 4) {
        int32_t from = x[0] == 0 ? s : x[0] == 1 ? t : first + x[0] - 2, to = x[3] == 0 ? s : x[3] == 1 ? t : first + x[3] - 2;
        if (x[0] < 0 || x[0] >= m + 2 || x[3] < 0 || x[3] >= m + 2 || x[1] < 0 || x[2] > 255 || x[1] > x[2])
            return fail(w, LOWER_MALFORMED);
        if (edge_ok(w, nfa_add_range(a, from, x[1], x[2], to)) < 0)
            return -1;
    }
    return 0;
}

/* the node at pc from s to t; *next: the pc after its inline program */
static int run(Lowering *w, NFA *a, Fragments *frags, Py_ssize_t pc, int32_t s, int32_t t, Py_ssize_t *next) {
    if (need(w, pc, 2) < 0)
        return -1;
    int32_t op = w->ops[pc++], n = w->ops[pc];
    switch (op) {
    case OP_LIT: {
        if (need(w, pc + 1, n) < 0)
            return -1;
        int32_t before = a->num_states;
        int status = nfa_add_literal32(a, s, w->ops + pc + 1, n, t);
        if (status)
            return fail(w, status < 0 ? LOWER_MEMORY : LOWER_MALFORMED);
        *next = pc + 1 + n;
        return grown(w, a, before);
    }
    case OP_BYTES:
        if (need(w, pc + 1, 2 * (Py_ssize_t)n) < 0)
            return -1;
        for (int32_t i = 0; i < n; i++) {
            int32_t lo = w->ops[pc + 1 + 2 * i], hi = w->ops[pc + 2 + 2 * i];
            if (lo < 0 || hi > 255 || lo > hi)
                return fail(w, LOWER_MALFORMED);
            if (edge_ok(w, nfa_add_range(a, s, lo, hi, t)) < 0)
                return -1;
        }
        *next = pc + 1 + 2 * n;
        return 0;
    case OP_EDGES:
        if (need(w, pc, 2) < 0 || run_edges(w, a, pc, s, t) < 0)
            return -1;
        *next = pc + 2 + 4 * (Py_ssize_t)w->ops[pc + 1];
        return 0;
    case OP_SEQ:
    case OP_ALT: {
        if (op == OP_SEQ && n == 0) {
            *next = pc + 1;
            return edge_ok(w, nfa_add_eps(a, s, t));
        }
        int32_t first = n > (op == OP_SEQ) ? grow(w, a, n - (op == OP_SEQ)) : a->num_states;
        if (first < 0)
            return -1;
        Py_ssize_t at = pc + 1;
        int32_t cur = s;
        for (int32_t i = 0; i < n; i++) {
            if (op == OP_ALT) {
                cur = first + i;
                if (edge_ok(w, nfa_add_eps(a, s, cur)) < 0 || run(w, a, frags, at, cur, t, &at) < 0)
                    return -1;
            } else {
                int32_t nxt = i == n - 1 ? t : first + i;
                if (run(w, a, frags, at, cur, nxt, &at) < 0)
                    return -1;
                cur = nxt;
            }
        }
        *next = at;
        return 0;
    }
    case OP_REPEAT:
        if (need(w, pc, 3) < 0 || need(w, pc + 3, w->ops[pc + 2]) < 0 || run_repeat(w, a, frags, pc, s, t) < 0)
            return -1;
        *next = pc + 3 + w->ops[pc + 2];
        return 0;
    case OP_CALL:
        *next = pc + 1;
        return n < 0 ? fail(w, LOWER_MALFORMED) : edge_ok(w, nfa_add_call(a, s, n, t));
    case OP_EMBED: {
        if (n < 0 || n >= w->ndfas)
            return fail(w, LOWER_MALFORMED);
        int32_t before = a->num_states;
        if (nfa_embed(a, w->dfas[n], s, t) < 0)
            return fail(w, LOWER_MEMORY);
        *next = pc + 1;
        return grown(w, a, before);
    }
    case OP_SHARED:
    case OP_TEMPLATE: {
        if (need(w, pc, 3) < 0 || need(w, pc + 3, w->ops[pc + 2]) < 0)
            return -1;
        *next = pc + 3 + w->ops[pc + 2];
        if (op == OP_SHARED)
            return run_shared(w, a, frags, pc, s, t);
        NFA *b = template_of(w, n, pc - 1 + w->ops[pc + 1]);
        if (!b)
            return -1;
        int32_t before = a->num_states;
        if (nfa_splice(a, b, 0, 1, s, t) < 0)
            return fail(w, LOWER_MEMORY);
        return grown(w, a, before);
    }
    default:
        return fail(w, LOWER_MALFORMED);
    }
}

int nfa_lower(NFA *a, const int32_t *ops, Py_ssize_t len, DFA **dfas, Py_ssize_t ndfas, Py_ssize_t ntemplates, int32_t s, int32_t t,
              Py_ssize_t max_states, double deadline) {
    Lowering w = {ops, len, dfas, ndfas, max_states, deadline, NULL, ntemplates, 0};
    int32_t states = a->num_states;
    Py_ssize_t edges = a->edges.len, eps = a->eps.len, calls = a->calls.len, end = 0;
    Fragments frags = {0};
    w.templates = (NFA **)calloc((size_t)ntemplates + 1, sizeof(NFA *));
    if (!w.templates)
        w.status = LOWER_MEMORY;
    else if (run(&w, a, &frags, 0, s, t, &end) == 0 && end != len)
        w.status = LOWER_MALFORMED;
    for (Py_ssize_t i = 0; w.templates && i < ntemplates; i++)
        if (w.templates[i] && w.templates[i] != BUILDING) {
            nfa_clear(w.templates[i]);
            free(w.templates[i]);
        }
    free(w.templates);
    fragments_free(&frags);
    if (w.status) { /* as it was: the caller builds the rule in Python */
        a->num_states = states;
        a->edges.len = edges, a->eps.len = eps, a->calls.len = calls;
    }
    return w.status;
}
