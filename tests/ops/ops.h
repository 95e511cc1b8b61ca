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

/* Every line of a tracer log is one event: "rheap[PID] LEVEL component: ...". */
static inline int ops_log_well_formed(const char *log, char *bad, size_t cap)
{
	for (const char *l = log; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		int pid, used = 0;
		char level[8];
		if (sscanf(l, "rheap[%d] %7s %n", &pid, level, &used) != 2 || !used ||
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
