/* What the _rule_sizes module's files share: the IR graph (_rule_graph.c builds it, _rule_sizes.c
 * weighs it) and small() (_small_rules.c). */
#ifndef STRICTGEN_RULE_SIZES_H
#define STRICTGEN_RULE_SIZES_H

#include <Python.h>
#include <stdint.h>

/* sizes multiply through nested repeats: real schemas reach 10^30 states (of estimate), past int64 */
typedef __int128 big;

enum { SEQ, ALT, INTERSECT, REF, REPEAT, DIFFERENCE, SPELLED, LAZY, LITERAL, CHARSET, NTYPES, LEAF = NTYPES };

typedef struct {
    int32_t n, cap;                  /* nodes */
    uint8_t *kind;                   /* enum above */
    int32_t *first, *count;          /* children: kids[first .. first + count) */
    int64_t *factor, *own;           /* copies of each child per copy; own states */
    big *fixed;                      /* fixed states */
    int32_t *rule;                   /* a REF's rule position, else -1 */
    uint8_t *has_refs;
    PyObject **obj;                  /* borrowed */
    int32_t *kids, nkids, kids_cap;
    int32_t *roots, nroots;          /* each rule's body */
    /* identity -> node: open addressing on the pointer */
    uintptr_t *keys;
    int32_t *vals;
    size_t mask;
} Graph;

/* 1: an int of the IR or of the sums passed int64 (or a name is unknown): the Python walk decides */
#define GIVE_UP 1

/* Numbers the distinct nodes (by identity) of the rules' `bodies` (`index`: rule name -> position;
 * `types`: the NTYPES IR types in the enum's order) into `g` (zeroed), with their children, copies
 * and own states, then every node's fixed states and has_refs. 0, GIVE_UP, or -1 with an exception;
 * `g` is the caller's to free with graph_free whatever the outcome. */
int graph_build(Graph *g, PyObject *bodies, PyObject *index, PyObject **types);
void graph_free(Graph *g);
/* interns the IR field names graph_build reads: once, at the module's init; -1 with an exception */
int graph_intern_names(void);

/* small(fixed, weights, index, root, big_rule, max_depth): would the planning call no rule? */
PyObject *sizes_small(PyObject *self, PyObject *args);

#endif
