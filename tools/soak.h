/* rheapctl soak's workload (tools/soak.c), run in a child of rheapctl on a
 * cluster it brought up. */
#ifndef RH_TOOLS_SOAK_H
#define RH_TOOLS_SOAK_H

#include <stdint.h>

typedef struct rh_soak_opts {
	const char *config;  /* the cluster's config file */
	double seconds;      /* run this long (or until SIGINT/SIGTERM) */
	unsigned threads;    /* mutator threads; 0 = 4 */
	uint64_t live_bytes; /* live data to keep; 0 = a quarter of the heap */
	uint64_t seed;
} rh_soak_opts;

/* 0 when every check held, 1 on a lost or damaged object or a failed
 * allocation, 2 if the heap could not be opened. A verifier failure
 * aborts the process; a lost tracer ends it with RH_EXIT_LOST. */
int rh_soak_run(const rh_soak_opts *o);

#endif
