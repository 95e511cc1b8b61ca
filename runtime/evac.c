/* Moving objects during a CPU-server collection (docs/collector.md,
 * "Evacuation"): copy destinations, and the two ways of copying.
 *
 * One pass (partial collections with reordering on): the work list holds
 * slots, not objects. Resolving a slot copies its target if it has not moved
 * yet, stores the new address in the slot, and pushes the copy's fields.
 * Popping slots from a stack copies objects in DFS preorder with the first
 * field first, as the marker's order would; from a queue, in BFS order. Each
 * survivor is read and written once, against three times for mark, copy and
 * fix.
 *
 * Two passes (full collections, which first need each region's live bytes
 * to leave dense ones in place; and reordering off, which copies in address
 * order and so needs the whole live set first): the marker records the
 * order, evacuation copies in it, and fixing walks roots and survivors.
 *
 * One pass runs on gc.copy_threads workers (DFS): each has its
 * own work stack, kept list and copy destinations; a worker with work to
 * spare gives the bottom of its stack to the shared pool when another is
 * idle. A header is claimed by one compare-and-swap, to a forwarding
 * address or to a pin (kept in place); the loser of a race undoes its copy.
 * Cross-region references are filed after the workers finish.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "gc/bitmap.h"
#include "runtime/gc_int.h"
#include "runtime/gcwork.h"

/* One worker's state in a pass. Alone (pool NULL), the collecting thread
 * uses the same code with plain stores. Aligned so that two workers' hot
 * fields never share a cache line (nor an adjacent-line prefetch pair). */
typedef struct __attribute__((aligned(128))) rh_gcw {
	rh_gc *g;
	rh_heap *h;
	rh_pool *pool;
	void ***slots; /* work list: a stack for DFS, a queue [head, n) for BFS */
	size_t n_slots, cap_slots, head;
	uintptr_t *kept; /* objects kept in place, marked, not yet scanned */
	size_t n_kept, cap_kept;
	uint64_t copied_bytes, copied_objects, kept_bytes, lost;
	uint64_t aged[RH_TENURE]; /* bytes copied out of young regions, per age (sizing.T1) */
	uint64_t solo_until;      /* alone, stop at this many bytes copied (0: never) */
	uint32_t *dest; /* old destination cursor (region index + 1), kept across pauses */
	uint32_t *surv; /* per age: survivor destination, this pause */
	uint32_t own_surv[RH_TENURE];
	uintptr_t (*rem)[2]; /* (slot, target) to file after the pass (offload on) */
	uintptr_t *copies;   /* evac.P8, roots shared: copies whose fields wait */
	size_t n_copies, cap_copies;
	size_t n_rem, cap_rem;
	/* evac.P6, rset.D1 (offload off): the references to re-record, in
	 * barrier buffers of the worker's own; `bq` the one being filled. */
	rh_bqbuf *bq, *bq_empty;
} rh_gcw;

static inline bool par(const rh_gcw *w)
{
	return w->pool != NULL;
}

/* A header another worker may be claiming. */
static inline uint64_t hdr_load(uintptr_t obj)
{
	return __atomic_load_n((uint64_t *)obj, __ATOMIC_ACQUIRE);
}

/* ---------------------------------------------------------------- destinations */

/* evac.P9: an old destination's object starts are set as it is bumped,
 * so the region's start bitmap stays whole; a region's bits are its own
 * words of the bitmap, and only the worker bumping it writes them. */
static inline void start_at(rh_heap *h, const rh_region *d, uintptr_t p)
{
	if (d->kind == RH_REGION_OLD)
		rh_bit_set(h->start_bits, (p - h->base) >> 3);
}

/* An undone copy's start taken back (evac.P9). */
static inline void start_off(rh_heap *h, const rh_region *d, uintptr_t p)
{
	if (d->kind == RH_REGION_OLD)
		rh_bit_clear(h->start_bits, (p - h->base) >> 3);
}

/* `bytes` from destination region cur (index + 1, 0 for none); 0 if it
 * has no room. A destination is only ever bumped by one worker. */
static inline uintptr_t bump_in(rh_heap *h, uint32_t cur, size_t bytes)
{
	if (!cur)
		return 0;
	rh_region *d = &h->regions[cur - 1];
	if (d->start + h->region_size - d->top < bytes)
		return 0;
	uintptr_t p = d->top;
	d->top += bytes;
	d->live_bytes += bytes;
	start_at(h, d, p);
	return p;
}

/* A copy that lost the race for its object: the bytes just bumped go back.
 * They were written, though, and now lie past top: dirty_end must cover
 * them, or the region, once freed and kept warm, would be handed to eden
 * as zeroed with a stale copy in it (region.c, make_zero). */
static void unbump(rh_heap *h, uintptr_t to, size_t bytes)
{
	rh_region *d = rh_region_of(h, to);
	d->top -= bytes;
	d->live_bytes -= bytes;
	start_off(h, d, to);
	/* evac.P1: a lost copy's bytes stay zero-tracked. */
	if (to + bytes > d->dirty_end)
		d->dirty_end = to + bytes;
}

static int64_t take_dest(rh_gcw *w, rh_region_kind kind)
{
	if (!par(w))
		return rh_region_take(w->h, kind);
	pthread_mutex_lock(&w->h->alloc_lock);
	int64_t i = rh_region_take(w->h, kind);
	pthread_mutex_unlock(&w->h->alloc_lock);
	return i;
}

