/* Allocation slow paths: TLAB refill from eden regions, humongous objects,
 * and triggering collections when eden is full. */
#include <string.h>

#include "runtime/internal.h"

void rh_tlab_retire(rh_mutator *m)
{
	/* alloc.A1: the unused tail becomes a filler object. */
	if (m->fast.tlab_end > m->fast.tlab_top)
		rh_fill((void *)m->fast.tlab_top, m->fast.tlab_end - m->fast.tlab_top);
	m->bytes_allocated += m->fast.tlab_top - m->tlab_start;
	m->tlab_start = 0;
	m->fast.tlab_top = m->fast.tlab_end = 0;
}

/* alloc.P1: a chunk carved from eden is zeroed by the thread it was
 * carved for, after alloc_lock is released, and only where it lies below
 * its region's dirty_end (past it the region is zero). Zeroing a whole
 * warm region when it was taken held the lock across a 256 KiB memset
 * that every other allocating thread waited for, and wrote lines long
 * evicted by the time the TLABs were used; a chunk zeroed now is written
 * again at once. dirty_end only changes when the region is taken or freed
 * (alloc_lock held, or the world stopped), never while its chunks are
 * being allocated, so reading it here needs no lock. */
static void eden_zero(rh_heap *h, uintptr_t p, size_t bytes)
{
	uintptr_t d = rh_region_of(h, p)->dirty_end;
	if (p < d)
		memset((void *)p, 0, (p + bytes < d ? p + bytes : d) - p);
}

/* Carve `bytes` (a TLAB or one medium object) out of eden. alloc_lock held.
 * Returns 0 when eden is at its limit (unless `past_limit`) or no region is
 * free. */
static uintptr_t eden_carve(rh_heap *h, size_t bytes, bool past_limit)
{
	if (h->eden_cur) {
		rh_region *r = &h->regions[h->eden_cur - 1];
		uintptr_t end = r->start + h->region_size;
		if (end - r->top >= bytes) {
			uintptr_t p = r->top;
			r->top += bytes;
			return p;
		}
		if (end > r->top)
			rh_fill((void *)r->top, end - r->top);
		r->top = end;
		h->eden_cur = 0;
	}
	if (!past_limit && rh_eden_taken(h) >= h->eden_limit)
		return 0;
	int64_t i = rh_region_take_eden(h);
	if (i < 0)
		return 0;
	rh_region *r = &h->regions[i];
	h->eden_cur = (uint32_t)i + 1;
	r->top = r->start + bytes;
	return r->start;
}

/* Full collections an allocation runs before it fails: with offloading,
 * the tracers' full marking, then one on the CPU server that compacts
 * (cssc.E1). */
static int last_try(const rh_heap *h)
{
	return h->offload_on ? 2 : 1;
}

static void *alloc_humongous(rh_mutator *m, rh_type_id t, size_t bytes, size_t length)
{
	rh_heap *h = m->heap;
	uint64_t n = (bytes + h->region_size - 1) >> h->region_shift;
	/* No collection can make room for more regions than the heap has. */
	if (n > h->n_regions) {
		rh_set_last_error(RH_ENOMEM,
		                  "heap exhausted: a %zu-byte object needs %llu regions, the heap "
		                  "has %llu",
		                  bytes, (unsigned long long)n, (unsigned long long)h->n_regions);
		return NULL;
	}
	/* Give up only after a full collection this thread ran: one another
	 * thread ran meanwhile may have been partial. */
	for (int collected = 0;;) {
		pthread_mutex_lock(&h->alloc_lock);
		int64_t i = rh_region_take_span(h, (uint32_t)n);
		if (i >= 0) {
			rh_region *r = &h->regions[i];
			r->top = r->start + bytes;
			uint64_t *p = (uint64_t *)r->start;
			p[0] = rh_header_make(t, bytes);
			if (length || h->types.types[t].elem_size)
				p[1] = length;
			pthread_mutex_unlock(&h->alloc_lock);
			m->bytes_allocated += bytes;
			m->slow_allocs++;
			return p;
		}
		pthread_mutex_unlock(&h->alloc_lock);
		if (collected == last_try(h))
			break;
		if (rh_collect_for_alloc(h, m, collected ? RH_COLLECT_FULL_ON_CPU : 1))
			collected++;
	}
	rh_set_last_error(RH_ENOMEM,
	                  "heap exhausted: no %llu contiguous free regions for a %zu-byte object "
	                  "after a full collection",
	                  (unsigned long long)n, bytes);
	return NULL;
}

