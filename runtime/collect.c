/* The CPU server's stop-the-world collection (docs/collector.md).
 *
 * Partial: the collection set is every eden region plus the old regions with
 * the most garbage that fit the pause budget. Roots are the mutators' frames,
 * stacks and registers, the global slots, and the source-queue cards of the
 * collection set's remembered sets. Full: every region is in the set and the
 * roots are the mutators' and globals alone.
 *
 * Steps: retire TLABs and file pending barrier entries; scan the roots;
 * move the survivors (evac.c: in one pass for partial collections, copying
 * each object when the traversal first reaches it; in mark, copy and fix
 * passes for full ones), leaving pinned and humongous objects and regions
 * kept in place where they are, and re-record each survivor's cross-region
 * references; free the regions left empty, turn dead objects of kept regions
 * into fillers, and purge cards that lie in freed regions.
 */
#include <stdlib.h>
#include <string.h>

#include "gc/bitmap.h"
#include "runtime/gc_int.h"
#include "runtime/gctrace.h"

void rh_emit(rh_heap *h, rh_gc_kind kind, rh_phase ph, int begin)
{
	static _Thread_local uint64_t phase_start[RH_PHASE_COUNT];
	uint64_t now = rh_now_ns();
	if (begin) {
		phase_start[ph] = now;
	} else {
		pthread_mutex_lock(&h->stats_lock);
		h->stats.phase_ns[ph] += now - phase_start[ph];
		pthread_mutex_unlock(&h->stats_lock);
	}
	if (h->event_fn) {
		rh_event ev = {kind, ph, begin, h->gc_index, now};
		h->event_fn(&ev, h->event_data);
	}
}

/* ---------------------------------------------------------------- roots */

static void precise_root(void *ctx, void **slot)
{
	rh_gc *g = ctx;
	uintptr_t v = (uintptr_t)*slot;
	/* A frame or global into a region its tracer evacuates: fixed and
	 * shipped as a root after this collection. */
	if (!rh_in_heap(g->h, (uintptr_t)slot) && rh_cssc_cand(g->h, v)) {
		rh_cssc_note(g->h, slot);
		return;
	}
	if (rh_marker_in_set(&g->h->marker, v))
		rh_gc_root_slot(g, slot);
}

static void conservative_root(void *ctx, uintptr_t w)
{
	rh_gc *g = ctx;
	rh_heap *h = g->h;
	if (!rh_in_heap(h, w))
		return;
	/* Conservatively referenced objects never move: their tracer keeps
	 * the region this time. */
	if (h->offload_active && h->offload[rh_region_index(h, w)])
		rh_cssc_drop(h, rh_region_index(h, w));
	if (!h->in_cset[rh_region_index(h, w)])
		return;
	rh_region *r = rh_region_head(h, rh_region_of(h, w));
	if (!r->starts_valid)
		rh_region_build_starts(h, r);
	uintptr_t obj = rh_region_object_at(h, r, w);
	if (!obj || rh_hdr_type(rh_hdr((void *)obj)) == RH_FILLER_TYPE)
		return;
	uint64_t *hd = (uint64_t *)obj;
	r->has_pins = 1; /* the region stays; its unpinned objects still move */
	if (!(*hd & RH_GC_PINNED)) {
		*hd |= RH_GC_PINNED;
		g->pinned++;
	}
	rh_gc_root_object(g, obj);
}

static void scan_roots(rh_gc *g)
{
	rh_heap *h = g->h;
	for (rh_mutator *m = h->mutators; m; m = m->next)
		rh_stack_scan(m, conservative_root, precise_root, g);
	for (size_t i = 0; i < h->n_globals; i++)
		precise_root(g, h->globals[i]);
	if (g->kind == RH_GC_FULL)
		return;
	rh_cards_scan(g); /* cards.c */
}

/* ---------------------------------------------------------------- choosing */

static int by_garbage(const void *a, const void *b)
{
	const rh_region *x = *(rh_region *const *)a, *y = *(rh_region *const *)b;
	uint64_t gx = (x->top - x->start) - x->live_bytes, gy = (y->top - y->start) - y->live_bytes;
	return gx < gy ? 1 : gx > gy ? -1 : (x->index > y->index) - (x->index < y->index);
}

