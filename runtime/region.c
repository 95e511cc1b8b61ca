/* The region table: free list, humongous spans, parsing regions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gc/bitmap.h"
#include <stdbool.h>

#include "runtime/internal.h"

static void set_kind(rh_heap *h, rh_region *r, rh_region_kind kind)
{
	switch (r->kind) {
	case RH_REGION_EDEN:
		h->n_eden--;
		break;
	case RH_REGION_OLD:
		h->n_old--;
		break;
	case RH_REGION_HUMONGOUS:
	case RH_REGION_HUMONGOUS_CONT:
		h->n_humongous--;
		break;
	default:
		break;
	}
	r->kind = (uint8_t)kind;
	switch (kind) {
	case RH_REGION_EDEN:
		h->n_eden++;
		break;
	case RH_REGION_OLD:
		h->n_old++;
		break;
	case RH_REGION_HUMONGOUS:
	case RH_REGION_HUMONGOUS_CONT:
		h->n_humongous++;
		break;
	default:
		break;
	}
}

/* Invariant: bytes of a region at or past dirty_end are zero. Humongous
 * objects need zeroed regions (zeroed here); eden's chunks are zeroed as
 * they are carved (alloc.P1); survivor regions are written by copying and
 * never read past their top, so they may start dirty. */
static void make_zero(rh_heap *h, rh_region *r)
{
	if (r->dirty_end > r->start)
		memset((void *)r->start, 0, r->dirty_end - r->start);
	r->dirty_end = r->start;
	if (r->warm) {
		r->warm = 0;
		h->n_warm--;
	}
}

/* Which free region take() prefers. */
typedef enum { TAKE_TOP, TAKE_WARM, TAKE_COLD } take_pref;

static int64_t take(rh_heap *h, rh_region_kind kind, take_pref pref);

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* region.P2: a local heap maps a region's missing pages in one call when
 * the region is taken, instead of one page fault per 4 KiB as it is first
 * written: a fault costs microseconds (more under a hypervisor), and a
 * copy destination's fall inside the pause. The region is about to be
 * written whole (eden, a copy destination, a humongous object), so the
 * memory held is what the faults would have mapped. Pages below dirty_end
 * are mapped already. A disaggregated heap's pages are the pager's
 * (userfaultfd): never populated here. Older kernels refuse the advice;
 * the pages then fault in as before. */
static void populate(const rh_heap *h, rh_region *r)
{
	uintptr_t end = r->start + h->region_size;
	if (h->swap || r->mapped || r->dirty_end >= end)
		return;
	/* Asking again for pages already there walks them all: a warm
	 * region is taken many times between two drops. */
	uintptr_t from = r->dirty_end & ~(uintptr_t)4095;
	if (madvise((void *)from, end - from, MADV_POPULATE_WRITE) == 0)
		r->mapped = 1;
}

/* region.P4 (pretouch.P2): a cold free region off the free list, flagged
 * `readying` so that rh_region_take_span passes it by; -1 if the warm
 * pool is full or fewer than `keep_free` regions are free (a region off
 * the list while it is readied must not make an allocation fail).
 * alloc_lock held. */
int64_t rh_region_claim_cold(rh_heap *h, uint32_t keep_free)
{
	/* pretouch.P5: the eden regions taken since the pause count against
	 * the pool, which was readied for them: topped up again as eden took
	 * from it, the pool held a second eden at the next pause. */
	if (h->n_warm + rh_eden_taken(h) >= h->warm_limit || h->n_free < keep_free)
		return -1;
	for (uint32_t k = h->n_free; k-- > 0;) {
		uint32_t i = h->free_list[k];
		rh_region *r = &h->regions[i];
		if (r->warm || r->dropping || r->mapped)
			continue;
		h->free_list[k] = h->free_list[--h->n_free];
		r->readying = 1;
		return i;
	}
	return -1;
}

/* Map every page of a claimed region and write each once, without
 * alloc_lock. The region is zero below and past dirty_end alike (cold:
 * dropped or never used), and nobody else reads or writes it while it is
 * off the list: or-ing in zero changes no byte, and is a write, so the
 * page's first write (about 6 us on this class of virtual machine even
 * when populated, region.P2) happens here and not in a pause. */
void rh_region_touch(const rh_heap *h, rh_region *r)
{
	(void)madvise((void *)r->start, h->region_size, MADV_POPULATE_WRITE);
	for (uintptr_t p = r->start; p < r->start + h->region_size; p += RH_PAGE_SIZE)
		__atomic_fetch_or((uint8_t *)p, 0, __ATOMIC_RELAXED);
}