/* Bump-allocate `bytes` in the copy destination *cur (region index + 1), or
 * in a fresh region of `kind` taken for it; 0 when none is free. A full old
 * destination's tail becomes a filler (old regions are parsed to their
 * end); a survivor region's tail just stays unused. */
static uintptr_t bump_dest(rh_gcw *w, uint32_t *cur, size_t bytes, rh_region_kind kind)
{
	rh_heap *h = w->h;
	uintptr_t p = bump_in(h, *cur, bytes);
	if (p)
		return p;
	if (*cur) {
		rh_region *d = &h->regions[*cur - 1];
		uintptr_t end = d->start + h->region_size;
		if (kind == RH_REGION_OLD && end > d->top) {
			rh_fill((void *)d->top, end - d->top);
			start_at(h, d, d->top);
			d->tail_fill = (uint32_t)(end - d->top);
			d->top = end;
		}
		*cur = 0;
	}
	int64_t i = take_dest(w, kind);
	if (i < 0)
		return 0;
	rh_region *d = &h->regions[i];
	d->live_known = 1;
	d->tail_fill = 0;
	d->top = d->start + bytes;
	d->live_bytes = bytes;
	if (kind == RH_REGION_OLD) {
		/* evac.P9: a fresh old destination starts with whole starts:
		 * none but its first copy's. */
		memset(rh_region_starts(h, d), 0, h->region_size / 64);
		start_at(h, d, d->start);
		d->starts_valid = 1;
	}
	*cur = (uint32_t)i + 1;
	return d->start;
}

static uintptr_t dest_alloc(rh_gcw *w, size_t bytes)
{
	return bump_dest(w, w->dest, bytes, RH_REGION_OLD);
}

/* A survivor region of the given age (1 .. RH_TENURE-1) for this pause. */
static uintptr_t surv_alloc(rh_gcw *w, size_t bytes, uint32_t age)
{
	rh_heap *h = w->h;
	uint32_t *cur = &w->surv[age];
	/* Survivor space is bounded: objects that do not fit are promoted,
	 * or a phase that keeps most of what it allocates would copy the same
	 * data again at every pause. On a local heap the bound is eden's size
	 * (at least 4 regions): half of it promoted gcbench's temporary trees
	 * while they were being built, and their garbage grew the old
	 * generation and eden with it (docs/collector.md, "Survivors"). On a
	 * disaggregated heap it stays half of eden (at least 2): survivors
	 * copied again cost page-cache room and write-backs there, while
	 * promoted garbage is the tracers' to find (pagerank on-50 took 25 %
	 * more GC time with the larger bound). (Workers racing for the last
	 * survivor region may take one more.) */
	uint32_t max_surv = h->cfg.n_servers ? h->eden_limit / 2 : h->eden_limit;
	uint32_t min_surv = h->cfg.n_servers ? 2 : 4;
	/* sizing.T3: a probe ages a sample. */
	if (max_surv < min_surv || h->sz.probing)
		max_surv = min_surv;
	bool fits = *cur &&
	            h->regions[*cur - 1].start + h->region_size - h->regions[*cur - 1].top >= bytes;
	if (!fits && __atomic_load_n(&h->surv_taken, __ATOMIC_RELAXED) >= max_surv)
		return dest_alloc(w, bytes);
	uint32_t before = *cur;
	uintptr_t p = bump_dest(w, cur, bytes, RH_REGION_EDEN);
	if (!p)
		return dest_alloc(w, bytes); /* no room to age: promote */
	if (*cur != before) {
		/* evac.P5: the survivor bound is bumped atomically. */
		__atomic_fetch_add(&h->surv_taken, 1, __ATOMIC_RELAXED);
		h->regions[*cur - 1].survivals = age;
	}
	return p;
}

/* Where an object of region r goes; 0 when the heap has no room left. The
 * common case, room in the current destination, is a bump inline. */
static inline uintptr_t dest_for(rh_gcw *w, rh_region *r, size_t bytes)
{
	uint32_t age = r->survivals + 1;
	bool young =
	        w->g->kind == RH_GC_PARTIAL && r->kind == RH_REGION_EDEN && age < w->h->sz.tenure;
	uintptr_t p = bump_in(w->h, young ? w->surv[age] : *w->dest, bytes);
	if (p)
		return p;
	return young ? surv_alloc(w, bytes, age) : dest_alloc(w, bytes);
}

/* Copy an object whose header is hd. The header word is not read from the
 * original (another worker may be swapping it) but written from hd. Most
 * objects are a few words: a constant-size copy is a few moves where a
 * call to memcpy would dominate. */
static inline void copy_object(uintptr_t to, uintptr_t from, size_t bytes, uint64_t hd)
{
	void *d = (void *)(to + 8);
	const void *s = (const void *)(from + 8);
	switch (bytes) {
	case 16:
		memcpy(d, s, 8);
		break;
	case 24:
		memcpy(d, s, 16);
		break;
	case 32:
		memcpy(d, s, 24);
		break;
	case 40:
		memcpy(d, s, 32);
		break;
	case 48:
		memcpy(d, s, 40);
		break;
	default:
		memcpy(d, s, bytes - 8);
	}
	*(uint64_t *)to = hd;
}

/* ---------------------------------------------------------------- remembering */