static void add_to_set(rh_heap *h, rh_region *r)
{
	h->in_cset[r->index] = 1;
	r->in_cset = 1;
	r->retain = r->kind == RH_REGION_HUMONGOUS || r->kind == RH_REGION_HUMONGOUS_CONT;
	/* swap.W4: the pause writes a forwarding header into each object it
	 * moves (or a filler over each it drops): its pages go in writable. */
	if (h->swap && !r->retain)
		rh_swap_region_writes(h->swap, r->index, true);
	size_t lo = (r->start - h->base) >> 3;
	memset(&h->mark_bits[lo >> 6], 0, h->region_size / 64);
}

/* Bytes a full collection's set holds in region r (a humongous object
 * counts once, at its first region). */
static uint64_t set_bytes_of(const rh_region *r)
{
	if (r->kind == RH_REGION_FREE || r->kind == RH_REGION_HUMONGOUS_CONT)
		return 0;
	return r->kind == RH_REGION_HUMONGOUS ? rh_hdr_bytes(rh_hdr((void *)r->start))
	                                      : r->top - r->start;
}

/* full.R1: what the free regions hold for copies, at 7/8: an object never
 * spans destination regions, so their tails go unused. */
static uint64_t copy_room(const rh_heap *h)
{
	return (uint64_t)h->n_free * h->region_size / 8 * 7;
}

static void choose_set(rh_gc *g)
{
	rh_heap *h = g->h;
	if (g->kind == RH_GC_FULL) {
		for (uint32_t i = 0; i < h->n_regions; i++) {
			rh_region *r = &h->regions[i];
			if (r->kind == RH_REGION_FREE)
				continue;
			add_to_set(h, r);
			g->set_bytes += set_bytes_of(r);
		}
		return;
	}
	size_t n_cand = 0;
	/* Old regions stay put while a concurrent cycle marks them (cmark.C2),
	 * on the tracers too (fullconc.T6). */
	rh_region **cand = rh_cmark_active(h) || rh_fullmark_active(h)
	                           ? NULL
	                           : malloc(h->n_regions * sizeof *cand);
	uint64_t eden_bytes = 0;
	/* sizing.O2: short of room for another cycle, sparser regions too. */
	bool pressed = cand && rh_sizing_pressed(h);
	uint64_t bar = pressed ? RH_SZ_PRESSED_DEAD_PCT : RH_SZ_OLD_DEAD_PCT;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		if (r->kind == RH_REGION_EDEN) {
			add_to_set(h, r);
			uint64_t young = rh_young_bytes(r);
			eden_bytes += young;
			g->eden_bytes += young;
			g->age_in[r->survivals < RH_TENURE ? r->survivals : RH_TENURE - 1] += young;
		} else if (cand && r->kind == RH_REGION_OLD && r->live_known && !rh_is_dest(h, i) &&
		           !h->offload[i] &&
		           !(h->offload_on && !h->cssc.compacting &&
		             rh_swap_region_evicted_pct(h->swap, i, r->top - r->start) >= 50)) {
			uint64_t used = r->top - r->start;
			if (used && (used - r->live_bytes) * 100 >= used * bar)
				cand[n_cand++] = r;
		}
	}
	if (!cand)
		return;
	/* Left over from the last marking, for the next pauses (sizing.C1). */
	h->sz.old_cands = n_cand;
	qsort(cand, n_cand, sizeof *cand, by_garbage);
	/* Old regions are spread over several pauses: each adds at most
	 * RH_SZ_OLD_SHARE of the budget, predicted from the bytes to copy
	 * and the cards to scan (eden's share is planned by its size), but
	 * at least one region so that old garbage is always reclaimed while
	 * the whole budget allows. */
	double budget = (double)h->cfg.pause_budget_us * 1000.0;
	double cost = (double)eden_bytes / 10 * h->sz.copy_ns_per_byte;
	double old_cap = cost + budget * RH_SZ_OLD_SHARE;
	/* sizing.O2: under pressure, what the budget leaves (its share at
	 * the least). */
	if (pressed) {
		double spare = cost + rh_sizing_old_room_ns(h, eden_bytes);
		if (spare > old_cap)
			old_cap = spare;
	}
	uint64_t room = (uint64_t)h->n_free * h->region_size;
	/* cssc.E3: a compaction takes regions until they free what lifts the
	 * heap to twice gc.full_threshold, then more while the pause budget
	 * allows; its copies must fit in 7/8 of the free regions (full.R1). */
	double need = 0, copied = 0;
	if (h->cssc.compacting) {
		need = 2.0 * h->cfg.full_threshold * h->n_regions - h->n_free;
		room = copy_room(h);
	}
	/* sizing.O2: a pressed pause's old copies share 7/8 of the free
	 * regions with eden's expected survivors: what does not fit stays in
	 * place, and a kept region is walked object by object to reclaim it
	 * (window: 20-27 ms of such a pause). */
	if (pressed) {
		double surv = (double)eden_bytes * h->sz.survival;
		room = (double)copy_room(h) > surv ? copy_room(h) - (uint64_t)surv : 0;
	}
	for (size_t i = 0; i < n_cand; i++) {
		/* sizing.O1: an old region costs its live bytes' copying and
		 * its remembered cards' scanning. */
		double c = rh_sizing_old_cost(h, cand[i]->live_bytes, cand[i]->remset.n_cards);
		/* Regions freed so far, net of the room their copies take. */
		bool needed = (double)i - copied / (double)h->region_size < need;
		if ((!needed && cost + c > (i ? old_cap : budget)) || cand[i]->live_bytes > room)
			break;
		cost += c;
		copied += (double)cand[i]->live_bytes;
		room -= cand[i]->live_bytes;
		add_to_set(h, cand[i]);
	}
	free(cand);
}

