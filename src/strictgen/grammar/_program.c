/* A rule's lowering program written in C: lowering.Program's walk of the IR (issue 29: its
 * Python walk was ~20% of the bench's compile time, build_here the biggest Python self time).
 *
 * write(builder, memo, expr, shared, max_ops) -> bytes (native int32 ops)
 *   the very ops lowering.Program(builder, max_ops) writes for `expr` (`build` when shared is true,
 *   else `build_here`), in the same order, with the same entries left in `memo` (a LoweringMemo:
 *   dfas, dfa_index, fragment_ids, template_ids, segments). The walk itself (literals, byte sets,
 *   sequences, alternatives, repeats, calls, shared nodes, templates) is C; the builder is asked
 *   what only it decides, as Program asks it: embedded_dfa, charset_ops, regular_dfa,
 *   kept_lookup, shared_ids, rules, called; where the builder's memo (memo_answers) already
 *   settles an answer, it is read there instead (_known_answers.h), templated always. It raises what Program raises (Unlowerable,
 *   ProgramTooLong, GrammarTooLargeError, what the builder raises) and RecursionError where the
 *   IR nests deeper than the interpreter's recursion limit allows.
 * setup(types, errors, call_free, reference_kinds): the IR types (Literal, ByteSet, CharSet, Seq,
 *   Alt, Repeat, RuleRef, Lazy, Intersect, Difference, Spelled), (Unlowerable, ProgramTooLong,
 *   GrammarTooLargeError), and the call-freedom walk NFABuilder._calls_nothing makes
 *   (_ir_walks.call_free, ir_keys.REFERENCE_KINDS), once.
 *
 * Ops: regular/_lower.c lists them. Segments (a template written whole, copied into the next
 * rule's program) are bytes of native int32s, as Program keeps them. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include <string.h>

#include "_program_writer.h"
#include "_walks.h"

enum { OP_LIT = 1, OP_BYTES, OP_EDGES, OP_SEQ, OP_ALT, OP_REPEAT, OP_CALL, OP_EMBED, OP_SHARED, OP_TEMPLATE };
enum { T_LITERAL, T_BYTESET, T_CHARSET, T_SEQ, T_ALT, T_REPEAT, T_RULEREF, T_LAZY, T_INTERSECT, T_DIFFERENCE, T_SPELLED, NTYPES };
enum { E_UNLOWERABLE, E_TOO_LONG, E_TOO_LARGE, NERRORS };
#define MAX_COPIES 2147483647LL /* lowering.MAX_COPIES: a repeat's bounds are int32 cells */

static PyObject *types[NTYPES], *errors[NERRORS];

/* The fields read of a node, each of one exact type: from its slot (the IR's dataclasses have
 * slots), found once by setup(); by name where the type has no such slot (-1). */
enum { F_DATA, F_RANGES, F_CHARSET_RANGES, F_SEQ_ITEMS, F_ALT_ITEMS, F_ITEM, F_MIN, F_MAX, F_NAME, NFIELDS };
static const struct {
    int type;
    const char *name;
} field_of[NFIELDS] = {{T_LITERAL, "data"}, {T_BYTESET, "ranges"}, {T_CHARSET, "ranges"}, {T_SEQ, "items"}, {T_ALT, "items"},
                       {T_REPEAT, "item"},  {T_REPEAT, "min"},     {T_REPEAT, "max"}, {T_RULEREF, "name"}};
static Py_ssize_t field_offset[NFIELDS];
static PyObject *field_name[NFIELDS];

/* node.<field> (a new reference), node of the field's exact type */
static PyObject *field(PyObject *node, int f) { return ir_field(node, field_offset[f], field_name[f]); }
static PyObject *s_rules, *s_called, *s_embedded_dfa, *s_charset_ops,
    *s_regular_dfa, *s_memo_answers, *s_kept_lookup, *s_shared_ids, *s_dfas, *s_dfa_index, *s_fragment_ids, *s_template_ids, *s_segments,
    *k_item, *k_rule;

/* raise exc(value) (PyErr_SetObject would take a tuple value for the arguments); -1 */
static int raise_with(PyObject *exc, PyObject *value) {
    PyObject *args = value ? PyTuple_Pack(1, value) : NULL;
    if (args)
        PyErr_SetObject(exc, args);
    Py_XDECREF(args);
    return -1;
}

static int build(Writer *w, PyObject *expr);
static int build_here(Writer *w, PyObject *expr);