/* Whether the reference v in heap slot `slot` needs a remembered-set
 * entry: it crosses regions, from a region that is not traced whole.
 * New survivor regions (eden kind, outside the set) need no entries:
 * they are always traced. Kept eden regions do, whether they become old
 * or stay young (pin.Y1: then their release counts them as sources). */
static inline bool needs_entry(const rh_heap *h, void **slot, uintptr_t v)
{
	uint32_t si = rh_region_index(h, (uintptr_t)slot);
	return si != rh_region_index(h, v) &&
	       (h->regions[si].kind != RH_REGION_EDEN || h->in_cset[si]);
}

static inline void remember(rh_heap *h, void **slot, uintptr_t v)
{
	if (!rh_is_ref(h, v))
		return;
	if (rh_cssc_cand(h, v)) {
		rh_cssc_note(h, slot); /* remembered once its target has moved */
		return;
	}
	if (needs_entry(h, slot, v))
		rh_remember_later(h, (uintptr_t)slot, v); /* rset.D1 */
}

/* A fresh buffer on top of the worker's chain: one dealt before the pass
 * if any is left, else a new one (the worker cannot take the heap's
 * spares: the pause holds remset_lock). */
static __attribute__((noinline)) void next_bq(rh_gcw *w)
{
	rh_bqbuf *b = w->bq_empty;
	if (b) {
		w->bq_empty = b->next;
		b->n = 0;
	} else {
		b = rh_bq_new();
	}
	b->next = w->bq;
	w->bq = b;
}

static __attribute__((noinline)) void defer_remember(rh_gcw *w, void **slot, uintptr_t v)
{
	if (!w->h->offload_on) {
		/* evac.P6: straight into barrier buffers, filed after the pause
		 * (rset.D1) as rh_remember_later's are; remember() would file
		 * exactly these (no CSSC without offload). */
		if (!w->bq || w->bq->n == RH_BQ_CAP)
			next_bq(w);
		w->bq->e[w->bq->n][0] = (uintptr_t)slot;
		w->bq->e[w->bq->n][1] = v;
		w->bq->n++;
		return;
	}
	w->rem = rh_grow(w->rem, &w->cap_rem, w->n_rem + 1, sizeof *w->rem, 256,
	                 "collector: remembered references");
	w->rem[w->n_rem][0] = (uintptr_t)slot;
	w->rem[w->n_rem][1] = v;
	w->n_rem++;
}

/* remember() for a worker. Remembered sets and the slots that refer into
 * a CSSC's tracer candidates are filed by one thread: in parallel,
 * workers list the references, and remember() files them after the pass
 * (neither test depends on anything the pass changes). */
static inline void remember_w(rh_gcw *w, void **slot, uintptr_t v)
{
	rh_heap *h = w->h;
	if (!par(w)) {
		remember(h, slot, v);
		return;
	}
	/* evac.P6: listed here, filed by the collecting thread after the pass. */
	if (rh_is_ref(h, v) && (needs_entry(h, slot, v) || rh_cssc_cand(h, v)))
		defer_remember(w, slot, v);
}

/* ---------------------------------------------------------------- kept objects */

static __attribute__((noinline)) void grow_kept(rh_gcw *w)
{
	w->kept = rh_grow(w->kept, &w->cap_kept, w->n_kept + 1, sizeof *w->kept, 4096,
	                  "collector: work list");
}

/* Whether this call set the mark bit: one worker claims each object. */
static inline bool bit_claim(rh_gcw *w, size_t bit)
{
	uint64_t *word = &w->h->mark_bits[bit >> 6], m = 1ull << (bit & 63);
	if (!par(w)) {
		if (*word & m)
			return false;
		*word |= m;
		return true;
	}
	if (__atomic_load_n(word, __ATOMIC_RELAXED) & m)
		return false;
	/* evac.P3: only the worker that sets the bit scans the object. */
	return !(__atomic_fetch_or(word, m, __ATOMIC_RELAXED) & m);
}

/* Marks obj as reached in place (pinned and humongous objects, those of
 * regions kept in place: reclaiming reads the mark bit); its fields are
 * scanned later, from the prefetch ring (rh_evac_trace). Only the mark
 * bitmap is touched here: the object's own line is likely a cache miss. */
static inline void mark_kept(rh_gcw *w, uintptr_t obj)
{
	if (!bit_claim(w, (obj - w->h->base) >> 3))
		return;
	if (w->n_kept == w->cap_kept)
		grow_kept(w);
	w->kept[w->n_kept++] = obj;
}

/* ---------------------------------------------------------------- roots */

static __attribute__((noinline)) void make_room(rh_gcw *w)
{
	if (w->head > 0) {
		/* A BFS queue's consumed front is reused first. */
		size_t live = w->n_slots - w->head;
		memmove(w->slots, w->slots + w->head, live * sizeof *w->slots);
		w->n_slots = live;
		w->head = 0;
	}
	w->slots = rh_grow(w->slots, &w->cap_slots, w->n_slots + 1, sizeof *w->slots, 4096,
	                   "collector: work list");
}

static inline void push(rh_gcw *w, void **slot)
{
	if (w->n_slots == w->cap_slots)
		make_room(w);
	w->slots[w->n_slots++] = slot;
}

/* Roots are listed before the pass, on the rh_gc itself; worker 0 takes
 * the lists over (and hands them back to be freed). */
