/* The pause's work lists, kept from one pause to the next (scratch.c).
 * A pause builds lists of root slots, card runs, objects to scan and
 * references to remember; allocated afresh each time, every page of them
 * was a page fault inside the pause. The protocol: docs/collector.md,
 * "Scratch buffers" (scratch.K1-K4). Not exported. */
#ifndef RH_RUNTIME_SCRATCH_H
#define RH_RUNTIME_SCRATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/limits.h" /* RH_COPY_THREADS_MAX */

/* Which list a buffer holds; per-worker lists at id + worker. */
enum {
	RH_SCR_GC_SLOTS,  /* rh_gc.slots: root slots, then worker 0's stack */
	RH_SCR_GC_KEPT,   /* rh_gc.kept: objects kept in place, then worker 0's */
	RH_SCR_CARD_RUNS, /* cards.c: runs of remembered cards */
	RH_SCR_POOL,      /* gcwork.c: the copying threads' shared pool */
	RH_SCR_W_SLOTS,   /* + worker: its slot stack (worker 0's when roots are shared) */
	RH_SCR_W_KEPT = RH_SCR_W_SLOTS + RH_COPY_THREADS_MAX,  /* + worker, from 1 */
	RH_SCR_W_REM = RH_SCR_W_KEPT + RH_COPY_THREADS_MAX,    /* + worker (offload on, evac.P6) */
	RH_SCR_CARD_PART = RH_SCR_W_REM + RH_COPY_THREADS_MAX, /* + worker: card-scan slots */
	RH_SCR_W_COPIES = RH_SCR_CARD_PART + RH_COPY_THREADS_MAX, /* + worker: evac.P8's copies */
	RH_SCR_N = RH_SCR_W_COPIES + RH_COPY_THREADS_MAX,
};

typedef struct rh_scratch_buf {
	void *p;
	size_t cap;   /* in elements */
	size_t bytes; /* cap times the element size, while held */
	/* scratch.K4: the capacity it was taken with (a pause that puts it
	 * back larger grew it), the bytes to ready ahead for the next pause
	 * (0: none) and how many of them are written already. */
	size_t taken_cap;
	size_t ahead, touched;
} rh_scratch_buf;

typedef struct rh_scratch {
	rh_scratch_buf buf[RH_SCR_N];
	size_t held;    /* bytes held over all buffers */
	size_t limit;   /* scratch.K2: most bytes held between pauses */
	size_t dropped; /* buffers freed at rh_scratch_put for the limit */
} rh_scratch;

/* Heap open: nothing held yet; at most `limit` bytes will be. */
void rh_scratch_init(rh_scratch *s, size_t limit);
/* Heap close: everything freed. */
void rh_scratch_fini(rh_scratch *s);
/* scratch.K1: the buffer `id` (NULL, cap 0 if none is held), now the
 * caller's until it gives it back with rh_scratch_put. */
void *rh_scratch_take(rh_scratch *s, unsigned id, size_t *cap);
/* The buffer back, `cap` elements of `elem` bytes (the caller may have
 * grown it with rh_grow); kept for the next pause, or freed if holding it
 * would pass the limit (scratch.K2). */
void rh_scratch_put(rh_scratch *s, unsigned id, void *p, size_t cap, size_t elem);
/* scratch.K4, for the pretouch thread between pauses (the pause gate
 * held): one step of readying ahead a buffer that its last pause grew,
 * at most RH_SCRATCH_STEP bytes written; false when none is left. */
#define RH_SCRATCH_STEP (256u << 10)
bool rh_scratch_ahead_step(rh_scratch *s);

#endif