/* Program._not_contained: the templates being written that began after `at` are not self-contained */
static void not_contained(Writer *w, Py_ssize_t at) {
    for (Py_ssize_t i = w->nopen - 1; i >= 0 && w->open[i].at > at; i--)
        w->open[i].contained = 0;
}

/* Program._ref */
static int ref(Writer *w, int32_t op, int32_t ident, Py_ssize_t at) {
    not_contained(w, at);
    return put4(w, op, ident, (int32_t)(at - w->len), 0);
}

/* Program._embed */
static int embed(Writer *w, PyObject *dfa) {
    PyObject *key = PyLong_FromVoidPtr(dfa);
    if (!key)
        return -1;
    PyObject *index = PyDict_GetItemWithError(w->dfa_index, key); /* borrowed */
    int32_t cell;
    int status = -1;
    if (index) {
        status = as_cell(index, &cell);
    } else if (!PyErr_Occurred()) {
        PyObject *n = PyLong_FromSsize_t(PyList_GET_SIZE(w->dfas));
        if (n && PyDict_SetItem(w->dfa_index, key, n) == 0 && PyList_Append(w->dfas, dfa) == 0)
            status = as_cell(n, &cell);
        Py_XDECREF(n);
    }
    Py_DECREF(key);
    return status < 0 ? -1 : put2(w, OP_EMBED, cell);
}

static int is_type(PyObject *expr, int t) { return (PyObject *)Py_TYPE(expr) == types[t]; }

/* isinstance(expr, lowering.COMPOSITE) */
static int composite(PyObject *expr) {
    return PyObject_TypeCheck(expr, (PyTypeObject *)types[T_SEQ]) || PyObject_TypeCheck(expr, (PyTypeObject *)types[T_ALT]) ||
           PyObject_TypeCheck(expr, (PyTypeObject *)types[T_REPEAT]) || PyObject_TypeCheck(expr, (PyTypeObject *)types[T_RULEREF]);
}

/* builder.embedded_dfa(expr) embedded when not None (*done set), else *done 0: read from the
 * builder's memo where it settles the answer (_known_answers.h), else asked */
static int embed_piece(Writer *w, PyObject *expr, int *done) {
    PyObject *dfa = NULL;
    int known = known_embedded(&w->known, expr, composite(expr), w->rules, w->called, w->kept, &dfa);
    if (known < 0 || (!known && !(dfa = PyObject_CallMethodOneArg(w->builder, s_embedded_dfa, expr))))
        return -1;
    *done = dfa != Py_None;
    int status = *done ? embed(w, dfa) : 0;
    Py_DECREF(dfa);
    return status;
}