static void adopt(rh_gcw *w, rh_gc *g)
{
	w->slots = g->slots;
	w->n_slots = g->n_slots;
	w->cap_slots = g->cap_slots;
	w->head = g->head;
	w->kept = g->kept;
	w->n_kept = g->n_kept;
	w->cap_kept = g->cap_kept;
	g->slots = NULL;
	g->kept = NULL;
	g->n_slots = g->cap_slots = g->head = g->n_kept = g->cap_kept = 0;
}

static void give_back(rh_gcw *w, rh_gc *g)
{
	g->slots = w->slots;
	g->cap_slots = w->cap_slots;
	g->kept = w->kept;
	g->cap_kept = w->cap_kept;
	g->n_slots = g->head = g->n_kept = 0;
}

static void worker_init(rh_gcw *w, rh_gc *g, unsigned id, rh_pool *pool)
{
	memset(w, 0, sizeof *w);
	w->g = g;
	w->h = g->h;
	w->pool = pool;
	w->dest = &g->h->dest_region[id];
	w->surv = id ? w->own_surv : g->h->surv_dest;
}

void rh_gc_root_slot(rh_gc *g, void **slot)
{
	g->slots = rh_grow(g->slots, &g->cap_slots, g->n_slots + 1, sizeof *g->slots, 4096,
	                   "collector: work list");
	g->slots[g->n_slots++] = slot;
	if (!g->one_pass)
		rh_marker_root(&g->h->marker, (uintptr_t)*slot);
}

void rh_gc_root_object(rh_gc *g, uintptr_t obj)
{
	if (!g->one_pass) {
		rh_marker_root(&g->h->marker, obj);
		return;
	}
	rh_heap *h = g->h;
	size_t bit = (obj - h->base) >> 3;
	if (rh_bit_get(h->mark_bits, bit))
		return;
	rh_bit_set(h->mark_bits, bit);
	g->kept = rh_grow(g->kept, &g->cap_kept, g->n_kept + 1, sizeof *g->kept, 4096,
	                  "collector: work list");
	g->kept[g->n_kept++] = obj;
}

/* ---------------------------------------------------------------- one pass */

/* Where v is, for the collector: RH_OUT outside the set (or not a
 * reference); RH_MOVING in a region whose objects are copied; RH_IN_PLACE
 * in one whose objects all stay from the start (humongous, dense regions of
 * a full collection): never forwarded, so their headers need not be read
 * to tell. */
enum { RH_OUT = 0, RH_MOVING = 1, RH_IN_PLACE = 2 };
static inline int set_state(const rh_heap *h, uintptr_t v)
{
	if ((v & 7) || v - h->base >= h->size)
		return RH_OUT;
	return h->in_cset[(v - h->base) >> h->region_shift];
}

/* A field of an object just copied or kept: references into the set wait
 * on the work list, except to objects already moved, which are fixed now
 * (their place in the order is taken). */
static inline __attribute__((always_inline)) void scan_field(void *ctx, void **slot)
{
	rh_gcw *w = ctx;
	uintptr_t v = (uintptr_t)*slot;
	int st = set_state(w->h, v);
	if (st == RH_IN_PLACE) {
		mark_kept(w, v);
	} else if (st == RH_MOVING) {
		uint64_t hd = hdr_load(v);
		if (!rh_hdr_is_fwd(hd)) {
			push(w, slot);
			return;
		}
		v = (uintptr_t)rh_hdr_fwd_addr(hd);
		rh_slot_set(slot, v);
	}
	remember_w(w, slot, v);
}

static inline __attribute__((always_inline)) void prefetch_field(void *ctx, void **slot)
{
	rh_gcw *w = ctx;
	uintptr_t v = (uintptr_t)*slot;
	if (set_state(w->h, v) == RH_MOVING)
		__builtin_prefetch((void *)v, 1);
}

static inline void scan(rh_gcw *w, uintptr_t obj)
{
	rh_heap *h = w->h;
	int reverse = h->cfg.order != RH_ORDER_BFS; /* DFS pops field 0 first */
	/* The children's headers are read next: ask for all of them at once
	 * rather than waiting for each miss in turn. */
	rh_object_slots_inline(&h->types, (void *)obj, prefetch_field, w, 0);
	if (rh_object_slots_inline(&h->types, (void *)obj, scan_field, w, reverse) < 0)
		rh_panic("collector: corrupt object header %#llx at %p",
		         (unsigned long long)rh_hdr((void *)obj), (void *)obj);
}

/* A kept object's turn: count it and list its fields. */
static void scan_kept(rh_gcw *w, uintptr_t obj)
{
	rh_heap *h = w->h;
	size_t bytes = rh_hdr_bytes(hdr_load(obj));
	w->kept_bytes += bytes;
	uint64_t *live = &w->g->live[rh_region_index(h, obj)];
	if (par(w))
		__atomic_fetch_add(live, bytes, __ATOMIC_RELAXED);
	else
		*live += bytes;
	scan(w, obj);
}

/* Keep obj, whose header was hd, where it is. In parallel, in a region
 * whose other objects move (out of space), the header is claimed first,
 * pinned, so that no other worker copies it meanwhile; returns where the
 * object is (another worker's copy if one won). */
