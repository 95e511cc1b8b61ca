/* Full marking by the tracers (docs/distributed-gc.md, "Full-heap marking"
 * and "Concurrent full marking"): stopped-the-world, or begun at the end
 * of a partial pause and ended by a later one while the mutators run in
 * between (fullconc.T1-T6). The state is the collecting thread's, read
 * and written with the world stopped. Not exported. */
#ifndef RH_RUNTIME_FULLMARK_H
#define RH_RUNTIME_FULLMARK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct rh_fullmark {
	bool conc;               /* gc.concurrent_mark on a disaggregated heap */
	atomic_bool active;      /* a concurrent marking runs on the tracers */
	uint64_t t_start;        /* when it began */
	uint64_t pauses;         /* partial pauses since */
	uint64_t last_pauses;    /* the partial pauses the last one spanned */
	uint64_t logged;         /* references the barrier logged, relayed as roots */
	uint64_t begin_ns;       /* its first pause's share */
	_Atomic uint64_t cycles; /* concurrent markings begun */
	atomic_bool request;     /* rh_collect_concurrent: begin at the next partial pause */
	bool whole;              /* this pause was asked for a full collection */
	bool drop_logged;        /* tests only (test_satb.c's proof): fullconc.T4 off */
} rh_fullmark;

typedef struct rh_heap rh_heap;
struct rh_mutator;

/* rh_collect_concurrent on a disaggregated heap. */
int rh_fullmark_collect(struct rh_mutator *m, int wait);

void rh_fullmark_init(rh_heap *h);
bool rh_fullmark_active(const rh_heap *h);
/* World stopped, at a pause's start: relay what the barrier logged. */
void rh_fullmark_pause_begin(rh_heap *h);
/* End of a partial pause (eden empty): begin a concurrent marking when
 * one is due (sizing.F1), or when the room would run out before one
 * begun now ends (sizing.F3), and none runs. */
void rh_fullmark_maybe_start(rh_heap *h, bool due);
/* A concurrent marking may end in this pause: no batch is outstanding. */
bool rh_fullmark_quiet(const rh_heap *h);
/* The full collection by the tracers: all of it with the world stopped,
 * or the end of the concurrent one. Dead objects become fillers, empty
 * regions are freed, every remembered set is rebuilt. Returns the live
 * bytes. Nothing moves and no page is pulled in. */
uint64_t rh_fullmark_run(rh_heap *h);

#endif