/* Program.build: a shared node written once a program, referred to after */
static int build(Writer *w, PyObject *expr) {
    Py_ssize_t at = offsets_get(&w->fragments, (uintptr_t)expr);
    if (at < 0 && offsets_get(w->shared_nodes, (uintptr_t)expr) < 0)
        return build_here(w, expr);
    PyObject *key = PyLong_FromVoidPtr(expr);
    int status = -1;
    int32_t ident;
    if (!key || numbered(w->fragment_ids, key, &ident) < 0) {
        Py_XDECREF(key);
        return -1;
    }
    Py_DECREF(key);
    if (at >= 0)
        return ref(w, OP_SHARED, ident, at);
    Py_ssize_t head = w->len;
    int done;
    if (offsets_put(&w->fragments, (uintptr_t)expr, head + 4) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (put4(w, OP_SHARED, ident, 4, 0) < 0 || embed_piece(w, expr, &done) < 0 || (!done && build_here(w, expr) < 0))
        return status;
    w->ops[head + 3] = (int32_t)(w->len - head - 4);
    return 0;
}

/* Program._copy: an embedded DFA, or a template (written once a compile, referred to or copied) */
static int copy(Writer *w, PyObject *key, PyObject *expr) {
    if (!composite(expr))
        return build_here(w, expr);
    PyObject *segment = PyDict_GetItemWithError(w->segments, key); /* borrowed */
    if (segment) {
        if (!PyBytes_Check(segment) || PyBytes_GET_SIZE(segment) % sizeof(int32_t)) {
            PyErr_SetString(PyExc_TypeError, "a template's segment is bytes of int32 ops");
            return -1;
        }
        Py_ssize_t n = PyBytes_GET_SIZE(segment) / (Py_ssize_t)sizeof(int32_t);
        if (room(w, n) < 0)
            return -1;
        memcpy(w->ops + w->len, PyBytes_AS_STRING(segment), (size_t)n * sizeof(int32_t));
        w->len += n;
        return 0;
    }
    if (PyErr_Occurred())
        return -1;
    int templated = PyDict_Contains(w->known.templates, key), done = 0; /* builder.templated(key) */
    if (templated < 0 || (!templated && embed_piece(w, expr, &done) < 0))
        return -1;
    if (done)
        return 0;
    PyObject *at = PyDict_GetItemWithError(w->templates, key); /* borrowed */
    int32_t ident;
    if (at == Py_None) { /* met inside itself: the Python builder says so */
        return raise_with(errors[E_UNLOWERABLE], key);
    }
    if (at) {
        PyObject *got = PyDict_GetItemWithError(w->template_ids, key);
        if (!got) {
            return PyErr_Occurred() ? -1 : raise_with(PyExc_KeyError, key);
        }
        return as_cell(got, &ident) < 0 ? -1 : ref(w, OP_TEMPLATE, ident, PyLong_AsSsize_t(at));
    }
    if (PyErr_Occurred() || PyDict_SetItem(w->templates, key, Py_None) < 0)
        return -1;
    Py_ssize_t head = w->len;
    if (w->nopen == w->open_cap) {
        Py_ssize_t cap = w->open_cap ? 2 * w->open_cap : 16;
        Open *more = realloc(w->open, (size_t)cap * sizeof(Open));
        if (!more) {
            PyErr_NoMemory();
            return -1;
        }
        w->open = more, w->open_cap = cap;
    }
    w->open[w->nopen++] = (Open){head, 1};
    if (numbered(w->template_ids, key, &ident) < 0 || put4(w, OP_TEMPLATE, ident, 4, 0) < 0 || build_here(w, expr) < 0)
        return -1;
    w->ops[head + 3] = (int32_t)(w->len - head - 4);
    int contained = w->open[--w->nopen].contained;
    PyObject *offset = PyLong_FromSsize_t(head + 4);
    int status = offset ? PyDict_SetItem(w->templates, key, offset) : -1;
    Py_XDECREF(offset);
    if (status == 0 && contained) {
        PyObject *whole = PyBytes_FromStringAndSize((const char *)(w->ops + head), (Py_ssize_t)((size_t)(w->len - head) * sizeof(int32_t)));
        status = whole ? PyDict_SetItem(w->segments, key, whole) : -1;
        Py_XDECREF(whole);
    }
    return status;
}

/* copy() under the key (kind, what) */
static int copy_as(Writer *w, PyObject *kind, PyObject *what, PyObject *expr) {
    PyObject *key = PyTuple_Pack(2, kind, what);
    int status = key ? copy(w, key, expr) : -1;
    Py_XDECREF(key);
    return status;
}

static int write_literal(Writer *w, PyObject *expr) {
    PyObject *data = field(expr, F_DATA);
    if (!data)
        return -1;
    int status = -1;
    if (!PyBytes_Check(data))
        PyErr_SetString(PyExc_TypeError, "a Literal's data is bytes");
    else {
        Py_ssize_t n = PyBytes_GET_SIZE(data);
        const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(data);
        if (put2(w, OP_LIT, (int32_t)n) == 0 && room(w, n) == 0) {
            for (Py_ssize_t i = 0; i < n; i++)
                w->ops[w->len + i] = b[i];
            w->len += n;
            status = 0;
        }
    }
    Py_DECREF(data);
    return status;
}

/* the ints of a sequence (a list or tuple) written as they come */
static int write_ints(Writer *w, PyObject *seq) {
    PyObject *fast = PySequence_Fast(seq, "expected a sequence of ints");
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int status = room(w, n);
    for (Py_ssize_t i = 0; status == 0 && i < n; i++)
        status = as_cell(PySequence_Fast_GET_ITEM(fast, i), &w->ops[w->len + i]);
    if (status == 0)
        w->len += n;
    Py_DECREF(fast);
    return status;
}

static int write_byteset(Writer *w, PyObject *expr) {
    PyObject *ranges = field(expr, F_RANGES);
    if (!ranges)
        return -1;
    PyObject *fast = PySequence_Fast(ranges, "a ByteSet's ranges are pairs");
    Py_DECREF(ranges);
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int status = put2(w, OP_BYTES, (int32_t)n);
    for (Py_ssize_t i = 0; status == 0 && i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "a ByteSet's ranges are pairs");
            status = -1;
        } else
            status = write_ints(w, pair);
    }
    Py_DECREF(fast);
    return status;
}

