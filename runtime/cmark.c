/* Concurrent marking of the old generation on a local heap.
 *
 * Instead of a stop-the-world full collection, a pause takes a snapshot
 * (TAMS per old region, the roots, the survivor regions' fields), a marker
 * thread traces the old generation while the mutators run, a
 * snapshot-at-the-beginning barrier (rh_satb_log) hands it every reference
 * the mutators overwrite, a later pause remarks from the last of those, the
 * marker turns dead objects into fillers, and a third pause frees the old
 * regions left empty and publishes each region's live bytes, which the
 * partial collections that follow use to pick old regions by garbage. The
 * invariants and why they hold: docs/collector.md, "Concurrent marking".
 */
#include <stdatomic.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "gc/bitmap.h"
#include "runtime/internal.h"

#define CHUNK_OBJECTS 256 /* marked between two looks at pause_wanted */
/* A large object's fields are scanned this many bytes at a time, each
 * part counting PART_COST objects: a pause waits for one step, never for
 * a whole array of millions of references. */
#define PART_BYTES (16 * 1024)
#define PART_COST 16
#define SCRUB_OBJECTS 4096 /* headers walked between two looks */

static __attribute__((noinline)) void grow_stack(rh_cmark *c)
{
	c->stack = rh_grow(c->stack, &c->cap_stack, c->n_stack + 1, sizeof *c->stack, 4096,
	                   "concurrent marking: work list");
}

/* v (a reference, perhaps stale or not into the snapshot) is live: grey it
 * if it is an unmarked object below its region's TAMS. */
static inline void grey(rh_heap *h, uintptr_t v)
{
	rh_cmark *c = &h->cm;
	if (!rh_below_tams(h, v))
		return;
	size_t bit = (v - h->base) >> 3;
	if (rh_bit_get(c->bits, bit))
		return;
	rh_bit_set(c->bits, bit);
	if (c->n_stack == c->cap_stack)
		grow_stack(c);
	c->stack[c->n_stack++] = v;
}

/* Mutators store into these fields concurrently (rh_write_ref stores
 * atomically): read each once, atomically. */
static void field(void *ctx, void **slot)
{
	grey(ctx, __atomic_load_n((uintptr_t *)slot, __ATOMIC_RELAXED));
}

static void push_part(rh_cmark *c, uintptr_t o, uintptr_t lo)
{
	if (c->n_parts == c->cap_parts)
		c->parts = rh_grow(c->parts, &c->cap_parts, c->n_parts + 1, sizeof *c->parts, 64,
		                   "concurrent marking: work list");
	c->parts[c->n_parts][0] = o;
	c->parts[c->n_parts][1] = lo;
	c->n_parts++;
}

static void scan_part(rh_heap *h)
{
	rh_cmark *c = &h->cm;
	c->n_parts--;
	uintptr_t o = c->parts[c->n_parts][0], lo = c->parts[c->n_parts][1];
	uintptr_t end = o + rh_hdr_bytes(rh_hdr((void *)o));
	uintptr_t hi = end - lo > PART_BYTES ? lo + PART_BYTES : end;
	if (hi < end)
		push_part(c, o, hi);
	rh_object_slots_in(&h->types, o, lo, hi, field, h);
}

static void scan(rh_heap *h, uintptr_t o)
{
	uint64_t hd = rh_hdr((void *)o);
	size_t bytes = rh_hdr_bytes(hd);
	h->cm.live[rh_region_index(h, o)] += bytes;
	if (bytes > PART_BYTES && rh_hdr_type(hd) < h->types.n) {
		push_part(&h->cm, o, o);
		return;
	}
	if (rh_object_slots_inline(&h->types, (void *)o, field, h, 0) < 0)
		rh_panic("concurrent marking: corrupt object header %#llx at %p",
		         (unsigned long long)hd, (void *)o);
}

static void free_satb(rh_satb *list)
{
	while (list) {
		rh_satb *b = list;
		list = b->next;
		free(b);
	}
}

