/* Internal to the tracer's collector (memserver/dgc*.c): the state the
 * marking thread owns, shared by the files that split its work. Nothing
 * here is touched by any other thread except through `lock`. */
#ifndef RH_MEMSERVER_DGC_INT_H
#define RH_MEMSERVER_DGC_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/common.h"
#include "common/grow.h"
#include "gc/mark.h"
#include "gc/region.h"
#include "memserver/dgc.h"

enum { T_NONE = 0, T_MARKED = 1 };
#define STEP 4096 /* objects marked between looks at the inbox */
#define PSEUDO_TYPES 0xff

typedef struct treg {
	uint32_t ident, top;
	uint8_t kind, evicted_pct;
	uint16_t survivals;
	uint8_t state, busy, seen, moved;
	uint8_t evacuated;        /* moved out in a CSSC; forwarding headers stay until FREE */
	uint8_t marking;          /* a helper thread is marking it (set and cleared under lock) */
	uint8_t have_roots;       /* the epoch roots for this (ident, top) arrived */
	uint8_t roots_new;        /* new roots since its marking began (rset.T1) */
	uint64_t h0;              /* log head when marking began */
	uint64_t marked_ns;       /* when the marking ended */
	uint32_t *roots, *rroots; /* epoch roots; remark roots (word offsets) */
	size_t n_roots, cap_roots, n_rroots, cap_rroots;
	uintptr_t *order, *deferred;
	size_t n_order, n_deferred;
	uint64_t live;
} treg;

typedef struct inmsg {
	struct inmsg *next;
	size_t len;
	uint8_t buf[];
} inmsg;

typedef struct {
	uint32_t region;
	uint64_t top;
} dcur;

/* One marker: the collector thread's own (remark, evacuation, full
 * marking, and MSCT) or a helper thread's (MSCT only). A helper owns the
 * region it was given (treg.marking) until it hands it back under `lock`. */
typedef struct mctx {
	rh_dgc *d;
	rh_marker mk;
	uint8_t *in_set;
	uint64_t *live_tmp;
	uintptr_t cur_start, cur_end; /* the region being marked */
	bool cur_remark;
	int64_t region; /* helper: the region given to it, or -1 */
	pthread_t thr;
	bool started;
} mctx;

struct rh_dgc {
	const rh_config *cfg;
	rh_partition part;
	rh_region_meta *meta;
	uint64_t region_size;
	uint32_t region_shift, pages;
	treg *r;
	uint64_t *marks;  /* partition-wide, one bit per word */
	uint64_t *starts; /* one region, one bit per word */
	uint8_t *logged;  /* one region, per page */
	rh_type_table types;
	bool have_types;
	mctx mx;  /* the collector thread's own marker */
	mctx *hx; /* helper markers (gc.tracer_threads - 1) for MSCT */
	uint32_t n_hx;
	bool hx_stop;

	rh_dgc_send_fn send;
	void *send_ctx;
	pthread_t thr;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	inmsg *in_head, *in_tail;
	bool stop;
	int failed;
	rh_error fail_err;
	rh_dgc_stats st;
	/* Tests only (tests/dgc/test_stale.c): called between two steps of a
	 * region's concurrent marking, where an eviction batch may land. */
	void (*step_hook)(void *ctx);
	void *step_ctx;

	/* Full-heap marking (between FULL BEGIN and END). */
	bool full;
	/* Begun with BEGIN_CONCURRENT: the mutators run while it marks
	 * (docs/distributed-gc.md, "Concurrent full marking", fullconc.T1-T6). */
	bool full_conc;
	uint32_t *tams;        /* per region: bytes below its TAMS (concurrent) */
	uint32_t full_pending; /* MARK_REFS taken and not yet acknowledged */
	uint64_t full_ignored; /* references outside the snapshot, left alone */
	uint64_t full_id, full_t0;
	uint32_t n_parts;
	rh_partition *parts;     /* every tracer's partition */
	uint64_t **out;          /* per partition: references to send it */
	size_t *n_out, *cap_out; /* per partition */
};

static inline void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	return rh_grow(p, cap, need, elem, 256, "tracer");
}

static inline uintptr_t rstart(const rh_dgc *d, uint32_t l)
{
	return d->part.base + ((uintptr_t)l << d->region_shift);
}

static inline int local_of(rh_dgc *d, uint32_t region, uint32_t *l)
{
	if (region < d->part.first_region || region - d->part.first_region >= d->part.n_regions)
		return -1;
	*l = region - d->part.first_region;
	return 0;
}

/* Fail the thread: the protocol was broken (the ERROR goes to the CPU
 * server, which then treats this tracer as lost). Returns -1. */
int rh_dgc_fail(rh_dgc *d, const char *fmt, ...) RH_PRINTF(2, 3);
/* Send to the CPU server; a failure stops the thread. 0 or -1. */
int rh_dgc_send(rh_dgc *d, const rh_msg *m);
void rh_dgc_reset_region(rh_dgc *d, uint32_t l);

/* The state of rh_dgc_open without its threads: tests/fuzz/fuzz_dgc.c
 * drives it on its own thread through the two calls below. */
int rh_dgc_new(rh_dgc **out, const rh_config *cfg, const rh_partition *part, rh_region_meta *meta,
               rh_dgc_send_fn send, void *send_ctx, rh_error *err);
/* Handle one queued message (as rh_dgc_post took it, or rh_dgc_set_types
 * behind PSEUDO_TYPES). 0, or -1 when it broke the protocol (failed set). */
int rh_dgc_handle(rh_dgc *d, const uint8_t *buf, size_t len);
/* Mark the next region MSCT would pick; false if none is due. */
bool rh_dgc_mark_next(rh_dgc *d);

/* Full-heap marking (dgc_full.c). */
int rh_dgc_full_begin(rh_dgc *d, const rh_msg_full *m);
int rh_dgc_full_refs(rh_dgc *d, const rh_msg_mark_refs *m);
int rh_dgc_full_end(rh_dgc *d);
/* A concurrent full marking's next slice of work, between messages: true
 * if there was any. */
bool rh_dgc_full_step(rh_dgc *d);
/* Evicted cards fixed on the host (dgc_fix.c). */
int rh_dgc_fix_cards(rh_dgc *d, const rh_msg_fix_cards *m, uint32_t seq);

#endif