/* ---------------------------------------------------------------- reclaiming */

/* pin.Y1: an eden region a partial collection keeps only for its pins
 * stays young, a survivor region of the next age, so that the next pause
 * copies what is still live out of it (a conservative word seldom points
 * at the same object twice) and frees it. Made old, as every kept region
 * was, it held its region-sized garbage until a marking found it and a
 * mixed pause took it: binary-trees with conservative roots peaked with
 * 60 MB more in use than with precise ones. A region whose objects reach
 * the tenure age, or one kept because a copy found no room, becomes old
 * as before. */
static bool stays_young(const rh_gc *g, const rh_region *r)
{
	return g->kind == RH_GC_PARTIAL && r->has_pins && !r->retain &&
	       r->survivals + 1 < g->h->sz.tenure;
}

/* A region kept in place: dead and moved-out objects become fillers. */
static void keep_region(rh_gc *g, rh_region *r)
{
	rh_heap *h = g->h;
	uint64_t live = 0;
	if (h->swap)
		rh_swap_region_writes(h->swap, r->index, false); /* swap.W4: done */
	/* Every byte but the closing filler reached in place (one pass
	 * counts only those; a dense region a full collection kept): nothing
	 * to fill, no pin to clear, no walk. */
	if (g->one_pass && g->live[r->index] + r->tail_fill == r->top - r->start && !r->has_pins) {
		live = g->live[r->index];
		goto kept;
	}
	uintptr_t dead_start = 0;
	for (uintptr_t p = r->start; p < r->top;) {
		uint64_t hd = rh_hdr((void *)p);
		size_t bytes;
		bool alive;
		if (rh_hdr_is_fwd(hd)) {
			bytes = rh_hdr_bytes(rh_hdr(rh_hdr_fwd_addr(hd)));
			alive = false;
		} else {
			bytes = rh_hdr_bytes(hd);
			alive = rh_bit_get(h->mark_bits, (p - h->base) >> 3) &&
			        rh_hdr_type(hd) != RH_FILLER_TYPE;
		}
		if (alive) {
			if (dead_start)
				rh_fill((void *)dead_start, p - dead_start);
			dead_start = 0;
			*(uint64_t *)p = hd & ~RH_GC_PINNED;
			live += bytes;
		} else if (!dead_start) {
			dead_start = p;
		}
		p += bytes;
	}
	r->tail_fill = 0;
	if (dead_start) {
		rh_fill((void *)dead_start, r->top - dead_start);
		r->tail_fill = (uint32_t)(r->top - dead_start);
	}
kept:
	if (r->kind == RH_REGION_EDEN && stays_young(g, r)) {
		r->kept_young = 1;
	} else if (r->kind == RH_REGION_EDEN) {
		r->kept_young = 0; /* an old region counts as a source anyway */
		pthread_mutex_lock(&h->alloc_lock);
		r->kind = RH_REGION_OLD;
		h->n_eden--;
		h->n_old++;
		pthread_mutex_unlock(&h->alloc_lock);
	}
	r->live_bytes = live;
	r->live_known = 1;
	r->survivals++;
	r->ident++; /* fillers replaced objects in place */
}