static void take_satb(rh_heap *h, rh_satb *list)
{
	while (list) {
		rh_satb *b = list;
		list = b->next;
		for (uint32_t i = 0; i < b->n; i++)
			grey(h, b->e[i]);
		free(b);
	}
}

static rh_satb *grab_full(rh_cmark *c)
{
	pthread_mutex_lock(&c->satb_lock);
	rh_satb *list = c->satb_full;
	c->satb_full = NULL;
	pthread_mutex_unlock(&c->satb_lock);
	return list;
}

/* Trace up to `budget` objects (all, for SIZE_MAX); true when the work list
 * is empty. */
static bool drain(rh_heap *h, size_t budget)
{
	rh_cmark *c = &h->cm;
	take_satb(h, grab_full(c));
	while (budget) {
		if (c->n_parts) {
			scan_part(h);
			budget = budget > PART_COST ? budget - PART_COST : 0;
		} else if (c->n_stack) {
			scan(h, c->stack[--c->n_stack]);
			budget--;
		} else {
			break;
		}
	}
	return c->n_stack == 0 && c->n_parts == 0;
}

/* One step of the scrub: dead objects below TAMS become fillers of their
 * own size, so object starts (and the start bitmap) stay as they were and
 * no card scan ever reads a dead object's fields again, which may point
 * into regions the finish frees. True when every region is done. */
static bool scrub_some(rh_heap *h)
{
	rh_cmark *c = &h->cm;
	while (c->scrub_next < h->n_regions) {
		uint32_t i = c->scrub_next;
		rh_region *r = &h->regions[i];
		uintptr_t end = c->tams[i];
		/* Only TAMS tells which regions to walk: kinds change under the
		 * allocator's lock (cmark.C2 keeps these regions as they were). A dead
		 * humongous object becomes a filler too; the finish frees it. */
		if (end <= r->start) {
			c->scrub_next++;
			continue;
		}
		uintptr_t p = c->scrub_pos ? c->scrub_pos : r->start;
		for (size_t n = 0; p < end && n < SCRUB_OBJECTS; n++) {
			uint64_t hd = rh_hdr((void *)p);
			size_t bytes = rh_hdr_bytes(hd);
			if (!bytes)
				rh_panic(
				        "concurrent marking: object of size 0 at %p (heap corrupt)",
				        (void *)p);
			if (rh_hdr_type(hd) != RH_FILLER_TYPE &&
			    !rh_bit_get(c->bits, (p - h->base) >> 3))
				rh_fill((void *)p, bytes);
			p += bytes;
		}
		if (p < end) {
			c->scrub_pos = p;
			return false;
		}
		c->scrub_pos = 0;
		c->scrub_next++;
		return false;
	}
	return true;
}

static inline int phase_of(rh_cmark *c)
{
	return atomic_load_explicit(&c->phase, memory_order_acquire);
}

/* cmark.C8: between cycles the marker zeroes what the last one marked,
 * so that the next snapshot's pause need not: a region's bits are 1/64 of
 * it, and the snapshot's clearing of every old region took 6-12 ms of
 * listscan's 384 MiB heap in the pause. One step clears CLEAR_REGIONS. */
#define CLEAR_REGIONS 16
static void clear_bits(rh_heap *h, uint32_t i)
{
	rh_cmark *c = &h->cm;
	memset(&c->bits[((h->regions[i].start - h->base) >> 3) >> 6], 0, h->region_size / 64);
	c->dirty[i] = 0;
}

static bool clearing(rh_heap *h)
{
	return phase_of(&h->cm) == RH_CM_IDLE && h->cm.clear_next < h->n_regions;
}

static void clear_some(rh_heap *h)
{
	rh_cmark *c = &h->cm;
	for (uint32_t n = 0; c->clear_next < h->n_regions && n < CLEAR_REGIONS; c->clear_next++)
		if (c->dirty[c->clear_next]) {
			clear_bits(h, c->clear_next);
			n++;
		}
}

