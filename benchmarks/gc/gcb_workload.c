#include <stdio.h>

#include "gcb_workload.h"

void bt_params_fix(bt_params *p)
{
	if (p->max_depth < p->min_depth + 2)
		p->max_depth = p->min_depth + 2;
}

uint64_t bt_iterations(const bt_params *p, uint64_t depth)
{
	return 1ull << (p->max_depth - depth + p->min_depth);
}

uint64_t bt_expected(const bt_params *p)
{
	uint64_t sum = gcb_tree_nodes(p->max_depth + 1) + gcb_tree_nodes(p->max_depth);
	for (uint64_t d = p->min_depth; d <= p->max_depth; d += 2)
		sum += bt_iterations(p, d) * gcb_tree_nodes(d);
	return sum;
}

int gb_params_check(const gb_params *p)
{
	if (p->min_depth > p->max_depth) {
		fprintf(stderr, "gcbench: --min-depth %llu is above --max-depth %llu\n",
		        (unsigned long long)p->min_depth, (unsigned long long)p->max_depth);
		return -1;
	}
	if (p->max_depth > p->stretch_depth + 1) {
		fprintf(stderr,
		        "gcbench: --max-depth %llu must be at most --stretch-depth + 1 "
		        "(%llu) so every depth runs at least one tree\n",
		        (unsigned long long)p->max_depth, (unsigned long long)p->stretch_depth + 1);
		return -1;
	}
	return 0;
}

uint64_t gb_iterations(const gb_params *p, uint64_t depth)
{
	return 2 * gcb_tree_nodes(p->stretch_depth) / gcb_tree_nodes(depth);
}

uint64_t gb_expected(const gb_params *p)
{
	uint64_t per_round = 0;
	for (uint64_t d = p->min_depth; d <= p->max_depth; d += 2)
		per_round += 2 * gb_iterations(p, d) * gcb_tree_nodes(d);
	return gcb_tree_nodes(p->stretch_depth) + p->rounds * per_round +
	       gcb_tree_nodes(p->long_depth);
}
