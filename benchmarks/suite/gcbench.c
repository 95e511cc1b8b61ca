/* GCBench (Ellis, Kovac and Boehm's shape) on the suite's harness; the
 * schedule, node count and trees are benchmarks/gc's (gcb_workload.h,
 * gcb_trees_rheap.h). --size is the long-lived tree's depth; the stretch
 * tree is two deeper, temporary trees go from depth 4 to --size, 4
 * rounds, 500,000 long-lived doubles. */
#include <stdio.h>

#include "gcb_trees_rheap.h"
#include "gcb_workload.h"
#include "harness.h"

#define MAX_DEPTH 24
#define SLOTS (2 + 3 * (MAX_DEPTH + 3))

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
	gcb_trees tr = {.node = rs_type(&env, &gb_node_desc), .oom = rs_oom};
	rh_type_id doubles_t = rs_type(&env, &gb_doubles_desc);
	rs_start(&env);
	rh_mutator *mut = tr.m = env.m;
	void *slots[SLOTS] = {0};
	rh_frame frame;
	rh_push_frame(mut, &frame, slots, SLOTS);
	void **long_lived = &slots[0], **array = &slots[1], **sp = &slots[2];

	sp[0] = gb_make(&tr, sp + 1, p.stretch_depth);
	uint64_t sum = gb_count(&tr, sp[0], p.stretch_depth);
	sp[0] = gb_new_node(&tr, p.long_depth);
	gb_populate(&tr, sp, p.long_depth);
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
				sum += gb_iteration(&tr, sp, d);
				rh_safepoint(mut);
			}
		}
		rs_progress(&env, "round %llu/%llu", (unsigned long long)round + 1,
		            (unsigned long long)p.rounds);
	}
	sum += gb_count(&tr, *long_lived, p.long_depth);
	a = (double *)((char *)*array + RH_ARRAY_HEADER_SIZE);
	bool ok = tr.bad_nodes == 0 && rh_array_length(*array) == p.array_size;
	for (uint64_t i = 0; ok && i < p.array_size; i++)
		ok = a[i] == gb_array_value(i);
	rh_pop_frame(mut, &frame);
	ok = ok && sum == gb_expected(&p);
	if (!ok)
		fprintf(stderr, "gcbench: %llu nodes counted (expected %llu), %llu bad\n",
		        (unsigned long long)sum, (unsigned long long)gb_expected(&p),
		        (unsigned long long)tr.bad_nodes);
	return rs_finish(&env, sum, ok);
}