void *rh_alloc_slow(rh_mutator *m, rh_type_id t, size_t bytes, size_t length)
{
	rh_heap *h = m->heap;
	RH_CHECK(t > 0 && t < h->types.n, "rh_alloc: type id %u is not registered", t);
	RH_CHECK(bytes == rh_object_size(h, t, length),
	         "rh_alloc: size %zu does not match type %u with length %zu", bytes, t, length);
	if (length >= ((size_t)1 << 32) || bytes >= ((size_t)1 << 40)) {
		rh_set_last_error(RH_ENOMEM, "allocation of %zu bytes (length %zu) is too large",
		                  bytes, length);
		return NULL;
	}
	rh_safepoint(m);
	if (bytes > h->region_size / 2)
		return alloc_humongous(m, t, bytes, length);

	/* A thread that has run a collection may take a region past eden's
	 * limit. Otherwise the other mutators can fill a small eden between
	 * its collection and its retry, again and again: it would escalate
	 * to a full collection and report a heap with free regions as
	 * exhausted. Past the limit by one region per collecting thread, the
	 * next allocation anyone makes collects. */
	int collections = 0;
	for (;;) {
		pthread_mutex_lock(&h->alloc_lock);
		bool past_limit = collections > 0;
		uintptr_t p;
		if (bytes > h->tlab_size / 4) {
			/* Medium object: its own chunk, the TLAB stays. */
			p = eden_carve(h, bytes, past_limit);
			pthread_mutex_unlock(&h->alloc_lock);
			if (p) {
				eden_zero(h, p, bytes);
				uint64_t *o = (uint64_t *)p;
				o[0] = rh_header_make(t, bytes);
				if (h->types.types[t].elem_size)
					o[1] = length;
				m->bytes_allocated += bytes;
				m->slow_allocs++;
				return o;
			}
		} else {
			rh_tlab_retire(m);
			p = eden_carve(h, h->tlab_size, past_limit);
			pthread_mutex_unlock(&h->alloc_lock);
			if (p) {
				eden_zero(h, p, h->tlab_size);
				m->fast.tlab_top = p + bytes;
				m->fast.tlab_end = p + h->tlab_size;
				m->tlab_start = p;
				uint64_t *o = (uint64_t *)p;
				o[0] = rh_header_make(t, bytes);
				if (h->types.types[t].elem_size)
					o[1] = length;
				m->slow_allocs++;
				return o;
			}
		}
		/* Eden is full (or no region is free): collect. After this
		 * thread's own collection only a heap with no free region
		 * fails, so the second failure escalates to a full
		 * collection and the third gives up: NULL always follows a
		 * full collection (rheap.h). With offloading, the tracers'
		 * full marking frees only empty regions, so one more full
		 * collection compacts on the CPU server first (cssc.E1). A
		 * collection another thread ran counts as no attempt. */
		if (collections == last_try(h) + 1)
			break;
		if (rh_collect_for_alloc(h, m,
		                         collections == 2 ? RH_COLLECT_FULL_ON_CPU : collections))
			collections++;
	}
	rh_set_last_error(RH_ENOMEM,
	                  "heap exhausted: %zu bytes requested, %lu MiB heap full "
	                  "after a full collection",
	                  bytes, (unsigned long)(h->size >> 20));
	return NULL;
}