/* A touched region back on the free list, warm. alloc_lock held. */
void rh_region_unclaim_warm(rh_heap *h, rh_region *r)
{
	r->readying = 0;
	r->mapped = 1; /* region.P2: taking it asks the kernel for nothing */
	r->warm = 1;   /* dirty_end stays: nothing below it to zero either way */
	h->n_warm++;
	h->free_list[h->n_free++] = (uint32_t)(r - h->regions);
}

int64_t rh_region_take(rh_heap *h, rh_region_kind kind)
{
	return take(h, kind, TAKE_WARM);
}

int64_t rh_region_take_eden(rh_heap *h)
{
	/* pretouch.P4: allocation leaves the pause's share of the pool
	 * alone: a cold eden region costs the allocating thread its faults,
	 * a cold copy destination costs the pause. The free list's top is
	 * often warm (a pause pushes the regions it releases there): taking
	 * it regardless left listscan's pauses 2-55 warm regions for 40-100
	 * regions of copies, and those pauses took 3,600-5,600 faults. */
	return take(h, RH_REGION_EDEN, h->n_warm > h->warm_reserve ? TAKE_WARM : TAKE_COLD);
}

/* Swaps free-list entry k with the top, so that take() takes it. */
static void swap_to_top(rh_heap *h, uint32_t k)
{
	uint32_t top = h->n_free - 1, t = h->free_list[k];
	h->free_list[k] = h->free_list[top];
	h->free_list[top] = t;
}

/* Moves a free region that is warm (or cold, if !warm) to the free
 * list's top, if the top is not one already and there is one. */
static void to_top(rh_heap *h, bool warm)
{
	uint32_t top = h->n_free - 1;
	if (h->regions[h->free_list[top]].warm == warm)
		return;
	for (uint32_t k = top; k-- > 0;) {
		if (h->regions[h->free_list[k]].warm == warm) {
			swap_to_top(h, k);
			return;
		}
	}
}

/* The free list's top region, or a warm or a cold one first (pref). */
static int64_t take(rh_heap *h, rh_region_kind kind, take_pref pref)
{
	if (h->n_free == 0)
		return -1;
	/* A warm region is preferred: its pages are mapped (and resident on a
	 * disaggregated heap), where a dropped one costs a fault per page, and
	 * a copy destination's faults fall inside the pause. */
	if (pref == TAKE_WARM && h->n_warm)
		to_top(h, true);
	else if (pref == TAKE_COLD && h->n_warm < h->n_free)
		to_top(h, false);
	uint32_t i = h->free_list[--h->n_free];
	rh_region *r = &h->regions[i];
	if (r->warm) {
		r->warm = 0; /* dirty_end stays: the bytes are still there */
		h->n_warm--;
	}
	r->dropping = 0; /* region.P1: its bytes stay, below dirty_end */
	populate(h, r);
	r->top = r->old_top = r->start;
	r->live_bytes = 0;
	r->live_known = 0;
	r->survivals = 0;
	r->ident++;
	set_kind(h, r, kind);
	return i;
}

int64_t rh_region_take_in(rh_heap *h, uint32_t lo, uint32_t n, rh_region_kind kind)
{
	/* Warm regions are resident here with stale bytes: a tracer cannot
	 * write into them behind the page cache's back. */
	for (uint32_t k = h->n_free; k-- > 0;) {
		uint32_t idx = h->free_list[k];
		if (idx - lo < n && !h->regions[idx].warm) {
			swap_to_top(h, k);
			return take(h, kind, TAKE_TOP);
		}
	}
	return -1;
}

int64_t rh_region_take_span(rh_heap *h, uint32_t n)
{
	/* First fit over the table; humongous allocation is rare. */
	uint32_t run = 0;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		/* A span stays inside one memory server's partition: its tracer
		 * must see the whole object. */
		if (h->remote && i &&
		    rh_remote_host_of(h->remote, i) != rh_remote_host_of(h->remote, i - 1))
			run = 0;
		/* pretouch.P2: a region being readied is off the free list. */
		run = h->regions[i].kind == RH_REGION_FREE && !h->regions[i].readying ? run + 1 : 0;
		if (run < n)
			continue;
		uint32_t first = i + 1 - n;
		/* Remove the span from the free list (it is small: n_free entries). */
		uint32_t k = 0;
		for (uint32_t j = 0; j < h->n_free; j++) {
			uint32_t idx = h->free_list[j];
			if (idx < first || idx > i)
				h->free_list[k++] = idx;
		}
		h->n_free = k;
		for (uint32_t j = first; j <= i; j++) {
			rh_region *r = &h->regions[j];
			make_zero(h, r);
			r->dropping = 0; /* region.P1 */
			populate(h, r);
			r->top = r->old_top = r->start;
			r->live_bytes = 0;
			r->live_known = 0;
			r->survivals = 0;
			r->span = j == first ? n : 0;
			r->head = first;
			set_kind(h, r, j == first ? RH_REGION_HUMONGOUS : RH_REGION_HUMONGOUS_CONT);
		}
		return first;
	}
	return -1;
}

