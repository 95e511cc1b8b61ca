/* Old garbage the tracers can see (docs/distributed-gc.md, "Refreshing the
 * target queues", rset.T1-T3).
 *
 * An anchor array holds one reference to each of 160,000 payloads (about
 * 34 MiB on a 128 MiB heap at 25 % cache). The payloads are promoted into
 * old regions, which the cache mostly evicts. Then every anchor slot gets
 * a new payload: the first ones are garbage in old regions, referenced
 * from nowhere, but each one's bit is still set in its region's target
 * queue, from which the tracers mark.
 *
 * Checked, after each of a few partial collections:
 * 1. the target queues of the first payloads' regions hold at most a
 *    hundredth of their former bits (rset.T1's rebuild), and their source
 *    queues lost the cards that point elsewhere now (rset.T3);
 * 2. within the deadline, at least three quarters of those regions are
 *    freed by CSSCs or partial collections, or marked mostly dead by their
 *    tracers or, for those the cache holds, by the CPU server's estimate
 *    (rset.T5), with no full collection;
 * 3. the live payloads read back, and the heap verifies.
 *
 * With `control` as the third argument the rebuild is off
 * (`gc.refresh`: false), and the test checks the opposite: the queues keep
 * their bits and the tracers find (almost) nothing dead. That is the
 * behaviour before rset.T1, and what the checks above would meet without it.
 *
 * usage: test-refresh TRACERD PROVIDER [control]
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/internal.h"
#include "runtime/remote.h"
#include "swap/swap.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/dgc/forest.h"

#define N 160000u
#define PAYLOAD 200u /* bytes of data: 216 with the array header, 8-aligned */
#define DEADLINE_S 60.0

static rh_heap *heap;
static bool control;
static struct dgc_refs *anchors; /* global root */
static rh_type_id t_refs, t_bytes;

/* A payload's bytes: a function of its slot and round. */
static uint8_t byte_of(uint32_t i, uint32_t round, size_t k)
{
	return (uint8_t)(i * 131u + round * 17u + k);
}

static bool fill(rh_mutator *m, uint32_t round)
{
	for (uint32_t i = 0; i < N; i++) {
		uint8_t *p = rh_alloc_array(m, t_bytes, PAYLOAD);
		if (!p) {
			CHECK(0, "allocating payload %u of round %u: %s", i, round,
			      rh_last_error()->msg);
			return false;
		}
		for (size_t k = 0; k < PAYLOAD; k++)
			p[RH_ARRAY_HEADER_SIZE + k] = byte_of(i, round, k);
		rh_write_ref(m, &anchors->e[i], p);
	}
	return true;
}

static bool intact(uint32_t round)
{
	for (uint32_t i = 0; i < N; i++) {
		const uint8_t *p = anchors->e[i];
		for (size_t k = 0; k < PAYLOAD; k++)
			if (p[RH_ARRAY_HEADER_SIZE + k] != byte_of(i, round, k))
				return false;
	}
	return true;
}

/* The regions that hold the payloads now: a region index + 1 per entry. */
static size_t regions_of_payloads(uint32_t *out)
{
	uint8_t *seen = calloc(heap->n_regions, 1);
	CHECK(seen != NULL, "memory for the region list");
	if (!seen)
		return 0;
	size_t n = 0;
	for (uint32_t i = 0; i < N; i++) {
		uint32_t r = rh_region_of(heap, (uintptr_t)anchors->e[i])->index;
		if (!seen[r]) {
			seen[r] = 1;
			out[n++] = r;
		}
	}
	free(seen);
	return n;
}

/* Over the regions the tracers mark (old, at least half evicted), and
 * apart from them those freed and those the cache holds (the CPU
 * server's to collect: MSCT leaves them out). dead: marked at most a
 * tenth live, by a tracer or by the CPU server's estimate. */
typedef struct tally {
	size_t bits, cards, dead, freed, resident;
} tally;

static tally count(const uint32_t *regs, size_t n, const uint32_t *ident, bool all)
{
	tally t = {0};
	pthread_mutex_lock(&heap->remset_lock);
	for (size_t k = 0; k < n; k++) {
		rh_region *r = &heap->regions[regs[k]];
		if (r->kind != RH_REGION_OLD || r->ident != ident[k]) {
			/* Moved out by a CSSC (the region was freed, perhaps reused). */
			t.freed++;
			continue;
		}
		uint64_t used = r->top - r->start;
		if (!all && rh_swap_region_evicted_pct(heap->swap, r->index, used) < 50) {
			/* rset.T5: the CPU server's estimate. */
			t.resident++;
			t.dead += r->live_known && r->live_bytes * 10 <= used;
			continue;
		}
		t.cards += r->remset.n_cards;
		for (size_t w = 0; r->remset.targets && w < heap->region_size / 8 / 64; w++)
			t.bits += (size_t)__builtin_popcountll(r->remset.targets[w]);
		rh_marked_desc md;
		if (rh_remote_marked(heap->remote, r->index, &md) && md.ident == r->ident &&
		    md.top == used && md.live_bytes * 10 <= used)
			t.dead++;
	}
	pthread_mutex_unlock(&heap->remset_lock);
	return t;
}

