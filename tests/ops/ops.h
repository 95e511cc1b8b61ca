/* Helpers for the operations tests, whose clusters (tests/common/cluster.h)
 * log to files the tests read back. */
#ifndef RH_TEST_OPS_H
#define RH_TEST_OPS_H

#include <time.h>

#include "tests/common/check.h"
#include "tests/common/cluster.h"

/* cluster_start's tracer options for the tests here: logs in files. */
#define OPS_TRACERS(args) (&(const cluster_tracers){.extra = (args), .log = 1})

static inline double ops_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Whether a heap just opened works: 64 arrays of 1 MiB allocated through
 * it and a full collection. */
static inline int ops_heap_works(rh_heap *h)
{
	rh_error err;
	rh_type_desc d = {
	        .name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16, .elem_size = 1};
	rh_type_id t = rh_type_register(h, &d, &err);
	rh_mutator *m = rh_mutator_attach(h, &err);
	if (!t || !m)
		return 0;
	void *slot = NULL;
	rh_frame f;
	rh_push_frame(m, &f, &slot, 1);
	for (int i = 0; i < 64; i++)
		slot = rh_alloc_array(m, t, 1 << 20);
	int ok = slot && rh_collect(m, 1) == RH_OK;
	rh_pop_frame(m, &f);
	rh_mutator_detach(m);
	return ok;
}

/* The node the ops tests keep in lists: the next node and a byte array. */
struct ops_node {
	uint64_t hdr;
	struct ops_node *next;
	uint8_t *blob;
};

/* Register struct ops_node and a byte array type; RH_OK or the error. */
static inline int ops_node_types(rh_heap *h, rh_type_id *node, rh_type_id *blob, rh_error *err)
{
	static const uint32_t offs[] = {8, 16};
	rh_type_desc nd = {.name = "node",
	                   .layout = RH_LAYOUT_FIXED,
	                   .size = sizeof(struct ops_node),
	                   .ptr_offsets = offs,
	                   .n_ptrs = 2};
	rh_type_desc bd = {
	        .name = "blob", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16, .elem_size = 1};
	*node = rh_type_register(h, &nd, err);
	*blob = *node ? rh_type_register(h, &bd, err) : 0;
	return *blob ? RH_OK : err->code;
}

/* Old data for collections to work on: up to n nodes, each with a
 * 1000-byte blob filled with its index, pushed onto the list in *head (a
 * root); after every `every`-th node, `garbage` bytes left unreferenced.
 * Stops early if the heap is full. */
static inline void ops_keep_list(rh_mutator *m, rh_type_id node, rh_type_id blob, void **head,
                                 int n, int every, size_t garbage)
{
	void *held = NULL;
	rh_frame f;
	rh_push_frame(m, &f, &held, 1);
	for (int i = 0; i < n; i++) {
		struct ops_node *x = rh_alloc(m, node);
		if (!x)
			break;
		held = x;
		uint8_t *b = rh_alloc_array(m, blob, 1000);
		x = held;
		if (!b)
			break;
		memset(b + 16, i, 1000);
		rh_write_ref(m, (void **)&x->blob, b);
		rh_write_ref(m, (void **)&x->next, *head);
		*head = x;
		if (i % every == 0)
			rh_alloc_array(m, blob, garbage);
	}
	rh_pop_frame(m, &f);
}

/* Every line of a tracer log is one event: "rheap[PID] [  S.mmms] LEVEL
 * component: ...". */
static inline int ops_log_well_formed(const char *log, char *bad, size_t cap)
{
	for (const char *l = log; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		int pid, used = 0;
		unsigned ms;
		double secs;
		char level[8];
		if (sscanf(l, "rheap[%d] [%lf%*[s]] %7s %n", &pid, &secs, level, &used) != 3 ||
		    !used || sscanf(strchr(l, '.') ? strchr(l, '.') + 1 : "", "%3u", &ms) != 1 ||
		    secs < 0 ||
		    (strcmp(level, "error") && strcmp(level, "warn") && strcmp(level, "info") &&
		     strcmp(level, "debug"))) {
			snprintf(bad, cap, "%.*s", (int)(n < 200 ? n : 200), l);
			return 0;
		}
		if (!e)
			break;
		l = e + 1;
	}
	return 1;
}

#endif
