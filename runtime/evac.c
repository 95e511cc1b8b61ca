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
 */
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "gc/bitmap.h"
#include "runtime/gc_int.h"

/* ---------------------------------------------------------------- destinations */

/* `bytes` from destination region cur (index + 1, 0 for none); 0 if it
 * has no room. */
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
	return p;
}

/* Bump-allocate `bytes` in the copy destination *cur (region index + 1), or
 * in a fresh region of `kind` taken for it; 0 when none is free. A full old
 * destination's tail becomes a filler (old regions are parsed to their
 * end); a survivor region's tail just stays unused. */
static uintptr_t bump_dest(rh_heap *h, uint32_t *cur, size_t bytes, rh_region_kind kind)
{
	uintptr_t p = bump_in(h, *cur, bytes);
	if (p)
		return p;
	if (*cur) {
		rh_region *d = &h->regions[*cur - 1];
		uintptr_t end = d->start + h->region_size;
		if (kind == RH_REGION_OLD && end > d->top) {
			rh_fill((void *)d->top, end - d->top);
			d->tail_fill = (uint32_t)(end - d->top);
			d->top = end;
		}
		*cur = 0;
	}
	int64_t i = rh_region_take_dest(h, kind);
	if (i < 0)
		return 0;
	rh_region *d = &h->regions[i];
	d->live_known = 1;
	d->tail_fill = 0;
	d->top = d->start + bytes;
	d->live_bytes = bytes;
	*cur = (uint32_t)i + 1;
	return d->start;
}

static uintptr_t dest_alloc(rh_heap *h, size_t bytes)
{
	return bump_dest(h, &h->dest_region, bytes, RH_REGION_OLD);
}

/* A survivor region of the given age (1 .. RH_TENURE-1) for this pause. */
static uintptr_t surv_alloc(rh_heap *h, size_t bytes, uint32_t age)
{
	uint32_t *cur = &h->surv_dest[age];
	/* Survivor space is bounded (half of eden): objects that do not fit
	 * are promoted, or a phase that keeps most of what it allocates would
	 * copy the same data again at every pause. */
	uint32_t max_surv = h->eden_limit / 2 > 2 ? h->eden_limit / 2 : 2;
	bool fits = *cur &&
	            h->regions[*cur - 1].start + h->region_size - h->regions[*cur - 1].top >= bytes;
	if (!fits && h->surv_taken >= max_surv)
		return dest_alloc(h, bytes);
	uint32_t before = *cur;
	uintptr_t p = bump_dest(h, cur, bytes, RH_REGION_EDEN);
	if (!p)
		return dest_alloc(h, bytes); /* no room to age: promote */
	if (*cur != before) {
		h->surv_taken++;
		h->regions[*cur - 1].survivals = age;
	}
	return p;
}

/* Where an object of region r goes; 0 when the heap has no room left. The
 * common case, room in the current destination, is a bump inline. */
static inline uintptr_t dest_for(rh_gc *g, rh_region *r, size_t bytes)
{
	rh_heap *h = g->h;
	uint32_t age = r->survivals + 1;
	bool young = g->kind == RH_GC_PARTIAL && r->kind == RH_REGION_EDEN && age < RH_TENURE;
	uintptr_t p = bump_in(h, young ? h->surv_dest[age] : h->dest_region, bytes);
	if (p)
		return p;
	return young ? surv_alloc(h, bytes, age) : dest_alloc(h, bytes);
}

/* Most objects are a few words: a constant-size copy is a few moves where
 * a call to memcpy would dominate. */
static inline void copy_bytes(uintptr_t to, uintptr_t from, size_t bytes)
{
	switch (bytes) {
	case 16:
		memcpy((void *)to, (void *)from, 16);
		break;
	case 24:
		memcpy((void *)to, (void *)from, 24);
		break;
	case 32:
		memcpy((void *)to, (void *)from, 32);
		break;
	case 40:
		memcpy((void *)to, (void *)from, 40);
		break;
	case 48:
		memcpy((void *)to, (void *)from, 48);
		break;
	default:
		memcpy((void *)to, (void *)from, bytes);
	}
}

/* ---------------------------------------------------------------- remembering */