static void release_one(rh_heap *h, rh_region *r, bool keep_warm)
{
	/* Pages go back to the OS (and to the memory server, told after the
	 * collection), except a pool of about eden's size: dropping and
	 * re-faulting those would cost a page fault per 4 KiB allocated (a
	 * userfaultfd round trip on a disaggregated heap). A warm region holds
	 * garbage until eden reuses it, and reuse zeroes it through the normal
	 * page protocol, so its copy on the memory server need not match. */
	uintptr_t end = r->start + h->region_size;
	uintptr_t used = r->top < end ? r->top : end;
	if (used > r->dirty_end)
		r->dirty_end = used;
	if (r->kind == RH_REGION_HUMONGOUS_CONT || r->kind == RH_REGION_HUMONGOUS)
		r->dirty_end = end; /* the object's bytes span the region */
	if (keep_warm && h->n_warm < h->warm_limit) {
		r->warm = 1;
		h->n_warm++;
	} else if (h->swap) {
		rh_swap_region_freed(h->swap, r->index);
		h->freed[h->n_freed++] = r->index;
		r->dirty_end = r->start;
	} else if (!r->dropping) {
		/* region.P1: dirty_end stays until the pages are dropped. */
		if (h->n_freed == h->n_regions)
			rh_region_flush_freed(h);
		r->dropping = 1;
		h->freed[h->n_freed++] = r->index;
	}
	rh_remset_free(&r->remset);
	r->roots_fresh = 0;
	if (r->kind != RH_REGION_EDEN || r->kept_young)
		h->freed_sources++; /* its cards in other sets are now stale */
	r->kept_young = 0;
	r->top = r->old_top = r->start;
	r->live_bytes = 0;
	r->live_known = 0;
	r->survivals = 0;
	r->span = 0;
	r->head = 0;
	r->retain = 0;
	r->starts_valid = 0;
	r->tail_fill = 0;
	set_kind(h, r, RH_REGION_FREE);
	h->free_list[h->n_free++] = r->index;
}

/* Drop the pages of [from, to) regions, all still dropping. */
static void drop_run(rh_heap *h, uint32_t from, uint32_t to)
{
	uintptr_t start = h->regions[from].start;
	if (madvise((void *)start, (size_t)(to - from) * h->region_size, MADV_DONTNEED) != 0) {
		/* Still mapped, with their bytes: dirty_end stays, so each
		 * region is zeroed by hand when it is taken again. Only the
		 * memory is not returned, which is said once. */
		static atomic_bool warned;
		if (!atomic_exchange(&warned, true))
			rh_log(RH_LOG_WARN, "heap",
			       "cannot return freed region %u's memory to the OS (madvise "
			       "MADV_DONTNEED: %s); freed regions stay resident",
			       from, strerror(errno));
		to = from; /* nothing dropped */
	}
	for (uint32_t i = from; i < to; i++) {
		h->regions[i].dirty_end = h->regions[i].start;
		h->regions[i].mapped = 0;
	}
}

/* region.P1: a local heap returns freed regions' pages once per pause, a
 * run of adjacent regions in one madvise, instead of one call per region:
 * each call flushes the TLB of every CPU the process ran on, and finishing
 * a concurrent cycle that freed 400 regions paused listscan 58 ms. Until
 * then a region is FREE with its bytes (dirty_end stays); one taken in
 * between is no longer dropping and is zeroed by hand as a warm one is. */
static void drop_local(rh_heap *h)
{
	qsort(h->freed, h->n_freed, sizeof *h->freed, rh_cmp_u32);
	uint32_t run = 0, n = 0;
	for (size_t k = 0; k < h->n_freed; k++) {
		uint32_t i = h->freed[k];
		rh_region *r = &h->regions[i];
		if (!r->dropping)
			continue; /* taken since, or listed twice */
		r->dropping = 0;
		if (n && i == run + n) {
			n++;
			continue;
		}
		if (n)
			drop_run(h, run, run + n);
		run = i;
		n = 1;
	}
	if (n)
		drop_run(h, run, run + n);
	h->n_freed = 0;
}

void rh_region_flush_freed(rh_heap *h)
{
	if (!h->swap) {
		drop_local(h);
		return;
	}
	if (!h->remote || !h->n_freed)
		return;
	rh_error e;
	/* Until its host confirms, a freed region's old bytes could overwrite
	 * what is written back after reuse: no way on. */
	if (rh_remote_free(h->remote, h->freed, h->n_freed, h->region_shift, h->base, &e) != RH_OK)
		rh_heap_fail(h, &e);
	h->n_freed = 0;
}

