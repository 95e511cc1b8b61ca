/* Generation sizing and the pause model (docs/collector.md, "Sizing").
 *
 * A partial pause is predicted as fixed + cards + copying: a fixed part
 * (stacks, reclaim), the remembered cards of the set scanned as roots, and
 * the survivors copied. Each is measured on its own after every pause;
 * eden is sized so that the prediction stays inside the pause budget, and
 * old regions join a set at their bytes' and cards' cost. The state is the
 * collecting thread's, read and written with the world stopped. */
#ifndef RH_RUNTIME_SIZING_H
#define RH_RUNTIME_SIZING_H

#include <stdbool.h>
#include <stdint.h>

/* The shares of gc.pause_budget_ms a partial collection plans for: eden's
 * survivors are copied in at most YOUNG_SHARE, and with the fixed part and
 * the cards the young pause keeps within PAUSE_SHARE; old regions add at
 * most OLD_SHARE; a CSSC's tracers take at most CSSC_SHARE. (A young
 * pause may aim lower, sizing.E4.) The rest
 * absorbs mispredictions: survival jumps when a program starts building
 * long-lived data. */
#define RH_SZ_YOUNG_SHARE 0.35
#define RH_SZ_PAUSE_SHARE 0.5
#define RH_SZ_OLD_SHARE 0.2
#define RH_SZ_CSSC_SHARE 0.5

/* An old region joins a partial set when at least this share (percent) of
 * it is dead by its last marking; under pressure (sizing.O2), the lower. */
#define RH_SZ_OLD_DEAD_PCT 35
#define RH_SZ_PRESSED_DEAD_PCT 20

typedef struct rh_sizing {
	double copy_ns_per_byte;  /* evacuation per surviving byte (marking, copying, fixing) */
	double card_ns;           /* scanning one remembered card as roots */
	double cards;             /* cards a partial pause scans, averaged */
	double fixed_ns;          /* the rest of a partial pause, averaged */
	double survival;          /* share of eden that survives a partial collection */
	double last_survival;     /* the last partial collection's */
	double surv_var;          /* its variance, decaying */
	double copy_var;          /* copy_ns_per_byte's variance, decaying (sizing.E3) */
	double surv_bytes;        /* survivor regions' bytes after a pause, averaged */
	uint64_t live_after_full; /* bytes marked by the last full collection */
	double full_growth;       /* old may reach this times live_after_full */
	bool full_due;            /* the old generation outgrew its bound: next pause is full */
	uint32_t tenure;          /* survivors are promoted at this age (1 .. RH_TENURE) */
	uint32_t probe;           /* pauses until a promoting tenure is measured again */
	bool probing;             /* ages survivors only to measure them (sizing.T3) */
	uint32_t streak;          /* measured pauses in a row that kept all they aged (sizing.T2) */
	size_t old_cands;         /* old regions the last marking left worth collecting */
	double cycle_pauses; /* partial pauses a concurrent cycle spans, averaged (sizing.C2) */
	uint64_t pause_t0;   /* when the pause under way stopped the world (rh_now_ns) */
	double scrub_ns_per_byte; /* a cycle's scrub finished in a pause, per byte (sizing.C3) */
	/* Growth per partial pause, averaged (sizing.F2): old bytes gained and
	 * free regions lost, from the values at the end of the last pause. */
	double old_step, free_step;
	uint64_t old_prev;
	uint32_t free_prev;
	bool steps_valid;
} rh_sizing;

/* sizing.F2: how many partial pauses ahead a full marking counts as near. */
#define RH_SZ_NEAR_PAUSES 4.0

typedef struct rh_heap rh_heap;
typedef struct rh_gc rh_gc;

/* What a CSSC's tracers may take of a pause budget of budget_us (the
 * CSSC_SHARE of it), in ns. */
static inline double rh_sizing_cssc_budget_ns(uint64_t budget_us)
{
	return (double)budget_us * 1000.0 * RH_SZ_CSSC_SHARE;
}

/* Before the first collection. */
void rh_sizing_init(rh_heap *h);
/* After a collection's reclaim: measure it, then size eden, the warm pool
 * and the tenure age for the next. */
void rh_sizing_after(rh_gc *g);
/* A marking of the old generation (a full collection's, stopped, or a
 * concurrent cycle's) found `live` of the `set` bytes it covered: the
 * bound of the next starts from it. */
void rh_sizing_marked(rh_heap *h, uint64_t live, uint64_t set, bool stopped);
/* Bytes in old and humongous regions. */
uint64_t rh_sizing_old_used(const rh_heap *h);
/* Whether the partial collection due now is better done as a full one. */
bool rh_sizing_full_foreseen(const rh_heap *h);
/* Whether free space is low enough that a concurrent cycle should start
 * now, to find the old generation's garbage before a full collection is
 * forced (sizing.C1). */
bool rh_sizing_mark_due(const rh_heap *h);
/* sizing.C2: whether the free regions run short before another
 * concurrent cycle could finish and the mixed pauses after it reclaim. */
bool rh_sizing_pressed(const rh_heap *h);
/* sizing.O2: the time a pressed partial pause has left for old regions,
 * after what it spent so far and what eden's `eden_bytes` will cost. */
double rh_sizing_old_room_ns(const rh_heap *h, uint64_t eden_bytes);
/* sizing.C3: whether a concurrent cycle with `bytes` left to scrub is
 * finished in the pause under way. */
bool rh_sizing_finish_now(const rh_heap *h, uint64_t bytes);
/* A scrub of `bytes` in a pause took `ns`. */
void rh_sizing_scrubbed(rh_heap *h, uint64_t bytes, uint64_t ns);
/* A concurrent cycle finished after spanning `pauses` partial pauses. */
void rh_sizing_cycle_done(rh_heap *h, uint64_t pauses);
/* Whether the tracers' full marking is expected within RH_SZ_NEAR_PAUSES
 * partial pauses at the growth of the last ones (sizing.F2). */
bool rh_sizing_full_near(const rh_heap *h);
/* Whether the free regions fall below gc.full_threshold within k partial
 * pauses at the averaged loss per pause (sizing.F3). */
bool rh_sizing_short_within(const rh_heap *h, double k);
/* Predicted pause time an old region adds to a partial collection. */
double rh_sizing_old_cost(const rh_heap *h, uint64_t live_bytes, uint64_t cards);

#endif
