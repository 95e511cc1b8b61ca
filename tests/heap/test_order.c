/* Traversal order: evacuation places objects in the order the collector
 * reaches them. A complete binary tree of 7 levels is allocated in a
 * scrambled order (with garbage in between); after a collection its nodes,
 * listed in DFS preorder (order "dfs") or level order (order "bfs"), must
 * lie at increasing addresses. Which child a traversal takes first is not
 * fixed by the design, so both field order and reverse field order are
 * accepted; anything else fails. With reordering off, the collector marks,
 * then copies in address order (its two-pass path): nodes must keep their
 * relative order.
 *
 * Conservative scanning is off: a pinned node would keep its place. One
 * copying thread: with several, each copies its share of the traversal in
 * order but the shares go to different regions (docs/collector.md,
 * "Parallel copying"). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "th.h"

#define LEVELS 7
#define NODES ((1u << LEVELS) - 1)

struct node {
	uint64_t hdr;
	struct node *kid[2];
	uint64_t id;
};

static rh_type_id t_node, t_bytes;

/* Nodes in DFS preorder (first = which child first) into out[]. */
static size_t dfs(struct node *n, int first, struct node **out, size_t k)
{
	if (!n)
		return k;
	out[k++] = n;
	k = dfs(n->kid[first], first, out, k);
	return dfs(n->kid[!first], first, out, k);
}

static size_t bfs(struct node *root, int first, struct node **out)
{
	size_t head = 0, tail = 0;
	out[tail++] = root;
	while (head < tail) {
		struct node *n = out[head++];
		for (int c = 0; c < 2; c++) {
			struct node *k = n->kid[c ^ first];
			if (k && tail < NODES)
				out[tail++] = k;
		}
	}
	return tail;
}

/* Index of the first node not above its predecessor, or 0 if increasing. */
static size_t first_disorder(struct node **seq, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if ((uintptr_t)seq[i] <= (uintptr_t)seq[i - 1])
			return i;
	return 0;
}

/* Check that ids form the tree built below (heap numbering, root 0). */
static size_t tree_errors(struct node *n, uint64_t id)
{
	if (!n)
		return 1;
	if (rh_object_type(n) != t_node || n->id != id)
		return 1;
	if (2 * id + 1 >= NODES)
		return (n->kid[0] != NULL) + (n->kid[1] != NULL);
	return tree_errors(n->kid[0], 2 * id + 1) + tree_errors(n->kid[1], 2 * id + 2);
}

static int in_order(struct node *root, rh_order order, const char *when, int quiet)
{
	static struct node *seq[NODES];
	const char *name = order == RH_ORDER_DFS ? "DFS" : "BFS";
	size_t bad[2];
	for (int first = 0; first < 2; first++) {
		size_t n = order == RH_ORDER_DFS ? dfs(root, first, seq, 0) : bfs(root, first, seq);
		if (n != NODES)
			return 0;
		bad[first] = first_disorder(seq, n);
		if (bad[first] == 0)
			return 1;
	}
	if (!quiet)
		fprintf(stderr,
		        "%s %s: not in %s order: position %zu (field order), %zu (reverse)\n", name,
		        when, name, bad[0], bad[1]);
	return 0;
}

/* Nodes by id, from the tree built below. */
static void by_id(struct node *n, uint64_t id, struct node **out)
{
	if (!n || id >= NODES)
		return;
	out[id] = n;
	by_id(n->kid[0], 2 * id + 1, out);
	by_id(n->kid[1], 2 * id + 2, out);
}

/* Reordering off: the nodes' address order after a collection must be
 * their address order before it. 1 if so. */
static int kept_order(struct node *root, struct node *const *old, const char *when)
{
	static struct node *now[NODES];
	memset(now, 0, sizeof now);
	by_id(root, 0, now);
	for (uint32_t i = 0; i < NODES; i++)
		for (uint32_t j = 0; j < NODES; j++)
			if (old[i] < old[j] && !(now[i] < now[j])) {
				fprintf(stderr, "reorder off %s: nodes %u and %u swapped\n", when,
				        i, j);
				return 0;
			}
	return 1;
}

