/* A long-lived balanced tree built bottom-up, so that nearly everything
 * eden holds survives (heap-warmswing, heap-pretouch), and the minor faults
 * this thread takes inside pauses: from a pause's STOP to the end of its
 * RECLAIM, with getrusage(RUSAGE_THREAD) (th_minflt). A single-mutator
 * program's pauses run on its thread. */
#ifndef RH_TESTS_HEAP_TH_TREE_H
#define RH_TESTS_HEAP_TH_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "th.h"

typedef struct th_node {
	uint64_t hdr;
	struct th_node *left, *right;
	uint64_t size;
} th_node;

static rh_type_id th_t_node;
/* Called after each node is made, or NULL. */
static void (*th_tree_hook)(void);

static struct {
	long start;      /* ru_minflt at the pause's STOP, -1 outside one */
	uint64_t inside; /* faults within pauses */
	uint64_t pauses;
} th_pf = {.start = -1};

static inline void th_pf_event(const rh_event *e, void *data)
{
	(void)data;
	if (e->phase == RH_PHASE_STOP && e->begin && th_pf.start < 0) {
		th_pf.start = th_minflt();
	} else if (e->phase == RH_PHASE_RECLAIM && !e->begin && th_pf.start >= 0) {
		th_pf.inside += (uint64_t)(th_minflt() - th_pf.start);
		th_pf.start = -1;
		th_pf.pauses++;
	}
}

/* The node type registered and the fault count listening to h's pauses. */
static inline void th_tree_setup(rh_heap *h)
{
	static const uint32_t ptrs[] = {offsetof(th_node, left), offsetof(th_node, right)};
	th_t_node = th_type(h, &(rh_type_desc){.name = "node",
	                                       .layout = RH_LAYOUT_FIXED,
	                                       .size = sizeof(th_node),
	                                       .ptr_offsets = ptrs,
	                                       .n_ptrs = 2});
	rh_on_event(h, th_pf_event, NULL);
}

/* A balanced tree of n nodes, children first; sp[0], sp[1] hold the
 * subtrees while the parent is allocated (sp: 2 slots a level). */
static inline th_node *th_tree_make(rh_mutator *m, void **sp, uint64_t n)
{
	if (n == 0)
		return NULL;
	uint64_t left = (n - 1) / 2;
	sp[0] = th_tree_make(m, sp + 2, left);
	sp[1] = th_tree_make(m, sp + 2, n - 1 - left);
	th_node *p = rh_alloc(m, th_t_node);
	if (!p)
		REQUIRE(0, "allocation of a %llu-node subtree failed", (unsigned long long)n);
	p->size = n;
	rh_write_ref(m, (void **)&p->left, sp[0]);
	rh_write_ref(m, (void **)&p->right, sp[1]);
	sp[0] = sp[1] = NULL;
	rh_safepoint(m);
	if (th_tree_hook)
		th_tree_hook();
	return p;
}

/* Nodes in the tree; *bad counts those whose size is wrong. */
static inline uint64_t th_tree_count(const th_node *p, uint64_t *bad)
{
	if (!p)
		return 0;
	uint64_t c = 1 + th_tree_count(p->left, bad) + th_tree_count(p->right, bad);
	*bad += c != p->size;
	return c;
}

#endif
