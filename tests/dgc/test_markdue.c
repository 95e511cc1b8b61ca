/* When a disaggregated heap with offload on runs the tracers' full marking
 * (docs/collector.md, sizing.F1).
 *
 * 1. A program builds 30 MiB of long-lived data on a 128 MiB heap: its old
 *    generation passes the first bound (16 MiB), but the heap keeps far
 *    more room free than sizing.C1's threshold. No full collection of any
 *    kind runs: the old rule stopped the world for a full marking here
 *    (150-600 ms on the suite's workloads) that found everything live.
 * 2. The data dies and the program goes on promoting batches that die in
 *    the old generation, several times the heap in all. Every allocation
 *    succeeds: once the room falls, the full markings come, and the heap
 *    verifies after them.
 *
 * usage: test-markdue TRACERD PROVIDER
 */
#include "runtime/internal.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/dgc/forest.h"

#define LIVE_MIB 30u
#define BATCH_MIB 8u
#define BATCHES 40u /* 320 MiB promoted and dropped, 2.5 heaps */
#define PER_MIB (1024u * 1024u / sizeof(struct dgc_lnode))

static rh_heap *heap;
static struct dgc_lnode *head; /* global root */

/* A list of mib MiB of nodes at *root; false if an allocation failed. */
static bool build(rh_mutator *m, rh_type_id t, struct dgc_lnode **root, unsigned mib)
{
	rh_error err;
	bool ok = dgc_lnode_push(m, t, root, 1, (uint64_t)mib * PER_MIB, &err);
	CHECK(ok, "allocating %u MiB of nodes: %s", mib, err.msg);
	return ok;
}

/* The list's length, 0 if its numbers are not consecutive. */
static uint64_t length(const struct dgc_lnode *x)
{
	uint64_t n = 0, want = 0;
	for (; x; x = x->next, n++)
		if (want && x->id != want - 1)
			return 0;
		else
			want = x->id;
	return n;
}

static void run(void)
{
	rh_error err;
	rh_set_conservative(heap, false);
	rh_type_id t = dgc_lnode_type(heap, "md-node", &err);
	rh_global_add(heap, (void **)&head);
	rh_mutator *m = rh_mutator_attach(heap, &err);
	CHECK(t && m, "register the node type and attach: %s", err.msg);
	if (!t || !m)
		return;
	CHECK(heap->offload_on && heap->swap, "a disaggregated heap with offload on");

	rh_stats s0, s1, s2;
	rh_stats_get(heap, &s0);
	if (!build(m, t, &head, LIVE_MIB))
		goto out;
	for (int k = 0; k < 3; k++)
		rh_collect(m, 0);
	rh_stats_get(heap, &s1);
	uint64_t old = rh_sizing_old_used(heap);
	CHECK(old > 16ull << 20, "the old generation (%llu MiB) passed the first bound",
	      (unsigned long long)(old >> 20));
	CHECK(s1.full_collections == s0.full_collections &&
	              s1.full_collections_remote == s0.full_collections_remote,
	      "%llu full collections (%llu by the tracers) while the data grew with the heap "
	      "three quarters free",
	      (unsigned long long)(s1.full_collections - s0.full_collections),
	      (unsigned long long)(s1.full_collections_remote - s0.full_collections_remote));
	uint64_t n = (uint64_t)LIVE_MIB * PER_MIB;
	CHECK(length(head) == n, "the long-lived list reads back whole");

	head = NULL; /* a global root: stored directly */
	for (unsigned b = 0; b < BATCHES; b++) {
		if (!build(m, t, &head, BATCH_MIB))
			goto out;
		rh_collect(m, 0); /* promoted at once: it survived whole */
		rh_collect(m, 0);
		CHECK(length(head) == (uint64_t)BATCH_MIB * PER_MIB, "batch %u reads back whole",
		      b);
		head = NULL;
	}
	rh_stats_get(heap, &s2);
	printf("full markings by the tracers: %llu while the data grew, %llu over the batches; "
	       "%llu MiB freed\n",
	       (unsigned long long)(s1.full_collections_remote - s0.full_collections_remote),
	       (unsigned long long)(s2.full_collections_remote - s1.full_collections_remote),
	       (unsigned long long)((s2.bytes_freed - s0.bytes_freed) >> 20));
	CHECK(rh_verify(m) == 0, "the heap verifier found problems after the batches");
out:
	rh_mutator_detach(m);
}

int main(int argc, char **argv)
{
	cluster_test ct = {.heap_mib = 128, .cache = 0.5, .timeout_ms = 5000};
	return cluster_test_main(&ct, argc, argv, &heap, run);
}