static void run(rh_order order, int reorder)
{
	const char *name = !reorder ? "address" : order == RH_ORDER_DFS ? "dfs" : "bfs";
	rh_config cfg;
	th_config(&cfg, 64, 256);
	cfg.order = order;
	cfg.reorder = reorder;
	cfg.copy_threads = 1;
	rh_heap *h = th_open(&cfg);
	rh_set_conservative(h, false);
	static const uint32_t ptrs[] = {8, 16};
	rh_type_desc d = {.name = "node", .layout = RH_LAYOUT_FIXED, .size = 32};
	d.ptr_offsets = ptrs;
	d.n_ptrs = 2;
	t_node = th_type(h, &d);
	rh_type_desc b = {.name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16};
	t_bytes = th_type(h, &b);
	rh_mutator *m = th_attach(h);

	static void *slots[NODES];
	memset(slots, 0, sizeof slots);
	rh_frame f;
	rh_push_frame(m, &f, slots, NODES);

	uint32_t perm[NODES];
	for (uint32_t i = 0; i < NODES; i++)
		perm[i] = i;
	uint64_t seed = 0x5eed + (uint64_t)order;
	for (uint32_t i = NODES - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(rng_next(&seed) % (i + 1));
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (uint32_t k = 0; k < NODES; k++) {
		struct node *n = rh_alloc(m, t_node);
		REQUIRE(n != NULL);
		n->id = perm[k];
		slots[perm[k]] = n;
		REQUIRE(rh_alloc_array(m, t_bytes, rng_next(&seed) % 200) != NULL);
	}
	for (uint32_t i = 0; 2 * i + 2 < NODES; i++) {
		struct node *n = slots[i];
		rh_write_ref(m, (void **)&n->kid[0], slots[2 * i + 1]);
		rh_write_ref(m, (void **)&n->kid[1], slots[2 * i + 2]);
	}
	for (uint32_t i = 1; i < NODES; i++)
		slots[i] = NULL;

	CHECK(tree_errors(slots[0], 0) == 0, "%s: tree broken before collecting", name);
	/* The test can fail: the scrambled layout is not in traversal order. */
	CHECK(!in_order(slots[0], order, "before", 1), "%s: allocation order already sorted", name);

	static struct node *old[NODES];
	memset(old, 0, sizeof old);
	by_id(slots[0], 0, old);
	void *before = slots[0];
	rh_collect(m, 0);
	CHECK(slots[0] != before, "%s: the root did not move", name);
	CHECK(tree_errors(slots[0], 0) == 0, "%s: tree broken by the partial collection", name);
	if (reorder) {
		CHECK(in_order(slots[0], order, "after partial", 0), "%s: partial collection",
		      name);
	} else {
		CHECK(kept_order(slots[0], old, "after partial"), "%s: partial collection", name);
		CHECK(!in_order(slots[0], order, "after partial", 1), "%s: reordered anyway", name);
		memset(old, 0, sizeof old);
		by_id(slots[0], 0, old);
	}

	rh_collect(m, 1);
	CHECK(tree_errors(slots[0], 0) == 0, "%s: tree broken by the full collection", name);
	if (reorder)
		CHECK(in_order(slots[0], order, "after full", 0), "%s: full collection", name);
	else
		CHECK(kept_order(slots[0], old, "after full"), "%s: full collection", name);

	CHECK(rh_verify(m) == 0);
	rh_pop_frame(m, &f);
	rh_mutator_detach(m);
	rh_heap_close(h);
}

int main(void)
{
	run(RH_ORDER_DFS, 1);
	run(RH_ORDER_BFS, 1);
	run(RH_ORDER_DFS, 0);
	return check_done();
}
