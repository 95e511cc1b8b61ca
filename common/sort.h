/* Sorting unsigned 64-bit keys in place (common/sort.c). */
#ifndef RH_COMMON_SORT_H
#define RH_COMMON_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Ascending. A radix sort, a byte a pass and only as many passes as the
 * largest key has bytes: qsort's comparison call per step was most of the
 * time of sorting a region's remembered cards in the pause (rset.T1).
 * Without memory for its buffer it falls back to qsort. */
void rh_sort_u64(uint64_t *v, size_t n);

#endif
