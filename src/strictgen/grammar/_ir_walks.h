/* What the two files of the IR walks in C share (_ir_walks.c: the pointer-set walks and the module;
 * _ir_values.c: the walks of values, content_hash and same_value): the IR types in the order the
 * walks are given them, the reads of a node's children, the frames of a depth-first walk, and a
 * memo of answers by node id. The node reads are defined in _ir_walks.c. */
#ifndef STRICTGEN_GRAMMAR_IR_WALKS_H
#define STRICTGEN_GRAMMAR_IR_WALKS_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_walks.h"

/* the names below are shared by this extension's files only */
#pragma GCC visibility push(hidden)

enum { SEQ, ALT, INTERSECT, REPEAT, SPELLED, DIFFERENCE, NTYPES, RULEREF = NTYPES, LAZY, NREFTYPES };

extern PyObject *attr_items, *attr_item, *attr_base, *attr_minus, *attr_name, *attr_min, *attr_max;

/* The IR types a walk was given: `n` of them (shared()'s six, or those and RuleRef and Lazy), or
 * NULL with an exception */
PyObject *const *ir_types(PyObject *types_obj, Py_ssize_t n, const char *who);

/* Is t one of the six composite types? */
int composite(PyObject *t, PyObject *const *types);

/* A node's children (ir.children): k->n of them (`kid`), held by k (`release`) and by the node;
 * k->n = -1 for a leaf. 0, or -1 with an exception. */
typedef struct {
    PyObject *held[2]; /* the items tuple (`tuple` set), or the one or two children */
    int tuple;
    Py_ssize_t n;
} Kids;

static inline PyObject *kid(const Kids *k, Py_ssize_t i) { return k->tuple ? PyTuple_GET_ITEM(k->held[0], i) : k->held[i]; }
int children(PyObject *e, PyObject *const *types, Kids *k);
void release(Kids *k);

/* known.get(id(x)) as a borrowed value, or NULL when absent (0), or -1 with an exception */
int known_get(PyObject *known, PyObject *x, PyObject **out);
/* known_get, and *key = id(x) as an int (a new reference, NULL on error) for a known_put after */
int known_lookup(PyObject *known, PyObject *x, PyObject **key, PyObject **out);
/* known[id(x)] = value: 0, or -1 with an exception */
int known_set(PyObject *known, PyObject *x, PyObject *value);
/* known_set with id(x) as an int already made (`key`, borrowed), or NULL (made here): a walk
 * that looked a node up keeps its key for the entry it leaves (an int object less a node) */
int known_put(PyObject *known, PyObject *key, PyObject *x, PyObject *value);

/* a node on a depth-first walk's path, its children and the next one to walk; `key`: id(node)
 * as an int where the walk made it (held), else NULL */
typedef struct {
    PyObject *node;
    Kids k;
    Py_ssize_t next;
    PyObject *key;
} Frame;

enum { FIRST_FRAMES = 64 };

/* FIRST_FRAMES frames, the first one `expr`'s (its children not yet filled), or NULL with an exception */
Frame *frames_new(PyObject *expr);
/* frames[nframes++] = a frame of `node`, its children `sub` and its `key` (both taken over,
 * released on failure), growing the frames; 0, or -1 with an exception */
int push_frame(Frame **frames, Py_ssize_t *nframes, Py_ssize_t *cap, PyObject *node, Kids *sub, PyObject *key);
/* a frame's children and key released */
void frame_done(Frame *f);

/* the value walks (_ir_values.c) */
PyObject *content_hash(PyObject *self, PyObject *args);
PyObject *same_value(PyObject *self, PyObject *args);

#pragma GCC visibility pop

#endif
