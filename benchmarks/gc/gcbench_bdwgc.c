/* gcbench on bdwgc: the comparison twin of gcbench_rheap.c. Same schedule
 * (gcb_workload.c) and allocation order; nodes from GC_MALLOC, the array
 * of doubles from GC_MALLOC_ATOMIC (bdwgc's pointer-free allocation). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <gc/gc.h>

#include "bdwgc_env.h"
#include "gcb_opts.h"
#include "gcb_workload.h"

typedef struct gb_node {
	struct gb_node *left, *right;
	int32_t i, j; /* i = height of the subtree, j = a function of it */
} gb_node;

static uint64_t bad_nodes;

static gb_node *new_node(uint64_t height)
{
	gb_node *n = GC_MALLOC(sizeof *n);
	if (!n)
		bdw_oom();
	n->left = NULL;
	n->right = NULL;
	n->i = (int32_t)height;
	n->j = (int32_t)(height * 7 + 3);
	return n;
}

/* Top-down: the parent exists first and gets its children stored into it. */
static void populate(gb_node *n, uint64_t height)
{
	if (height == 0)
		return;
	n->left = new_node(height - 1);
	n->right = new_node(height - 1);
	populate(n->left, height - 1);
	populate(n->right, height - 1);
}

/* Bottom-up: children first, the parent last. */
static gb_node *make(uint64_t height)
{
	if (height == 0)
		return new_node(0);
	gb_node *l = make(height - 1);
	gb_node *r = make(height - 1);
	gb_node *n = new_node(height);
	n->left = l;
	n->right = r;
	return n;
}

/* Counts nodes and checks each one's payload and shape against its height. */
static uint64_t count(const gb_node *n, uint64_t height)
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
	gb_params p = {GB_DEFAULT_STRETCH, GB_DEFAULT_LONG,  GB_DEFAULT_MIN,
	               GB_DEFAULT_MAX,     GB_DEFAULT_ARRAY, GB_DEFAULT_ROUNDS};
	const gcb_opt opts[] = {
	        {"stretch-depth", GCB_OPT_U64, &p.stretch_depth, NULL, 1, 26, "stretch tree depth"},
	        {"long-depth", GCB_OPT_U64, &p.long_depth, NULL, 0, 26, "long-lived tree depth"},
	        {"min-depth", GCB_OPT_U64, &p.min_depth, NULL, 0, 26, "smallest temporary tree"},
	        {"max-depth", GCB_OPT_U64, &p.max_depth, NULL, 0, 26, "largest temporary tree"},
	        {"array-size", GCB_OPT_U64, &p.array_size, NULL, 1, 1u << 28,
	         "doubles in the long-lived array"},
	        {"rounds", GCB_OPT_U64, &p.rounds, NULL, 1, 1000, "passes over the depths"},
	};
	gcb_opts_parse(argc, argv, opts, 6, "gcbench on bdwgc");
	if (gb_params_check(&p) != 0)
		return 2;

	gcb_pauses pauses;
	gcb_pauses_init(&pauses);
	uint64_t t0 = gcb_now_ns();
	bdw_env_init(&pauses);
	uint64_t t1 = gcb_now_ns();

	uint64_t sum = count(make(p.stretch_depth), p.stretch_depth);

	gb_node *long_lived = new_node(p.long_depth);
	populate(long_lived, p.long_depth);
	double *array = GC_MALLOC_ATOMIC(p.array_size * sizeof *array);
	if (!array)
		bdw_oom();
	for (uint64_t i = 0; i < p.array_size; i++)
		array[i] = gb_array_value(i);

	for (uint64_t round = 0; round < p.rounds; round++) {
		for (uint64_t d = p.min_depth; d <= p.max_depth; d += 2) {
			uint64_t iters = gb_iterations(&p, d);
			uint64_t t = gcb_now_ns();
			for (uint64_t i = 0; i < iters; i++) {
				gb_node *tmp = new_node(d);
				populate(tmp, d);
				sum += count(tmp, d);
				sum += count(make(d), d);
			}
			if (round == 0)
				fprintf(stderr,
				        "depth %llu: %llu top-down + bottom-up trees, %.1f ms\n",
				        (unsigned long long)d, (unsigned long long)iters,
				        (double)(gcb_now_ns() - t) / 1e6);
		}
	}

	sum += count(long_lived, p.long_depth);
	bool array_ok = true;
	for (uint64_t i = 0; i < p.array_size; i++)
		if (array[i] != gb_array_value(i)) {
			fprintf(stderr, "gcbench/bdwgc: array[%llu] = %g, expected %g\n",
			        (unsigned long long)i, array[i], gb_array_value(i));
			array_ok = false;
			break;
		}
	if (bad_nodes)
		fprintf(stderr, "gcbench/bdwgc: %llu corrupted nodes\n",
		        (unsigned long long)bad_nodes);
	uint64_t t2 = gcb_now_ns();

	gcb_result r = {"gcbench",
	                "bdwgc",
	                t1 - t0,
	                t2 - t1,
	                sum,
	                gb_expected(&p),
	                array_ok && bad_nodes == 0};
	gcb_pause_summary s;
	gcb_pauses_summarize(&pauses, &s);
	gcb_json j;
	gcb_report_begin(&j, &r, &s);
	gcb_json_obj_begin(&j, "params");
	gcb_json_u64(&j, "stretch_depth", p.stretch_depth);
	gcb_json_u64(&j, "long_depth", p.long_depth);
	gcb_json_u64(&j, "min_depth", p.min_depth);
	gcb_json_u64(&j, "max_depth", p.max_depth);
	gcb_json_u64(&j, "array_size", p.array_size);
	gcb_json_u64(&j, "rounds", p.rounds);
	gcb_json_obj_end(&j);
	bdw_env_report(&j);
	gcb_json_end(&j);
	gcb_pauses_free(&pauses);
	return gcb_result_ok(&r) ? 0 : 1;
}
