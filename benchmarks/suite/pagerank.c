/* PageRank over an object graph (graph.h): every iteration pushes each
 * vertex's rank along its out-edges into a contribution array, then gives
 * every vertex a new rank box, as a dataflow system produces a new value
 * per vertex each superstep (old boxes are garbage in old regions).
 * --size is the number of vertices; 16 edges each on average. */
#include <math.h>
#include <stdio.h>

#include "graph.h"

#define DEGREE 16
#define ITERATIONS 10
#define DAMPING 0.85

int main(int argc, char **argv)
{
	rs_env env;
	rs_init(&env, "pagerank", 1000000, argc, argv);
	rs_open(&env);
	rs_graph g;
	rs_graph_register(&env, &g);
	rs_start(&env);

	void *roots[2] = {0}; /* vertices, contributions */
	rh_frame frame;
	rh_push_frame(env.m, &frame, roots, 2);
	rs_graph_build(&env, &g, &roots[0], DEGREE, false);
	double init = 1.0 / (double)g.n;
	for (uint64_t i = 0; i < g.n; i++) {
		rs_box *b = rs_vertex_at(roots[0], i)->value;
		b->d = init;
	}
	rs_progress(&env, "built %llu vertices, %llu edges", (unsigned long long)g.n,
	            (unsigned long long)(g.n * DEGREE));

	bool ok = true;
	double total = 0;
	for (int it = 0; it < ITERATIONS; it++) {
		roots[1] = rs_graph_alloc_array(&g, g.doubles, g.n);
		double *contrib;
		double dangling = 0;
		for (uint64_t i = 0; i < g.n; i++) {
			/* Re-read after every safepoint: a collection may move it. */
			contrib = (double *)((char *)roots[1] + RH_ARRAY_HEADER_SIZE);
			rs_vertex *v = rs_vertex_at(roots[0], i);
			double r = ((rs_box *)v->value)->d;
			if (v->deg == 0) {
				dangling += r;
				continue;
			}
			double share = r / (double)v->deg;
			const uint32_t *ids = rs_edge_ids(v);
			for (uint64_t k = 0; k < v->deg; k++)
				contrib[ids[k]] += share;
			rh_safepoint(env.m);
		}
		double base = (1.0 - DAMPING + DAMPING * dangling) / (double)g.n;
		total = 0;
		for (uint64_t i = 0; i < g.n; i++) {
			contrib = (double *)((char *)roots[1] + RH_ARRAY_HEADER_SIZE);
			double r = base + DAMPING * contrib[i];
			total += r;
			union {
				double d;
				uint64_t u;
			} bits = {.d = r};
			rs_graph_set(&g, &roots[0], i, bits.u);
		}
		roots[1] = NULL;
		rs_progress(&env, "iteration %d/%d, rank sum %.6f", it + 1, ITERATIONS, total);
	}
	/* Dangling mass is spread, so the ranks stay a distribution. */
	if (!(fabs(total - 1.0) < 1e-6)) {
		fprintf(stderr, "pagerank: ranks sum to %.9f, expected 1\n", total);
		ok = false;
	}
	uint64_t best = 0;
	double best_r = -1;
	for (uint64_t i = 0; i < g.n; i++) {
		double r = ((rs_box *)rs_vertex_at(roots[0], i)->value)->d;
		if (r > best_r) {
			best_r = r;
			best = i;
		}
	}
	rh_pop_frame(env.m, &frame);
	return rs_finish(&env, best, ok);
}
