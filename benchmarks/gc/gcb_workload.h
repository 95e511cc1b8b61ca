/* The two workloads' shapes, shared by the rheap and bdwgc versions so
 * both run exactly the same schedule and are checked against the same
 * closed-form node counts. Only the allocation and root handling differ. */
#ifndef GCB_WORKLOAD_H
#define GCB_WORKLOAD_H

#include <stdint.h>

/* Nodes in a complete binary tree of the given depth (depth 0 = a leaf). */
static inline uint64_t gcb_tree_nodes(uint64_t depth)
{
	return (2ull << depth) - 1;
}

/* binary-trees: a stretch tree of depth max+1 (built, counted, dropped), a
 * long-lived tree of depth max kept to the end, and for each depth d in
 * min, min+2, ... max: 2^(max-d+min) short-lived trees of depth d, each
 * counted right after it is built. */
typedef struct bt_params {
	uint64_t min_depth;
	uint64_t max_depth;
} bt_params;

#define BT_DEFAULT_MIN 4
#define BT_DEFAULT_MAX 19

/* Fix up max so the schedule has at least one round above min (as the
 * classic program does). */
void bt_params_fix(bt_params *p);
uint64_t bt_iterations(const bt_params *p, uint64_t depth);
uint64_t bt_expected(const bt_params *p);

/* gcbench (after Ellis, Kovac and Boehm's GCBench): a long-lived tree built
 * top-down plus a long-lived array of doubles; then, `rounds` times, for
 * each depth d in min, min+2, ... max: iters(d) trees built top-down and as
 * many built bottom-up, where iters(d) keeps the allocation per depth about
 * twice the stretch tree's size. A stretch tree of stretch_depth opens the
 * run. The long-lived tree and the array are checked at the end. */
typedef struct gb_params {
	uint64_t stretch_depth;
	uint64_t long_depth;
	uint64_t min_depth;
	uint64_t max_depth;
	uint64_t array_size; /* doubles */
	uint64_t rounds;
} gb_params;

#define GB_DEFAULT_STRETCH 18
#define GB_DEFAULT_LONG 16
#define GB_DEFAULT_MIN 4
#define GB_DEFAULT_MAX 16
#define GB_DEFAULT_ARRAY 500000
#define GB_DEFAULT_ROUNDS 8

/* Returns 0, or prints why the combination is unusable and returns -1. */
int gb_params_check(const gb_params *p);
uint64_t gb_iterations(const gb_params *p, uint64_t depth);
uint64_t gb_expected(const gb_params *p);
/* The value the workload stores at index i of the long-lived array. */
static inline double gb_array_value(uint64_t i)
{
	return (double)i * 0.5;
}

#endif