static uintptr_t keep(rh_gcw *w, uintptr_t obj, uint64_t hd)
{
	/* (Regions in place from the start move nothing: no claim.) */
	if (par(w) && !(hd & RH_GC_PINNED) && set_state(w->h, obj) == RH_MOVING) {
		uint64_t cur = hd;
		/* evac.P2: a kept object is claimed by pinning its header. */
		if (!__atomic_compare_exchange_n((uint64_t *)obj, &cur, hd | RH_GC_PINNED, false,
		                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			if (rh_hdr_is_fwd(cur))
				return (uintptr_t)rh_hdr_fwd_addr(cur);
		}
		/* Reclaiming walks the region to clear the pin. */
		__atomic_store_n(&rh_region_of(w->h, obj)->has_pins, 1, __ATOMIC_RELAXED);
	}
	mark_kept(w, obj);
	return obj;
}

/* The object's address after this collection: obj copied (or kept). A
 * copy's fields are listed at once, or, with `copied` (evac.P8), left for
 * the caller, which is told the copy is new. */
static inline uintptr_t move(rh_gcw *w, uintptr_t obj, uint64_t hd, bool *copied)
{
	rh_heap *h = w->h;
	rh_region *r = rh_region_of(h, obj);
	if (!__atomic_load_n(&r->retain, __ATOMIC_RELAXED) && !(hd & RH_GC_PINNED)) {
		size_t bytes = rh_hdr_bytes(hd);
		uintptr_t to = dest_for(w, r, bytes);
		if (to) {
			copy_object(to, obj, bytes, hd);
			if (!par(w)) {
				*(uint64_t *)obj = (uint64_t)to | RH_HDR_FWD;
			} else {
				uint64_t cur = hd;
				/* evac.P1: one swap from the header read to the forwarding address. */
				if (!__atomic_compare_exchange_n(
				            (uint64_t *)obj, &cur, (uint64_t)to | RH_HDR_FWD, false,
				            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
					/* Another worker copied or pinned it first. */
					unbump(h, to, bytes);
					w->lost++;
					if (rh_hdr_is_fwd(cur))
						return (uintptr_t)rh_hdr_fwd_addr(cur);
					mark_kept(w, obj);
					return obj;
				}
			}
			w->copied_bytes += bytes;
			w->copied_objects++;
			if (r->kind == RH_REGION_EDEN)
				w->aged[r->survivals < RH_TENURE ? r->survivals : RH_TENURE - 1] +=
				        bytes;
			if (copied)
				*copied = true;
			else
				scan(w, to);
			return to;
		}
		/* Out of space: the object and its region stay in place. */
		__atomic_store_n(&r->retain, 1, __ATOMIC_RELAXED);
	}
	return keep(w, obj, hd);
}

/* Half of a long work stack, the bottom (the oldest entries: in DFS, the
 * largest subtrees still to do), to the pool for an idle worker. */
#define SHARE_MIN 2
static __attribute__((noinline)) void share(rh_gcw *w)
{
	size_t k = w->n_slots / 2;
	/* evac.P4, evac.P7: slots change workers only through the pool. */
	rh_pool_give(w->pool, w->slots, k);
	memmove(w->slots, w->slots + k, (w->n_slots - k) * sizeof *w->slots);
	w->n_slots -= k;
}

/* Slots listed from cards and roots lie in objects long out of the cache
 * by the time they are popped, and so do their targets: each pop would
 * wait for two misses in turn. Two stages ahead of the pop, as in Cher,
 * Hosking and Vijaykumar's buffered prefetching: the slot AHEAD_SLOT
 * entries on is fetched, and the target of the one AHEAD_TARGET on (its
 * slot fetched earlier) is asked for. Entries pushed meanwhile only delay
 * the ones fetched; the order of copying is unchanged. */
#define AHEAD_TARGET 4
#define AHEAD_SLOT 8
/* Ask for the header of the object slot s refers to, if it is to move. */
static inline void prefetch_target(const rh_gcw *w, void **s)
{
	uintptr_t v = __atomic_load_n((uintptr_t *)s, __ATOMIC_RELAXED);
	if (set_state(w->h, v) == RH_MOVING)
		__builtin_prefetch((void *)v, 1);
}

static inline void lookahead(rh_gcw *w, bool bfs)
{
	size_t left = bfs ? w->n_slots - w->head : w->n_slots;
	if (left > AHEAD_SLOT)
		__builtin_prefetch(bfs ? w->slots[w->head + AHEAD_SLOT]
		                       : w->slots[w->n_slots - 1 - AHEAD_SLOT]);
	if (left > AHEAD_TARGET)
		prefetch_target(w, bfs ? w->slots[w->head + AHEAD_TARGET]
		                       : w->slots[w->n_slots - 1 - AHEAD_TARGET]);
}

/* A slot's turn: its target copied (or kept) on this first visit, or
 * already moved; the slot fixed and its reference re-recorded. With
 * `copied` (evac.P8) a new copy's fields are left to the caller. */
static inline __attribute__((always_inline)) uintptr_t resolve(rh_gcw *w, void **slot, bool *copied)
{
	rh_heap *h = w->h;
	uintptr_t v = __atomic_load_n((uintptr_t *)slot, __ATOMIC_RELAXED);
	/* A slot listed twice (a frame slot seen from two frames) was
	 * fixed the first time. */
	if (rh_marker_in_set(&h->marker, v)) {
		uint64_t hd = hdr_load(v);
		v = rh_hdr_is_fwd(hd) ? (uintptr_t)rh_hdr_fwd_addr(hd) : move(w, v, hd, copied);
		rh_slot_set(slot, v);
	}
	if (rh_in_heap(h, (uintptr_t)slot))
		remember_w(w, slot, v);
	return v;
}

/* Objects kept in place are scanned in no particular order, so their
 * header misses can overlap: each waits in a ring of RING objects after
 * its prefetch, as in Cher, Hosking and Vijaykumar's prefetching marker.
 * Copies cannot wait (their order is the traversal's), so the slot work
 * list always goes first: a copied subtree is finished before the next
 * kept object is scanned. Returns true with both lists empty; false when a
 * worker copying alone (solo_until) has copied that many bytes with slots
 * still to do, its ring given back to the kept list. */
#define RING 8
static bool drain(rh_gcw *w)
{
	rh_heap *h = w->h;
	bool bfs = h->cfg.order == RH_ORDER_BFS;
	uintptr_t ring[RING];
	unsigned ring_head = 0, ring_n = 0;
	for (;;) {
		void **slot;
		if (bfs ? w->head == w->n_slots : !w->n_slots) {
			if (w->n_kept) {
				uintptr_t o = w->kept[--w->n_kept];
				__builtin_prefetch((void *)o, 1);
				if (ring_n < RING) {
					ring[(ring_head + ring_n++) % RING] = o;
					continue;
				}
				uintptr_t x = ring[ring_head];
				ring[ring_head] = o;
				ring_head = (ring_head + 1) % RING;
				scan_kept(w, x);
				continue;
			}
			if (!ring_n)
				break;
			uintptr_t x = ring[ring_head];
			ring_head = (ring_head + 1) % RING;
			ring_n--;
			scan_kept(w, x);
			continue;
		}
		if (w->pool && w->n_slots >= SHARE_MIN && rh_pool_hungry(w->pool))
			share(w);
		if (w->solo_until && w->copied_bytes >= w->solo_until) {
			for (; ring_n; ring_n--, ring_head = (ring_head + 1) % RING) {
				if (w->n_kept == w->cap_kept)
					grow_kept(w);
				w->kept[w->n_kept++] = ring[ring_head];
			}
			return false;
		}
		lookahead(w, bfs);
		slot = bfs ? w->slots[w->head++] : w->slots[--w->n_slots];
		resolve(w, slot, NULL);
	}
	w->n_slots = w->head = 0;
	return true;
}

struct pass {
	rh_gc *g;
	rh_pool pool;
	/* evac.P8 on several workers: the root slots, dealt out in chunks
	 * from `next_root` (atomic); `chunks_done` (atomic) counts the
	 * chunks resolved, of `n_chunks`. */
	void ***roots;
	size_t n_roots, next_root, n_chunks, chunks_done;
	rh_gcw w[RH_COPY_THREADS_MAX];
};

static void roots_shared(struct pass *ps, rh_gcw *w);

#define TAKE_MAX 256
static void work(void *arg, unsigned id)
{
	struct pass *ps = arg;
	rh_gcw *w = &ps->w[id];
	void **got[TAKE_MAX];
	roots_shared(ps, w);
	for (;;) {
		drain(w);
		/* evac.P7: returns 0 once every worker waits on an empty pool. */
		size_t k = rh_pool_take(&ps->pool, got, TAKE_MAX);
		if (!k)
			break;
		for (size_t i = 0; i < k; i++)
			push(w, got[i]);
	}
}

/* Whether this pass runs on several workers: DFS only (a BFS queue has no
 * bottom to share from). On a disaggregated heap the workers fault pages
 * in themselves, as mutators do (docs/swap.md). */
unsigned rh_gc_workers(rh_heap *h)
{
	if (h->cfg.order == RH_ORDER_BFS || h->cfg.copy_threads < 2)
		return 1;
	if (!h->crew) {
		h->crew = rh_crew_new(h->cfg.copy_threads);
		if (!h->crew) {
			rh_log(RH_LOG_WARN, "gc", "cannot start %u copying threads: copying alone",
			       h->cfg.copy_threads);
			h->cfg.copy_threads = 1;
			return 1;
		}
	}
	return rh_crew_size(h->crew);
}

/* Waking helpers costs a pause tens of microseconds and makes every claim
 * atomic; most young pauses of a program with low survival copy less than
 * this in all. The collecting thread copies this much alone first. */
#define SOLO_BYTES (64 << 10)

static void account(rh_gc *g, const rh_gcw *w)
{
	g->copied_bytes += w->copied_bytes;
	g->copied_objects += w->copied_objects;
	g->kept_bytes += w->kept_bytes;
	g->lost += w->lost;
	for (unsigned a = 0; a < RH_TENURE; a++)
		g->aged[a] += w->aged[a];
}

/* evac.P8: the targets of root slots s[0, n) copied without listing
 * their fields, the copies kept on the worker's list (without memory to
 * keep one, its fields are listed at once: plain DFS order). */
static void resolve_roots(rh_gcw *w, void ***s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i + AHEAD_TARGET < n)
			prefetch_target(w, s[i + AHEAD_TARGET]); /* as lookahead */
		bool copied = false;
		uintptr_t v = resolve(w, s[i], &copied);
		if (!copied)
			continue;
		uintptr_t *grown = rh_grow_try(w->copies, &w->cap_copies, w->n_copies + 1,
		                               sizeof *w->copies, 1024);
		if (!grown) {
			scan(w, v);
			continue;
		}
		w->copies = grown;
		w->copies[w->n_copies++] = v;
	}
}