void rh_region_release_cold(rh_heap *h, rh_region *r)
{
	release_one(h, r, false);
}

void rh_region_release(rh_heap *h, rh_region *r)
{
	/* Humongous spans are rare and large: always returned. */
	uint32_t span = r->kind == RH_REGION_HUMONGOUS ? r->span : 1;
	bool warm = r->kind != RH_REGION_HUMONGOUS;
	for (uint32_t j = 0; j < span; j++)
		release_one(h, &h->regions[r->index + j], warm);
}

void rh_region_young_slots(rh_heap *h, rh_slot_fn fn, void *ctx, const char *who)
{
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		if (r->kind != RH_REGION_EDEN)
			continue;
		for (uintptr_t p = r->start; p < r->top;) {
			uint64_t hd = rh_hdr((void *)p);
			if (rh_object_slots(&h->types, (void *)p, fn, ctx) < 0)
				rh_panic("%s: corrupt header %#llx at %p", who,
				         (unsigned long long)hd, (void *)p);
			p += rh_hdr_bytes(hd);
		}
	}
}

void rh_region_build_starts(rh_heap *h, rh_region *r)
{
	memset(rh_region_starts(h, r), 0, h->region_size / 64);
	if (r->kind == RH_REGION_HUMONGOUS_CONT) {
		r->starts_valid = 1;
		return;
	}
	for (uintptr_t p = r->start; p < r->top;) {
		uint64_t hd = rh_hdr((void *)p);
		size_t bytes = rh_hdr_is_fwd(hd) ? rh_hdr_bytes(rh_hdr(rh_hdr_fwd_addr(hd)))
		                                 : rh_hdr_bytes(hd);
		if (bytes == 0)
			rh_panic("region %u: object at %p has size 0 (heap corrupt)", r->index,
			         (void *)p);
		rh_bit_set(h->start_bits, (p - h->base) >> 3);
		p += bytes;
	}
	r->starts_valid = 1;
}

uintptr_t rh_region_object_at(rh_heap *h, rh_region *r, uintptr_t a)
{
	r = rh_region_head(h, r);
	if (r->kind == RH_REGION_HUMONGOUS) {
		uintptr_t end = r->start + rh_hdr_bytes(rh_hdr((void *)r->start));
		return a >= r->start && a < end ? r->start : 0;
	}
	if (a >= r->top)
		return 0;
	size_t lo = (r->start - h->base) >> 3;
	size_t i = rh_bit_prev(h->start_bits, (a - h->base) >> 3, lo);
	if (i == SIZE_MAX)
		return 0;
	uintptr_t obj = h->base + (i << 3);
	if (a >= obj + rh_hdr_bytes(rh_hdr((void *)obj)))
		return 0;
	return obj;
}

void rh_cards_slots(rh_heap *h, uint64_t first, uint64_t n, rh_slot_fn fn, void *ctx)
{
	rh_cards_slots_inline(h, first, n, fn, ctx);
}

void rh_card_slots(rh_heap *h, uint64_t card, rh_slot_fn fn, void *ctx)
{
	rh_cards_slots(h, card, 1, fn, ctx);
}

static int card_alive(void *ctx, uint64_t card)
{
	rh_heap *h = ctx;
	return h->regions[(card << RH_CARD_SHIFT) >> h->region_shift].kind != RH_REGION_FREE;
}

/* rset.S1: cards that lie in freed regions are dropped only once an
 * eighth of the old generation's regions has been freed since the last
 * purge. Purging every set costs time in proportion to all cards (pagerank:
 * a fifth of its run, purging 750k cards at each of 340 pauses to drop a
 * few); a stale card is harmless meanwhile: rh_card_slots skips a free
 * source, a source eden reused is in every collection set and never
 * scanned, and one reused as old is scanned like any card, its entries
 * over-approximate (gc/remset.h). Eden regions are not sources (the
 * barrier and needs_entry() skip them), so freeing them leaves nothing
 * stale, except one kept young for its pins (pin.Y1), whose slots were
 * entered while it was in the set. */
void rh_remsets_drop_freed(rh_heap *h)
{
	uint32_t old = h->n_old + h->n_humongous;
	bool purge = h->freed_sources && (uint64_t)h->freed_sources * 8 >= old;
	uint64_t cards = 0;
	for (uint32_t i = 0; i < h->n_regions; i++) {
		rh_region *r = &h->regions[i];
		if (purge && r->remset.n_cards)
			rh_remset_filter(&r->remset, card_alive, h);
		cards += r->remset.n_cards;
	}
	if (purge)
		h->freed_sources = 0;
	h->remset_cards = cards;
}
