/* Pause recorder shared by the rheap and bdwgc benchmarks, so both sides
 * measure a pause the same way: the CLOCK_MONOTONIC wall time between the
 * collector's "collection begins" and "collection ends" notifications, taken
 * on the collecting thread with the mutator stopped.
 *
 * The notifications arrive inside the collector, where allocating (from
 * either heap or from malloc, which a collector may hold a lock against) is
 * not allowed, so the storage is a fixed array reserved up front. Beyond its
 * capacity, totals and the maximum stay exact and percentiles are computed
 * over the first GCB_PAUSES_CAP pauses (reported as "pauses_dropped"). */
#ifndef GCB_PAUSES_H
#define GCB_PAUSES_H

#include <stdint.h>

#define GCB_PAUSES_CAP (1u << 18)

typedef struct gcb_pauses {
	uint64_t count;
	uint64_t total_ns;
	uint64_t max_ns;
	uint64_t open_ns; /* begin time of the collection in progress, 0 if none */
	uint64_t *ns;     /* GCB_PAUSES_CAP entries */
} gcb_pauses;

uint64_t gcb_now_ns(void);

/* Reserves the array; exits with a message if the host has no memory. */
void gcb_pauses_init(gcb_pauses *p);
void gcb_pauses_free(gcb_pauses *p);
void gcb_pauses_begin(gcb_pauses *p, uint64_t now_ns);
void gcb_pauses_end(gcb_pauses *p, uint64_t now_ns);
/* Nearest-rank percentile (0 < pct <= 100) of the recorded pauses; sorts
 * the array in place, so call it after the run. 0 if there were none. */
uint64_t gcb_pauses_percentile(gcb_pauses *p, double pct);

/* What the JSON line reports about pauses. */
typedef struct gcb_pause_summary {
	const char *source; /* who measured: "events" (this recorder) or the runtime */
	uint64_t count;
	uint64_t total_ns;
	uint64_t max_ns;
	uint64_t p50_ns;
	uint64_t p99_ns;
	uint64_t dropped; /* pauses beyond the array, left out of percentiles */
} gcb_pause_summary;

void gcb_pauses_summarize(gcb_pauses *p, gcb_pause_summary *s);

#endif
