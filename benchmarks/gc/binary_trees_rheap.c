/* binary-trees on rheap, written as a precise VM would: rheap moves
 * objects, so every reference that must survive an allocation lives in a
 * shadow-stack slot and is re-read from it afterwards. The recursion keeps
 * its pending subtrees in one frame pushed for the whole run (two slots
 * per level, like a VM's operand stack) instead of pushing a frame per
 * call. Raw node pointers are held only where nothing can allocate or
 * reach a safepoint (right after an allocation, and while counting). */
#include <stdio.h>
#include <stdlib.h>

#include "rheap/rheap.h"

#include "gcb_opts.h"
#include "gcb_workload.h"
#include "rheap_env.h"

typedef struct bt_node {
	uint64_t rh_header; /* owned by rheap */
	struct bt_node *left, *right;
} bt_node;

#define BT_MAX_DEPTH 26
#define BT_ROOTS 2 /* long-lived tree, current tree */
#define BT_SLOTS (BT_ROOTS + 2 * (BT_MAX_DEPTH + 2))

static rh_mutator *mut;
static rh_type_id node_type;

static bt_node *new_node(void)
{
	bt_node *n = rh_alloc(mut, node_type);
	if (!n)
		rhb_oom();
	return n;
}

/* Builds children first, then the parent. sp[0] and sp[1] hold the
 * subtrees while the sibling and the parent are allocated (either may
 * collect and move them); deeper levels use sp + 2. */
static bt_node *make(void **sp, uint64_t depth)
{
	if (depth == 0) {
		bt_node *leaf = new_node();
		rh_write_ref(mut, (void **)&leaf->left, NULL);
		rh_write_ref(mut, (void **)&leaf->right, NULL);
		return leaf;
	}
	sp[0] = make(sp + 2, depth - 1);
	sp[1] = make(sp + 2, depth - 1);
	bt_node *n = new_node();
	rh_write_ref(mut, (void **)&n->left, sp[0]);
	rh_write_ref(mut, (void **)&n->right, sp[1]);
	/* Dead slots would keep garbage reachable until overwritten. */
	sp[0] = NULL;
	sp[1] = NULL;
	return n;
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
	static const uint32_t node_ptrs[] = {offsetof(bt_node, left), offsetof(bt_node, right)};
	node_type = rhb_type(&env, &(rh_type_desc){.name = "bt_node",
	                                           .layout = RH_LAYOUT_FIXED,
	                                           .size = sizeof(bt_node),
	                                           .ptr_offsets = node_ptrs,
	                                           .n_ptrs = 2});
	rhb_start(&env, &ro);
	mut = env.m;

	void *slots[BT_SLOTS] = {0};
	rh_frame frame;
	rh_push_frame(mut, &frame, slots, BT_SLOTS);
	void **long_lived = &slots[0], **tree = &slots[1], **sp = &slots[BT_ROOTS];

	uint64_t t1 = gcb_now_ns();
	uint64_t sum = 0;
	*tree = make(sp, p.max_depth + 1);
	uint64_t c = count(*tree);
	*tree = NULL;
	sum += c;
	fprintf(stderr, "stretch tree of depth %llu\t check: %llu\n",
	        (unsigned long long)p.max_depth + 1, (unsigned long long)c);

	*long_lived = make(sp, p.max_depth);
	for (uint64_t d = p.min_depth; d <= p.max_depth; d += 2) {
		uint64_t iters = bt_iterations(&p, d);
		c = 0;
		for (uint64_t i = 0; i < iters; i++) {
			*tree = make(sp, d);
			c += count(*tree);
			*tree = NULL;
			rh_safepoint(mut);
		}
		sum += c;
		fprintf(stderr, "%llu\t trees of depth %llu\t check: %llu\n",
		        (unsigned long long)iters, (unsigned long long)d, (unsigned long long)c);
	}
	c = count(*long_lived);
	sum += c;
	fprintf(stderr, "long lived tree of depth %llu\t check: %llu\n",
	        (unsigned long long)p.max_depth, (unsigned long long)c);
	uint64_t t2 = gcb_now_ns();
	rh_pop_frame(mut, &frame);

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
