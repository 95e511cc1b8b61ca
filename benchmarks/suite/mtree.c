/* mtree: N mutator threads (--threads), each with its own long-lived tree
 * and its own churn, the multi-threaded workload of the suite. --size is
 * the long-lived nodes of all threads together. The total work and the
 * total live data do not depend on N: thread i keeps 1/N of the
 * long-lived nodes and of a ring of RING recent trees, and builds the
 * temporary trees j = i, i + N, i + 2N, ... of one global sequence whose
 * sizes are a function of (seed, j). A temporary tree is built bottom-up,
 * counted, and stored into the thread's ring (an old-to-young store),
 * where it replaces, and first verifies, the tree stored one ring length
 * earlier. Each thread counts its long-lived tree after building it and
 * after each quarter of its trees, safepoint by safepoint.
 *
 * Checksum: the nodes counted in the temporary trees and the long-lived
 * ones, CHECKS x size + the sum of the sequence's sizes, computed without
 * the heap and so the same for every N. Every node stores the size of
 * its subtree, so a lost or misplaced subtree also fails the run.
 * benchmarks/jvm/MTree.java is the same program in Java. */
#include <stdio.h>

#include "harness.h"

typedef struct node {
	uint64_t rh_header;
	struct node *left, *right;
	uint64_t size; /* nodes in this subtree */
} node;

#define MIN_TREE 32    /* smallest temporary tree */
#define SPREAD 2016    /* temporary trees have MIN_TREE .. MIN_TREE+SPREAD-1 nodes */
#define MEAN_TREE 1039 /* their mean, rounded down */
#define CHURN 16       /* temporary nodes built per long-lived node */
#define RING 16        /* ring slots of all threads together */
#define CHECKS 5       /* counts of each long-lived tree */
#define CHUNK_DEPTH 6  /* long-lived counts poll a safepoint per subtree at this depth */
#define MAX_DEPTH 64   /* of a balanced tree of at most 2^63 nodes */
#define SLOTS (3 + 2 * MAX_DEPTH)

typedef struct plan {
	uint64_t seed, trees;
	rh_type_id node_t, ring_t;
	unsigned threads;
} plan;

typedef struct result {
	_Alignas(64) uint64_t sum; /* one cache line per thread */
	uint64_t bad;
} result;

static result results[RS_MAX_THREADS];

/* Tree j's size: splitmix64 of (seed, j), so any thread computes it. */
static uint64_t tree_size(uint64_t seed, uint64_t j)
{
	uint64_t s = seed + j * 0x9e3779b97f4a7c15ull;
	return MIN_TREE + rs_rand(&s) % SPREAD;
}

static uint64_t share(uint64_t total, unsigned n, unsigned i)
{
	return total / n + (i < total % n);
}

/* A balanced tree of n nodes, children first. sp[0] and sp[1] hold the
 * subtrees while the parent is allocated (a collection may move them). */
static node *make(rh_mutator *m, rh_type_id t, void **sp, uint64_t n)
{
	if (n == 0)
		return NULL;
	rh_safepoint(m);
	uint64_t left = (n - 1) / 2;
	sp[0] = make(m, t, sp + 2, left);
	sp[1] = make(m, t, sp + 2, n - 1 - left);
	node *p = rh_alloc(m, t);
	if (!p)
		rs_oom();
	p->size = n;
	rh_write_ref(m, (void **)&p->left, sp[0]);
	rh_write_ref(m, (void **)&p->right, sp[1]);
	sp[0] = sp[1] = NULL;
	return p;
}

/* Nodes counted; *bad counts nodes whose size field disagrees. Raw
 * pointers are safe: counting neither allocates nor polls. */
static uint64_t count(const node *p, uint64_t *bad)
{
	if (!p)
		return 0;
	uint64_t c = 1 + count(p->left, bad) + count(p->right, bad);
	*bad += c != p->size;
	return c;
}

/* Nodes above CHUNK_DEPTH, counted without descending further. */
static uint64_t count_top(const node *p, int depth)
{
	if (!p || depth == CHUNK_DEPTH)
		return 0;
	return 1 + count_top(p->left, depth + 1) + count_top(p->right, depth + 1);
}

/* A long-lived tree counted one subtree at a time, polling a safepoint
 * between them so that the other threads' collections do not wait for a
 * whole count: the walk restarts from the root slot, which a collection
 * updates. */
static uint64_t count_long(rh_mutator *m, void **root, uint64_t *bad)
{
	uint64_t c = count_top(*root, 0);
	for (uint32_t path = 0; path < 1u << CHUNK_DEPTH; path++) {
		const node *p = *root;
		for (int d = 0; d < CHUNK_DEPTH && p; d++)
			p = (path >> d) & 1 ? p->right : p->left;
		c += count(p, bad);
		rh_safepoint(m);
	}
	return c;
}

