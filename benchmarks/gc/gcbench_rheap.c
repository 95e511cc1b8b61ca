/* gcbench on rheap, written as a precise VM would (the trees:
 * gcb_trees_rheap.c). The long-lived tree and the array of doubles stay in
 * frame slots for the whole run. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "rheap/rheap.h"

#include "gcb_opts.h"
#include "gcb_trees_rheap.h"
#include "gcb_workload.h"
#include "rheap_env.h"

#define GB_MAX_DEPTH 26
#define GB_ROOTS 2 /* long-lived tree, array */
/* gb_populate uses three slots per level, plus one for the tree's root. */
#define GB_SLOTS (GB_ROOTS + 3 * (GB_MAX_DEPTH + 2))

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
	gcb_trees tr = {.node = rhb_type(&env, &gb_node_desc), .oom = rhb_oom};
	rh_type_id array_type = rhb_type(&env, &gb_doubles_desc);
	rhb_start(&env, &ro);
	rh_mutator *mut = tr.m = env.m;

	void *slots[GB_SLOTS] = {0};
	rh_frame frame;
	rh_push_frame(mut, &frame, slots, GB_SLOTS);
	void **long_lived = &slots[0], **array = &slots[1], **sp = &slots[GB_ROOTS];

	uint64_t t1 = gcb_now_ns();
	sp[0] = gb_make(&tr, sp + 1, p.stretch_depth);
	uint64_t sum = gb_count(&tr, sp[0], p.stretch_depth);
	sp[0] = NULL;

	sp[0] = gb_new_node(&tr, p.long_depth);
	gb_populate(&tr, sp, p.long_depth);
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
				sum += gb_iteration(&tr, sp, d);
				rh_safepoint(mut);
			}
			if (round == 0)
				fprintf(stderr,
				        "depth %llu: %llu top-down + bottom-up trees, %.1f ms\n",
				        (unsigned long long)d, (unsigned long long)iters,
				        (double)(gcb_now_ns() - t) / 1e6);
		}
	}

	sum += gb_count(&tr, *long_lived, p.long_depth);
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
	if (tr.bad_nodes)
		fprintf(stderr, "gcbench/rheap: %llu corrupted nodes\n",
		        (unsigned long long)tr.bad_nodes);
	uint64_t t2 = gcb_now_ns();
	rh_pop_frame(mut, &frame);

	gcb_result r = {"gcbench",
	                "rheap",
	                env.setup_ns,
	                t2 - t1,
	                sum,
	                gb_expected(&p),
	                array_ok && tr.bad_nodes == 0};
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