/* `slot`, in the heap, now holds its final value v: file it where the
 * cross-region reference needs to be found by a later collection. */
static inline void remember(rh_heap *h, void **slot, uintptr_t v)
{
	if (!rh_is_ref(h, v))
		return;
	if (rh_cssc_cand(h, v)) {
		rh_cssc_note(h, slot); /* remembered once its target has moved */
		return;
	}
	uint32_t si = rh_region_index(h, (uintptr_t)slot);
	/* New survivor regions (eden kind, outside the set) need no entries:
	 * they are always traced. Kept eden regions become old: they do. */
	if (si != rh_region_index(h, v) &&
	    (h->regions[si].kind != RH_REGION_EDEN || h->in_cset[si]))
		rh_remember(h, (uintptr_t)slot, v);
}

/* ---------------------------------------------------------------- kept objects */

static __attribute__((noinline)) void grow_kept(rh_gc *g)
{
	g->kept = rh_grow(g->kept, &g->cap_kept, g->n_kept + 1, sizeof *g->kept, 4096,
	                  "collector: work list");
}

/* Marks obj as reached in place (pinned and humongous objects, those of
 * regions kept in place: reclaiming reads the mark bit); its fields are
 * scanned later, from the prefetch ring (rh_evac_trace). Only the mark
 * bitmap is touched here: the object's own line is likely a cache miss. */
static inline void mark_kept(rh_gc *g, uintptr_t obj)
{
	rh_heap *h = g->h;
	size_t bit = (obj - h->base) >> 3;
	if (rh_bit_get(h->mark_bits, bit))
		return;
	rh_bit_set(h->mark_bits, bit);
	if (g->n_kept == g->cap_kept)
		grow_kept(g);
	g->kept[g->n_kept++] = obj;
}

/* ---------------------------------------------------------------- roots */

static __attribute__((noinline)) void make_room(rh_gc *g)
{
	if (g->head > 0) {
		/* A BFS queue's consumed front is reused first. */
		size_t live = g->n_slots - g->head;
		memmove(g->slots, g->slots + g->head, live * sizeof *g->slots);
		g->n_slots = live;
		g->head = 0;
	}
	g->slots = rh_grow(g->slots, &g->cap_slots, g->n_slots + 1, sizeof *g->slots, 4096,
	                   "collector: work list");
}

static inline void push(rh_gc *g, void **slot)
{
	if (g->n_slots == g->cap_slots)
		make_room(g);
	g->slots[g->n_slots++] = slot;
}

void rh_gc_root_slot(rh_gc *g, void **slot)
{
	push(g, slot);
	if (!g->one_pass)
		rh_marker_root(&g->h->marker, (uintptr_t)*slot);
}

void rh_gc_root_object(rh_gc *g, uintptr_t obj)
{
	if (g->one_pass)
		mark_kept(g, obj);
	else
		rh_marker_root(&g->h->marker, obj);
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
	rh_gc *g = ctx;
	rh_heap *h = g->h;
	uintptr_t v = (uintptr_t)*slot;
	int st = set_state(h, v);
	if (st == RH_IN_PLACE) {
		mark_kept(g, v);
	} else if (st == RH_MOVING) {
		uint64_t hd = rh_hdr((void *)v);
		if (!rh_hdr_is_fwd(hd)) {
			push(g, slot);
			return;
		}
		v = (uintptr_t)rh_hdr_fwd_addr(hd);
		rh_slot_set(slot, v);
	}
	remember(h, slot, v);
}

static inline __attribute__((always_inline)) void prefetch_field(void *ctx, void **slot)
{
	rh_gc *g = ctx;
	uintptr_t v = (uintptr_t)*slot;
	if (set_state(g->h, v) == RH_MOVING)
		__builtin_prefetch((void *)v, 1);
}

static inline void scan(rh_gc *g, uintptr_t obj)
{
	int reverse = g->h->cfg.order != RH_ORDER_BFS; /* DFS pops field 0 first */
	/* The children's headers are read next: ask for all of them at once
	 * rather than waiting for each miss in turn. */
	rh_object_slots_inline(&g->h->types, (void *)obj, prefetch_field, g, 0);
	if (rh_object_slots_inline(&g->h->types, (void *)obj, scan_field, g, reverse) < 0)
		rh_panic("collector: corrupt object header %#llx at %p",
		         (unsigned long long)rh_hdr((void *)obj), (void *)obj);
}

