/* Cross-region garbage cycles spanning two tracers are freed by the
 * full-heap collection (docs/distributed-gc.md, "Full-heap marking").
 *
 * Old regions in both partitions hold rings of nodes whose every hop
 * crosses partitions. Once unrooted, each ring keeps itself alive through
 * the remembered sets, so partial collections must keep them; the full
 * collection, marked by the tracers together, must free every region that
 * held only ring garbage, keep every rooted ring intact, and do it without
 * pulling the garbage into the CPU server's cache.
 *
 * usage: test-cycles TRACERD PROVIDER
 */
#include <stdlib.h>

#include "runtime/internal.h"
#include "runtime/remote.h"
#include "tests/dgc/forest.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"

#define HEAP_MIB 128
#define NODES (1u << 20) /* 64 MiB of nodes: more than one partition holds */
#define RING 4

struct node {
	uint64_t hdr;
	struct node *next, *cross;
	uint64_t id, chk, pad[3];
};

static rh_heap *heap;
static rh_type_id t_node, t_refs;
static struct dgc_refs *all;   /* global root: every node, until the rings are linked */
static struct dgc_refs *heads; /* global root: the live rings */

static uint32_t region_of(const void *p)
{
	return (uint32_t)(((uintptr_t)p - heap->base) >> heap->region_shift);
}

/* Node indices, split by the partition (tracer) that holds them and by
 * whether their region becomes garbage. */
typedef struct list {
	uint32_t *v;
	size_t n;
} list;

static void push(list *l, uint32_t i)
{
	l->v[l->n++] = i;
}

/* Link l's nodes with the other partition's o into rings of RING nodes that
 * alternate partitions; leftovers become one-node rings. Returns the head
 * indices (the first node of each ring). */
static size_t link_rings(rh_mutator *m, const list *a, const list *b, uint32_t *head_out)
{
	size_t pairs = (a->n < b->n ? a->n : b->n) / 2, n_heads = 0;
	for (size_t k = 0; k < pairs; k++) {
		struct node *r[RING] = {all->e[a->v[2 * k]], all->e[b->v[2 * k]],
		                        all->e[a->v[2 * k + 1]], all->e[b->v[2 * k + 1]]};
		for (int j = 0; j < RING; j++) {
			rh_write_ref(m, (void **)&r[j]->next, r[(j + 1) % RING]);
			rh_write_ref(m, (void **)&r[j]->cross, r[(j + 2) % RING]);
		}
		head_out[n_heads++] = a->v[2 * k];
	}
	for (size_t k = 2 * pairs; k < a->n; k++) {
		struct node *x = all->e[a->v[k]];
		rh_write_ref(m, (void **)&x->next, x);
		head_out[n_heads++] = a->v[k];
	}
	for (size_t k = 2 * pairs; k < b->n; k++) {
		struct node *x = all->e[b->v[k]];
		rh_write_ref(m, (void **)&x->next, x);
		head_out[n_heads++] = b->v[k];
	}
	return n_heads;
}

static int region_kind(uint32_t r)
{
	return heap->regions[r].kind;
}