static void reclaim(rh_gc *g)
{
	rh_heap *h = g->h;
	uint64_t freed = 0;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		/* Continuations go with their head (and are FREE once it is). */
		if (!h->in_cset[i] || r->kind == RH_REGION_HUMONGOUS_CONT ||
		    r->kind == RH_REGION_FREE)
			continue;
		if (r->kind == RH_REGION_HUMONGOUS) {
			if (rh_bit_get(h->mark_bits, (r->start - h->base) >> 3)) {
				*(uint64_t *)r->start &= ~RH_GC_PINNED;
				r->live_bytes = rh_hdr_bytes(rh_hdr((void *)r->start));
				r->live_known = 1;
			} else {
				freed += (uint64_t)r->span * h->region_size;
				rh_region_release(h, r);
			}
		} else if ((r->retain || r->has_pins) &&
		           !(g->one_pass && !g->live[i] && !r->has_pins)) {
			/* (One pass counts what stays in place: a region kept on a
			 * stale count that turns out empty is freed.) */
			keep_region(g, r);
		} else {
			freed += h->region_size;
			if (h->eden_cur == i + 1)
				h->eden_cur = 0;
			rh_region_release(h, r);
		}
	}
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		/* Object starts change only where the set was (fillers, freed
		 * regions) or copies were appended: elsewhere the start bitmap
		 * stays, so remembered cards into the next set are found
		 * without walking (and, on a disaggregated heap, fetching)
		 * whole old regions again. Copies into an old region set their
		 * starts as they go (evac.P9); an eden-kind region (survivors)
		 * that was appended is in the next set anyway. */
		if (h->in_cset[i] || (r->top != r->old_top && r->kind != RH_REGION_OLD))
			r->starts_valid = 0;
		h->in_cset[i] = 0;
		r->in_cset = 0;
		r->retain = 0;
		r->has_pins = 0;
		r->old_top = r->top;
	}
	rh_remsets_drop_freed(h);
	h->eden_cur = 0;
	/* The eden regions left are this pause's survivor regions. */
	for (uint32_t a = 0; a < RH_TENURE; a++)
		h->surv_dest[a] = 0;
	h->surv_taken = 0;
	h->n_surv = h->n_eden;
	rh_region_flush_freed(h);
	pthread_mutex_lock(&h->stats_lock);
	h->stats.bytes_freed += freed;
	pthread_mutex_unlock(&h->stats_lock);
}

/* ---------------------------------------------------------------- driver */

/* A full collection leaves old regions at least 85 % live where they are:
 * copying them buys little. `live` is this marking's count; without one
 * (one pass), the last count known. Every remembered set is rebuilt from
 * the survivors' fields. */
static bool dense(uint64_t live, uint64_t used)
{
	return live * 100 >= used * 85;
}

static void keep_dense(rh_heap *h, const uint64_t *live)
{
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		uint64_t used = r->top - r->start;
		uint64_t l = live ? live[i] : r->live_known ? r->live_bytes : 0;
		if (h->in_cset[i] && r->kind == RH_REGION_OLD && used && dense(l, used))
			r->retain = 1;
	}
	for (uint32_t i = 0; i < h->n_regions; i++)
		rh_remset_free(&h->regions[i].remset);
	rh_barrier_discard(h); /* rset.D1 */
}

static int by_live(const void *a, const void *b)
{
	uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
	return (x > y) - (x < y);
}

/* The bytes region r is expected to keep: this marking's count where
 * there is one, else its last known count; eden and survivors, never
 * counted, by the measured survival rate. */
static uint64_t expected_live(const rh_heap *h, const rh_region *r, const uint64_t *live)
{
	uint64_t used = r->top - r->start;
	if (live)
		return live[r->index];
	if (r->live_known && r->kind == RH_REGION_OLD)
		return r->live_bytes;
	double s = h->sz.survival > 0 ? h->sz.survival : 1.0;
	return (uint64_t)((double)used * (s < 1.0 ? s : 1.0));
}

/* full.R1: a full collection moves no more than the free regions hold.
 * Copying that runs out of room keeps the rest in place, but it copies in
 * traversal order, which leaves every region partly copied and none empty:
 * a heap short of room gained nothing, however much was dead (a list with
 * 3 nodes in 4 dropped kept a 64 MiB heap exhausted with 24 MiB live).
 * When the live bytes expected to move exceed the room, old regions are
 * kept in place from the most live down until the rest fit; eden and
 * survivor regions always move (they are mostly garbage). */
