/* Parallel work in a pause (docs/collector.md, "Parallel copying"): a crew
 * of helper threads that run one function alongside the collecting thread,
 * and a shared pool through which busy workers hand work to idle ones.
 * Not exported. */
#ifndef RH_RUNTIME_GCWORK_H
#define RH_RUNTIME_GCWORK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "config/limits.h" /* RH_COPY_THREADS_MAX */

/* Helper threads, created once per heap and parked between pauses. */
typedef struct rh_crew rh_crew;

/* n threads in all, counting the caller's: n - 1 helpers. NULL when a
 * thread cannot be created (the caller then works alone). */
rh_crew *rh_crew_new(unsigned n);
void rh_crew_free(rh_crew *c);
unsigned rh_crew_size(const rh_crew *c);
/* fn(arg, 0) on the caller and fn(arg, i) on helper i, 1 <= i < n; returns
 * when every call has returned, so what they wrote is visible after. */
void rh_crew_run(rh_crew *c, void (*fn)(void *arg, unsigned id), void *arg);

/* The shared pool: work items (slots) given up by a worker with plenty,
 * taken by one with none. The pass is over when every worker waits for
 * work and the pool is empty: no worker holds any, none can make more. */
typedef struct rh_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void ***items;
	size_t n, cap;
	unsigned workers; /* taking part in this pass */
	unsigned idle;    /* waiting in rh_pool_take */
	unsigned hungry;  /* idle, read without the lock by busy workers */
	bool done;
} rh_pool;

void rh_pool_init(rh_pool *p, unsigned workers);
void rh_pool_fini(rh_pool *p);

/* Whether a worker is waiting for work: a hint, read without the lock. */
static inline bool rh_pool_hungry(rh_pool *p)
{
	return __atomic_load_n(&p->hungry, __ATOMIC_RELAXED) != 0;
}

/* Add n items (out of memory is fatal, as for every collector work list). */
void rh_pool_give(rh_pool *p, void ***items, size_t n);

/* Up to max items into out, waiting while the pool is empty and some
 * worker is still busy. 0 means the pass is over. */
size_t rh_pool_take(rh_pool *p, void ***out, size_t max);

#endif