/* a repeat's bound as a C integer: *big set (and the value kept in *obj) past MAX_COPIES */
static int bound(PyObject *x, long long *out, int *big) {
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (*out == -1 && PyErr_Occurred())
        return -1;
    *big = overflow > 0 || *out > MAX_COPIES;
    return 0;
}

static int write_repeat(Writer *w, PyObject *expr) {
    PyObject *lo = field(expr, F_MIN), *hi = lo ? field(expr, F_MAX) : NULL, *item = NULL;
    long long min, max = 0;
    int big_min = 0, big_max = 0, status = -1;
    if (!hi || bound(lo, &min, &big_min) < 0 || (hi != Py_None && bound(hi, &max, &big_max) < 0))
        goto done;
    if (big_min || big_max) { /* the program's int32 cells hold no such count (nor could an automaton the copies) */
        PyObject *most = big_min && big_max ? (PyObject_RichCompareBool(lo, hi, Py_GE) ? lo : hi) : big_min ? lo : hi;
        if (!PyErr_Occurred())
            PyErr_Format(errors[E_TOO_LARGE], "grammar too large: a repeat of %S copies (more than %lld)", most, MAX_COPIES);
        goto done;
    }
    Py_ssize_t head = w->len;
    if (put4(w, OP_REPEAT, (int32_t)min, hi == Py_None ? -1 : (int32_t)max, 0) < 0 || !(item = field(expr, F_ITEM)))
        goto done;
    long long copies = min + (hi == Py_None ? 1 : max - min);
    if (copies > 1) {
        PyObject *id = PyLong_FromVoidPtr(item);
        status = id ? copy_as(w, k_item, id, item) : -1;
        Py_XDECREF(id);
    } else
        status = copies ? build(w, item) : 0; /* none: nothing built, nothing asked */
    if (status == 0)
        w->ops[head + 3] = (int32_t)(w->len - head - 4);
done:
    Py_XDECREF(lo);
    Py_XDECREF(hi);
    Py_XDECREF(item);
    return status;
}

static int write_ruleref(Writer *w, PyObject *expr) {
    PyObject *name = field(expr, F_NAME);
    if (!name)
        return -1;
    int status = -1;
    PyObject *body = PyDict_GetItemWithError(w->rules, name), *callee; /* borrowed */
    if (!body) {
        if (!PyErr_Occurred())
            raise_with(errors[E_UNLOWERABLE], name);
    } else if ((callee = PyDict_GetItemWithError(w->called, name))) {
        int32_t cell;
        status = as_cell(callee, &cell) < 0 ? -1 : put2(w, OP_CALL, cell);
    } else if (!PyErr_Occurred()) {
        Py_INCREF(body);
        status = copy_as(w, k_rule, name, body);
        Py_DECREF(body);
    }
    Py_DECREF(name);
    return status;
}

/* an Intersect, Difference or Spelled: its minimal DFA (builder.regular_dfa), embedded */
static int write_regular(Writer *w, PyObject *expr) {
    PyObject *key = PyLong_FromVoidPtr(expr), *dfa = NULL; /* made once a compile: then in the memo's dfas */
    int known = key ? known_get(w->known.dfas, key, &dfa) : -1;
    Py_XDECREF(key);
    if (known < 0 || !(dfa = known ? Py_NewRef(dfa) : PyObject_CallMethodOneArg(w->builder, s_regular_dfa, expr)))
        return -1;
    int status = embed(w, dfa);
    Py_DECREF(dfa);
    return status;
}

/* a Seq or an Alt: its items one after another (Program checks max_ops here) */
static int write_items(Writer *w, PyObject *expr, int32_t op) {
    if (w->len > w->max_ops) {
        PyObject *n = PyLong_FromSsize_t(w->len);
        raise_with(errors[E_TOO_LONG], n);
        Py_XDECREF(n);
        return -1;
    }
    PyObject *items = field(expr, op == OP_SEQ ? F_SEQ_ITEMS : F_ALT_ITEMS);
    if (!items)
        return -1;
    int status = -1;
    if (!PyTuple_Check(items))
        PyErr_SetString(PyExc_TypeError, "an IR node's items must be a tuple");
    else {
        Py_ssize_t n = PyTuple_GET_SIZE(items);
        for (Py_ssize_t i = 0; i < n; i++) /* their types and first slots, read one after another below */
            __builtin_prefetch(PyTuple_GET_ITEM(items, i));
        status = put2(w, op, (int32_t)n);
        for (Py_ssize_t i = 0; status == 0 && i < n; i++)
            status = build(w, PyTuple_GET_ITEM(items, i)); /* held by the tuple, which is held here */
    }
    Py_DECREF(items);
    return status;
}

