/* A full marking by the tracers leaves the CPU server's cache as it can
 * (docs/distributed-gc.md, "Full collections", fullmark.M1).
 *
 * Old regions of nodes, all resident on the CPU server. In one region
 * every other node (by address) is made garbage; the others stay rooted.
 * After the tracers' full marking:
 * - the region with garbage has no page resident (the tracer wrote
 *   fillers there), and each dead node's header, read through the CPU
 *   server, is the tracer's filler, not the stale node header;
 * - a region whose every node is live keeps every page resident;
 * - every live node reads back intact, and the verifier agrees.
 *
 * usage: test-fullpages TRACERD PROVIDER
 */
#include <stdlib.h>

#include "gc/object.h"
#include "runtime/internal.h"
#include "runtime/remote.h"
#include "tests/dgc/forest.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"

#define NODES 40000u /* 2.5 MiB of nodes: a dozen regions */

struct node {
	uint64_t hdr;
	struct node *next;
	uint64_t id, chk, pad[4];
};

static rh_heap *heap;
static struct dgc_refs *all; /* global root */

static uint32_t region_of(uintptr_t p)
{
	return (uint32_t)((p - heap->base) >> heap->region_shift);
}

static int by_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* Pages of region r, in use, in each state: resident (CLEAN or DIRTY)
 * and evicted. */
static void page_states(uint32_t r, size_t *resident, size_t *evicted)
{
	const rh_region *rg = &heap->regions[r];
	*resident = *evicted = 0;
	for (uintptr_t a = rg->start; a < rg->top; a += RH_PAGE_SIZE) {
		uint8_t st = rh_swap_page_state(heap->swap, a);
		*resident += st == RH_PAGE_CLEAN || st == RH_PAGE_DIRTY;
		*evicted += st == RH_PAGE_EVICTED;
	}
}