/* A cycle ended (finished or abandoned): its bits are the marker's to clear. */
static void start_clearing(rh_heap *h)
{
	h->cm.clear_next = 0;
	pthread_cond_broadcast(&h->cm.cond);
}

/* Under c->lock. Waiters (rh_collect_concurrent) watch it under wlock. */
static void set_phase(rh_cmark *c, int phase)
{
	atomic_store_explicit(&c->phase, phase, memory_order_release);
	pthread_mutex_lock(&c->wlock);
	pthread_cond_broadcast(&c->waiter);
	pthread_mutex_unlock(&c->wlock);
}

static void *marker_main(void *arg)
{
	rh_heap *h = arg;
	rh_cmark *c = &h->cm;
	/* cmark.C1: the heap only under cm.lock, given up at each step. */
	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!atomic_load(&c->stop) &&
		       (atomic_load_explicit(&c->pause_wanted, memory_order_acquire) ||
		        (phase_of(c) != RH_CM_MARK && phase_of(c) != RH_CM_SCRUB && !clearing(h))))
			pthread_cond_wait(&c->cond, &c->lock);
		if (atomic_load(&c->stop))
			break;
		uint64_t t0 = rh_now_ns();
		if (phase_of(c) == RH_CM_MARK) {
			if (drain(h, CHUNK_OBJECTS))
				set_phase(c, RH_CM_MARKED);
		} else if (phase_of(c) == RH_CM_SCRUB) {
			if (scrub_some(h))
				set_phase(c, RH_CM_SCRUBBED);
		} else {
			/* Clearing follows the cycle's end, so its time would be
			 * lost in the next snapshot's reset of mark_ns. */
			clear_some(h);
			uint64_t dt = rh_now_ns() - t0;
			pthread_mutex_lock(&h->stats_lock);
			h->stats.concurrent_mark_ns += dt;
			pthread_mutex_unlock(&h->stats_lock);
			continue;
		}
		c->mark_ns += rh_now_ns() - t0;
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int rh_cmark_init(rh_heap *h)
{
	rh_cmark *c = &h->cm;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->satb_lock, NULL);
	pthread_mutex_init(&c->wlock, NULL);
	pthread_cond_init(&c->cond, NULL);
	pthread_cond_init(&c->waiter, NULL);
	/* Tracers mark a disaggregated heap where it lives; with offloading
	 * off its full collections stay stopped-the-world (a marker thread
	 * would fault the whole old generation in behind the mutators). */
	if (!h->cfg.concurrent_mark)
		return RH_OK;
	c->tams = calloc(h->n_regions, sizeof *c->tams);
	if (!c->tams)
		return RH_ENOMEM;
	rh_tams_reset(h);
	/* The tracers' concurrent full marking (fullmark.c) uses the TAMS and
	 * the barrier's buffers, not the marker thread. */
	if (h->cfg.n_servers > 0)
		return RH_OK;
	c->live = calloc(h->n_regions, sizeof *c->live);
	c->dirty = calloc(h->n_regions, sizeof *c->dirty);
	c->clear_next = h->n_regions;
	void *bits = mmap(NULL, h->size / 64, PROT_READ | PROT_WRITE,
	                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	c->bits = bits == MAP_FAILED ? NULL : bits;
	if (!c->live || !c->dirty || !c->bits)
		return RH_ENOMEM;
	if (pthread_create(&c->thread, NULL, marker_main, h) != 0)
		return RH_EIO;
	c->on = true;
	return RH_OK;
}

void rh_cmark_stop(rh_heap *h)
{
	rh_cmark *c = &h->cm;
	if (c->on) {
		pthread_mutex_lock(&c->lock);
		atomic_store(&c->stop, true);
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		pthread_mutex_lock(&c->wlock);
		pthread_cond_broadcast(&c->waiter);
		pthread_mutex_unlock(&c->wlock);
		pthread_join(c->thread, NULL);
		c->on = false;
	}
	free_satb(c->satb_full);
	c->satb_full = NULL;
	free(c->stack);
	free(c->parts);
	free(c->tams);
	free(c->live);
	free(c->dirty);
	if (c->bits)
		munmap(c->bits, h->size / 64);
	c->stack = NULL;
	c->parts = NULL;
	c->tams = NULL;
	c->live = NULL;
	c->dirty = NULL;
	c->bits = NULL;
}

