/* Rebuilding remembered sets from what their cards hold now
 * (docs/distributed-gc.md, "Refreshing the target queues", rset.T1-T3).
 *
 * A region's target queue only grows between full collections: a store
 * that overwrites a reference leaves the old target's bit set. The tracers
 * mark old regions from those bits, so every object that was once
 * referenced from another region looked live to them, and the CSSCs found
 * nothing to reclaim until a full marking. At the end of a pause, the
 * regions the tracers mark get their target queue rebuilt from the words
 * their cards hold, and the cards that no longer refer into the region
 * leave its source queue. State: the collecting thread's, read and written
 * with the world stopped. */
#ifndef RH_RUNTIME_REFRESH_H
#define RH_RUNTIME_REFRESH_H

#include <stdbool.h>
#include <stdint.h>

typedef struct rh_heap rh_heap;
typedef struct rh_region rh_region;

typedef struct rh_refresh {
	bool off;      /* tests only: the control run of tests/dgc/test_refresh.c */
	uint32_t hand; /* the region the next pause's rebuilds start from (rset.T4) */
	/* Totals, for the debug log at close. */
	uint64_t regions, pages_read, cards_dropped, targets_dropped, ns;
} rh_refresh;

/* rset.T1: rebuild the target queues of the old regions the tracers mark,
 * in turn (rset.T4), within RH_REFRESH_PAGES pages of cards read. A region
 * whose queue lost bits is marked `roots_fresh`. With the world stopped,
 * the barrier drained, and eden empty. */
void rh_refresh_pause(rh_heap *h);

#endif
