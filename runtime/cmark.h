/* Concurrent marking of the old generation on a local heap (cmark.c).
 * The protocol and its invariants: docs/collector.md, "Concurrent
 * marking". Not exported. */
#ifndef RH_RUNTIME_CMARK_H
#define RH_RUNTIME_CMARK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct rh_heap;
struct rh_mutator;

enum rh_cm_phase {
	RH_CM_IDLE = 0, /* no cycle */
	RH_CM_MARK,     /* the marker thread traces from the snapshot */
	RH_CM_MARKED,   /* its work list ran dry: the next pause remarks */
	RH_CM_SCRUB,    /* the marker turns dead objects below TAMS into fillers */
	RH_CM_SCRUBBED, /* the next pause frees dead regions and publishes counts */
};

#define RH_SATB_CAP 512 /* entries per SATB buffer */
typedef struct rh_satb {
	struct rh_satb *next;
	uint32_t n;
	uintptr_t e[RH_SATB_CAP];
} rh_satb;

typedef struct rh_cmark {
	bool on; /* gc.concurrent_mark and a local heap: a marker thread runs */
	pthread_t thread;
	/* Held by the marker while it works and by the collector during a
	 * pause: the two never touch the heap at once. */
	pthread_mutex_t lock;
	pthread_cond_t cond;     /* the marker waits for work or for a pause to end */
	pthread_mutex_t wlock;   /* for waiter */
	pthread_cond_t waiter;   /* rh_collect_concurrent waits for a phase change */
	atomic_int pause_wanted; /* pauses waiting for the lock */
	atomic_bool stop;
	atomic_int phase;       /* enum rh_cm_phase; changed under lock */
	atomic_bool request;    /* start a cycle at the end of the next partial pause */
	bool held;              /* this pause holds lock (the collector's alone) */
	_Atomic uint64_t cycle; /* cycles started */

	uint64_t *bits;   /* one bit per 8 bytes below TAMS, like mark_bits */
	uintptr_t *tams;  /* per region: top at the snapshot (start: none) */
	uint64_t *live;   /* per region: bytes marked below TAMS */
	uintptr_t *stack; /* grey objects */
	size_t n_stack, cap_stack;
	uintptr_t (*parts)[2]; /* large objects being scanned: <object, next byte> */
	size_t n_parts, cap_parts;
	uint32_t scrub_next; /* region the scrub is in */
	uintptr_t scrub_pos; /* and where in it (0: its start) */
	uint8_t *dirty;      /* per region: bits a cycle may have set (cmark.C8) */
	uint32_t clear_next; /* next region the marker clears between cycles */

	pthread_mutex_t satb_lock;
	rh_satb *satb_full; /* filled buffers, for the marker */
	uint64_t t_start;   /* when the cycle started */
	uint64_t pauses0;   /* partial collections before it started (sizing.C2) */
	uint64_t mark_ns;   /* marker thread time this cycle */
} rh_cmark;

/* The snapshot barrier for the tracers' concurrent full marking
 * (fullmark.c), which keeps its TAMS in `tams`: on or off for every
 * mutator (world stopped), and the filled buffers, taken. */
void rh_satb_set(struct rh_heap *h, bool on);
rh_satb *rh_satb_take(struct rh_heap *h);
/* Every region's TAMS back to its start: no snapshot. */
void rh_tams_reset(struct rh_heap *h);

/* Heap open and close. */
int rh_cmark_init(struct rh_heap *h);
void rh_cmark_stop(struct rh_heap *h);

/* Inside a pause (world stopped, remset_lock held): take the marker's
 * lock unless a partial pause may run beside it, then do what the phase
 * calls for (remark, finish); a full collection drops the cycle. */
void rh_cmark_pause_begin(struct rh_heap *h, int kind);
/* End of a partial pause: start a cycle when one is due (snapshot). */
void rh_cmark_maybe_start(struct rh_heap *h, bool due);
/* A full collection is about to run: drop the cycle in progress (also
 * for a full collection that follows a partial one in the same pause). */
void rh_cmark_abort(struct rh_heap *h);
/* Last thing in a pause: let the marker run again. */
void rh_cmark_pause_end(struct rh_heap *h);
/* The lock alone (the verifier between collections); pause_end releases. */
void rh_cmark_hold(struct rh_heap *h);
/* A cycle is between its snapshot and its finish. */
bool rh_cmark_active(struct rh_heap *h);

/* A mutator's buffer (detach, or full). */
void rh_satb_flush(struct rh_mutator *m);

#endif
