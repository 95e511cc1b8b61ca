/* binary-trees on bdwgc: the comparison twin of binary_trees_rheap.c.
 * Same schedule (gcb_workload.c), same allocation order (children before
 * their parent), nodes from GC_MALLOC, roots found by bdwgc's conservative
 * stack scan. */
#include <stdio.h>
#include <stdlib.h>

#include <gc/gc.h>

#include "bdwgc_env.h"
#include "gcb_opts.h"
#include "gcb_workload.h"

typedef struct bt_node {
	struct bt_node *left, *right;
} bt_node;

static bt_node *new_node(bt_node *left, bt_node *right)
{
	bt_node *n = GC_MALLOC(sizeof *n);
	if (!n)
		bdw_oom();
	n->left = left;
	n->right = right;
	return n;
}

static bt_node *make(uint64_t depth)
{
	if (depth == 0)
		return new_node(NULL, NULL);
	bt_node *l = make(depth - 1);
	bt_node *r = make(depth - 1);
	return new_node(l, r);
}

static uint64_t count(const bt_node *n)
{
	uint64_t c = 1;
	if (n->left)
		c += count(n->left);
	if (n->right)
		c += count(n->right);
	return c;
}

int main(int argc, char **argv)
{
	bt_params p = {BT_DEFAULT_MIN, BT_DEFAULT_MAX};
	const gcb_opt opts[] = {
	        {"depth", GCB_OPT_U64, &p.max_depth, NULL, 1, 26, "maximum tree depth"},
	        {"min-depth", GCB_OPT_U64, &p.min_depth, NULL, 0, 24, "minimum tree depth"},
	};
	gcb_opts_parse(argc, argv, opts, 2, "binary-trees on bdwgc");
	bt_params_fix(&p);

	gcb_pauses pauses;
	gcb_pauses_init(&pauses);
	uint64_t t0 = gcb_now_ns();
	bdw_env_init(&pauses);
	uint64_t t1 = gcb_now_ns();

	uint64_t sum = 0;
	uint64_t c = count(make(p.max_depth + 1));
	sum += c;
	fprintf(stderr, "stretch tree of depth %llu\t check: %llu\n",
	        (unsigned long long)p.max_depth + 1, (unsigned long long)c);

	bt_node *long_lived = make(p.max_depth);
	for (uint64_t d = p.min_depth; d <= p.max_depth; d += 2) {
		uint64_t iters = bt_iterations(&p, d);
		c = 0;
		for (uint64_t i = 0; i < iters; i++)
			c += count(make(d));
		sum += c;
		fprintf(stderr, "%llu\t trees of depth %llu\t check: %llu\n",
		        (unsigned long long)iters, (unsigned long long)d, (unsigned long long)c);
	}
	c = count(long_lived);
	sum += c;
	fprintf(stderr, "long lived tree of depth %llu\t check: %llu\n",
	        (unsigned long long)p.max_depth, (unsigned long long)c);
	uint64_t t2 = gcb_now_ns();

	gcb_result r = {"binary-trees", "bdwgc", t1 - t0, t2 - t1, sum, bt_expected(&p), true};
	gcb_pause_summary s;
	gcb_pauses_summarize(&pauses, &s);
	gcb_json j;
	gcb_report_begin(&j, &r, &s);
	gcb_json_obj_begin(&j, "params");
	gcb_json_u64(&j, "min_depth", p.min_depth);
	gcb_json_u64(&j, "max_depth", p.max_depth);
	gcb_json_obj_end(&j);
	bdw_env_report(&j);
	gcb_json_end(&j);
	gcb_pauses_free(&pauses);
	return gcb_result_ok(&r) ? 0 : 1;
}