static void keep_beyond_room(rh_heap *h, const uint64_t *live)
{
	uint64_t room = copy_room(h), moving = 0;
	uint64_t(*old)[2] = malloc(h->n_regions * sizeof *old);
	size_t n_old = 0;
	if (!old)
		rh_panic("collector: out of memory");
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		if (!h->in_cset[i] || r->retain || r->kind == RH_REGION_FREE ||
		    r->kind == RH_REGION_HUMONGOUS || r->kind == RH_REGION_HUMONGOUS_CONT)
			continue;
		uint64_t l = expected_live(h, r, live);
		moving += l;
		if (r->kind == RH_REGION_OLD && (live || r->live_known)) {
			old[n_old][0] = l;
			old[n_old++][1] = i;
		}
	}
	if (moving > room) {
		qsort(old, n_old, sizeof *old, by_live);
		for (size_t k = n_old; k-- > 0 && moving > room;) {
			h->regions[old[k][1]].retain = 1;
			moving -= old[k][0];
		}
	}
	free(old);
}

static void mark_copy_fix(rh_gc *g)
{
	rh_heap *h = g->h;
	rh_emit(h, g->kind, RH_PHASE_MARK, 1);
	if (rh_marker_drain(&h->marker) < 0)
		rh_panic("collector: corrupt object met while marking (see above)");
	rh_emit(h, g->kind, RH_PHASE_MARK, 0);

	if (g->kind == RH_GC_FULL) {
		keep_dense(h, g->live);
		keep_beyond_room(h, g->live);
	}

	rh_emit(h, g->kind, RH_PHASE_EVACUATE, 1);
	rh_evac_ordered(g);
	rh_emit(h, g->kind, RH_PHASE_EVACUATE, 0);

	rh_emit(h, g->kind, RH_PHASE_FIXUP, 1);
	rh_evac_fix(g);
	rh_emit(h, g->kind, RH_PHASE_FIXUP, 0);
}

static void fold_mutator_counters(rh_heap *h)
{
	pthread_mutex_lock(&h->stats_lock);
	for (rh_mutator *m = h->mutators; m; m = m->next) {
		rh_tlab_retire(m);
		h->stats.bytes_allocated += m->bytes_allocated;
		h->stats.slow_allocs += m->slow_allocs;
		h->stats.barrier_slow += m->barrier_slow;
		m->bytes_allocated = m->slow_allocs = m->barrier_slow = 0;
	}
	pthread_mutex_unlock(&h->stats_lock);
}

