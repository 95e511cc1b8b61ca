/* gcbench on rheap, written as a precise VM would (see binary_trees_rheap.c
 * for the rooting discipline). The long-lived tree and the array of
 * doubles stay in frame slots for the whole run; the array is a record
 * array of 8-byte elements without pointers, so rheap never scans it. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "rheap/rheap.h"

#include "gcb_opts.h"
#include "gcb_workload.h"
#include "rheap_env.h"

typedef struct gb_node {
	uint64_t rh_header; /* owned by rheap */
	struct gb_node *left, *right;
	int32_t i, j; /* i = height of the subtree, j = a function of it */
} gb_node;

#define GB_MAX_DEPTH 26
#define GB_ROOTS 2 /* long-lived tree, array */
/* populate() uses three slots per level, plus one for the tree's root. */
#define GB_SLOTS (GB_ROOTS + 3 * (GB_MAX_DEPTH + 2))

static rh_mutator *mut;
static rh_type_id node_type, array_type;
static uint64_t bad_nodes;

static gb_node *new_node(uint64_t height)
{
	gb_node *n = rh_alloc(mut, node_type);
	if (!n)
		rhb_oom();
	rh_write_ref(mut, (void **)&n->left, NULL);
	rh_write_ref(mut, (void **)&n->right, NULL);
	n->i = (int32_t)height;
	n->j = (int32_t)(height * 7 + 3);
	return n;
}

/* Top-down: sp[0] holds a node that already exists; its children are
 * allocated (into sp[1], sp[2]: the second allocation may move the node
 * and the first child), stored into it, then populated in turn, each
 * becoming sp[0] of the next level at sp + 3. */
