/* binary-trees on the suite's harness, so that it runs under any config
 * and reports like the other workloads; the schedule and its closed-form
 * node count are benchmarks/gc's (gcb_workload.h). --size is the maximum
 * depth (minimum depth 4). */
#include <stdio.h>

#include "gcb_workload.h"
#include "harness.h"

typedef struct node {
	uint64_t rh_header;
	struct node *left, *right;
} node;

#define MAX_DEPTH 26
#define SLOTS (2 + 2 * (MAX_DEPTH + 2))

static rh_mutator *mut;
static rh_type_id node_t;

/* Children first, held in sp[0] and sp[1] while the sibling and the
 * parent are allocated (either may move them). */
static node *make(void **sp, uint64_t depth)
{
	if (depth == 0) {
		node *leaf = rh_alloc(mut, node_t);
		if (!leaf)
			rs_oom();
		return leaf;
	}
	sp[0] = make(sp + 2, depth - 1);
	sp[1] = make(sp + 2, depth - 1);
	node *n = rh_alloc(mut, node_t);
	if (!n)
		rs_oom();
	rh_write_ref(mut, (void **)&n->left, sp[0]);
	rh_write_ref(mut, (void **)&n->right, sp[1]);
	sp[0] = sp[1] = NULL;
	return n;
}

static uint64_t count(const node *n)
{
	return 1 + (n->left ? count(n->left) : 0) + (n->right ? count(n->right) : 0);
}

int main(int argc, char **argv)
{
	rs_env env;
	rs_init(&env, "binary-trees", 19, argc, argv);
	bt_params p = {BT_DEFAULT_MIN, env.size};
	if (p.max_depth > MAX_DEPTH - 1) {
		fprintf(stderr, "binary-trees: --size is at most %d\n", MAX_DEPTH - 1);
		return 2;
	}
	bt_params_fix(&p);
	rs_open(&env);
	static const uint32_t ptrs[] = {offsetof(node, left), offsetof(node, right)};
	node_t = rs_type(&env, &(rh_type_desc){.name = "bt_node",
	                                       .layout = RH_LAYOUT_FIXED,
	                                       .size = sizeof(node),
	                                       .ptr_offsets = ptrs,
	                                       .n_ptrs = 2});
	rs_start(&env);
	mut = env.m;
	void *slots[SLOTS] = {0};
	rh_frame frame;
	rh_push_frame(mut, &frame, slots, SLOTS);
	void **long_lived = &slots[0], **tree = &slots[1], **sp = &slots[2];

	*tree = make(sp, p.max_depth + 1);
	uint64_t sum = count(*tree);
	*tree = NULL;
	*long_lived = make(sp, p.max_depth);
	for (uint64_t d = p.min_depth; d <= p.max_depth; d += 2) {
		uint64_t iters = bt_iterations(&p, d);
		for (uint64_t i = 0; i < iters; i++) {
			*tree = make(sp, d);
			sum += count(*tree);
			*tree = NULL;
			rh_safepoint(mut);
		}
		rs_progress(&env, "%llu trees of depth %llu", (unsigned long long)iters,
		            (unsigned long long)d);
	}
	sum += count(*long_lived);
	rh_pop_frame(mut, &frame);
	bool ok = sum == bt_expected(&p);
	if (!ok)
		fprintf(stderr, "binary-trees: counted %llu nodes, expected %llu\n",
		        (unsigned long long)sum, (unsigned long long)bt_expected(&p));
	return rs_finish(&env, sum, ok);
}
