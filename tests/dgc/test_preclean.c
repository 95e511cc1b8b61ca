/* Cleaning ahead of the tracers' full marking (docs/distributed-gc.md,
 * "Cleaning ahead of a full marking"; preclean.P1-P3, sizing.F2).
 *
 * A program grows a long-lived list on a 128 MiB heap at 50 % cache, 2 MiB
 * at a time with a collection after each, until the tracers' full marking
 * runs (the room falls, sizing.F1): its first pause, which with
 * gc.concurrent_mark (the default) begins the concurrent marking and
 * writes back what the snapshot needs (fullconc.T1).
 *
 * 1. A pass starts before that marking (sizing.F2 saw it coming). Once one
 *    has started, the program waits for it to end before it goes on, so
 *    that the check below does not depend on the machine's speed.
 * 2. The marking's pause writes back less than the cleaner wrote before
 *    it: the pages the cleaner wrote stayed clean. With the cleaner off or
 *    never started, the pause writes them all and the check fails.
 * 3. Writes to cleaned pages are not lost (preclean.P1, swap.P1): the
 *    program rewrites a field of the newest 2 MiB of nodes while the pass
 *    runs, churns the cache with garbage so the pages are evicted, and
 *    reads every node back; the heap verifies.
 *
 * usage: test-preclean TRACERD PROVIDER
 */
#include <time.h>

#include "runtime/internal.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/dgc/forest.h"

#define STEP_MIB 2u
#define MAX_MIB 100u
#define REWRITE_MIB 2u
#define CHURN_MIB 96u
#define PER_MIB (1024u * 1024u / sizeof(struct dgc_lnode))
#define MASK 0x5a5a5a5a5a5a5a5aull

static rh_heap *heap;
static struct dgc_lnode *head, *junk; /* global roots */

/* Up to 20 s for the pass under way to end. */
static bool wait_pass(void)
{
	for (int i = 0; i < 2000; i++) {
		if (rh_preclean_idle(heap))
			return true;
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	return false;
}

/* Every node numbered n-1 .. 0 from the head, and pad[0] as written:
 * nodes [lo, hi) were rewritten. */
static bool read_back(uint64_t n, uint64_t lo, uint64_t hi)
{
	uint64_t k = 0;
	for (const struct dgc_lnode *x = head; x; x = x->next, k++) {
		uint64_t want = x->id >= lo && x->id < hi ? x->id ^ MASK : 0;
		if (x->id != n - 1 - k || x->pad[0] != want) {
			printf("# node %llu: id %llu, pad %#llx\n", (unsigned long long)k,
			       (unsigned long long)x->id, (unsigned long long)x->pad[0]);
			return false;
		}
	}
	return k == n;
}

static void run(void)
{
	rh_error err;
	rh_set_conservative(heap, false);
	rh_type_id t = dgc_lnode_type(heap, "pc-node", &err);
	rh_global_add(heap, (void **)&head);
	rh_global_add(heap, (void **)&junk);
	rh_mutator *m = rh_mutator_attach(heap, &err);
	CHECK(t && m, "register the node type and attach: %s", err.msg);
	if (!t || !m)
		return;
	CHECK(heap->offload_on && heap->swap && heap->pc.gate.on,
	      "a disaggregated heap with offload on runs the cleaner");

	rh_stats s0, s;
	rh_stats_get(heap, &s0);
	uint64_t cycles0 = heap->fm.cycles;
	uint64_t n = 0, rw_lo = 0, rw_hi = 0, before_full = 0, passes_before = 0;
	bool waited = false, full = false;
	while (!full && n < (uint64_t)MAX_MIB * PER_MIB) {
		/* The pause that starts a pass or runs the marking may be one
		 * the allocation takes: both are looked for after each step. */
		uint64_t pages = atomic_load(&heap->pc.pages);
		uint64_t passes = atomic_load(&heap->pc.passes);
		if (!dgc_lnode_push(m, t, &head, n, (uint64_t)STEP_MIB * PER_MIB, &err)) {
			CHECK(0, "allocating the list: %s", err.msg);
			goto out;
		}
		n += (uint64_t)STEP_MIB * PER_MIB;
		rh_stats_get(heap, &s);
		/* The marking's first pause: a concurrent one's start, or the
		 * stopped-the-world one (fullconc.T1). */
		if (s.full_collections_remote == s0.full_collections_remote &&
		    heap->fm.cycles == cycles0) {
			pages = atomic_load(&heap->pc.pages);
			passes = atomic_load(&heap->pc.passes);
			rh_collect(m, 0); /* promoted: it all survives */
			rh_stats_get(heap, &s);
		}
		full = s.full_collections_remote > s0.full_collections_remote ||
		       heap->fm.cycles > cycles0;
		if (full) {
			/* What the cleaner had done when the marking's pause
			 * stopped it (it runs only between pauses). */
			before_full = pages;
			passes_before = passes;
			break;
		}
		if (atomic_load(&heap->pc.passes) && !waited) {
			/* The newest nodes, on pages the pass cleans or will. */
			rw_hi = n;
			rw_lo = n - (uint64_t)REWRITE_MIB * PER_MIB;
			for (struct dgc_lnode *x = head; x && x->id >= rw_lo; x = x->next)
				x->pad[0] = x->id ^ MASK;
			CHECK(wait_pass(), "the cleaner's pass ended within 20 s");
			waited = true;
		}
	}
	CHECK(full, "the tracers' full marking ran within %u MiB", MAX_MIB);
	CHECK(passes_before > 0, "a pass started before the full marking");
	uint64_t written = heap->cssc.full_written;
	printf("# list %llu MiB: the cleaner wrote %.1f MiB before the full marking, "
	       "its pause %.1f MiB\n",
	       (unsigned long long)(n / PER_MIB), (double)before_full * RH_PAGE_SIZE / (1 << 20),
	       (double)written / (1 << 20));
	CHECK(written < before_full * RH_PAGE_SIZE,
	      "the full marking's pause wrote back less (%llu KiB) than the cleaner before it "
	      "(%llu KiB)",
	      (unsigned long long)(written >> 10),
	      (unsigned long long)(before_full * RH_PAGE_SIZE >> 10));

	/* Garbage through the cache, so the rewritten pages are evicted. */
	for (unsigned b = 0; b < CHURN_MIB / STEP_MIB; b++) {
		junk = NULL;
		if (!dgc_lnode_push(m, t, &junk, 0, (uint64_t)STEP_MIB * PER_MIB, &err)) {
			CHECK(0, "allocating garbage: %s", err.msg);
			goto out;
		}
	}
	junk = NULL;
	/* Twice: the list outgrows the cache (the marking came with the heap
	 * three fifths full), so the first walk evicts what the second
	 * fetches back. */
	for (int pass = 0; pass < 2; pass++)
		CHECK(read_back(n, rw_lo, rw_hi),
		      "walk %d: all %llu nodes read back, with the %llu rewritten fields", pass + 1,
		      (unsigned long long)n, (unsigned long long)(rw_hi - rw_lo));
	CHECK(rh_verify(m) == 0, "the heap verifier found problems");
out:
	rh_mutator_detach(m);
}

int main(int argc, char **argv)
{
	cluster_test ct = {.heap_mib = 128, .cache = 0.5, .timeout_ms = 5000};
	return cluster_test_main(&ct, argc, argv, &heap, run);
}