/* ---------------------------------------------------------------- barrier */

void rh_satb_flush(rh_mutator *m)
{
	rh_satb *b = m->satb;
	if (!b)
		return;
	m->satb = NULL;
	if (!b->n) {
		free(b);
		return;
	}
	rh_cmark *c = &m->heap->cm;
	pthread_mutex_lock(&c->satb_lock);
	b->next = c->satb_full;
	c->satb_full = b;
	pthread_mutex_unlock(&c->satb_lock);
}

/* Before a reference store while a cycle marks: the value about to be
 * overwritten may be the last path to an object live at the snapshot. */
void rh_satb_log(rh_mutator *m, void **slot)
{
	rh_heap *h = m->heap;
	/* cmark.C4, cmark.C5: the old value is logged before the store. */
	uintptr_t old = __atomic_load_n((uintptr_t *)slot, __ATOMIC_RELAXED);
	if (!rh_below_tams(h, old))
		return;
	if (!m->satb) {
		m->satb = malloc(sizeof *m->satb);
		if (!m->satb)
			rh_panic("write barrier: out of memory");
		m->satb->n = 0;
	}
	m->satb->e[m->satb->n] = old;
	if (++m->satb->n == RH_SATB_CAP)
		rh_satb_flush(m);
}

rh_satb *rh_satb_take(rh_heap *h)
{
	return grab_full(&h->cm);
}

void rh_tams_reset(rh_heap *h)
{
	for (uint32_t i = 0; i < h->n_regions; i++)
		h->cm.tams[i] = h->regions[i].start;
}

void rh_satb_set(rh_heap *h, bool on)
{
	pthread_mutex_lock(&h->lock);
	h->satb_on = on;
	for (rh_mutator *m = h->mutators; m; m = m->next)
		m->fast.satb = on;
	pthread_mutex_unlock(&h->lock);
}

/* ---------------------------------------------------------------- pauses */

static void cm_precise(void *ctx, void **slot)
{
	grey(ctx, (uintptr_t)*slot);
}

static void cm_conservative(void *ctx, uintptr_t w)
{
	rh_heap *h = ctx;
	if (!rh_below_tams(h, w))
		return;
	rh_region *r = rh_region_head(h, rh_region_of(h, w));
	if (!r->starts_valid)
		rh_region_build_starts(h, r);
	uintptr_t obj = rh_region_object_at(h, r, w);
	if (obj && rh_hdr_type(rh_hdr((void *)obj)) != RH_FILLER_TYPE)
		grey(h, obj);
}

/* The snapshot, at the end of a partial pause: eden is empty, every young
 * object is in a survivor region. What the old generation holds below TAMS
 * and is reachable now is reachable from the roots or from a survivor. */
static void snapshot(rh_heap *h)
{
	rh_cmark *c = &h->cm;
	c->cycle++;
	c->t_start = rh_now_ns();
	c->pauses0 = h->stats.collections;
	c->mark_ns = 0;
	c->n_stack = 0;
	c->n_parts = 0;
	c->scrub_next = 0;
	c->scrub_pos = 0;
	uint32_t cleared = 0;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		c->live[i] = 0;
		/* cmark.C3: what is allocated later lies at or above TAMS. */
		c->tams[i] = rh_snapshot_tams(r);
		/* cmark.C8: what the marker has not cleared yet, the pause does. */
		if (c->tams[i] > r->start) {
			if (c->dirty[i]) {
				clear_bits(h, i);
				cleared++;
			}
			c->dirty[i] = 1;
		}
	}
	c->clear_next = h->n_regions;
	/* cmark.C4: roots and every survivor's fields are greyed here. */
	for (rh_mutator *m = h->mutators; m; m = m->next)
		rh_stack_scan(m, cm_conservative, cm_precise, h);
	for (size_t i = 0; i < h->n_globals; i++)
		grey(h, (uintptr_t)*h->globals[i]);
	rh_region_young_slots(h, cm_precise, h, "concurrent marking");
	rh_satb_set(h, true);
	set_phase(c, RH_CM_MARK);
	rh_log(RH_LOG_DEBUG, "gc",
	       "concurrent cycle %llu: snapshot in %.2f ms, %zu roots into old regions, %u "
	       "regions' marks cleared in the pause",
	       (unsigned long long)c->cycle, (double)(rh_now_ns() - c->t_start) / 1e6, c->n_stack,
	       cleared);
}

