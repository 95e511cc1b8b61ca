/* The GC trace: one line per collection at info level (docs/operations.md,
 * "The GC trace"). The collector notes a few numbers it already has while
 * the mutators are stopped; the lines are formatted and written after the
 * pause ends (operations.G1). */
#ifndef RH_RUNTIME_GCTRACE_H
#define RH_RUNTIME_GCTRACE_H

#include "runtime/internal.h"

typedef struct rh_gctrace_one {
	rh_gc_kind kind;
	bool by_tracers; /* a full collection the tracers marked */
	bool compacting; /* the CPU server's compaction after it (cssc.E3) */
	bool cssc;       /* a partial one in which tracers evacuated */
	uint64_t index;  /* collections of either kind before it */
	uint64_t start_ns, end_ns;
	uint64_t used_before, used_after; /* bytes of regions in use */
	uint64_t csscs;                   /* the counter before it */
	uint64_t faults_before, faults_after;
} rh_gctrace_one;

/* One pause: a collection, or a partial one and the full one it turned
 * into, and a compaction on the CPU server after the tracers' full marking
 * (collect.c, collect_stopped; cssc.E1). */
typedef struct rh_gctrace {
	bool on; /* info level: nothing is noted otherwise */
	unsigned n;
	rh_gctrace_one c[3];
	uint64_t pause_end_ns;
} rh_gctrace;

/* Before a collection of this kind; start_ns when its part of the pause
 * began (the stop, for the first). */
void rh_gctrace_begin(rh_heap *h, rh_gctrace *t, rh_gc_kind kind, uint64_t start_ns);
/* After it. */
void rh_gctrace_end(rh_heap *h, rh_gctrace *t);
/* The pause's end: the last collection's line runs to it. */
void rh_gctrace_pause_end(rh_gctrace *t, uint64_t end_ns);
/* The lines, once the mutators run again. */
void rh_gctrace_print(rh_heap *h, const rh_gctrace *t);

#endif