/* The kept copies' fields listed, the first copy's on top. */
static void scan_copies(rh_gcw *w)
{
	while (w->n_copies)
		scan(w, w->copies[--w->n_copies]);
}

/* evac.P8: in DFS order, the roots' targets are copied first, in the
 * order the roots were listed, and only then their fields listed, the
 * first copy's on top. The elements of a large array in an old region (a
 * graph's vertices, a cache's entries: remembered cards are roots) land
 * side by side, and the objects they point to after them, instead of each
 * vertex between its children: the pages a program walks stay dense. Alone
 * on the collecting thread, before any helper starts (evac.P1 holds with
 * plain stores); each root slot is resolved here once and never listed
 * (evac.P4). Without memory for the list, plain DFS order. */
static void roots_first(rh_gcw *w)
{
	size_t n = w->n_slots;
	if (!n)
		return;
	rh_scratch *sc = &w->h->scratch;
	/* scratch.K1; room for every root's copy, so none is listed early. */
	w->copies = rh_scratch_take(sc, RH_SCR_W_COPIES, &w->cap_copies);
	uintptr_t *grown = rh_grow_try(w->copies, &w->cap_copies, n, sizeof *w->copies, 1024);
	if (!grown) {
		free(w->copies);
		w->copies = NULL;
		w->cap_copies = 0;
		return;
	}
	w->copies = grown;
	resolve_roots(w, w->slots, n);
	w->n_slots = 0;
	scan_copies(w);
	rh_scratch_put(sc, RH_SCR_W_COPIES, w->copies, w->cap_copies, sizeof *w->copies);
	w->copies = NULL;
	w->cap_copies = 0;
}

