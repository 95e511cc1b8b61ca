#include <string.h>

#include "graph.h"

void rs_graph_register(rs_env *e, rs_graph *g)
{
	static const uint32_t vptrs[] = {offsetof(rs_vertex, edges), offsetof(rs_vertex, value)};
	g->vertex = rs_type(e, &(rh_type_desc){.name = "g_vertex",
	                                       .layout = RH_LAYOUT_FIXED,
	                                       .size = sizeof(rs_vertex),
	                                       .ptr_offsets = vptrs,
	                                       .n_ptrs = 2});
	g->edges = rs_type(e, &(rh_type_desc){.name = "g_edges",
	                                      .layout = RH_LAYOUT_BYTE_ARRAY,
	                                      .size = RH_ARRAY_HEADER_SIZE,
	                                      .elem_size = 1});
	g->box = rs_type(e, &(rh_type_desc){.name = "g_box",
	                                    .layout = RH_LAYOUT_FIXED,
	                                    .size = sizeof(rs_box)});
	g->refs = rs_type(e, &(rh_type_desc){.name = "g_refs",
	                                     .layout = RH_LAYOUT_REF_ARRAY,
	                                     .size = RH_ARRAY_HEADER_SIZE,
	                                     .elem_size = 8});
	g->doubles = rs_type(e, &(rh_type_desc){.name = "g_doubles",
	                                        .layout = RH_LAYOUT_RECORD_ARRAY,
	                                        .size = RH_ARRAY_HEADER_SIZE,
	                                        .elem_size = sizeof(double)});
}

void rs_graph_set(rs_graph *g, void **root, uint64_t i, uint64_t bits)
{
	rs_box *b = rh_alloc(g->m, g->box);
	if (!b)
		rs_oom();
	b->u = bits;
	rh_write_ref(g->m, &rs_vertex_at(*root, i)->value, b);
}

static void append(rs_graph *g, void **root, uint64_t v, uint32_t u)
{
	rs_vertex *x = rs_vertex_at(*root, v);
	size_t cap = x->edges ? rh_array_length(x->edges) / sizeof(uint32_t) : 0;
	if (x->deg == cap) {
		void *na =
		        rs_graph_alloc_array(g, g->edges, (cap ? 2 * cap : 4) * sizeof(uint32_t));
		x = rs_vertex_at(*root, v); /* the allocation may have moved it */
		if (cap)
			memcpy((char *)na + RH_ARRAY_HEADER_SIZE, rs_edge_ids(x),
			       cap * sizeof(uint32_t));
		rh_write_ref(g->m, &x->edges, na);
	}
	rs_edge_ids(x)[x->deg++] = u;
}

/* Destinations are skewed towards low ids (u^2), so a few vertices are
 * hubs, as in web and social graphs. */
void rs_graph_build(rs_env *e, rs_graph *g, void **root, uint64_t deg, bool undirected)
{
	g->m = e->m;
	g->n = e->size;
	*root = rs_graph_alloc_array(g, g->refs, g->n);
	for (uint64_t i = 0; i < g->n; i++) {
		rs_vertex *v = rh_alloc(g->m, g->vertex);
		if (!v)
			rs_oom();
		v->id = i;
		rh_write_ref(g->m, (void **)((char *)*root + RH_ARRAY_HEADER_SIZE) + i, v);
		rs_graph_set(g, root, i, 0);
		rh_safepoint(g->m);
	}
	uint64_t rng = e->seed * 7919 + 1;
	uint64_t edges = g->n * deg;
	for (uint64_t k = 0; k < edges; k++) {
		uint32_t src = (uint32_t)(rs_rand(&rng) % g->n);
		double x = (double)(rs_rand(&rng) >> 11) / 9007199254740992.0;
		uint32_t dst = (uint32_t)((double)g->n * x * x);
		append(g, root, src, dst);
		if (undirected)
			append(g, root, dst, src);
		rh_safepoint(g->m);
	}
}
