/* Live stats: the heap's rh_stats_json in a file of the state directory,
 * rewritten after collections, so that `rheapctl stats` shows a running
 * program from outside (docs/operations.md, "Live stats"). */
#ifndef RH_RUNTIME_LIVESTATS_H
#define RH_RUNTIME_LIVESTATS_H

#include <stdint.h>

struct rh_heap;

typedef struct rh_livestats {
	int dfd;              /* the state directory; -1: off */
	char name[48];        /* stats-PID-N.json */
	uint64_t interval_ns; /* at most one write per interval (operations.L1) */
	uint64_t next_ns;     /* the next write's earliest time (atomic: collectors race on it) */
} rh_livestats;

/* At rh_heap_open, once the heap works: the state directory (RHEAP_STATE_DIR
 * or /tmp/rheap-UID, checked as rheapctl checks it), the interval
 * (RHEAP_LIVE_STATS: off, or milliseconds, default 100), and a first
 * write. A refused directory turns live stats off with a warning. */
void rh_livestats_open(struct rh_heap *h);
/* After a pause, mutators running: a write if the interval has passed. */
void rh_livestats_after_gc(struct rh_heap *h);
/* At rh_heap_close: the file is removed. */
void rh_livestats_close(struct rh_heap *h);
/* On the fatal path, other threads possibly still running: the file only
 * is removed (the descriptor stays, as a write may be using it). */
void rh_livestats_remove(struct rh_heap *h);

#endif