static void run(void)
{
	rh_error err;
	rh_set_conservative(heap, false);
	t_refs = rh_type_register(heap, &dgc_refs_desc, &err);
	t_bytes = rh_type_register(heap, &dgc_junk_desc, &err);
	rh_global_add(heap, (void **)&anchors);
	uint32_t *regs = NULL, *ident = NULL;
	rh_mutator *m = rh_mutator_attach(heap, &err);
	CHECK(t_refs && t_bytes && m, "register the types and attach: %s", err.msg);
	if (!m)
		return;
	CHECK(heap->offload_on && heap->swap, "a disaggregated heap with offload on");
	anchors = rh_alloc_array(m, t_refs, N);
	CHECK(anchors != NULL, "allocating the anchors");
	if (!anchors || !fill(m, 1))
		goto out;
	for (int k = 0; k < 3; k++)
		rh_collect(m, 0); /* promoted: the anchors keep every payload */
	regs = calloc(heap->n_regions, sizeof *regs);
	ident = calloc(heap->n_regions, sizeof *ident);
	CHECK(regs && ident, "memory for the region lists");
	if (!regs || !ident)
		goto out;
	size_t n = regions_of_payloads(regs);
	for (size_t k = 0; k < n; k++)
		ident[k] = heap->regions[regs[k]].ident;
	tally t0 = count(regs, n, ident, true);
	printf("round 1: %zu regions of payloads, %zu target bits, %zu cards\n", n, t0.bits,
	       t0.cards);
	CHECK(n >= 100 && t0.bits >= N / 2, "round 1's payloads are old and referenced");

	rh_stats s0, s1;
	rh_stats_get(heap, &s0);
	if (!fill(m, 2)) /* round 1's payloads die in their old regions */
		goto out;
	tally t = t0;
	double t_start = dgc_now_s(), t_end = t_start + DEADLINE_S;
	int pauses = 0;
	/* Control: a fixed number of pauses, as long as the rebuild needs. */
	while (dgc_now_s() < t_end &&
	       (control ? pauses < 12
	                : (t.freed + t.dead) * 4 < n * 3 || t.bits * 100 > t0.bits ||
	                          t.cards * 100 > t0.cards)) {
		rh_collect(m, 0);
		pauses++;
		struct timespec ts = {0, 250 * 1000 * 1000};
		nanosleep(&ts, NULL); /* the tracers mark meanwhile */
		t = count(regs, n, ident, false);
	}
	rh_stats_get(heap, &s1);
	printf("after %d pauses (%.1f s): %zu target bits, %zu cards left in the regions the "
	       "tracers mark; of %zu regions, %zu freed, %zu marked dead, %zu resident; %llu "
	       "CSSCs, %llu full collections\n",
	       pauses, dgc_now_s() - t_start, t.bits, t.cards, n, t.freed, t.dead, t.resident,
	       (unsigned long long)(s1.csscs - s0.csscs),
	       (unsigned long long)(s1.full_collections + s1.full_collections_remote -
	                            s0.full_collections - s0.full_collections_remote));
	if (!control) {
		CHECK(t.bits * 100 <= t0.bits,
		      "rset.T1: the dead payloads' bits are gone (%zu of %zu left)", t.bits,
		      t0.bits);
		CHECK(t.cards * 100 <= t0.cards,
		      "rset.T3: the cards pointing elsewhere are gone (%zu of %zu left)", t.cards,
		      t0.cards);
		CHECK(t.resident * 4 <= n, "most of round 1's regions left the cache (%zu of %zu)",
		      n - t.resident, n);
		CHECK((t.freed + t.dead) * 4 >= n * 3,
		      "the garbage was seen: %zu of %zu regions freed or marked dead",
		      t.freed + t.dead, n);
		CHECK(t.freed > 0 && s1.csscs > s0.csscs, "CSSCs freed regions of dead payloads");
	} else {
		CHECK(t.bits * 2 >= t0.bits, "control: the stale bits stay (%zu of %zu)", t.bits,
		      t0.bits);
		CHECK((t.freed + t.dead) * 10 <= n,
		      "control: no garbage was seen (%zu of %zu regions freed or marked dead)",
		      t.freed + t.dead, n);
	}
	CHECK(s1.full_collections == s0.full_collections &&
	              s1.full_collections_remote == s0.full_collections_remote,
	      "no full collection");
	CHECK(intact(2), "the live payloads read back");
	CHECK(rh_verify(m) == 0, "the heap verifier found problems");
out:
	free(regs);
	free(ident);
	rh_mutator_detach(m);
}

int main(int argc, char **argv)
{
	control = argc > 3 && strcmp(argv[3], "control") == 0;
	/* The suite's pause budget: a twentieth to a quarter of it goes to
	 * rebuilding (rset.T6). */
	cluster_test ct = {.heap_mib = 128,
	                   .cache = 0.25,
	                   .timeout_ms = 5000,
	                   .extra_gc = control ? "\"pause_budget_ms\": 50, \"refresh\": false"
	                                       : "\"pause_budget_ms\": 50"};
	return cluster_test_main(&ct, argc, argv, &heap, run);
}