/* evac.P8 on several workers. Root slots are dealt out in chunks of
 * ROOT_CHUNK; a worker copies each slot's target without listing its
 * fields and keeps the copy on its own list. Once every chunk is resolved
 * (all workers wait for that), each lists its copies' fields, the first
 * copy's on top, and drains as usual. Waiting matters: a worker that
 * drained its chunk's children at once copied, deep along young chains
 * (lru's recency list), the targets of roots in chunks not yet resolved,
 * among those children; lru at 25 % cache took 25 % more faults. The
 * wait is one chunk's resolving at most. */
#define ROOT_CHUNK 2048
static void roots_shared(struct pass *ps, rh_gcw *w)
{
	if (!ps->n_roots)
		return;
	for (;;) {
		/* evac.P4: each root slot is in one chunk, each chunk taken
		 * by one worker. */
		size_t a = __atomic_fetch_add(&ps->next_root, ROOT_CHUNK, __ATOMIC_RELAXED);
		if (a >= ps->n_roots)
			break;
		size_t n = ps->n_roots - a < ROOT_CHUNK ? ps->n_roots - a : ROOT_CHUNK;
		resolve_roots(w, ps->roots + a, n);
		__atomic_fetch_add(&ps->chunks_done, 1, __ATOMIC_RELEASE);
	}
	/* evac.P7: nobody waits on the pool before this, so the pass cannot
	 * end with roots left. */
	while (__atomic_load_n(&ps->chunks_done, __ATOMIC_ACQUIRE) < ps->n_chunks)
		sched_yield();
	scan_copies(w);
}

