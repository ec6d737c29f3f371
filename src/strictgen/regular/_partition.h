/* The partition of a DFA's states that both minimisations refine: Hopcroft's (_minimize.c) and
 * Moore's rounds (_rounds.c). Include after _regular.h. */
#ifndef STRICTGEN_PARTITION_H
#define STRICTGEN_PARTITION_H
#pragma GCC visibility push(hidden)

/* A partition of a DFA's states, refined by splitters: the states that enter a set S on a letter
 * part from those that do not. Letters are the byte classes, then one letter per callee (a call
 * edge is a transition to its return state). Blocks live in one array (elems, ordered by block;
 * loc is the inverse); a block that splits keeps its id for the unmarked part and the marked part
 * gets the next id, so every id ever made is a block at the end. Both minimisations drive it:
 * Hopcroft's by a work list, Moore's rounds by the blocks the round before split off.
 *
 * In-edges are kept as runs: a source's consecutive byte classes [first, end) with one target (a
 * call edge is a run of its one letter). Rule DFAs' rows are mostly runs (0.60M runs against 1.73M
 * class edges over the bench), and a splitter's work follows its runs, not its classes: see
 * partition_split. */
typedef struct {
    int32_t n, k, letters, nblocks;
    Py_ssize_t *rows; /* the rows' runs: (first, end, target) in class order, state s's from rows[s] to rows[s + 1] in runs */
    int32_t *runs;
    int by_runs; /* in-edges as runs (else one per class edge, each read as a callee's letter is) */
    int32_t *blk, *elems, *loc, *bfirst, *bend, *bmarked, *touched;
    int64_t *weight; /* by block: the in-runs of its states (what using it as a splitter costs) */
    int32_t *istart, *isrc, *ifirst, *iend;            /* in-runs by target: (source, [first, end)) */
    int32_t *lcount, *used, *snap; /* a splitter's sources by letter: how many, the letters met */
    int32_t *lstart, *lsrc;        /* letter a's sources go to lsrc[lstart[a]..lstart[a + 1]) (room for all) */
    uint8_t *odd;                                        /* by state: seen an odd number of times at a letter */
} Partition;

/* The initial blocks (accepting, the callees called), the in-edges and the rows' runs; -1 (with
 * MemoryError) when out of memory (free it either way). */
int partition_init(Partition *p, const DFA *d);
void partition_free(Partition *p);
/* Split every block by "enters S on letter a", S = states[0..m); each split appended to *splits as
 * (X, the new block Z, X's size, Z's); -1 when out of memory. */
int partition_split(Partition *p, const int32_t *states, int32_t m, Vec *splits);
/* Moore's round 1 (split by every initial block) in one pass over the rows (_rounds.c); edges into
 * block `dead` (-1: none) read as missing ones, and that block left whole. */
int partition_first_round(Partition *p, const DFA *d, const Py_ssize_t *rows, const int32_t *runs, int32_t dead, Vec *splits);
/* The quotient of d by the blocks blk (a new reference: d itself when it is already), numbered
 * breadth first from the start; rows and runs: partition_init's; edges into block `dead` (-1:
 * none) dropped. */
DFA *dfa_quotient(DFA *d, const int32_t *blk, int32_t nblocks, int32_t *new_id_out, const Py_ssize_t *rows, const int32_t *runs, int32_t dead);

#pragma GCC visibility pop
#endif