static void run(void)
{
	rh_error err;
	rh_set_conservative(heap, false);
	static const uint32_t ptrs[] = {8};
	rh_type_desc nd = {.name = "fp-node",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(struct node),
	                   .ptr_offsets = ptrs,
	                   .n_ptrs = 1};
	rh_type_id t_node = rh_type_register(heap, &nd, &err);
	rh_type_id t_refs = rh_type_register(heap, &dgc_refs_desc, &err);
	rh_global_add(heap, (void **)&all);
	rh_mutator *m = rh_mutator_attach(heap, &err);
	uintptr_t *addr = calloc(NODES, sizeof *addr);
	CHECK(t_node && t_refs && m && addr, "register types and attach: %s", err.msg);
	if (!m || !addr)
		goto out;
	CHECK(heap->offload_on && heap->swap, "a disaggregated heap with offload on");
	if (!heap->offload_on || !heap->swap)
		goto out;

	all = rh_alloc_array(m, t_refs, NODES);
	CHECK(all != NULL, "allocate the node table");
	if (!all)
		goto out;
	for (uint32_t i = 0; i < NODES; i++) {
		struct node *x = rh_alloc(m, t_node);
		if (!x) {
			CHECK(0, "allocate node %u: %s", i, rh_last_error()->msg);
			goto out;
		}
		x->id = i + 1;
		x->chk = rng_mix(i + 1);
		rh_write_ref(m, &all->e[i], x);
	}
	/* Old, in regions of nodes only (the table is humongous). */
	rh_collect(m, 1);
	for (int k = 0; k < 4; k++)
		rh_collect(m, 0);

	/* Region A: the region of the middle node. Every other node of A by
	 * address dies (its neighbours live, so each becomes one filler of
	 * its own); region B, another node region, stays whole. */
	for (uint32_t i = 0; i < NODES; i++)
		addr[i] = (uintptr_t)all->e[i];
	uint32_t ra = region_of(addr[NODES / 2]), rb = UINT32_MAX;
	for (uint32_t i = 0; i < NODES && rb == UINT32_MAX; i++) {
		uint32_t r = region_of(addr[i]);
		if (r != ra && heap->regions[r].kind == RH_REGION_OLD &&
		    (heap->regions[r].top - heap->regions[r].start) * 2 > heap->region_size)
			rb = r;
	}
	CHECK(heap->regions[ra].kind == RH_REGION_OLD && rb != UINT32_MAX,
	      "two old regions of nodes (%u, %u)", ra, rb);
	if (rb == UINT32_MAX)
		goto out;
	uintptr_t *in_a = malloc(NODES * sizeof *in_a);
	size_t n_a = 0;
	for (uint32_t i = 0; i < NODES; i++)
		if (region_of(addr[i]) == ra)
			in_a[n_a++] = addr[i];
	qsort(in_a, n_a, sizeof *in_a, by_addr);
	uintptr_t *dead = malloc(n_a * sizeof *dead);
	size_t n_dead = 0;
	for (size_t k = 1; k + 1 < n_a; k += 2)
		dead[n_dead++] = in_a[k];
	qsort(dead, n_dead, sizeof *dead, by_addr);
	for (uint32_t i = 0; i < NODES; i++)
		if (bsearch(&addr[i], dead, n_dead, sizeof *dead, by_addr))
			rh_write_ref(m, &all->e[i], NULL);
	CHECK(n_dead > 100, "%zu nodes of region %u die", n_dead, ra);

	/* Everything resident before the full marking. */
	uint64_t sum = 0;
	for (uint32_t i = 0; i < NODES; i++)
		sum += ((volatile struct node *)addr[i])->id;
	size_t res, ev;
	page_states(rb, &res, &ev);
	CHECK(ev == 0 && res > 0, "region %u is resident before (%zu resident, %zu evicted)", rb,
	      res, ev);
	uint64_t node_hdr = *(volatile uint64_t *)dead[0];
	CHECK(rh_hdr_type(node_hdr) == t_node, "a dead node's header names its type before");

	rh_stats s0, s1;
	rh_stats_get(heap, &s0);
	rh_collect(m, 1);
	rh_stats_get(heap, &s1);
	CHECK(s1.full_collections_remote == s0.full_collections_remote + 1,
	      "the full collection was the tracers' marking");

	/* Nothing moved (a full marking moves nothing). */
	size_t moved = 0;
	for (uint32_t i = 0; i < NODES; i++)
		moved += all->e[i] && (uintptr_t)all->e[i] != addr[i];
	CHECK(heap->regions[ra].kind == RH_REGION_OLD && moved == 0,
	      "region %u is still old and no live node moved (%zu did)", ra, moved);
	page_states(ra, &res, &ev);
	CHECK(res == 0, "region %u, where the tracer wrote fillers, has %zu pages resident", ra,
	      res);
	size_t stale = 0;
	for (size_t k = 0; k < n_dead; k++)
		stale += rh_hdr_type(*(volatile uint64_t *)dead[k]) != RH_FILLER_TYPE;
	CHECK(stale == 0, "%zu of %zu dead nodes still read as nodes through the CPU server", stale,
	      n_dead);
	page_states(rb, &res, &ev);
	CHECK(ev == 0 && res > 0, "region %u, all live, stays resident (%zu resident, %zu evicted)",
	      rb, res, ev);

	size_t bad = 0;
	uint64_t sum2 = 0;
	for (uint32_t i = 0; i < NODES; i++) {
		struct node *x = all->e[i];
		if (!x)
			continue;
		bad += x->id != i + 1 || x->chk != rng_mix(i + 1);
		sum2 += x->id;
	}
	CHECK(bad == 0 && sum2 > 0 && sum2 < sum, "%zu live nodes damaged", bad);
	CHECK(rh_verify(m) == 0, "the heap verifier found problems after the full marking");
	free(in_a);
	free(dead);
out:
	free(addr);
	if (m)
		rh_mutator_detach(m);
}

int main(int argc, char **argv)
{
	/* A cache as large as the heap: nothing is evicted but by a flush. */
	cluster_test ct = {.cache = 1.0, .timeout_ms = 5000, .extra_gc = "\"order\": \"dfs\""};
	return cluster_test_main(&ct, argc, argv, &heap, run);
}