void rh_evac_trace(rh_gc *g)
{
	rh_heap *h = g->h;
	unsigned n = rh_gc_workers(h);
	rh_gcw solo;
	worker_init(&solo, g, 0, NULL);
	adopt(&solo, g);
	/* evac.P8: where pages are fetched (a disaggregated heap). More
	 * roots than two chunks are shared out among the workers from the
	 * start: copied by the collecting thread alone, they were nearly the
	 * whole pause's work (pagerank at 50 % cache: 0-1 % of the bytes
	 * copied by the helper, evacuation at 0.8 GB/s against 2.2 locally). */
	bool shared_roots = false;
	if (h->swap && h->cfg.order == RH_ORDER_DFS) {
		if (n > 1 && solo.n_slots > 2 * ROOT_CHUNK)
			shared_roots = true;
		else
			roots_first(&solo);
	}
	if (!shared_roots) {
		solo.solo_until = n > 1 ? SOLO_BYTES : 0;
		if (drain(&solo)) {
			account(g, &solo);
			give_back(&solo, g);
			return;
		}
	}
	/* Worker 0 goes on where it stopped, now claiming by CAS: the crew's
	 * start (a lock) orders its plain stores before any helper's load. */
	struct pass *ps = calloc(1, sizeof *ps);
	if (!ps)
		rh_panic("collector: out of memory");
	ps->g = g;
	rh_pool_init(&ps->pool, n);
	rh_scratch *sc = &h->scratch;
	/* scratch.K1: the lists of the last parallel pass, pages and all. */
	ps->pool.items = rh_scratch_take(sc, RH_SCR_POOL, &ps->pool.cap);
	size_t cap_roots = 0;
	if (shared_roots) {
		/* The root list is dealt out; worker 0 gets a stack of its own. */
		ps->roots = solo.slots;
		ps->n_roots = solo.n_slots;
		ps->n_chunks = (solo.n_slots + ROOT_CHUNK - 1) / ROOT_CHUNK;
		cap_roots = solo.cap_slots;
		solo.slots = rh_scratch_take(sc, RH_SCR_W_SLOTS, &solo.cap_slots);
		solo.n_slots = 0;
	}
	for (unsigned i = 1; i < n; i++) {
		rh_gcw *w = &ps->w[i];
		worker_init(w, g, i, &ps->pool);
		w->slots = rh_scratch_take(sc, RH_SCR_W_SLOTS + i, &w->cap_slots);
		w->kept = rh_scratch_take(sc, RH_SCR_W_KEPT + i, &w->cap_kept);
	}
	ps->w[0] = solo;
	ps->w[0].pool = &ps->pool;
	ps->w[0].solo_until = 0;
	for (unsigned i = 0; shared_roots && i < n; i++)
		ps->w[i].copies = rh_scratch_take(sc, RH_SCR_W_COPIES + i, &ps->w[i].cap_copies);
	/* evac.P6: without offloading, the references to re-record go
	 * straight into barrier buffers (the spares, dealt out); with it,
	 * into lists that remember() files after the pass (CSSC). */
	if (h->offload_on) {
		for (unsigned i = 0; i < n; i++)
			ps->w[i].rem = rh_scratch_take(sc, RH_SCR_W_REM + i, &ps->w[i].cap_rem);
	} else {
		rh_bqbuf *dealt[RH_COPY_THREADS_MAX];
		rh_bq_deal(h, dealt, n);
		for (unsigned i = 0; i < n; i++)
			ps->w[i].bq_empty = dealt[i];
	}
	rh_crew_run(h->crew, work, ps);
	for (unsigned i = 0; i < n; i++) {
		rh_gcw *w = &ps->w[i];
		account(g, w);
		if (i)
			g->helper_bytes += w->copied_bytes;
		for (size_t k = 0; k < w->n_rem; k++)
			remember(h, (void **)w->rem[k][0], w->rem[k][1]);
		rh_scratch_put(sc, RH_SCR_W_REM + i, w->rem, w->cap_rem, sizeof *w->rem);
		if (shared_roots)
			rh_scratch_put(sc, RH_SCR_W_COPIES + i, w->copies, w->cap_copies,
			               sizeof *w->copies);
		rh_bq_take_back(h, w->bq); /* both NULL with offloading */
		rh_bq_take_back(h, w->bq_empty);
		/* The survivor regions of helpers end with this pause (eden
		 * kind, in the next set): nothing to hand over. */
		if (i) {
			rh_scratch_put(sc, RH_SCR_W_SLOTS + i, w->slots, w->cap_slots,
			               sizeof *w->slots);
			rh_scratch_put(sc, RH_SCR_W_KEPT + i, w->kept, w->cap_kept,
			               sizeof *w->kept);
		}
	}
	if (shared_roots) {
		rh_gcw *w0 = &ps->w[0];
		rh_scratch_put(sc, RH_SCR_W_SLOTS, w0->slots, w0->cap_slots, sizeof *w0->slots);
		w0->slots = ps->roots;
		w0->cap_slots = cap_roots;
	}
	give_back(&ps->w[0], g);
	rh_scratch_put(sc, RH_SCR_POOL, ps->pool.items, ps->pool.cap, sizeof *ps->pool.items);
	ps->pool.items = NULL;
	rh_pool_fini(&ps->pool);
	free(ps);
}

/* ---------------------------------------------------------------- two passes */

void rh_evac_ordered(rh_gc *g)
{
	rh_heap *h = g->h;
	rh_marker *mk = &h->marker;
	rh_gcw w;
	worker_init(&w, g, 0, NULL);
	if (!h->cfg.reorder)
		qsort(mk->order, mk->n_order, sizeof *mk->order, rh_cmp_addr);
	for (size_t i = 0; i < mk->n_order; i++) {
		uintptr_t obj = mk->order[i];
		rh_region *r = rh_region_of(h, obj);
		uint64_t hd = rh_hdr((void *)obj);
		if (r->retain || (hd & RH_GC_PINNED))
			continue;
		size_t bytes = rh_hdr_bytes(hd);
		uintptr_t to = dest_for(&w, r, bytes);
		if (!to) {
			r->retain = 1;
			continue;
		}
		memcpy((void *)to, (void *)obj, bytes);
		*(uint64_t *)obj = (uint64_t)to | RH_HDR_FWD;
		g->copied_bytes += bytes;
		g->copied_objects++;
	}
}

static inline uintptr_t forwarded(rh_heap *h, uintptr_t v)
{
	if (!rh_marker_in_set(&h->marker, v))
		return v;
	uint64_t hd = rh_hdr((void *)v);
	return rh_hdr_is_fwd(hd) ? (uintptr_t)rh_hdr_fwd_addr(hd) : v;
}

static void fix_field(void *ctx, void **slot)
{
	rh_heap *h = ctx;
	uintptr_t v = forwarded(h, (uintptr_t)*slot);
	rh_slot_set(slot, v);
	remember(h, slot, v);
}

void rh_evac_fix(rh_gc *g)
{
	rh_heap *h = g->h;
	for (size_t i = 0; i < g->n_slots; i++) {
		void **slot = g->slots[i];
		if (rh_in_heap(h, (uintptr_t)slot))
			fix_field(h, slot); /* a remembered card's slot */
		else
			*slot = (void *)forwarded(h, (uintptr_t)*slot); /* a frame or global */
	}
	g->n_slots = 0;
	rh_marker *mk = &h->marker;
	for (size_t i = 0; i < mk->n_order; i++) {
		uintptr_t obj = forwarded(h, mk->order[i]);
		if (rh_object_slots_inline(&h->types, (void *)obj, fix_field, h, 0) < 0)
			rh_panic("collector: corrupt object at %p after evacuation", (void *)obj);
	}
}
