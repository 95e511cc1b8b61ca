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
#include "runtime/internal.h"

/* Never below this many free regions (rh_region_claim_cold). */
#define KEEP_FREE 8

/* One region readied; false when the pool is full or no region is cold. */
static bool ready_one(rh_heap *h)
{
	pthread_mutex_lock(&h->alloc_lock);
	int64_t i = rh_region_claim_cold(h, KEEP_FREE);
	pthread_mutex_unlock(&h->alloc_lock);
	if (i < 0)
		return false;
	rh_region *r = &h->regions[i];
	uint64_t t0 = rh_now_ns();
	rh_region_touch(h, r);
	pthread_mutex_lock(&h->alloc_lock);
	rh_region_unclaim_warm(h, r);
	pthread_mutex_unlock(&h->alloc_lock);
	atomic_fetch_add(&h->pt.regions, 1);
	atomic_fetch_add(&h->pt.ns, rh_now_ns() - t0);
	return true;
}

static bool has_work(void *arg)
{
	rh_heap *h = arg;
	return h->pt.due || h->pt.scratch_due;
}

/* The pause's own lists first (scratch.K4: a few MiB, every page of
 * which the next pause would fault in), then regions (the next pause's
 * copies). */
static void step(void *arg)
{
	rh_heap *h = arg;
	if (h->pt.scratch_due && rh_scratch_ahead_step(&h->scratch))
		return;
	h->pt.scratch_due = false;
	if (h->pt.due && !ready_one(h))
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
	pt->scratch_due = true;
	rh_gate_pause_end(&pt->gate);
}