/* A kept object's turn: count it and list its fields. */
static void scan_kept(rh_gc *g, uintptr_t obj)
{
	rh_heap *h = g->h;
	size_t bytes = rh_hdr_bytes(rh_hdr((void *)obj));
	g->kept_bytes += bytes;
	g->live[rh_region_index(h, obj)] += bytes;
	scan(g, obj);
}

/* The object's address after this collection. */
static inline uintptr_t move(rh_gc *g, uintptr_t obj, uint64_t hd)
{
	rh_heap *h = g->h;
	rh_region *r = rh_region_of(h, obj);
	if (!r->retain && !(hd & RH_GC_PINNED)) {
		size_t bytes = rh_hdr_bytes(hd);
		uintptr_t to = dest_for(g, r, bytes);
		if (to) {
			copy_bytes(to, obj, bytes);
			*(uint64_t *)obj = (uint64_t)to | RH_HDR_FWD;
			g->copied_bytes += bytes;
			g->copied_objects++;
			scan(g, to);
			return to;
		}
		/* Out of space: the object and its region stay in place. */
		r->retain = 1;
	}
	mark_kept(g, obj);
	return obj;
}

/* Objects kept in place are scanned in no particular order, so their
 * header misses can overlap: each waits in a ring of RING objects after
 * its prefetch, as in Cher, Hosking and Vijaykumar's prefetching marker.
 * Copies cannot wait (their order is the traversal's), so the slot work
 * list always goes first: a copied subtree is finished before the next
 * kept object is scanned. */
#define RING 8
void rh_evac_trace(rh_gc *g)
{
	rh_heap *h = g->h;
	bool bfs = h->cfg.order == RH_ORDER_BFS;
	uintptr_t ring[RING];
	unsigned ring_head = 0, ring_n = 0;
	for (;;) {
		void **slot;
		if (bfs ? g->head == g->n_slots : !g->n_slots) {
			if (g->n_kept) {
				uintptr_t o = g->kept[--g->n_kept];
				__builtin_prefetch((void *)o, 1);
				if (ring_n < RING) {
					ring[(ring_head + ring_n++) % RING] = o;
					continue;
				}
				uintptr_t x = ring[ring_head];
				ring[ring_head] = o;
				ring_head = (ring_head + 1) % RING;
				scan_kept(g, x);
				continue;
			}
			if (!ring_n)
				break;
			uintptr_t x = ring[ring_head];
			ring_head = (ring_head + 1) % RING;
			ring_n--;
			scan_kept(g, x);
			continue;
		}
		slot = bfs ? g->slots[g->head++] : g->slots[--g->n_slots];
		uintptr_t v = (uintptr_t)*slot;
		/* A slot listed twice (a frame slot seen from two frames) was
		 * fixed the first time. */
		if (rh_marker_in_set(&h->marker, v)) {
			uint64_t hd = rh_hdr((void *)v);
			v = rh_hdr_is_fwd(hd) ? (uintptr_t)rh_hdr_fwd_addr(hd) : move(g, v, hd);
			rh_slot_set(slot, v);
		}
		if (rh_in_heap(h, (uintptr_t)slot))
			remember(h, slot, v);
	}
	g->n_slots = g->head = 0;
}

/* ---------------------------------------------------------------- two passes */

void rh_evac_ordered(rh_gc *g)
{
	rh_heap *h = g->h;
	rh_marker *mk = &h->marker;
	if (!h->cfg.reorder)
		qsort(mk->order, mk->n_order, sizeof *mk->order, rh_cmp_addr);
	for (size_t i = 0; i < mk->n_order; i++) {
		uintptr_t obj = mk->order[i];
		rh_region *r = rh_region_of(h, obj);
		uint64_t hd = rh_hdr((void *)obj);
		if (r->retain || (hd & RH_GC_PINNED))
			continue;
		size_t bytes = rh_hdr_bytes(hd);
		uintptr_t to = dest_for(g, r, bytes);
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
