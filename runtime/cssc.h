/* The CPU server's side of distributed collection (docs/distributed-gc.md):
 * choosing the regions tracers evacuate, shipping their roots, fixing the
 * references to what they moved (the CPU-server stop-the-world collection,
 * CSSC); full marking by the tracers is fullmark.c's. The state is the collecting
 * thread's, read and written with the world stopped.
 *
 * Three fields the collector reads at every pause stay in rh_heap for now
 * (offload_on, offload_active, offload[]), so that runtime/collect.c and
 * evac.c, changed on another branch, need not change with this struct. */
#ifndef RH_RUNTIME_CSSC_H
#define RH_RUNTIME_CSSC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rheap/rheap.h"

typedef struct rh_cssc {
	void ***tslots; /* slots holding references into candidates */
	size_t n_tslots, cap_tslots;
	double ns_per_byte; /* a CSSC's measured time per byte its tracers copy */
	uint64_t id;        /* the last EVACUATE, FIX_CARDS or FULL sent */
	/* cssc.E1: this full collection compacts on the CPU server, through
	 * its page cache, instead of the tracers' full marking, which frees
	 * only empty regions: set for the last attempt before an allocation
	 * fails (runtime/alloc.c). */
	bool full_on_cpu;
	/* cssc.E3: this partial collection is the CPU server's compaction
	 * right after the tracers' full marking: old regions chosen by the
	 * room they free, not by the pause budget, and no CSSC. */
	bool compacting;
	/* Bytes the last full marking wrote back in its pause (preclean.c
	 * writes most of them back before, between pauses). */
	uint64_t full_written;
} rh_cssc;

typedef struct rh_heap rh_heap;

/* At heap open, and at close. */
void rh_cssc_init(rh_heap *h);
void rh_cssc_fini(rh_heap *h);
/* Choose the regions tracers will evacuate in this partial pause. */
void rh_cssc_choose(rh_heap *h);
/* After the CPU server's own collection: tracers remark and evacuate the
 * chosen regions, references to them are fixed, and every tracer gets the
 * new region table and roots for concurrent marking. */
void rh_cssc_finish(rh_heap *h, rh_gc_kind kind);
/* Whether a collection of this kind is the tracers' full marking rather
 * than the CPU server's own (cssc.E1). */
bool rh_cssc_full_by_tracers(const rh_heap *h, rh_gc_kind kind);
/* A slot outside the heap (a root) holds a reference into a candidate:
 * fixed once its target has moved. */
void rh_cssc_note(rh_heap *h, void **slot);
/* Every tracer's region table (and, with roots, the roots for its next
 * markings), as at the end of every pause. */
void rh_cssc_publish(rh_heap *h, bool roots);
/* Region `region` is no longer a candidate (the local collector keeps it). */
void rh_cssc_drop(rh_heap *h, uint32_t region);

#endif
