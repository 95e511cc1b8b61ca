/* Readying free regions between pauses (pretouch.c): a thread maps and
 * touches the pages of free regions until the warm pool holds what the
 * next eden and its survivors will take, so that the pause copying into
 * them, and the mutator allocating in them, meet no first-touch fault.
 * The protocol: docs/collector.md, "region.P4 (readying regions)",
 * pretouch.P1-P3. Local heaps only. Not exported. */
#ifndef RH_RUNTIME_PRETOUCH_H
#define RH_RUNTIME_PRETOUCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/gate.h"

struct rh_heap;

typedef struct rh_pretouch {
	/* pretouch.P1: the thread (gc.pretouch on a local heap) readies one
	 * region a step; a pause (or a verification) holds the gate's lock
	 * from its start to its end (gate.G1). The lock guards `due`,
	 * `scratch_due` and the scratch buffers between pauses (scratch.K4). */
	rh_gate gate;
	bool due;         /* the warm pool was short when the last pause ended */
	bool scratch_due; /* a pause ended since the scratch buffers were readied */
	/* Totals, for the log and the tests. */
	_Atomic uint64_t regions; /* readied */
	_Atomic uint64_t ns;      /* spent readying them */
} rh_pretouch;

/* Heap open (regions set up) and close (before the regions go). */
int rh_pretouch_init(struct rh_heap *h);
void rh_pretouch_stop(struct rh_heap *h);
/* First thing in a pause: the thread stops between two regions. */
void rh_pretouch_pause_begin(struct rh_heap *h);
/* Last thing in a pause (warm_limit set for the next one). */
void rh_pretouch_pause_end(struct rh_heap *h);

#endif
