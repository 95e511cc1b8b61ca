/* Restoring redundancy after a memory server's loss (rebuild.c): a thread
 * that gives each lost slot a spare from redundancy.spares and has the
 * swap system copy the slot's share onto it (docs/resilience.md,
 * red.S1-S3). Disaggregated heaps with spares only. Not exported. */
#ifndef RH_RUNTIME_REBUILD_H
#define RH_RUNTIME_REBUILD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct rh_heap;

typedef struct rh_rebuild {
	pthread_t thread;
	bool started;
	pthread_mutex_t lock; /* guards the fields below */
	pthread_cond_t cond;  /* a loss to look at, or stop */
	bool kicked, stop;
	size_t spares_used; /* the next spare to try is this one */
} rh_rebuild;

/* After the swap system and the control path are open. */
int rh_rebuild_init(struct rh_heap *h);
/* Before the swap system closes: a rebuild under way stops between regions. */
void rh_rebuild_stop(struct rh_heap *h);
/* A server was lost and survived: look for a spare (any thread). */
void rh_rebuild_kick(struct rh_heap *h);

#endif
