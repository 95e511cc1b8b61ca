/* Rebuilding remembered sets from what their cards hold now
 * (docs/distributed-gc.md, "Refreshing the target queues", rset.T1-T3).
 *
 * A region's target queue only grows between full collections: a store
 * that overwrites a reference leaves the old target's bit set. The tracers
 * mark old regions from those bits, so every object that was once
 * referenced from another region looked live to them, and the CSSCs found
 * nothing to reclaim until a full marking. At the end of a pause, old
 * regions get their target queue rebuilt from the words their cards hold,
 * the cards that no longer refer into the region leave its source queue,
 * and the regions the CPU server collects itself get live counts from
 * their new queues. State: the collecting thread's, read and written
 * with the world stopped. */
#ifndef RH_RUNTIME_REFRESH_H
#define RH_RUNTIME_REFRESH_H

#include <stdint.h>

typedef struct rh_heap rh_heap;

typedef struct rh_refresh {
	uint32_t hand;  /* the region the next pause's rebuilds start from (rset.T4) */
	uint32_t pause; /* pauses begun */
	uint32_t *last; /* per region: the pause that last rebuilt it, + 1 */
	/* Kept from one pause to the next: allocated afresh (both above
	 * malloc's mmap threshold), each page was a fault in the pause. */
	uint8_t *buf; /* CHUNK pages of a queue's cards */
	uint8_t *img; /* one region's image */
	uint64_t t0;  /* when the world stopped for this pause (rset.T7) */
	double yield; /* of the bits rebuilt queues held, the fraction dropped, averaged
	                 * (rset.T6) */
	/* Totals, for the debug log at close. */
	uint64_t regions, regions_marked, pages_read, cards_dropped, targets_held, targets_dropped,
	        ns;
	uint64_t pauses, drains; /* pauses that rebuilt, and those that filed first (rset.D2) */
} rh_refresh;

/* rset.T1: rebuild the target queues of old regions in turn (rset.T4),
 * for a share of the pause budget. A region the tracers mark whose queue
 * lost bits is marked `roots_fresh`; one the CPU server collects gets its
 * live bytes estimated from its new queue (rset.T5). With the world
 * stopped, the barrier drained, and eden empty. */
void rh_refresh_pause(rh_heap *h);
/* The pause that stopped the world at t_start (rh_now_ns) begins; its
 * rebuilds end where it has run for gc.pause_budget_ms (rset.T7). */
void rh_refresh_pause_begin(rh_heap *h, uint64_t t_start);
void rh_refresh_fini(rh_heap *h);

#endif