/* a CharSet: its EDGES op, from the memo's charsets (by ranges) or builder.charset_ops */
static int write_charset(Writer *w, PyObject *expr) {
    PyObject *ranges = field(expr, F_CHARSET_RANGES), *ops = NULL;
    int known = ranges ? known_get(w->known.charsets, ranges, &ops) : -1;
    Py_XDECREF(ranges);
    if (known < 0 || !(ops = known ? Py_NewRef(ops) : PyObject_CallMethodOneArg(w->builder, s_charset_ops, expr)))
        return -1;
    int status = write_ints(w, ops);
    Py_DECREF(ops);
    return status;
}

/* Is expr a piece an earlier compile kept? Embedded then (*done). */
static int embed_kept(Writer *w, PyObject *expr, int *done) {
    PyObject *dfa;
    int status = kept_dfa(w->kept, expr, &dfa);
    *done = status == 1;
    if (status == 1) {
        status = embed(w, dfa);
        Py_DECREF(dfa);
    }
    return status < 0 ? -1 : 0;
}

/* Program.build_here */
static int build_here(Writer *w, PyObject *expr) {
    if (is_type(expr, T_LITERAL))
        return write_literal(w, expr);
    if (Py_EnterRecursiveCall(" while writing a rule's lowering program"))
        return -1;
    int status = 0, done = 0;
    if (is_type(expr, T_SEQ) || is_type(expr, T_ALT) || is_type(expr, T_REPEAT) || is_type(expr, T_RULEREF))
        status = embed_kept(w, expr, &done);
    if (status < 0 || done)
        ;
    else if (is_type(expr, T_SEQ) || is_type(expr, T_ALT))
        status = write_items(w, expr, is_type(expr, T_SEQ) ? OP_SEQ : OP_ALT);
    else if (is_type(expr, T_BYTESET))
        status = write_byteset(w, expr);
    else if (is_type(expr, T_CHARSET))
        status = write_charset(w, expr); else if (is_type(expr, T_REPEAT))
        status = write_repeat(w, expr);
    else if (is_type(expr, T_INTERSECT) || is_type(expr, T_DIFFERENCE) || is_type(expr, T_SPELLED))
        status = write_regular(w, expr);
    else if (is_type(expr, T_RULEREF))
        status = write_ruleref(w, expr);
    else if (is_type(expr, T_LAZY)) {
        PyObject *callee = PyObject_GetItem(w->called, expr);
        int32_t cell;
        status = !callee || as_cell(callee, &cell) < 0 ? -1 : put2(w, OP_CALL, cell);
        Py_XDECREF(callee);
    } else {
        PyObject *name = PyObject_GetAttrString((PyObject *)Py_TYPE(expr), "__name__");
        raise_with(errors[E_UNLOWERABLE], name);
        Py_XDECREF(name);
        status = -1;
    }
    Py_LeaveRecursiveCall();
    return status;
}

/* *out = getattr(obj, name), checked to be of `type` (NULL: any); held in `held` */
static int fetch(PyObject *obj, PyObject *name, PyTypeObject *type, PyObject **out, PyObject **held, int *nheld) {
    PyObject *x = PyObject_GetAttr(obj, name);
    if (!x)
        return -1;
    held[(*nheld)++] = x;
    if (type && !PyObject_TypeCheck(x, type)) {
        PyErr_Format(PyExc_TypeError, "write: %S is not a %s", name, type->tp_name);
        return -1;
    }
    *out = x;
    return 0;
}

