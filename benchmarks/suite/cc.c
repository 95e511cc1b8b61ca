/* Connected components by label propagation over an undirected object
 * graph (graph.h): every vertex takes the smallest label among itself and
 * its neighbours, in place, until nothing changes; a changed label is a
 * new box, as a dataflow system emits a new value. --size is the number
 * of vertices; 4 undirected edges each on average, so some vertices stay
 * alone and the graph has many components. */
#include <stdio.h>

#include "graph.h"

#define DEGREE 4
#define MAX_ROUNDS 200

static uint64_t label(const rs_vertex *v)
{
	return ((const rs_box *)v->value)->u;
}

int main(int argc, char **argv)
{
	rs_env env;
	rs_init(&env, "cc", 1000000, argc, argv);
	rs_open(&env);
	rs_graph g;
	rs_graph_register(&env, &g);
	rs_start(&env);

	void *roots[1] = {0};
	rh_frame frame;
	rh_push_frame(env.m, &frame, roots, 1);
	rs_graph_build(&env, &g, &roots[0], DEGREE, true);
	for (uint64_t i = 0; i < g.n; i++)
		rs_graph_set(&g, &roots[0], i, i);
	rs_progress(&env, "built %llu vertices, %llu undirected edges", (unsigned long long)g.n,
	            (unsigned long long)(g.n * DEGREE));

	int round = 0;
	uint64_t changed = 1;
	while (changed && round < MAX_ROUNDS) {
		changed = 0;
		for (uint64_t i = 0; i < g.n; i++) {
			rs_vertex *v = rs_vertex_at(roots[0], i);
			uint64_t l = label(v);
			const uint32_t *ids = rs_edge_ids(v);
			for (uint64_t k = 0; k < v->deg; k++) {
				uint64_t n = label(rs_vertex_at(roots[0], ids[k]));
				if (n < l)
					l = n;
			}
			if (l < label(v)) {
				rs_graph_set(&g, &roots[0], i, l);
				changed++;
			}
			rh_safepoint(env.m);
		}
		round++;
		rs_progress(&env, "round %d: %llu labels changed", round,
		            (unsigned long long)changed);
	}
	/* A fixpoint: every edge joins equal labels, every label is a vertex
	 * id no larger than the vertex's own. */
	bool ok = changed == 0;
	uint64_t components = 0;
	for (uint64_t i = 0; i < g.n && ok; i++) {
		rs_vertex *v = rs_vertex_at(roots[0], i);
		uint64_t l = label(v);
		components += l == i;
		if (l > i)
			ok = false;
		const uint32_t *ids = rs_edge_ids(v);
		for (uint64_t k = 0; k < v->deg && ok; k++)
			ok = label(rs_vertex_at(roots[0], ids[k])) == l;
	}
	if (!ok)
		fprintf(stderr, "cc: labels are not a fixpoint after %d rounds\n", round);
	rh_pop_frame(env.m, &frame);
	return rs_finish(&env, components, ok);
}
