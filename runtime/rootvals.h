/* The values the frames' and globals' roots hold, sorted, for the
 * per-region markings that start from them: the roots cssc.c sends the
 * tracers with a region's target queue, and refresh.c's live counts
 * (rset.T5). A region's share is found by a binary search. State: the
 * collecting thread's, with the world stopped. */
#ifndef RH_RUNTIME_ROOTVALS_H
#define RH_RUNTIME_ROOTVALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rh_heap rh_heap;

typedef struct rh_rootvals {
	uintptr_t *v; /* sorted */
	size_t n, cap;
} rh_rootvals;

/* Every mutator's precise frame slots and every global, and with
 * `conservative` the words conservative scanning finds too. */
void rh_rootvals_gather(rh_heap *h, rh_rootvals *rv, bool conservative);
/* The values in [lo, hi), *n of them. */
const uintptr_t *rh_rootvals_in(const rh_rootvals *rv, uintptr_t lo, uintptr_t hi, size_t *n);
void rh_rootvals_free(rh_rootvals *rv);

#endif