/* Every value overwritten since the snapshot is in a buffer now (the
 * mutators are stopped): trace from those to the end. */
static void remark(rh_heap *h)
{
	rh_cmark *c = &h->cm;
	rh_satb_set(h, false);
	for (rh_mutator *m = h->mutators; m; m = m->next)
		rh_satb_flush(m);
	/* cmark.C4: every logged value is greyed and traced. */
	drain(h, SIZE_MAX);
	set_phase(c, RH_CM_SCRUB);
}

/* Scrubbed: free what holds nothing live, publish the rest's live bytes. */
static void finish(rh_heap *h)
{
	rh_cmark *c = &h->cm;
	uint64_t live_total = 0, old_total = 0, freed = 0;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		if (c->tams[i] <= r->start)
			continue;
		uint64_t live;
		if (r->kind == RH_REGION_HUMONGOUS) {
			uint64_t bytes = rh_hdr_bytes(rh_hdr((void *)r->start));
			old_total += bytes;
			live = rh_bit_get(c->bits, (r->start - h->base) >> 3) ? bytes : 0;
		} else {
			old_total += r->top - r->start;
			live = c->live[i] + (r->top - c->tams[i]);
		}
		c->tams[i] = r->start;
		/* cmark.C6: nothing live here, so no scrubbed field points in. */
		if (live == 0) {
			freed += (uint64_t)(r->kind == RH_REGION_HUMONGOUS ? r->span : 1) *
			         h->region_size;
			rh_dest_drop(h, i);
			rh_region_release(h, r);
			continue;
		}
		r->live_bytes = live;
		r->live_known = 1;
		r->ident++; /* fillers replaced dead objects in place */
		live_total += live;
	}
	rh_remsets_drop_freed(h);
	rh_region_flush_freed(h);
	rh_sizing_marked(h, live_total, old_total, false); /* sizing.G1 */
	rh_sizing_cycle_done(h, h->stats.collections - c->pauses0);
	set_phase(c, RH_CM_IDLE);
	start_clearing(h);
	uint64_t took = rh_now_ns() - c->t_start;
	pthread_mutex_lock(&h->stats_lock);
	h->stats.concurrent_cycles++;
	h->stats.concurrent_mark_ns += c->mark_ns;
	h->stats.bytes_freed += freed;
	h->stats.bytes_marked_cpu += live_total;
	pthread_mutex_unlock(&h->stats_lock);
	rh_log(RH_LOG_DEBUG, "gc",
	       "concurrent cycle %llu: %llu KiB live of %llu KiB old, %llu KiB freed, marker "
	       "%.2f ms over %.2f ms",
	       (unsigned long long)c->cycle, (unsigned long long)(live_total >> 10),
	       (unsigned long long)(old_total >> 10), (unsigned long long)(freed >> 10),
	       (double)c->mark_ns / 1e6, (double)took / 1e6);
}

/* The lock for a pause (or the verifier): the marker gives it up at its
 * next step rather than at the end of its work. */
static void hold(rh_cmark *c)
{
	atomic_fetch_add_explicit(&c->pause_wanted, 1, memory_order_acq_rel);
	pthread_mutex_lock(&c->lock);
}

