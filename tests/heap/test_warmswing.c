/* The warm pool under a swinging eden (sizing.W1). A program builds a
 * long-lived balanced tree bottom-up, so nearly everything eden holds
 * survives, and eden's limit swings between a few regions from one pause
 * to the next. The pool is sized at every pause for the next eden; cut at
 * once to a small eden's need, it dropped the regions the next, larger
 * eden then took back cold, and each page of those was faulted in by the
 * allocating thread (MADV_POPULATE_WRITE counts its faults, region.P2).
 *
 * Counted: the minor faults the mutator's thread takes outside its pauses
 * (getrusage(RUSAGE_THREAD), with the faults between a pause's STOP and
 * its RECLAIM taken off: in a single-mutator program the pauses run on
 * this thread and fault in copy destinations). They must stay under a
 * quarter of the pages the program allocates. Here (1,500,000 nodes,
 * 11,718 pages, 30-66 pauses of the 10 ms default budget, which keeps
 * eden small whatever the machine's speed) they were 328-651 with
 * sizing.W1 and 392-980 with the pool cut at once (four interleaved runs
 * each; 906-969 in session 25, on a busier machine); with no warm pool,
 * 12,037. The bound catches a pool that stops serving eden, not W1's
 * margin, which is smaller than the spread. */
#include <stdint.h>
#include <stdio.h>

#include "th_tree.h"

#define HEAP_MIB 192
#define REGION_KIB 256
#define NODES 1500000 /* 46 MiB of long-lived nodes */
#define SLOTS 160

int main(void)
{
	rh_config cfg;
	th_config(&cfg, HEAP_MIB, REGION_KIB);
	cfg.pause_budget_us = 10u * 1000;
	/* W1 alone: with the pretouch thread, eden leaves the pool's copy
	 * share to the pause and takes cold regions instead (pretouch.P4),
	 * so a program that outruns the thread faults in its eden by design
	 * (heap-pretouch tests that split). */
	cfg.pretouch = false;
	rh_heap *h = th_open(&cfg);
	rh_set_conservative(h, false);
	th_tree_setup(h);

	rh_mutator *m = th_attach(h);
	static void *slots[SLOTS];
	rh_frame f;
	rh_push_frame(m, &f, slots, SLOTS);
	long f0 = th_minflt();
	slots[0] = th_tree_make(m, slots + 1, NODES);
	long f1 = th_minflt();
	uint64_t bad = 0, c = th_tree_count(slots[0], &bad);
	CHECK(c == NODES && bad == 0, "tree of %llu nodes, %llu wrong", (unsigned long long)c,
	      (unsigned long long)bad);
	uint64_t outside = (uint64_t)(f1 - f0) - th_pf.inside;
	uint64_t pages = (uint64_t)NODES * sizeof(th_node) / 4096;
	printf("# %llu pauses, %llu pages allocated, %llu faults outside pauses, %llu inside\n",
	       (unsigned long long)th_pf.pauses, (unsigned long long)pages,
	       (unsigned long long)outside, (unsigned long long)th_pf.inside);
	CHECK(th_pf.pauses >= 10, "only %llu pauses", (unsigned long long)th_pf.pauses);
	CHECK(outside * 4 <= pages, "%llu faults outside pauses for %llu pages allocated",
	      (unsigned long long)outside, (unsigned long long)pages);
	rh_pop_frame(m, &f);
	rh_mutator_detach(m);
	rh_heap_close(h);
	return check_done();
}
