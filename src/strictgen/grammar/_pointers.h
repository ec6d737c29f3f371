/* The hash of an object's address that the grammar's C walks use for their pointer sets and
 * maps (_ir_walks.c, _program.c): objects are 16-byte aligned, so the low bits say nothing. */
#ifndef STRICTGEN_GRAMMAR_POINTERS_H
#define STRICTGEN_GRAMMAR_POINTERS_H
#include <stddef.h>
#include <stdint.h>

static inline size_t pointer_hash(uintptr_t p) {
    uint64_t x = (uint64_t)p >> 4;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

#endif