static void let_go(rh_cmark *c)
{
	atomic_fetch_sub_explicit(&c->pause_wanted, 1, memory_order_acq_rel);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* Bytes below TAMS the scrub has still to walk. */
static uint64_t scrub_left(const rh_heap *h)
{
	const rh_cmark *c = &h->cm;
	uint64_t n = 0;
	for (uint32_t i = c->scrub_next; i < h->n_regions; i++)
		if (c->tams[i] > h->regions[i].start)
			n += c->tams[i] - h->regions[i].start;
	if (c->scrub_pos && c->scrub_next < h->n_regions)
		n -= c->scrub_pos - h->regions[c->scrub_next].start;
	return n;
}

/* sizing.C3: a cycle marked but not yet scrubbed, with the room about to
 * run short, is finished in the pause, so that the pause collects what
 * the cycle found rather than abandon it for a full collection at its
 * end. */
static void finish_now(rh_heap *h, int kind)
{
	rh_cmark *c = &h->cm;
	uint64_t left = scrub_left(h);
	if (!rh_sizing_finish_now(h, left))
		return;
	uint64_t t0 = rh_now_ns();
	rh_emit(h, kind, RH_PHASE_RECLAIM, 1);
	while (!scrub_some(h))
		;
	uint64_t t1 = rh_now_ns();
	rh_sizing_scrubbed(h, left, t1 - t0);
	finish(h);
	pthread_mutex_lock(&h->stats_lock);
	h->stats.concurrent_pause_finishes++;
	pthread_mutex_unlock(&h->stats_lock);
	rh_emit(h, kind, RH_PHASE_RECLAIM, 0);
	rh_log(RH_LOG_DEBUG, "gc",
	       "concurrent cycle %llu: %llu KiB scrubbed in the pause in %.2f ms, finished in "
	       "%.2f ms",
	       (unsigned long long)c->cycle, (unsigned long long)(left >> 10),
	       (double)(t1 - t0) / 1e6, (double)(rh_now_ns() - t1) / 1e6);
}

void rh_cmark_pause_begin(rh_heap *h, int kind)
{
	rh_cmark *c = &h->cm;
	if (!c->on)
		return;
	/* A partial pause while the marker marks leaves it running (cmark.C1):
	 * on two cores, a marker shut out of every young pause took three
	 * times its own working time to finish, and the old generation grew
	 * by all that was promoted meanwhile. */
	c->held = kind == RH_GC_FULL || phase_of(c) != RH_CM_MARK;
	if (!c->held)
		return;
	hold(c);
	/* A cycle that is done but for its finish still counts; a remark
	 * would only be dropped by the abort. */
	uint64_t t0 = rh_now_ns();
	/* cmark.C7: the first pause after the marker ran dry remarks. */
	if (phase_of(c) == RH_CM_MARKED && kind != RH_GC_FULL) {
		rh_emit(h, kind, RH_PHASE_MARK, 1);
		remark(h);
		rh_emit(h, kind, RH_PHASE_MARK, 0);
		rh_log(RH_LOG_DEBUG, "gc", "concurrent cycle %llu: remark %.2f ms",
		       (unsigned long long)c->cycle, (double)(rh_now_ns() - t0) / 1e6);
	} else if (phase_of(c) == RH_CM_SCRUBBED) {
		rh_emit(h, kind, RH_PHASE_RECLAIM, 1);
		finish(h);
		rh_emit(h, kind, RH_PHASE_RECLAIM, 0);
		rh_log(RH_LOG_DEBUG, "gc",
		       "concurrent cycle %llu: finished in the pause in %.2f ms",
		       (unsigned long long)c->cycle, (double)(rh_now_ns() - t0) / 1e6);
	}
	if (phase_of(c) == RH_CM_SCRUB && kind != RH_GC_FULL)
		finish_now(h, kind);
	if (kind == RH_GC_FULL)
		rh_cmark_abort(h);
}

void rh_cmark_hold(rh_heap *h)
{
	if (h->cm.on) {
		hold(&h->cm);
		h->cm.held = true;
	}
}

void rh_cmark_pause_end(rh_heap *h)
{
	if (h->cm.on && h->cm.held) {
		h->cm.held = false;
		let_go(&h->cm);
	}
}

void rh_cmark_maybe_start(rh_heap *h, bool due)
{
	rh_cmark *c = &h->cm;
	/* (IDLE at the pause's start too, so the lock is held.) */
	if (!c->on || !c->held || phase_of(c) != RH_CM_IDLE || !(due || atomic_load(&c->request)))
		return;
	atomic_store(&c->request, false);
	snapshot(h);
}

void rh_cmark_abort(rh_heap *h)
{
	rh_cmark *c = &h->cm;
	if (!c->on || phase_of(c) == RH_CM_IDLE)
		return;
	if (!c->held) {
		hold(c);
		c->held = true;
	}
	rh_satb_set(h, false);
	for (rh_mutator *m = h->mutators; m; m = m->next)
		rh_satb_flush(m);
	free_satb(grab_full(c));
	c->n_stack = 0;
	c->n_parts = 0;
	/* cmark.C2: a full collection may move old regions, so TAMS resets. */
	rh_tams_reset(h);
	set_phase(c, RH_CM_IDLE);
	start_clearing(h);
	pthread_mutex_lock(&h->stats_lock);
	h->stats.concurrent_aborts++;
	pthread_mutex_unlock(&h->stats_lock);
	rh_log(RH_LOG_DEBUG, "gc", "concurrent cycle %llu: abandoned for a full collection",
	       (unsigned long long)c->cycle);
}

bool rh_cmark_active(rh_heap *h)
{
	return h->cm.on && phase_of(&h->cm) != RH_CM_IDLE;
}

/* ---------------------------------------------------------------- API */

int rh_collect_concurrent(rh_mutator *m, int wait)
{
	RH_CHECK(m && m->magic == RH_MUTATOR_MAGIC,
	         "rh_collect_concurrent: not an attached mutator");
	RH_CHECK(m->state == RH_M_RUNNING, "rh_collect_concurrent: mutator is parked");
	rh_heap *h = m->heap;
	rh_cmark *c = &h->cm;
	if (h->fm.conc)
		return rh_fullmark_collect(m, wait);
	if (!c->on) {
		rh_set_last_error(
		        RH_EINVAL,
		        "rh_collect_concurrent: concurrent marking is off "
		        "(gc.concurrent_mark false, or offloading off on a disaggregated heap)");
		return RH_EINVAL;
	}
	/* A cycle starts at the end of the next partial pause; one already
	 * running is joined instead. */
	if (phase_of(c) == RH_CM_IDLE)
		atomic_store(&c->request, true);
	rh_collect(m, 0);
	/* A pause that had to collect the full heap (short of free regions)
	 * started no cycle: what one would find, it has freed; no request
	 * is left to start one at some unrelated later pause. */
	atomic_store(&c->request, false);
	/* That cycle only: the pause that finishes it may start the next. */
	uint64_t cycle = atomic_load(&c->cycle);
	while (wait && !atomic_load(&c->stop) && atomic_load(&c->cycle) == cycle) {
		int phase = phase_of(c);
		if (phase == RH_CM_IDLE)
			break;
		if (phase == RH_CM_MARKED || phase == RH_CM_SCRUBBED) {
			rh_collect(m, 0); /* remark, or finish */
			continue;
		}
		/* The marker's turn: parked, this mutator holds up no pause. */
		rh_mutator_park(m);
		pthread_mutex_lock(&c->wlock);
		while (!atomic_load(&c->stop) && phase_of(c) == phase &&
		       atomic_load(&c->cycle) == cycle)
			pthread_cond_wait(&c->waiter, &c->wlock);
		pthread_mutex_unlock(&c->wlock);
		rh_mutator_unpark(m);
	}
	return RH_OK;
}
