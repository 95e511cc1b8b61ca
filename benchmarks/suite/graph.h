/* The object graph PageRank and connected components run on, built as a
 * graph-processing system loads one: a vertex array in id order, then an
 * edge file read in random order, each edge appended to its source's
 * adjacency array, which is reallocated at twice the size when full. The
 * adjacency arrays thus end up scattered in allocation order, away from
 * their vertices, until the collector moves them next to them. Edge lists
 * hold vertex ids (32-bit), as GraphX does, so tracing a vertex reaches
 * its own edge array and value box, not its neighbours. */
#ifndef RS_GRAPH_H
#define RS_GRAPH_H

#include "harness.h"

typedef struct rs_vertex {
	uint64_t rh_header;
	void *edges; /* byte array of uint32_t ids; its length / 4 is the capacity */
	void *value; /* an rs_box: rank or label, replaced on every update */
	uint64_t id;
	uint64_t deg; /* ids used in edges */
} rs_vertex;

typedef struct rs_box {
	uint64_t rh_header;
	union {
		double d;
		uint64_t u;
	};
} rs_box;

typedef struct rs_graph {
	rh_mutator *m;
	rh_type_id vertex, edges, box, refs, doubles;
	uint64_t n;
} rs_graph;

void rs_graph_register(rs_env *e, rs_graph *g);
/* Builds e->size vertices with deg edges each on average (both directions
 * when undirected) into *root, a frame slot; the vertices' boxes hold 0. */
void rs_graph_build(rs_env *e, rs_graph *g, void **root, uint64_t deg, bool undirected);
/* A fresh box holding v, stored into vertex i of the array in *root. */
void rs_graph_set(rs_graph *g, void **root, uint64_t i, uint64_t bits);

static inline rs_vertex *rs_vertex_at(void *vertices, uint64_t i)
{
	return ((rs_vertex **)((char *)vertices + RH_ARRAY_HEADER_SIZE))[i];
}

static inline uint32_t *rs_edge_ids(const rs_vertex *v)
{
	return v->edges ? (uint32_t *)((char *)v->edges + RH_ARRAY_HEADER_SIZE) : NULL;
}

static inline void *rs_graph_alloc_array(rs_graph *g, rh_type_id t, size_t n)
{
	void *p = rh_alloc_array(g->m, t, n);
	if (!p)
		rs_oom();
	return p;
}

#endif
