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
