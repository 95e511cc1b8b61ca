/* Readying free regions between pauses (pretouch.h, docs/collector.md,
 * "region.P4 (readying regions)").
 *
 * A program whose data grows copies its survivors into regions it never
 * used, and the first write to each of their pages is a fault inside the
 * pause: populated in one call (region.P2), a page still stalls on its
 * first user write on this class of virtual machine, about 6 µs, against
 * 0.03 µs for a page written before. listscan's pause that copied 22 MiB
 * into fresh regions took 46 ms where one that copied 10 MiB into reused
 * ones took 4.5. Between pauses this thread takes cold free regions off
 * the free list one at a time, populates and writes each page, and puts
 * them back warm (zero, mapped), until the warm pool holds sizing.W1's
 * count: the next eden and its survivors' copies. */
#include <sys/mman.h>

#include "runtime/internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Never below this many free regions: a region off the list while it is
 * readied must not make an allocation fail. */
#define KEEP_FREE 8

/* A cold free region off the free list, flagged `readying`; -1 if the
 * pool is full or none is left. alloc_lock held. */
static int64_t claim(rh_heap *h)
{
	if (h->n_warm >= h->warm_limit || h->n_free < KEEP_FREE)
		return -1;
	for (uint32_t k = h->n_free; k-- > 0;) {
		uint32_t i = h->free_list[k];
		rh_region *r = &h->regions[i];
		if (r->warm || r->dropping || r->mapped)
			continue;
		h->free_list[k] = h->free_list[--h->n_free];
		r->readying = 1; /* pretouch.P2: rh_region_take_span passes it by */
		return i;
	}
	return -1;
}

/* Map every page and write each once. The region is zero below and past
 * dirty_end alike (cold: dropped or never used), and nobody else reads or
 * writes it while it is off the list: or-ing in zero changes no byte, and
 * is a write, so the page's first write happens here. */
static void touch(rh_heap *h, rh_region *r)
{
	(void)madvise((void *)r->start, h->region_size, MADV_POPULATE_WRITE);
	for (uintptr_t p = r->start; p < r->start + h->region_size; p += RH_PAGE_SIZE)
		__atomic_fetch_or((uint8_t *)p, 0, __ATOMIC_RELAXED);
}

/* One region readied; false when the pool is full or no region is cold. */
static bool ready_one(rh_heap *h)
{
	pthread_mutex_lock(&h->alloc_lock);
	int64_t i = claim(h);
	pthread_mutex_unlock(&h->alloc_lock);
	if (i < 0)
		return false;
	rh_region *r = &h->regions[i];
	uint64_t t0 = rh_now_ns();
	touch(h, r);
	pthread_mutex_lock(&h->alloc_lock);
	r->readying = 0;
	r->mapped = 1; /* region.P2: taking it asks the kernel for nothing */
	r->warm = 1;   /* dirty_end stays: nothing below it to zero either way */
	h->n_warm++;
	h->free_list[h->n_free++] = (uint32_t)i;
	pthread_mutex_unlock(&h->alloc_lock);
	atomic_fetch_add(&h->pt.regions, 1);
	atomic_fetch_add(&h->pt.ns, rh_now_ns() - t0);
	return true;
}

static bool has_work(void *arg)
{
	return ((rh_heap *)arg)->pt.due;
}

static void step(void *arg)
{
	rh_heap *h = arg;
	if (!ready_one(h))
		h->pt.due = false;
}

int rh_pretouch_init(rh_heap *h)
{
	rh_pretouch *pt = &h->pt;
	rh_gate_init(&pt->gate);
	/* A disaggregated heap's pages are the pager's (region.P2). */
	if (h->swap || !h->cfg.pretouch)
		return RH_OK;
	pt->due = true; /* the first eden too */
	return rh_gate_start(&pt->gate, has_work, step, h);
}

void rh_pretouch_stop(rh_heap *h)
{
	rh_pretouch *pt = &h->pt;
	if (!pt->gate.on)
		return;
	rh_gate_stop(&pt->gate);
	rh_log(RH_LOG_DEBUG, "pretouch", "%llu regions readied in %.1f ms",
	       (unsigned long long)atomic_load(&pt->regions), (double)atomic_load(&pt->ns) / 1e6);
}

void rh_pretouch_pause_begin(rh_heap *h)
{
	rh_gate_pause_begin(&h->pt.gate); /* pretouch.P1 */
}

void rh_pretouch_pause_end(rh_heap *h)
{
	rh_pretouch *pt = &h->pt;
	if (!pt->gate.on)
		return;
	/* pretouch.P3: up to sizing.W1's pool, never past it. */
	pt->due = h->n_warm < h->warm_limit;
	rh_gate_pause_end(&pt->gate);
}