static void collect(rh_heap *h, rh_gc_kind kind)
{
	/* Address order (reordering off) needs the whole live set first. */
	rh_gc g = {.h = h, .kind = kind, .one_pass = h->cfg.reorder};
	/* scratch.K1: the lists come from the last pause, their pages mapped. */
	g.slots = rh_scratch_take(&h->scratch, RH_SCR_GC_SLOTS, &g.cap_slots);
	g.kept = rh_scratch_take(&h->scratch, RH_SCR_GC_KEPT, &g.cap_kept);
	h->gc_index = h->stats.collections + h->stats.full_collections;
	g.live = calloc(h->n_regions, sizeof *g.live);
	if (!g.live)
		rh_panic("collector: out of memory");
	rh_marker *mk = &h->marker;
	rh_marker_reset(mk);
	mk->tt = &h->types;
	mk->heap_lo = h->base;
	mk->heap_size = h->size;
	mk->region_shift = h->region_shift;
	mk->in_set = h->in_cset;
	mk->mark_bits = h->mark_bits;
	mk->order_kind = h->cfg.order;
	mk->live_bytes = g.live;

	if (rh_cssc_full_by_tracers(h, kind)) {
		/* The tracers mark the heap where it lives (docs/distributed-gc.md).
		 * Its set is every region in use, as a local full collection's:
		 * rh_sizing_after() adapts full_growth to the share found live. */
		for (uint32_t i = 0; i < h->n_regions; i++)
			g.set_bytes += set_bytes_of(&h->regions[i]);
		/* A full collection asked for (not the end of a concurrent
		 * marking) frees what is dead now, not at the snapshot: the
		 * concurrent marking ends first, then the heap is marked
		 * stopped (fullconc.T6). */
		if (rh_fullmark_active(h) && h->fm.whole)
			rh_fullmark_run(h);
		mk->bytes_marked = rh_fullmark_run(h);
		rh_sizing_after(&g);
		goto done;
	}
	/* A full collection on the CPU server moves old objects: a concurrent
	 * marking on the tracers ends first (fullconc.T6). */
	if (kind == RH_GC_FULL && rh_fullmark_active(h))
		rh_fullmark_run(h);
	rh_emit(h, kind, RH_PHASE_ROOTS, 1);
	uint64_t t_work = rh_now_ns();
	if (kind == RH_GC_FULL)
		memset(h->dest_region, 0, sizeof h->dest_region);
	if (kind == RH_GC_PARTIAL && !rh_fullmark_active(h))
		rh_cssc_choose(h);
	choose_set(&g);
	for (unsigned k = 0; k < RH_COPY_THREADS_MAX; k++)
		if (h->dest_region[k] && h->in_cset[h->dest_region[k] - 1])
			h->dest_region[k] = 0;
	if (g.one_pass && kind == RH_GC_FULL) {
		keep_dense(h, NULL); /* before any field is re-recorded */
		keep_beyond_room(h, NULL);
	}
	if (g.one_pass)
		for (uint32_t i = 0; i < h->n_regions; i++)
			if (h->in_cset[i] && h->regions[i].retain)
				h->in_cset[i] = 2; /* in place from the start (evac.c) */
	scan_roots(&g);
	rh_emit(h, kind, RH_PHASE_ROOTS, 0);
	uint64_t t_evac = rh_now_ns();
	g.roots_ns = t_evac - t_work;

	if (g.one_pass) {
		/* Marking and fixing happen as objects are copied: their
		 * phases are empty, but every collection reports each phase. */
		rh_emit(h, kind, RH_PHASE_MARK, 1);
		rh_emit(h, kind, RH_PHASE_MARK, 0);
		rh_emit(h, kind, RH_PHASE_EVACUATE, 1);
		rh_evac_trace(&g);
		mk->bytes_marked = g.copied_bytes + g.kept_bytes;
		rh_emit(h, kind, RH_PHASE_EVACUATE, 0);
		rh_emit(h, kind, RH_PHASE_FIXUP, 1);
		rh_emit(h, kind, RH_PHASE_FIXUP, 0);
	} else {
		mark_copy_fix(&g);
	}
	uint64_t t_reclaim = rh_now_ns();
	g.evac_ns = t_reclaim - t_evac;

	rh_emit(h, kind, RH_PHASE_RECLAIM, 1);
	reclaim(&g);
	rh_emit(h, kind, RH_PHASE_RECLAIM, 0);
	g.reclaim_ns = rh_now_ns() - t_reclaim;
	/* A compaction has no eden to learn from (cssc.E3). */
	if (!h->cssc.compacting)
		rh_sizing_after(&g);

done:
	rh_log(RH_LOG_DEBUG, "gc",
	       "%s collection %llu: eden %llu KiB, marked %llu KiB, copied %llu KiB, %u regions "
	       "free, eden limit %u, survival %.2f, %.0f %% copied by helpers, %llu copies undone; "
	       "roots %.2f ms (%llu cards, %.2f ms on %u threads), evacuation %.2f ms, reclaim "
	       "%.2f ms",
	       kind == RH_GC_FULL ? "full" : "partial", (unsigned long long)h->gc_index,
	       (unsigned long long)(g.eden_bytes >> 10),
	       (unsigned long long)(mk->bytes_marked >> 10),
	       (unsigned long long)(g.copied_bytes >> 10), h->n_free, h->eden_limit, h->sz.survival,
	       g.copied_bytes ? 100.0 * (double)g.helper_bytes / (double)g.copied_bytes : 0.0,
	       (unsigned long long)g.lost, (double)g.roots_ns / 1e6, (unsigned long long)g.cards,
	       (double)g.cards_ns / 1e6, g.cards_workers, (double)g.evac_ns / 1e6,
	       (double)g.reclaim_ns / 1e6);
	pthread_mutex_lock(&h->stats_lock);
	h->stats.bytes_copied += g.copied_bytes;
	h->stats.objects_copied += g.copied_objects;
	h->stats.bytes_copied_helpers += g.helper_bytes;
	h->stats.copies_undone += g.lost;
	if (!rh_cssc_full_by_tracers(h, kind))
		h->stats.bytes_marked_cpu += mk->bytes_marked;
	h->stats.pinned_objects += g.pinned;
	if (kind == RH_GC_FULL)
		h->stats.full_collections++;
	else
		h->stats.collections++;
	pthread_mutex_unlock(&h->stats_lock);
	rh_scratch_put(&h->scratch, RH_SCR_GC_SLOTS, g.slots, g.cap_slots, sizeof *g.slots);
	rh_scratch_put(&h->scratch, RH_SCR_GC_KEPT, g.kept, g.cap_kept, sizeof *g.kept);
	free(g.live);
	rh_cssc_finish(h, kind);

	if (h->verify) {
		rh_emit(h, kind, RH_PHASE_VERIFY, 1);
		rh_barrier_drain(h); /* rset.D1 */
		size_t bad = rh_verify_heap(h);
		rh_emit(h, kind, RH_PHASE_VERIFY, 0);
		if (bad)
			rh_panic("heap verifier: %zu problem(s) after a %s collection (see above)",
			         bad, kind == RH_GC_FULL ? "full" : "partial");
	}
}

