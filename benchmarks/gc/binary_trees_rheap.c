/* binary-trees on rheap: the trees are bt_trees_rheap.c's, built in one
 * frame pushed for the whole run. */
#include <stdio.h>
#include <stdlib.h>

#include "rheap/rheap.h"

#include "bt_trees_rheap.h"
#include "gcb_opts.h"
#include "gcb_workload.h"
#include "rheap_env.h"

#define BT_MAX_DEPTH 26
#define BT_ROOTS 2 /* long-lived tree, current tree */
#define BT_SLOTS (BT_ROOTS + BT_MAKE_SLOTS(BT_MAX_DEPTH + 1))

static bt_trees trees;

int main(int argc, char **argv)
{
	bt_params p = {BT_DEFAULT_MIN, BT_DEFAULT_MAX};
	rhb_opts ro;
	rhb_opts_default(&ro);
	gcb_opt opts[2 + RHB_N_OPTS] = {
	        {"depth", GCB_OPT_U64, &p.max_depth, NULL, 1, BT_MAX_DEPTH, "maximum tree depth"},
	        {"min-depth", GCB_OPT_U64, &p.min_depth, NULL, 0, BT_MAX_DEPTH - 2,
	         "minimum tree depth"},
	};
	int n_opts = 2 + rhb_opts_table(&ro, opts + 2);
	gcb_opts_parse(argc, argv, opts, n_opts, "binary-trees on rheap");
	bt_params_fix(&p);

	rhb_env env;
	rhb_open(&env, &ro);
	trees.node = rhb_type(&env, &bt_node_desc);
	rhb_start(&env, &ro);
	trees.m = env.m;
	trees.oom = rhb_oom;

	void *slots[BT_SLOTS] = {0};
	rh_frame frame;
	rh_push_frame(trees.m, &frame, slots, BT_SLOTS);
	void **long_lived = &slots[0], **tree = &slots[1], **sp = &slots[BT_ROOTS];

	uint64_t t1 = gcb_now_ns();
	uint64_t sum = 0;
	*tree = bt_make(&trees, sp, p.max_depth + 1);
	uint64_t c = bt_count(*tree);
	*tree = NULL;
	sum += c;
	fprintf(stderr, "stretch tree of depth %llu\t check: %llu\n",
	        (unsigned long long)p.max_depth + 1, (unsigned long long)c);

	*long_lived = bt_make(&trees, sp, p.max_depth);
	for (uint64_t d = p.min_depth; d <= p.max_depth; d += 2) {
		uint64_t iters = bt_iterations(&p, d);
		c = 0;
		for (uint64_t i = 0; i < iters; i++) {
			*tree = bt_make(&trees, sp, d);
			c += bt_count(*tree);
			*tree = NULL;
			rh_safepoint(trees.m);
		}
		sum += c;
		fprintf(stderr, "%llu\t trees of depth %llu\t check: %llu\n",
		        (unsigned long long)iters, (unsigned long long)d, (unsigned long long)c);
	}
	c = bt_count(*long_lived);
	sum += c;
	fprintf(stderr, "long lived tree of depth %llu\t check: %llu\n",
	        (unsigned long long)p.max_depth, (unsigned long long)c);
	uint64_t t2 = gcb_now_ns();
	rh_pop_frame(trees.m, &frame);

	gcb_result r = {"binary-trees", "rheap", env.setup_ns, t2 - t1, sum, bt_expected(&p), true};
	gcb_pause_summary s;
	rhb_summarize(&env, &s);
	gcb_json j;
	gcb_report_begin(&j, &r, &s);
	gcb_json_obj_begin(&j, "params");
	gcb_json_u64(&j, "min_depth", p.min_depth);
	gcb_json_u64(&j, "max_depth", p.max_depth);
	gcb_json_obj_end(&j);
	rhb_report(&env, &j);
	gcb_json_end(&j);
	rhb_close(&env);
	return gcb_result_ok(&r) ? 0 : 1;
}
