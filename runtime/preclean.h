/* Cleaning ahead of the tracers' full marking (preclean.c): between
 * pauses, a cleaner thread writes the old generation's dirty pages back,
 * so that the marking's pause writes back only what was dirtied since.
 * The protocol and its invariants: docs/distributed-gc.md, "Cleaning ahead
 * of a full marking". Not exported. */
#ifndef RH_RUNTIME_PRECLEAN_H
#define RH_RUNTIME_PRECLEAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/gate.h"

struct rh_heap;

typedef struct rh_preclean {
	/* preclean.P1: the cleaner (gc.preclean, offload on a disaggregated
	 * heap) writes one batch back a step; a pause holds the gate's lock
	 * from its start to its end (gate.G1). The lock guards everything
	 * below but the counters. */
	rh_gate gate;
	uint32_t *list;  /* the pass's regions, in address order */
	uint32_t n_list; /* regions in the pass */
	uint32_t next;   /* the region being cleaned; n_list when the pass is over */
	uint64_t t_start;
	uint64_t pass_pages; /* written back by the pass so far */
	/* Totals, for the log and the tests. */
	_Atomic uint64_t pages;  /* written back by the cleaner */
	_Atomic uint64_t passes; /* passes started */
} rh_preclean;

/* Heap open (after the swap system) and close (before it). */
int rh_preclean_init(struct rh_heap *h);
void rh_preclean_stop(struct rh_heap *h);
/* First thing in a pause: the cleaner stops between two batches. */
void rh_preclean_pause_begin(struct rh_heap *h);
/* Last thing in a pause (world stopped): `full` says a full collection
 * ran, which ends the pass; otherwise a pass starts, if none is under way
 * and the full marking is near (sizing.F2). Lets the cleaner go. */
void rh_preclean_pause_end(struct rh_heap *h, bool full);
/* Whether no pass is under way (for tests; takes the lock). */
bool rh_preclean_idle(struct rh_heap *h);

#endif
