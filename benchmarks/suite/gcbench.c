/* GCBench (Ellis, Kovac and Boehm's shape) on the suite's harness; the
 * schedule and node count are benchmarks/gc's (gcb_workload.h). --size is
 * the long-lived tree's depth; the stretch tree is two deeper, temporary
 * trees go from depth 4 to --size, 4 rounds, 500,000 long-lived doubles. */
#include <stdio.h>

#include "gcb_workload.h"
#include "harness.h"

typedef struct node {
	uint64_t rh_header;
	struct node *left, *right;
	int32_t i, j;
} node;

#define MAX_DEPTH 24
#define SLOTS (2 + 3 * (MAX_DEPTH + 3))

static rh_mutator *mut;
static rh_type_id node_t, doubles_t;
static uint64_t bad_nodes;

static node *new_node(uint64_t height)
{
	node *n = rh_alloc(mut, node_t);
	if (!n)
		rs_oom();
	n->i = (int32_t)height;
	n->j = (int32_t)(height * 7 + 3);
	return n;
}

/* Top-down: sp[0] holds the parent, which gets both children before they
 * are populated (sp[1], sp[2] keep them across the allocations). */
static void populate(void **sp, uint64_t height)
{
	if (height == 0)
		return;
	sp[1] = new_node(height - 1);
	sp[2] = new_node(height - 1);
	node *n = sp[0];
	rh_write_ref(mut, (void **)&n->left, sp[1]);
	rh_write_ref(mut, (void **)&n->right, sp[2]);
	sp[3] = sp[1];
	sp[1] = NULL;
	populate(sp + 3, height - 1);
	sp[3] = sp[2];
	sp[2] = NULL;
	populate(sp + 3, height - 1);
	sp[3] = NULL;
}

/* Bottom-up: children first (sp[0], sp[1]), then the parent. */
static node *make(void **sp, uint64_t height)
{
	if (height == 0)
		return new_node(0);
	sp[0] = make(sp + 2, height - 1);
	sp[1] = make(sp + 2, height - 1);
	node *n = new_node(height);
	rh_write_ref(mut, (void **)&n->left, sp[0]);
	rh_write_ref(mut, (void **)&n->right, sp[1]);
	sp[0] = sp[1] = NULL;
	return n;
}

static uint64_t count(const node *n, uint64_t height)
{
	if ((uint64_t)n->i != height || n->j != (int32_t)(height * 7 + 3) ||
	    (height == 0) != (n->left == NULL) || (height == 0) != (n->right == NULL)) {
		bad_nodes++;
		return 1;
	}
	if (height == 0)
		return 1;
	return 1 + count(n->left, height - 1) + count(n->right, height - 1);
}

int main(int argc, char **argv)
{
	rs_env env;
	rs_init(&env, "gcbench", 16, argc, argv);
	gb_params p = {env.size + 2, env.size, GB_DEFAULT_MIN, env.size, GB_DEFAULT_ARRAY, 4};
	if (env.size + 2 > MAX_DEPTH || gb_params_check(&p) != 0) {
		fprintf(stderr, "gcbench: --size must be in %d..%d\n", GB_DEFAULT_MIN,
		        MAX_DEPTH - 2);
		return 2;
	}
	rs_open(&env);
	static const uint32_t ptrs[] = {offsetof(node, left), offsetof(node, right)};
	node_t = rs_type(&env, &(rh_type_desc){.name = "gb_node",
	                                       .layout = RH_LAYOUT_FIXED,
	                                       .size = sizeof(node),
	                                       .ptr_offsets = ptrs,
	                                       .n_ptrs = 2});
	doubles_t = rs_type(&env, &(rh_type_desc){.name = "gb_doubles",
	                                          .layout = RH_LAYOUT_RECORD_ARRAY,
	                                          .size = RH_ARRAY_HEADER_SIZE,
	                                          .elem_size = sizeof(double)});
	rs_start(&env);
	mut = env.m;
	void *slots[SLOTS] = {0};
	rh_frame frame;
	rh_push_frame(mut, &frame, slots, SLOTS);
	void **long_lived = &slots[0], **array = &slots[1], **sp = &slots[2];

	sp[0] = make(sp + 1, p.stretch_depth);
	uint64_t sum = count(sp[0], p.stretch_depth);
	sp[0] = new_node(p.long_depth);
	populate(sp, p.long_depth);
	*long_lived = sp[0];
	sp[0] = NULL;
	*array = rh_alloc_array(mut, doubles_t, p.array_size);
	if (!*array)
		rs_oom();
	double *a = (double *)((char *)*array + RH_ARRAY_HEADER_SIZE);
	for (uint64_t i = 0; i < p.array_size; i++)
		a[i] = gb_array_value(i);
	for (uint64_t round = 0; round < p.rounds; round++) {
		for (uint64_t d = p.min_depth; d <= p.max_depth; d += 2) {
			uint64_t iters = gb_iterations(&p, d);
			for (uint64_t i = 0; i < iters; i++) {
				sp[0] = new_node(d);
				populate(sp, d);
				sum += count(sp[0], d);
				sp[0] = make(sp + 1, d);
				sum += count(sp[0], d);
				sp[0] = NULL;
				rh_safepoint(mut);
			}
		}
		rs_progress(&env, "round %llu/%llu", (unsigned long long)round + 1,
		            (unsigned long long)p.rounds);
	}
	sum += count(*long_lived, p.long_depth);
	a = (double *)((char *)*array + RH_ARRAY_HEADER_SIZE);
	bool ok = bad_nodes == 0 && rh_array_length(*array) == p.array_size;
	for (uint64_t i = 0; ok && i < p.array_size; i++)
		ok = a[i] == gb_array_value(i);
	rh_pop_frame(mut, &frame);
	ok = ok && sum == gb_expected(&p);
	if (!ok)
		fprintf(stderr, "gcbench: %llu nodes counted (expected %llu), %llu bad\n",
		        (unsigned long long)sum, (unsigned long long)gb_expected(&p),
		        (unsigned long long)bad_nodes);
	return rs_finish(&env, sum, ok);
}