static void populate(void **sp, uint64_t height)
{
	if (height == 0)
		return;
	sp[1] = new_node(height - 1);
	sp[2] = new_node(height - 1);
	gb_node *n = sp[0];
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

/* Bottom-up: children first (held in sp[0], sp[1]), the parent last. */
static gb_node *make(void **sp, uint64_t height)
{
	if (height == 0)
		return new_node(0);
	sp[0] = make(sp + 2, height - 1);
	sp[1] = make(sp + 2, height - 1);
	gb_node *n = new_node(height);
	rh_write_ref(mut, (void **)&n->left, sp[0]);
	rh_write_ref(mut, (void **)&n->right, sp[1]);
	sp[0] = NULL;
	sp[1] = NULL;
	return n;
}

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

static double *array_data(void *array)
{
	return (double *)((char *)array + RH_ARRAY_HEADER_SIZE);
}

int main(int argc, char **argv)
{
	gb_params p = {GB_DEFAULT_STRETCH, GB_DEFAULT_LONG,  GB_DEFAULT_MIN,
	               GB_DEFAULT_MAX,     GB_DEFAULT_ARRAY, GB_DEFAULT_ROUNDS};
	rhb_opts ro;
	rhb_opts_default(&ro);
	gcb_opt opts[6 + RHB_N_OPTS] = {
	        {"stretch-depth", GCB_OPT_U64, &p.stretch_depth, NULL, 1, GB_MAX_DEPTH,
	         "stretch tree depth"},
	        {"long-depth", GCB_OPT_U64, &p.long_depth, NULL, 0, GB_MAX_DEPTH,
	         "long-lived tree depth"},
	        {"min-depth", GCB_OPT_U64, &p.min_depth, NULL, 0, GB_MAX_DEPTH,
	         "smallest temporary tree"},
	        {"max-depth", GCB_OPT_U64, &p.max_depth, NULL, 0, GB_MAX_DEPTH,
	         "largest temporary tree"},
	        {"array-size", GCB_OPT_U64, &p.array_size, NULL, 1, 1u << 28,
	         "doubles in the long-lived array"},
	        {"rounds", GCB_OPT_U64, &p.rounds, NULL, 1, 1000, "passes over the depths"},
	};
	int n_opts = 6 + rhb_opts_table(&ro, opts + 6);
	gcb_opts_parse(argc, argv, opts, n_opts, "gcbench on rheap");
	if (gb_params_check(&p) != 0)
		return 2;

	rhb_env env;
	rhb_open(&env, &ro);
	static const uint32_t node_ptrs[] = {offsetof(gb_node, left), offsetof(gb_node, right)};
	node_type = rhb_type(&env, &(rh_type_desc){.name = "gb_node",
	                                           .layout = RH_LAYOUT_FIXED,
	                                           .size = sizeof(gb_node),
	                                           .ptr_offsets = node_ptrs,
	                                           .n_ptrs = 2});
	array_type = rhb_type(&env, &(rh_type_desc){.name = "gb_doubles",
	                                            .layout = RH_LAYOUT_RECORD_ARRAY,
	                                            .size = RH_ARRAY_HEADER_SIZE,
	                                            .elem_size = sizeof(double)});
	rhb_start(&env, &ro);
	mut = env.m;

	void *slots[GB_SLOTS] = {0};
	rh_frame frame;
	rh_push_frame(mut, &frame, slots, GB_SLOTS);
	void **long_lived = &slots[0], **array = &slots[1], **sp = &slots[GB_ROOTS];

	uint64_t t1 = gcb_now_ns();
	sp[0] = make(sp + 1, p.stretch_depth);
	uint64_t sum = count(sp[0], p.stretch_depth);
	sp[0] = NULL;

	sp[0] = new_node(p.long_depth);
	populate(sp, p.long_depth);
	*long_lived = sp[0];
	sp[0] = NULL;
	*array = rh_alloc_array(mut, array_type, p.array_size);
	if (!*array)
		rhb_oom();
	double *a = array_data(*array);
	for (uint64_t i = 0; i < p.array_size; i++)
		a[i] = gb_array_value(i);

	for (uint64_t round = 0; round < p.rounds; round++) {
		for (uint64_t d = p.min_depth; d <= p.max_depth; d += 2) {
			uint64_t iters = gb_iterations(&p, d);
			uint64_t t = gcb_now_ns();
			for (uint64_t i = 0; i < iters; i++) {
				sp[0] = new_node(d);
				populate(sp, d);
				sum += count(sp[0], d);
				sp[0] = make(sp + 1, d);
				sum += count(sp[0], d);
				sp[0] = NULL;
				rh_safepoint(mut);
			}
			if (round == 0)
				fprintf(stderr,
				        "depth %llu: %llu top-down + bottom-up trees, %.1f ms\n",
				        (unsigned long long)d, (unsigned long long)iters,
				        (double)(gcb_now_ns() - t) / 1e6);
		}
	}

	sum += count(*long_lived, p.long_depth);
	bool array_ok = rh_array_length(*array) == p.array_size;
	if (!array_ok)
		fprintf(stderr, "gcbench/rheap: array length %zu, expected %llu\n",
		        rh_array_length(*array), (unsigned long long)p.array_size);
	a = array_data(*array);
	for (uint64_t i = 0; array_ok && i < p.array_size; i++)
		if (a[i] != gb_array_value(i)) {
			fprintf(stderr, "gcbench/rheap: array[%llu] = %g, expected %g\n",
			        (unsigned long long)i, a[i], gb_array_value(i));
			array_ok = false;
		}
	if (bad_nodes)
		fprintf(stderr, "gcbench/rheap: %llu corrupted nodes\n",
		        (unsigned long long)bad_nodes);
	uint64_t t2 = gcb_now_ns();
	rh_pop_frame(mut, &frame);

	gcb_result r = {"gcbench",
	                "rheap",
	                env.setup_ns,
	                t2 - t1,
	                sum,
	                gb_expected(&p),
	                array_ok && bad_nodes == 0};
	gcb_pause_summary s;
	rhb_summarize(&env, &s);
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
	rhb_report(&env, &j);
	gcb_json_end(&j);
	rhb_close(&env);
	return gcb_result_ok(&r) ? 0 : 1;
}
