/* When the regular core's C calls let the GIL go (the bindings in _bindings.h, the spellings in
 * _spelling.c): only around work big enough to be worth it.
 * Needs Python.h first. */
#ifndef STRICTGEN_REGULAR_GIL_H
#define STRICTGEN_REGULAR_GIL_H

/* The GIL is let go around an algorithm whose input has at least this many table cells (NFA
 * edges for a Lazy): below it the work is shorter than the wait to take the GIL back may be
 * (another thread holds it up to its switch interval), and rules are mostly small. */
#define GIL_FREE_CELLS 4096

static inline PyThreadState *let_go_if(Py_ssize_t cells) { return cells >= GIL_FREE_CELLS ? PyEval_SaveThread() : NULL; }

static inline void take_back(PyThreadState *ts) {
    if (ts)
        PyEval_RestoreThread(ts);
}

#endif
