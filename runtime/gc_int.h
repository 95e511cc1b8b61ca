/* What the collection driver (collect.c) and the object mover (evac.c)
 * share about one collection in progress. Not exported. */
#ifndef RH_RUNTIME_GC_INT_H
#define RH_RUNTIME_GC_INT_H

#include "runtime/internal.h"

typedef struct rh_gc {
	rh_heap *h;
	rh_gc_kind kind;
	/* Copy on first visit (partial collections in traversal order);
	 * otherwise mark, then copy in order, then fix (docs/collector.md). */
	bool one_pass;
	/* Two-pass: slots outside the set that hold references into it.
	 * One-pass: the work list of slots still to resolve (a stack for DFS,
	 * a queue [head, n) for BFS). */
	void ***slots;
	size_t n_slots, cap_slots, head;
	/* One-pass: objects kept in place, marked but not yet scanned. */
	uintptr_t *kept;
	size_t n_kept, cap_kept;
	uint64_t *live; /* per region: bytes the marker marked (two-pass), or
	                 * bytes kept in place (one-pass) */
	uint64_t copied_bytes, copied_objects, pinned;
	uint64_t lost; /* copies undone: another copying thread claimed the object first */
	uint64_t
	        helper_bytes; /* of copied_bytes, copied by threads other than the collecting one */
	uint64_t kept_bytes;  /* live bytes left in place (one-pass) */
	uint64_t eden_bytes;  /* eden in the collection set */
	uint64_t set_bytes;   /* bytes in use in the collection set */
	uint64_t cards;       /* remembered cards scanned as roots */
	unsigned cards_workers; /* threads that scanned them (rset.S3) */
	/* Per age (a survivor region's survivals; eden 0): bytes of young
	 * regions in the set, and bytes copied out of them (sizing.T1). */
	uint64_t age_in[RH_TENURE], aged[RH_TENURE];
	/* Where the pause went (sizing model, docs/collector.md). */
	uint64_t roots_ns, cards_ns, evac_ns, reclaim_ns;
} rh_gc;

/* A heap slot's new value. A concurrent marker may be reading old
 * objects' fields during a partial pause (docs/collector.md, cmark.C1): the
 * store is atomic, which costs nothing more than a plain one on x86-64. */
static inline void rh_slot_set(void **slot, uintptr_t v)
{
	__atomic_store_n((uintptr_t *)slot, v, __ATOMIC_RELAXED);
}

/* A slot outside the set (frame, global, remembered card) holding a
 * reference into it. */
void rh_gc_root_slot(rh_gc *g, void **slot);
/* rh_gc_root_slot's common case inline: a one-pass work list with room. */
static inline void rh_gc_root_slot_fast(rh_gc *g, void **slot)
{
	if (g->one_pass && g->n_slots < g->cap_slots)
		g->slots[g->n_slots++] = slot;
	else
		rh_gc_root_slot(g, slot);
}
/* A conservatively referenced (pinned) object inside the set. */
void rh_gc_root_object(rh_gc *g, uintptr_t obj);

/* The roots in the set's remembered cards (cards.c, rset.S2, rset.S3). */
void rh_cards_scan(rh_gc *g);

/* Threads that take part in this pause's parallel work, counting the
 * collecting one: 1 alone (BFS order, one copying thread, or no crew). */
unsigned rh_gc_workers(rh_heap *h);

/* One-pass: copy everything reachable from the roots given, fixing each
 * slot as it is resolved and re-recording cross-region references. */
void rh_evac_trace(rh_gc *g);

/* Two-pass, after marking: copy in the marker's order, then fix every
 * root slot and every survivor's fields. */
void rh_evac_ordered(rh_gc *g);
void rh_evac_fix(rh_gc *g);

#endif
