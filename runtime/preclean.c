/* Cleaning ahead of the tracers' full marking (preclean.h,
 * docs/distributed-gc.md, "Cleaning ahead of a full marking").
 *
 * The full marking's pause first writes back every dirty page of the heap,
 * so that the tracers mark the heap as it is: a third of that pause on the
 * suite's data-heavy workloads (listscan at 50 % cache: 456 of 1203 ms).
 * Most of those pages were written long before (promoted data, copied in
 * by earlier pauses) and stay unwritten until the marking. When the marking
 * is a few pauses away (sizing.F2), a cleaner thread writes them back
 * between pauses, one eviction batch at a time, and leaves them resident
 * and CLEAN; the pause then writes back only what was dirtied since. */
#include <stdlib.h>

#include "runtime/internal.h"
#include "runtime/sizing.h"
#include "swap/swap.h"

static bool in_old(const rh_region *r)
{
	return r->kind == RH_REGION_OLD || r->kind == RH_REGION_HUMONGOUS ||
	       r->kind == RH_REGION_HUMONGOUS_CONT;
}

/* preclean.P3: the old and humongous regions whose pages are not expected
 * to be written (swap.W1, W4): those would be dirty again by the pause,
 * and each write to a cleaned page costs a protection fault. */
static void start_pass(rh_heap *h)
{
	rh_preclean *pc = &h->pc;
	pc->n_list = 0;
	for (uint32_t i = 0; i < h->n_regions; i++)
		if (in_old(&h->regions[i]) && !rh_swap_region_write_hot(h->swap, i))
			pc->list[pc->n_list++] = i;
	pc->next = 0;
	pc->pass_pages = 0;
	pc->t_start = rh_now_ns();
	atomic_fetch_add(&pc->passes, 1);
	rh_log(RH_LOG_DEBUG, "preclean", "pass %llu: %u regions, the full marking is near",
	       (unsigned long long)atomic_load(&pc->passes), pc->n_list);
}

static void pass_done(rh_heap *h, const char *how)
{
	rh_preclean *pc = &h->pc;
	rh_log(RH_LOG_DEBUG, "preclean", "pass %llu %s: %.1f MiB written back in %.1f ms",
	       (unsigned long long)atomic_load(&pc->passes), how,
	       (double)pc->pass_pages * RH_PAGE_SIZE / (1 << 20),
	       (double)(rh_now_ns() - pc->t_start) / 1e6);
	pc->n_list = pc->next = 0;
}

/* Regions a pause freed (or gave another use) leave the pass: the
 * cleaner's list holds only old regions whenever it runs. */
static void prune(rh_heap *h)
{
	rh_preclean *pc = &h->pc;
	uint32_t k = 0;
	for (uint32_t i = pc->next; i < pc->n_list; i++)
		if (in_old(&h->regions[pc->list[i]]))
			pc->list[k++] = pc->list[i];
	pc->n_list = k;
	pc->next = 0;
	if (k == 0)
		pass_done(h, "done");
}

static bool has_work(void *arg)
{
	const rh_preclean *pc = &((rh_heap *)arg)->pc;
	return pc->next < pc->n_list;
}

/* One batch of the pass (preclean.P2: the gate runs no step in a pause). */
static void step(void *arg)
{
	rh_heap *h = arg;
	rh_preclean *pc = &h->pc;
	rh_error e;
	int got = rh_swap_clean_step(h->swap, pc->list[pc->next], &e);
	if (got < 0) {
		/* The swap system ended the heap (its fatal handler); nothing
		 * to clean from here. */
		pass_done(h, "stopped by a failed write-back");
		return;
	}
	pc->pass_pages += (uint64_t)got;
	atomic_fetch_add(&pc->pages, (uint64_t)got);
	if (got == 0 && ++pc->next == pc->n_list)
		pass_done(h, "done");
}

int rh_preclean_init(rh_heap *h)
{
	rh_preclean *pc = &h->pc;
	rh_gate_init(&pc->gate);
	if (!h->swap || !h->offload_on || !h->cfg.preclean)
		return RH_OK;
	pc->list = malloc(h->n_regions * sizeof *pc->list);
	if (!pc->list)
		return RH_ENOMEM;
	if (rh_gate_start(&pc->gate, has_work, step, h) != RH_OK) {
		free(pc->list);
		pc->list = NULL;
		return RH_ENOMEM;
	}
	return RH_OK;
}

void rh_preclean_stop(rh_heap *h)
{
	rh_preclean *pc = &h->pc;
	if (pc->gate.on) {
		rh_gate_stop(&pc->gate);
		rh_log(RH_LOG_DEBUG, "preclean", "%llu passes, %.1f MiB written back",
		       (unsigned long long)atomic_load(&pc->passes),
		       (double)atomic_load(&pc->pages) * RH_PAGE_SIZE / (1 << 20));
	}
	free(pc->list);
	pc->list = NULL;
}

void rh_preclean_pause_begin(rh_heap *h)
{
	rh_gate_pause_begin(&h->pc.gate); /* preclean.P1 */
}

void rh_preclean_pause_end(rh_heap *h, bool full)
{
	rh_preclean *pc = &h->pc;
	if (!pc->gate.on)
		return;
	/* sizing.F2: one pass after another while the marking is near,
	 * each started by a pause: a program goes on promoting data after a
	 * pass, and those pages would be dirty at the marking (listscan at
	 * 50 % cache: 87-91 MiB of 152 with one pass a marking). */
	if (full) {
		/* The full collection wrote back (or freed) everything. */
		if (pc->next < pc->n_list)
			pass_done(h, "cut short by the full collection");
	} else if (pc->next < pc->n_list) {
		prune(h);
	} else if (rh_sizing_full_near(h)) {
		start_pass(h);
	}
	rh_gate_pause_end(&pc->gate);
}

bool rh_preclean_idle(rh_heap *h)
{
	rh_preclean *pc = &h->pc;
	pthread_mutex_lock(&pc->gate.lock);
	bool idle = pc->next == pc->n_list;
	pthread_mutex_unlock(&pc->gate.lock);
	return idle;
}