static void run(void)
{
	rh_error err;
	/* Precise roots only: a stale native-stack word must not keep a ring. */
	rh_set_conservative(heap, false);
	static const uint32_t ptrs[] = {8, 16};
	rh_type_desc nd = {.name = "cycle-node",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(struct node),
	                   .ptr_offsets = ptrs,
	                   .n_ptrs = 2};
	t_node = rh_type_register(heap, &nd, &err);
	t_refs = rh_type_register(heap, &dgc_refs_desc, &err);
	rh_global_add(heap, (void **)&all);
	rh_global_add(heap, (void **)&heads);
	rh_mutator *m = rh_mutator_attach(heap, &err);
	CHECK(t_node && t_refs && m, "register types and attach: %s", err.msg);
	if (!m)
		goto out;

	/* Build, then make everything old (docs/collector.md: a full
	 * collection, then survivors are promoted within a few pauses). */
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
	rh_collect(m, 1);
	for (int k = 0; k < 4; k++)
		rh_collect(m, 0);

	/* Classify: per partition, every other node-holding old region
	 * becomes garbage. */
	list la = {calloc(NODES, 4), 0}, lb = {calloc(NODES, 4), 0};
	list ga = {calloc(NODES, 4), 0}, gb = {calloc(NODES, 4), 0};
	uint8_t *role = calloc(heap->n_regions, 1); /* 0 none, 1 live, 2 garbage, 3 mixed */
	size_t part_regions[2] = {0, 0};
	int not_old = 0;
	for (uint32_t i = 0; i < NODES; i++) {
		uint32_t r = region_of(all->e[i]);
		if (region_kind(r) != RH_REGION_OLD)
			not_old++;
		if (!role[r]) {
			size_t p = rh_remote_host_of(heap->remote, r);
			role[r] = p < 2 && (part_regions[p]++ & 1) ? 2 : 1;
		}
	}
	CHECK(not_old == 0, "%d nodes are not in old regions after promotion", not_old);
	CHECK(part_regions[0] >= 8 && part_regions[1] >= 8,
	      "nodes span %zu regions on tracer 0 and %zu on tracer 1 (want >= 8 each)",
	      part_regions[0], part_regions[1]);
	/* A region holding anything but nodes (the table is humongous, so
	 * nothing should) is kept live so that its region is not expected
	 * to be freed. */
	for (uint32_t i = 0; i < NODES; i++) {
		uint32_t r = region_of(all->e[i]);
		size_t p = rh_remote_host_of(heap->remote, r);
		list *l = role[r] == 2 ? (p == 0 ? &ga : &gb) : (p == 0 ? &la : &lb);
		push(l, i);
	}
	uint64_t garbage_regions = 0, garbage_bytes = (ga.n + gb.n) * sizeof(struct node);
	for (uint32_t r = 0; r < heap->n_regions; r++)
		garbage_regions += role[r] == 2;
	printf("# %u nodes in %zu + %zu old regions (region %zu KiB); garbage: %zu + %zu nodes "
	       "in %llu regions, live: %zu + %zu nodes\n",
	       NODES, part_regions[0], part_regions[1], (size_t)heap->region_size >> 10, ga.n, gb.n,
	       (unsigned long long)garbage_regions, la.n, lb.n);

	/* Rings: every hop crosses partitions. */
	uint32_t *live_heads = malloc(NODES * sizeof *live_heads);
	uint32_t *dead_heads = malloc(NODES * sizeof *dead_heads);
	size_t n_live = link_rings(m, &la, &lb, live_heads);
	size_t n_dead = link_rings(m, &ga, &gb, dead_heads);
	(void)n_dead;
	heads = rh_alloc_array(m, t_refs, n_live);
	CHECK(heads != NULL, "allocate the ring heads");
	if (!heads)
		goto out;
	for (size_t k = 0; k < n_live; k++)
		rh_write_ref(m, &heads->e[k], all->e[live_heads[k]]);
	/* Expected ring contents, by id (live nodes may move). */
	uint64_t *ring_ids = calloc(n_live * RING, sizeof *ring_ids);
	for (size_t k = 0; k < n_live; k++) {
		struct node *x = heads->e[k];
		for (int j = 0; j < RING; j++, x = x->next)
			ring_ids[k * RING + j] = x->id;
	}
	all = NULL; /* the rings now hold each other up, nothing else does */

	/* Partial collections keep the unrooted rings: each region's
	 * remembered set names the other partition's ring members. */
	rh_stats s0, s1, s2;
	rh_stats_get(heap, &s0);
	for (int k = 0; k < 3; k++)
		rh_collect(m, 0);
	rh_stats_get(heap, &s1);
	uint64_t kept = 0;
	for (uint32_t r = 0; r < heap->n_regions; r++)
		kept += role[r] == 2 && region_kind(r) == RH_REGION_OLD;
	CHECK(kept == garbage_regions,
	      "partial collections freed %llu of %llu regions holding only garbage cycles "
	      "(their remembered sets should keep them)",
	      (unsigned long long)(garbage_regions - kept), (unsigned long long)garbage_regions);

	/* The full collection, marked by both tracers. */
	rh_collect(m, 1);
	rh_stats_get(heap, &s2);
	CHECK(s2.full_collections_remote == s1.full_collections_remote + 1,
	      "the full collection was marked by the tracers (%llu -> %llu)",
	      (unsigned long long)s1.full_collections_remote,
	      (unsigned long long)s2.full_collections_remote);
	uint64_t freed = 0;
	for (uint32_t r = 0; r < heap->n_regions; r++)
		freed += role[r] == 2 && region_kind(r) == RH_REGION_FREE;
	CHECK(freed == garbage_regions,
	      "the full collection freed %llu of %llu regions holding only garbage cycles",
	      (unsigned long long)freed, (unsigned long long)garbage_regions);
	uint64_t fetched = s2.bytes_fetched - s1.bytes_fetched;
	CHECK(fetched * 8 < garbage_bytes,
	      "the full collection fetched %llu bytes for %llu bytes of garbage (want < 1/8)",
	      (unsigned long long)fetched, (unsigned long long)garbage_bytes);
	printf("# partial collections: %llu (%llu CSSCs); full: freed %llu regions, fetched "
	       "%llu KiB, pause %.1f ms max\n",
	       (unsigned long long)(s1.collections - s0.collections),
	       (unsigned long long)(s1.csscs - s0.csscs), (unsigned long long)freed,
	       (unsigned long long)(fetched >> 10), (double)s2.max_pause_ns / 1e6);

	/* Every rooted ring is whole. */
	size_t bad = 0;
	for (size_t k = 0; k < n_live; k++) {
		struct node *x = heads->e[k];
		for (int j = 0; j < RING && x; j++, x = x->next) {
			uint64_t want = ring_ids[k * RING + j];
			if (!want)
				break; /* a one-node ring */
			if (x->id != want || x->chk != rng_mix(x->id))
				bad++;
		}
	}
	CHECK(bad == 0, "%zu live ring nodes lost or corrupted", bad);
	CHECK(rh_verify(m) == 0, "the heap verifier found problems after the full collection");
	free(ring_ids);
	free(live_heads);
	free(dead_heads);
	free(la.v);
	free(lb.v);
	free(ga.v);
	free(gb.v);
	free(role);
out:
	if (m)
		rh_mutator_detach(m);
}

int main(int argc, char **argv)
{
	/* Two tracers, copying depth-first. */
	cluster_test ct = {
	        .heap_mib = HEAP_MIB, .timeout_ms = 5000, .extra_gc = "\"order\": \"dfs\""};
	return cluster_test_main(&ct, argc, argv, &heap, run);
}
