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
 * each); with no warm pool, 12,037. The bound catches a pool that stops
 * serving eden, not W1's margin, which is smaller than the spread. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "th.h"

#define HEAP_MIB 192
#define REGION_KIB 256
#define NODES 1500000 /* 46 MiB of long-lived nodes */
#define SLOTS 160

typedef struct node {
	uint64_t hdr;
	struct node *left, *right;
	uint64_t size;
} node;

static rh_type_id t_node;

static struct {
	long start;      /* ru_minflt at the pause's STOP, -1 outside one */
	uint64_t inside; /* faults within pauses */
	uint64_t pauses;
} ev;

static void on_event(const rh_event *e, void *data)
{
	(void)data;
	if (e->phase == RH_PHASE_STOP && e->begin && ev.start < 0) {
		ev.start = th_minflt();
	} else if (e->phase == RH_PHASE_RECLAIM && !e->begin && ev.start >= 0) {
		ev.inside += (uint64_t)(th_minflt() - ev.start);
		ev.start = -1;
		ev.pauses++;
	}
}

/* A balanced tree of n nodes, children first; sp[0], sp[1] hold the
 * subtrees while the parent is allocated. */
static node *make(rh_mutator *m, void **sp, uint64_t n)
{
	if (n == 0)
		return NULL;
	uint64_t left = (n - 1) / 2;
	sp[0] = make(m, sp + 2, left);
	sp[1] = make(m, sp + 2, n - 1 - left);
	node *p = rh_alloc(m, t_node);
	if (!p)
		REQUIRE(0, "allocation of a %llu-node subtree failed", (unsigned long long)n);
	p->size = n;
	rh_write_ref(m, (void **)&p->left, sp[0]);
	rh_write_ref(m, (void **)&p->right, sp[1]);
	sp[0] = sp[1] = NULL;
	rh_safepoint(m);
	return p;
}

static uint64_t count(const node *p, uint64_t *bad)
{
	if (!p)
		return 0;
	uint64_t c = 1 + count(p->left, bad) + count(p->right, bad);
	*bad += c != p->size;
	return c;
}

int main(void)
{
	rh_config cfg;
	th_config(&cfg, HEAP_MIB, REGION_KIB);
	cfg.pause_budget_us = 10u * 1000;
	rh_heap *h = th_open(&cfg);
	rh_set_conservative(h, false);
	static const uint32_t ptrs[] = {offsetof(node, left), offsetof(node, right)};
	t_node = th_type(h, &(rh_type_desc){.name = "node",
	                                    .layout = RH_LAYOUT_FIXED,
	                                    .size = sizeof(node),
	                                    .ptr_offsets = ptrs,
	                                    .n_ptrs = 2});
	ev.start = -1;
	rh_on_event(h, on_event, NULL);

	rh_mutator *m = th_attach(h);
	static void *slots[SLOTS];
	rh_frame f;
	rh_push_frame(m, &f, slots, SLOTS);
	long f0 = th_minflt();
	slots[0] = make(m, slots + 1, NODES);
	long f1 = th_minflt();
	uint64_t bad = 0, c = count(slots[0], &bad);
	CHECK(c == NODES && bad == 0, "tree of %llu nodes, %llu wrong", (unsigned long long)c,
	      (unsigned long long)bad);
	uint64_t outside = (uint64_t)(f1 - f0) - ev.inside;
	uint64_t pages = (uint64_t)NODES * sizeof(node) / 4096;
	printf("# %llu pauses, %llu pages allocated, %llu faults outside pauses, %llu inside\n",
	       (unsigned long long)ev.pauses, (unsigned long long)pages,
	       (unsigned long long)outside, (unsigned long long)ev.inside);
	CHECK(ev.pauses >= 10, "only %llu pauses", (unsigned long long)ev.pauses);
	CHECK(outside * 4 <= pages, "%llu faults outside pauses for %llu pages allocated",
	      (unsigned long long)outside, (unsigned long long)pages);
	rh_pop_frame(m, &f);
	rh_mutator_detach(m);
	rh_heap_close(h);
	return check_done();
}