static void emit_stop(rh_heap *h, rh_gc_kind kind, uint64_t t_start)
{
	h->gc_index = h->stats.collections + h->stats.full_collections;
	rh_emit(h, kind, RH_PHASE_STOP, 1);
	rh_emit(h, kind, RH_PHASE_STOP, 0);
	pthread_mutex_lock(&h->stats_lock);
	h->stats.phase_ns[RH_PHASE_STOP] += rh_now_ns() - t_start;
	pthread_mutex_unlock(&h->stats_lock);
}

/* Fewer free regions than gc.full_threshold of the heap. */
static bool short_of_room(const rh_heap *h)
{
	return h->n_free < h->n_regions * h->cfg.full_threshold;
}

/* A further collection in the same pause: the world is already stopped,
 * so its stop phase has zero length. */
static void collect_again(rh_heap *h, rh_gc_kind kind, rh_gctrace *trace)
{
	uint64_t t = rh_now_ns();
	emit_stop(h, kind, t);
	rh_gctrace_begin(h, trace, kind, t);
	collect(h, kind);
	rh_gctrace_end(h, trace);
}

/* cssc.E1: the tracers' full marking frees only empty regions. When it
 * leaves the heap short of room, the CPU server compacts in the same
 * pause, while the free regions left still hold the copies (once the heap
 * is full, a copying collection can move nothing). */
static void compact_on_cpu(rh_heap *h, rh_gctrace *trace)
{
	/* cssc.E3: a partial collection of the sparsest old regions, which
	 * reads their cards: those the pause has listed are filed first
	 * (rset.D2). */
	rh_barrier_drain(h);
	h->cssc.compacting = true;
	collect_again(h, RH_GC_PARTIAL, trace);
	h->cssc.compacting = false;
}

/* cssc.E2: the CPU server's compaction pays only where it can lift the
 * heap out of its shortage: the free regions and the dead bytes of the
 * regions it would move (as the tracers' marking just counted them) reach
 * gc.full_threshold. A heap that is short of room because its data is
 * live would otherwise pay a compaction at every pause and gain nothing
 * (heapfull-shm filling its heap: 200 ms pauses every half MiB); its
 * allocation that fails still runs one before NULL (alloc.c). */
static bool compaction_pays(const rh_heap *h)
{
	uint64_t dead = 0;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		const rh_region *r = &h->regions[i];
		uint64_t used = r->top - r->start;
		if (r->kind == RH_REGION_OLD && r->live_known && !dense(r->live_bytes, used))
			dead += used - r->live_bytes;
	}
	return (double)h->n_free * (double)h->region_size + (double)dead * 7 / 8 >=
	       (double)h->n_regions * (double)h->region_size * h->cfg.full_threshold;
}