static PyObject *write_program(PyObject *self, PyObject *args) {
    PyObject *builder, *memo, *expr;
    int shared;
    Py_ssize_t max_ops;
    if (!PyArg_ParseTuple(args, "OOOpn", &builder, &memo, &expr, &shared, &max_ops))
        return NULL;
    if (!types[0]) {
        PyErr_SetString(PyExc_RuntimeError, "write: setup() first");
        return NULL;
    }
    Writer w = {0};
    w.builder = builder, w.max_ops = max_ops;
    PyObject *held[16], *result = NULL;
    int nheld = 0;
    if (fetch(builder, s_shared_ids, NULL, &w.shared, held, &nheld) < 0 || fetch(builder, s_rules, &PyDict_Type, &w.rules, held, &nheld) < 0 ||
        fetch(builder, s_called, &PyDict_Type, &w.called, held, &nheld) < 0 || fetch(memo, s_dfas, &PyList_Type, &w.dfas, held, &nheld) < 0 ||
        fetch(memo, s_dfa_index, &PyDict_Type, &w.dfa_index, held, &nheld) < 0 ||
        fetch(memo, s_fragment_ids, &PyDict_Type, &w.fragment_ids, held, &nheld) < 0 ||
        fetch(memo, s_template_ids, &PyDict_Type, &w.template_ids, held, &nheld) < 0 ||
        fetch(memo, s_segments, &PyDict_Type, &w.segments, held, &nheld) < 0)
        goto done;
    if (!(w.kept = PyObject_CallMethodNoArgs(builder, s_kept_lookup)))
        goto done;
    held[nheld++] = w.kept;
    if (!(held[nheld] = PyObject_GetAttr(builder, s_memo_answers)) || known_from(held[nheld++], &w.known) < 0)
        goto done;
    if (!PyAnySet_Check(w.shared)) {
        PyErr_SetString(PyExc_TypeError, "write: the builder's shared_ids are a set");
        goto done;
    }
    if (!(held[nheld] = shared_index(memo, w.shared, &w.shared_nodes)))
        goto done;
    nheld++;
    if (!(w.templates = PyDict_New()))
        goto done;
    held[nheld++] = w.templates;
    if ((shared ? build(&w, expr) : build_here(&w, expr)) == 0)
        result = PyBytes_FromStringAndSize((const char *)w.ops, (Py_ssize_t)((size_t)w.len * sizeof(int32_t)));
done:
    while (nheld)
        Py_DECREF(held[--nheld]);
    free(w.ops), free(w.open), free(w.fragments.keys), free(w.fragments.at);
    return result;
}

static PyObject *setup(PyObject *self, PyObject *args) {
    PyObject *t, *e, *walk, *kinds;
    if (!PyArg_ParseTuple(args, "O!O!OO!", &PyTuple_Type, &t, &PyTuple_Type, &e, &walk, &PyTuple_Type, &kinds) || known_setup(walk, kinds) < 0)
        return NULL;
    if (PyTuple_GET_SIZE(t) != NTYPES || PyTuple_GET_SIZE(e) != NERRORS) {
        PyErr_Format(PyExc_ValueError, "setup: %d IR types and %d errors", NTYPES, NERRORS);
        return NULL;
    }
    for (int i = 0; i < NTYPES; i++)
        if (!PyType_Check(PyTuple_GET_ITEM(t, i))) {
            PyErr_SetString(PyExc_TypeError, "setup: the IR types are types");
            return NULL;
        }
    for (int i = 0; i < NTYPES; i++)
        Py_XSETREF(types[i], Py_NewRef(PyTuple_GET_ITEM(t, i)));
    for (int i = 0; i < NERRORS; i++)
        Py_XSETREF(errors[i], Py_NewRef(PyTuple_GET_ITEM(e, i)));
    for (int f = 0; f < NFIELDS; f++) {
        if (!field_name[f] && !(field_name[f] = PyUnicode_InternFromString(field_of[f].name)))
            return NULL;
        field_offset[f] = ir_slot_offset(types[field_of[f].type], field_name[f]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"write", write_program, METH_VARARGS, "write(builder, memo, expr, shared, max_ops) -> bytes: the int32 ops lowering.Program writes."},
    {"setup", setup, METH_VARARGS, "setup(types, errors, call_free, reference_kinds): the IR types, the errors write() raises and the call-freedom walk, once."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_program", "A rule's lowering program, written in C (grammar/lowering.py).", -1, methods};

PyMODINIT_FUNC PyInit__program(void) {
    struct {
        PyObject **at;
        const char *text;
    } names[] = {{&s_rules, "rules"},
                 {&s_called, "called"},
                 {&s_embedded_dfa, "embedded_dfa"},
                 {&s_charset_ops, "charset_ops"},
                 {&s_regular_dfa, "regular_dfa"},
                 {&s_memo_answers, "memo_answers"},
                 {&s_kept_lookup, "kept_lookup"},
                 {&s_shared_ids, "shared_ids"},
                 {&s_dfas, "dfas"},
                 {&s_dfa_index, "dfa_index"},
                 {&s_fragment_ids, "fragment_ids"},
                 {&s_template_ids, "template_ids"},
                 {&s_segments, "segments"},
                 {&k_item, "item"},
                 {&k_rule, "rule"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!(*names[i].at = PyUnicode_InternFromString(names[i].text)))
            return NULL;
    return PyModule_Create(&module);
}