/* A dropped or final ring tree: intact, its size field right. */
static void check_tree(const node *p, result *r)
{
	if (!p)
		return;
	uint64_t bad = 0, c = count(p, &bad);
	r->bad += bad + (c != p->size);
}

static void check_long(rh_mutator *m, void **root, uint64_t nodes, result *r)
{
	uint64_t c = count_long(m, root, &r->bad);
	r->sum += c;
	r->bad += c != nodes;
}

static void **ring_slots(void *ring)
{
	return (void **)((char *)ring + RH_ARRAY_HEADER_SIZE);
}

static void work(rs_env *e, rh_mutator *m, unsigned i, void *arg)
{
	const plan *pl = arg;
	result *r = &results[i];
	uint64_t nodes = share(e->size, pl->threads, i), ring = share(RING, pl->threads, i);
	void *slots[SLOTS] = {0};
	rh_frame frame;
	rh_push_frame(m, &frame, slots, SLOTS);
	void **long_lived = &slots[0], **rs = &slots[1], **tree = &slots[2], **sp = &slots[3];
	*long_lived = make(m, pl->node_t, sp, nodes);
	*rs = rh_alloc_array(m, pl->ring_t, ring);
	if (!*rs)
		rs_oom();
	check_long(m, long_lived, nodes, r);
	uint64_t mine = share(pl->trees, pl->threads, i), k = 0;
	unsigned quarter = 1; /* the next of the CHECKS - 1 counts after the build */
	for (uint64_t j = i; j < pl->trees; j += pl->threads, k++) {
		uint64_t n = tree_size(pl->seed, j);
		*tree = make(m, pl->node_t, sp, n);
		uint64_t c = count(*tree, &r->bad);
		r->sum += c;
		r->bad += c != n;
		void **slot = &ring_slots(*rs)[k % ring];
		check_tree(*slot, r);
		rh_write_ref(m, slot, *tree);
		*tree = NULL;
		rh_safepoint(m);
		for (; quarter < CHECKS && k + 1 >= quarter * mine / (CHECKS - 1); quarter++) {
			check_long(m, long_lived, nodes, r);
			if (i == 0)
				rs_progress(e, "thread 0: %llu of %llu trees",
				            (unsigned long long)k + 1, (unsigned long long)mine);
		}
	}
	for (; quarter < CHECKS; quarter++) /* a thread with no trees at all */
		check_long(m, long_lived, nodes, r);
	for (uint64_t s = 0; s < ring; s++)
		check_tree(ring_slots(*rs)[s], r);
	rh_pop_frame(m, &frame);
}

int main(int argc, char **argv)
{
	rs_env env;
	rs_init(&env, "mtree", 2000000, argc, argv);
	if (env.size < 64 * MEAN_TREE || env.size > (1ull << 40) || env.threads > RING) {
		fprintf(stderr, "mtree: --size must be in %d..%llu and --threads at most %d\n",
		        64 * MEAN_TREE, 1ull << 40, RING);
		return 2;
	}
	plan pl = {.seed = env.seed, .trees = CHURN * env.size / MEAN_TREE, .threads = env.threads};
	rs_open(&env);
	static const uint32_t ptrs[] = {offsetof(node, left), offsetof(node, right)};
	pl.node_t = rs_type(&env, &(rh_type_desc){.name = "mt_node",
	                                          .layout = RH_LAYOUT_FIXED,
	                                          .size = sizeof(node),
	                                          .ptr_offsets = ptrs,
	                                          .n_ptrs = 2});
	pl.ring_t = rs_type(&env, &(rh_type_desc){.name = "mt_ring",
	                                          .layout = RH_LAYOUT_REF_ARRAY,
	                                          .size = RH_ARRAY_HEADER_SIZE,
	                                          .elem_size = 8});
	env.multi = true;
	rs_start(&env);
	rs_run_threads(&env, work, &pl);

	uint64_t expected = CHECKS * env.size, sum = 0, bad = 0;
	for (uint64_t j = 0; j < pl.trees; j++)
		expected += tree_size(pl.seed, j);
	for (unsigned i = 0; i < env.threads; i++)
		sum += results[i].sum, bad += results[i].bad;
	bool ok = sum == expected && bad == 0;
	if (!ok)
		fprintf(stderr, "mtree: counted %llu nodes (expected %llu), %llu bad\n",
		        (unsigned long long)sum, (unsigned long long)expected,
		        (unsigned long long)bad);
	return rs_finish(&env, sum, ok);
}
