/* binary-trees on the suite's harness, so that it runs under any config
 * and reports like the other workloads; the schedule, its closed-form node
 * count (gcb_workload.h) and the trees (bt_trees_rheap.c) are
 * benchmarks/gc's. --size is the maximum depth (minimum depth 4). */
#include <stdio.h>

#include "bt_trees_rheap.h"
#include "gcb_workload.h"
#include "harness.h"

#define MAX_DEPTH 26
#define SLOTS (2 + BT_MAKE_SLOTS(MAX_DEPTH))

static bt_trees trees;

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
	trees.node = rs_type(&env, &bt_node_desc);
	rs_start(&env);
	trees.m = env.m;
	trees.oom = rs_oom;
	void *slots[SLOTS] = {0};
	rh_frame frame;
	rh_push_frame(trees.m, &frame, slots, SLOTS);
	void **long_lived = &slots[0], **tree = &slots[1], **sp = &slots[2];

	*tree = bt_make(&trees, sp, p.max_depth + 1);
	uint64_t sum = bt_count(*tree);
	*tree = NULL;
	*long_lived = bt_make(&trees, sp, p.max_depth);
	for (uint64_t d = p.min_depth; d <= p.max_depth; d += 2) {
		uint64_t iters = bt_iterations(&p, d);
		for (uint64_t i = 0; i < iters; i++) {
			*tree = bt_make(&trees, sp, d);
			sum += bt_count(*tree);
			*tree = NULL;
			rh_safepoint(trees.m);
		}
		rs_progress(&env, "%llu trees of depth %llu", (unsigned long long)iters,
		            (unsigned long long)d);
	}
	sum += bt_count(*long_lived);
	rh_pop_frame(trees.m, &frame);
	bool ok = sum == bt_expected(&p);
	if (!ok)
		fprintf(stderr, "binary-trees: counted %llu nodes, expected %llu\n",
		        (unsigned long long)sum, (unsigned long long)bt_expected(&p));
	return rs_finish(&env, sum, ok);
}