static void collect_stopped(rh_heap *h, rh_gc_kind kind, uint64_t t_start, rh_gctrace *trace)
{
	h->sz.pause_t0 = t_start;
	h->fm.whole = kind == RH_GC_FULL;
	if (kind == RH_GC_PARTIAL && rh_sizing_full_foreseen(h))
		kind = RH_GC_FULL;
	emit_stop(h, kind, t_start);
	rh_preclean_pause_begin(h);
	rh_pretouch_pause_begin(h);
	rh_refresh_pause_begin(h, t_start);
	rh_gctrace_begin(h, trace, kind, t_start);
	pthread_mutex_lock(&h->remset_lock);
	fold_mutator_counters(h);
	rh_barrier_drain(h);
	rh_fullmark_pause_begin(h);
	/* A concurrent cycle's remark or finish, if due, happens first. A
	 * full collection replaces the cycle in progress. */
	rh_cmark_pause_begin(h, kind);
	collect(h, kind);
	rh_gctrace_end(h, trace);
	/* Partial collections that leave too little free, or find the old
	 * generation past its bound, are followed by a full one at once. The
	 * mutators stay stopped: one pause, recorded once. (Deferring the
	 * full collection to the next pause keeps each pause shorter but
	 * lets the old generation grow by another eden: peak memory rose by
	 * a sixth to three quarters in the GC benchmarks.) */
	bool conc = h->cm.on || h->fm.conc;
	if (kind == RH_GC_PARTIAL &&
	    (short_of_room(h) || (h->sz.full_due && !conc) || rh_fullmark_quiet(h))) {
		/* fullconc.T4: a concurrent marking with no batch outstanding
		 * ends here; one that has not finished when the room runs out
		 * ends here too, waiting for the tracers. */
		kind = RH_GC_FULL;
		rh_cmark_abort(h);
		collect_again(h, kind, trace);
	} else if (kind == RH_GC_PARTIAL) {
		/* With concurrent marking, an old generation past its bound
		 * starts a cycle where it would have had a full collection. */
		rh_cmark_maybe_start(h, h->sz.full_due || rh_sizing_mark_due(h));
		rh_fullmark_maybe_start(h, h->sz.full_due);
	}
	if (rh_cssc_full_by_tracers(h, kind) && short_of_room(h) && compaction_pays(h))
		compact_on_cpu(h, trace);
	rh_cmark_pause_end(h);
	rh_preclean_pause_end(h, kind == RH_GC_FULL);
	rh_barrier_hand_over(h); /* rset.D1 */
	pthread_mutex_unlock(&h->remset_lock);
	uint64_t pause = rh_now_ns() - t_start;
	rh_stats_record_pause(h, kind, pause); /* reads n_free */
	rh_pretouch_pause_end(h);              /* pretouch.P1: last */
	rh_gctrace_pause_end(trace, t_start + pause);
	rh_log(RH_LOG_DEBUG, "gc", "pause %.2f ms", (double)pause / 1e6);
}

int rh_collect_for_alloc(rh_heap *h, rh_mutator *self, int full)
{
	rh_gc_kind kind = full ? RH_GC_FULL : RH_GC_PARTIAL;
	uint64_t t0 = rh_now_ns();
	if (!rh_stw_begin(h, self))
		return 0;
	/* cssc.E1: set and cleared with the world stopped. */
	h->cssc.full_on_cpu = full == RH_COLLECT_FULL_ON_CPU && h->offload_on;
	/* Only the winner reports the stop phase; its length is the wait. */
	rh_gctrace trace = {0};
	collect_stopped(h, kind, t0, &trace);
	h->cssc.full_on_cpu = false;
	rh_stw_end(h);
	/* The trace's lines are written with the mutators running again
	 * (operations.G1). */
	rh_gctrace_print(h, &trace);
	rh_livestats_after_gc(h);
	return 1;
}

int rh_collect(rh_mutator *m, int full)
{
	RH_CHECK(m && m->magic == RH_MUTATOR_MAGIC, "rh_collect: not an attached mutator");
	RH_CHECK(pthread_equal(m->thread, pthread_self()),
	         "rh_collect: mutator used from a thread other than the one that attached it");
	RH_CHECK(m->state == RH_M_RUNNING, "rh_collect: mutator is parked");
	while (!rh_collect_for_alloc(m->heap, m, full))
		;
	return RH_OK;
}

size_t rh_verify(rh_mutator *m)
{
	rh_heap *h = m->heap;
	while (!rh_stw_begin(h, m))
		;
	rh_pretouch_pause_begin(h); /* pretouch.P1: the free list as it is */
	pthread_mutex_lock(&h->remset_lock);
	rh_cmark_hold(h); /* the scrub writes fillers */
	fold_mutator_counters(h);
	rh_barrier_drain(h);
	size_t bad = rh_verify_heap(h);
	rh_cmark_pause_end(h);
	pthread_mutex_unlock(&h->remset_lock);
	rh_pretouch_pause_end(h);
	rh_stw_end(h);
	return bad;
}
