/* CPU-server runtime internals: the heap, mutators, and the functions the
 * runtime's files share. Not exported.
 *
 * Locking (docs/runtime.md has the full protocol):
 *  - heap->lock guards the mutator list, mutator states, stw_active, the
 *    globals and frame ranges. Mutators take it only on slow paths.
 *  - heap->alloc_lock guards the region table's allocation state (free
 *    list, eden region, kinds) outside collections.
 *  - heap->remset_lock guards every region's remembered set and the list
 *    of full barrier buffers; the transfer thread holds it while it files a
 *    buffer; a collection holds it from start to end.
 *  - stw_active (under heap->lock) makes one thread the collector.
 * Order: lock → remset_lock → alloc_lock.
 */
#ifndef RH_RUNTIME_INTERNAL_H
#define RH_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "common/common.h"
#include "gc/mark.h"
#include "gc/object.h"
#include "gc/region.h"
#include "gc/types.h"
#include "rheap/rheap.h"
#include "runtime/cmark.h"
#include "runtime/preclean.h"
#include "runtime/pretouch.h"
#include "runtime/rebuild.h"
#include "runtime/scratch.h"
#include "runtime/cssc.h"
#include "runtime/fullmark.h"
#include "runtime/refresh.h"
#include "runtime/gcwork.h"
#include "runtime/livestats.h"
#include "runtime/remote.h"
#include "runtime/sizing.h"
#include "swap/swap.h"

#define RH_MUTATOR_MAGIC 0x72686d7574617472ull /* "rhmutatr" */
#define RH_MUTATOR_DEAD 0x646561646d757461ull
#define RH_BQ_CAP 1024    /* barrier queue entries per buffer */
#define RH_GC_PINNED 2ull /* header gc bit: conservatively referenced */
/* Eden objects are promoted to old regions after surviving this many
 * partial collections; until then they are copied between survivor
 * regions (eden kind, collected with eden every time). */
#define RH_TENURE 3

enum rh_mstate {
	RH_M_RUNNING = 0,
	RH_M_STOPPED = 1, /* at a safepoint, waiting for the collection to end */
	RH_M_PARKED = 2,
	RH_M_COLLECTING = 3, /* this mutator's thread runs the collection */
};

/* A barrier buffer: <slot, value> pairs recorded by one mutator. */
typedef struct rh_bqbuf {
	struct rh_bqbuf *next;
	size_t n;
	uintptr_t e[RH_BQ_CAP][2];
} rh_bqbuf;

/* A stack range or a precise frame captured at a safepoint. */
typedef struct rh_stack_seg {
	uintptr_t lo, hi; /* [lo, hi) */
	int precise;      /* index into heap->ranges + 1, or 0 = conservative */
} rh_stack_seg;

struct rh_mutator {
	struct rh_mutator_fast fast; /* must be first: the inline ABI */
	uint64_t magic;
	rh_heap *heap;
	pthread_t thread;
	int state; /* enum rh_mstate, under heap->lock */
	rh_frame *frames;
	uintptr_t stack_hi; /* highest address of the thread's stack */

	/* Captured when the mutator stops or parks. */
	unw_context_t regs;
	rh_stack_seg *segs;
	size_t n_segs, cap_segs;

	rh_bqbuf *bq;
	rh_satb *satb;            /* overwritten references, while a concurrent cycle marks */
	uint64_t bytes_allocated; /* folded into stats at each collection */
	uint64_t slow_allocs;
	uint64_t barrier_slow;
	uintptr_t tlab_start;

	struct rh_mutator *next, *prev;
};

typedef struct rh_frame_range {
	uintptr_t lo, hi;
	rh_frame_fn fn;
	void *data;
} rh_frame_range;

struct rh_heap {
	rh_config cfg;
	uintptr_t base;
	uintptr_t size;
	uintptr_t region_size;
	uint32_t region_shift;
	uint32_t n_regions;
	size_t tlab_size;
	rh_region *regions;
	uint8_t *in_cset; /* per region, for the marker */

	rh_type_table types;
	bool types_closed; /* a mutator attached: the table is final */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	rh_mutator *mutators;
	size_t n_mutators;
	rh_mutator *graveyard; /* detached (debug builds keep them to catch reuse) */
	bool stw_active;
	void ***globals;
	size_t n_globals, cap_globals;
	rh_frame_range *ranges;
	size_t n_ranges;
	bool conservative;

	pthread_mutex_t alloc_lock;
	uint32_t *free_list; /* stack of free region indices */
	uint32_t n_free;
	uint32_t eden_cur; /* region index + 1 currently carved into TLABs */
	uint32_t n_eden;
	uint32_t eden_limit;
	uint32_t n_old, n_humongous;
	uint32_t n_warm, warm_limit; /* free regions kept mapped (local heaps) */
	uint32_t warm_reserve;       /* of those, kept for the next pause's copies (pretouch.P4) */

	pthread_mutex_t remset_lock;
	pthread_cond_t bq_cond;
	rh_bqbuf *bq_full; /* buffers waiting for the transfer thread */
	rh_bqbuf *bq_spare;
	uint32_t bq_n_spare;
	uint32_t bq_spare_max;                  /* spares kept (scratch.K3) */
	uint32_t bq_pause_bufs;                 /* buffers this pause's list took */
	uint64_t transfer_entries, transfer_ns; /* filed by the transfer thread */
	rh_bqbuf *bq_pause;    /* survivors' references this pause lists (rset.D1) */
	uint64_t remset_cards; /* cards over all source queues */
	/* Regions that could hold remembered cards (not eden) freed since
	 * the last purge of the remembered sets (region.c, rset.S1). */
	uint32_t freed_sources;
	pthread_t transfer;
	bool transfer_stop;

	/* Collector state, used with the world stopped. */
	uint64_t *mark_bits;  /* heap-wide */
	uint64_t *start_bits; /* heap-wide object starts, valid per region */
	uint64_t *card_bits;  /* heap-wide, one bit per card: a pause's cards to scan (rset.S2) */
	rh_marker marker;
	rh_sizing sz; /* generation sizing and the pause model (sizing.h) */
	/* Per copying thread: region index + 1 receiving promoted objects. */
	uint32_t dest_region[RH_COPY_THREADS_MAX];
	struct rh_crew *crew;          /* copying threads beside the collecting one, once started */
	uint32_t surv_dest[RH_TENURE]; /* per age: survivor region index + 1, this pause */
	uint32_t n_surv;               /* survivor regions (eden kind) left by the last pause */
	uint32_t surv_taken;           /* survivor regions taken in this pause */
	uint64_t gc_index;             /* index of the collection in progress, for events */

	rh_event_fn event_fn;
	void *event_data;

	pthread_mutex_t stats_lock;
	rh_stats stats;
	rh_livestats live; /* the stats file of the state directory (livestats.h) */
	uint64_t *pauses;  /* recorded pause times for percentiles */
	size_t n_pauses, cap_pauses;
	uint64_t used_bytes; /* for peak_used_bytes */

	bool verify;

	/* Concurrent marking (cmark.c), local heaps. */
	rh_cmark cm;
	uint32_t satb_on; /* every mutator's fast.satb; new ones copy it */

	/* Disaggregated heaps only. */
	rh_remote *remote;
	rh_swap *swap;
	uint32_t *freed; /* regions released in this collection: FREE to the tracers, or
	                  * pages to drop on a local heap (region.P1) */
	size_t n_freed;
	rh_fatal_fn fatal_fn;
	void *fatal_data;
	atomic_bool failed;

	/* Distributed collection (cssc.c), disaggregated heaps with offload. */
	bool offload_on;
	bool offload_active; /* this pause has tracer candidates */
	uint8_t *offload;    /* per region: RH_OFF_* */
	rh_cssc cssc;        /* the rest of its state (cssc.h) */
	rh_fullmark fm;      /* the tracers' full marking (fullmark.h) */
	rh_refresh refresh;  /* target queues rebuilt from their cards (refresh.h) */
	rh_preclean pc;      /* cleaning ahead of the tracers' full marking (preclean.h) */
	rh_pretouch pt;      /* readying free regions between pauses (pretouch.h) */
	rh_rebuild rb;       /* spares taking lost servers' places (rebuild.h) */
	rh_scratch scratch;  /* the pauses' work lists, kept between pauses (scratch.h) */
};

enum { RH_OFF_NONE = 0, RH_OFF_CAND = 1, RH_OFF_MOVED = 2, RH_OFF_DEST = 3 };

/* ---- regions (region.c) ---- */
static inline uint32_t rh_region_index(const rh_heap *h, uintptr_t a)
{
	return (uint32_t)((a - h->base) >> h->region_shift);
}
static inline rh_region *rh_region_of(rh_heap *h, uintptr_t a)
{
	return &h->regions[rh_region_index(h, a)];
}
/* A humongous continuation region stands for its head. */
static inline rh_region *rh_region_head(rh_heap *h, rh_region *r)
{
	return r->kind == RH_REGION_HUMONGOUS_CONT ? &h->regions[r->head] : r;
}
static inline bool rh_in_heap(const rh_heap *h, uintptr_t a)
{
	return a - h->base < h->size;
}
static inline bool rh_is_ref(const rh_heap *h, uintptr_t v)
{
	return (v & 7) == 0 && v - h->base < h->size;
}
/* A concurrent marking's snapshot, local (cmark.C3) or the tracers'
 * (fullconc.T1): what lies below each region's TAMS. */
static inline bool rh_below_tams(const rh_heap *h, uintptr_t v)
{
	return rh_is_ref(h, v) && v < h->cm.tams[rh_region_index(h, v)];
}
/* Region r's TAMS when a snapshot is taken: an old region's top, a
 * humongous region's object start only, and nothing of any other. */
static inline uintptr_t rh_snapshot_tams(const rh_region *r)
{
	if (r->kind == RH_REGION_OLD)
		return r->top;
	return r->kind == RH_REGION_HUMONGOUS ? r->start + 8 : r->start;
}
/* Take a free region, a warm one first (alloc_lock held, or the world
 * stopped); -1 if none. Not zeroed: [start, dirty_end) may hold old bytes.
 * A copy destination is never read past its top; eden zeroes each chunk
 * it carves, outside alloc_lock (alloc.P1). */
int64_t rh_region_take(rh_heap *h, rh_region_kind kind);
/* The same for the allocator's eden, which leaves warm_reserve warm
 * regions to the next pause (pretouch.P4). */
int64_t rh_region_take_eden(rh_heap *h);
/* The pretouch thread's three steps (region.P4): claim a cold free
 * region (alloc_lock held; -1 if none or the pool is full), touch its
 * pages (no lock), put it back warm (alloc_lock held). */
int64_t rh_region_claim_cold(rh_heap *h, uint32_t keep_free);
void rh_region_touch(const rh_heap *h, rh_region *r);
void rh_region_unclaim_warm(rh_heap *h, rh_region *r);
/* A free region among [lo, lo + n) that is not warm, for a tracer's
 * evacuation (alloc_lock held); -1 if none. */
int64_t rh_region_take_in(rh_heap *h, uint32_t lo, uint32_t n, rh_region_kind kind);
/* Release without keeping the region warm (its pages were a tracer's). */
void rh_region_release_cold(rh_heap *h, rh_region *r);
/* Tells the memory servers which regions this pause released (h->freed)
 * and waits for them to confirm; a failure ends the heap. */
void rh_region_flush_freed(rh_heap *h);
/* Take `n` contiguous free regions for a humongous object; -1 if none. */
int64_t rh_region_take_span(rh_heap *h, uint32_t n);
/* Return a region (and a humongous span) to the free list, dropping its
 * pages and its remembered set. */
void rh_region_release(rh_heap *h, rh_region *r);
/* Visit every reference slot inside a card (a source-queue entry): the
 * fields, within the card, of the objects that overlap it. Cards in free
 * regions hold nothing. */
void rh_card_slots(rh_heap *h, uint64_t card, rh_slot_fn fn, void *ctx);
/* The same for the cards [first, first + n), all in one region: the
 * objects are walked once across the run. */
void rh_cards_slots(rh_heap *h, uint64_t first, uint64_t n, rh_slot_fn fn, void *ctx);
/* The bytes of young objects an eden region holds: a region kept young
 * for its pins (pin.Y1) is mostly fillers, so its live bytes count. */
static inline uint64_t rh_young_bytes(const rh_region *r)
{
	return r->kept_young ? r->live_bytes : r->top - r->start;
}
/* The card holding heap address a (a remembered set's source). */
static inline uint64_t rh_card_of(const rh_heap *h, uintptr_t a)
{
	return (a - h->base) >> RH_CARD_SHIFT;
}
static inline uint32_t rh_card_region(const rh_heap *h, uint64_t card)
{
	return (uint32_t)((card << RH_CARD_SHIFT) >> h->region_shift);
}
/* Drop the cards that lie in freed regions (stale) and recount them. */
void rh_remsets_drop_freed(rh_heap *h);
static inline int rh_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}
static inline int rh_cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return (x > y) - (x < y);
}
/* The words of the object-start bitmap that cover region r
 * (region_size / 64 bytes of them). */
static inline uint64_t *rh_region_starts(const rh_heap *h, const rh_region *r)
{
	return &h->start_bits[((r->start - h->base) >> 3) >> 6];
}
/* Eden regions taken for allocation since the last pause: survivor
 * regions are eden too (n_surv of them, set as the pause ends), but not
 * allocation space. alloc_lock held. */
static inline uint32_t rh_eden_taken(const rh_heap *h)
{
	return h->n_eden > h->n_surv ? h->n_eden - h->n_surv : 0;
}
/* Build the object-start bitmap for a region by walking it. */
void rh_region_build_starts(rh_heap *h, rh_region *r);
/* fn(ctx, slot) for every reference field of every object in the young
 * (eden-kind) regions: the snapshot of a concurrent marking, local
 * (cmark.C4) or the tracers' (fullconc.T1), takes them all as roots. `who`
 * names the marking in the panic a corrupt header causes. */
void rh_region_young_slots(rh_heap *h, rh_slot_fn fn, void *ctx, const char *who);
/* The object containing address a in region r (starts must be valid), or 0. */
uintptr_t rh_region_object_at(rh_heap *h, rh_region *r, uintptr_t a);

/* rh_cards_slots, inline: a pause's card scan passes its own static fn,
 * which the compiler then inlines into the walk (most cards hold a few
 * small objects with a field or two each: a call per field cost more than
 * the field). */
static inline void rh_cards_slots_inline(rh_heap *h, uint64_t first, uint64_t n, rh_slot_fn fn,
                                         void *ctx)
{
	uintptr_t lo = h->base + (first << RH_CARD_SHIFT), hi = lo + (n << RH_CARD_SHIFT);
	rh_region *sr = rh_region_of(h, lo);
	if (sr->kind == RH_REGION_FREE)
		return;
	sr = rh_region_head(h, sr);
	if (sr->kind == RH_REGION_HUMONGOUS) {
		rh_object_slots_in_inline(&h->types, sr->start, lo, hi, fn, ctx);
		return;
	}
	if (!sr->starts_valid)
		rh_region_build_starts(h, sr);
	uintptr_t p = rh_region_object_at(h, sr, lo);
	if (!p)
		p = lo; /* the run starts at an object boundary or past top */
	while (p < hi && p < sr->top) {
		size_t bytes = rh_hdr_bytes(rh_hdr((void *)p));
		rh_object_slots_in_inline(&h->types, p, lo, hi, fn, ctx);
		p += bytes;
	}
}

/* ---- mutators and safepoints (mutator.c, stack.c) ---- */
/* Stop the world with the calling thread as collector: true. If another
 * thread is collecting, wait for it to finish (as a stopped mutator) and
 * return false. */
bool rh_stw_begin(rh_heap *h, rh_mutator *self);
void rh_stw_end(rh_heap *h);
void rh_stack_capture(rh_mutator *m);
/* Conservative words and precise slots of a stopped mutator. */
typedef void (*rh_word_fn)(void *ctx, uintptr_t word);
void rh_stack_scan(rh_mutator *m, rh_word_fn conservative, rh_slot_visitor precise, void *ctx);
void rh_tlab_retire(rh_mutator *m);

/* ---- barrier and remembered sets (barrier.c) ---- */
int rh_barrier_start(rh_heap *h);
void rh_barrier_stop(rh_heap *h);
/* With the world stopped and remset_lock held: file every pending entry. */
void rh_barrier_drain(rh_heap *h);
void rh_remember_later(rh_heap *h, uintptr_t slot, uintptr_t target);
void rh_barrier_hand_over(rh_heap *h);
void rh_barrier_discard(rh_heap *h);
/* An empty barrier buffer from the allocator; panics without memory. */
rh_bqbuf *rh_bq_new(void);
/* rset.D1 for the copying threads (evac.P6): in a pause (remset_lock
 * held), the spare buffers dealt round-robin into n chains, one a worker,
 * each with its buffers linked by `next` (NULL when there are none); and
 * a worker's buffers back, the filled ones queued for the transfer thread
 * as rh_remember_later's are, the empty ones spare again. */
void rh_bq_deal(rh_heap *h, rh_bqbuf **chains, unsigned n);
void rh_bq_take_back(rh_heap *h, rh_bqbuf *chain);
/* The words a target queue covers: a region's, or a humongous span's
 * (its head region holds the set). */
static inline size_t rh_remset_words(const rh_heap *h, const rh_region *head)
{
	return (head->kind == RH_REGION_HUMONGOUS ? head->span : 1) * h->region_size / 8;
}
/* File one cross-region reference (remset_lock held). */
void rh_remember(rh_heap *h, uintptr_t slot, uintptr_t target);
void rh_bq_flush(rh_mutator *m);

/* ---- collection (collect.c, evacuate.c, verify.c) ---- */
/* Collect (partial if `full` is 0, else full), the calling thread being
 * mutator `self`. Returns 1 if this thread collected, 0 if another
 * thread's collection ran meanwhile. RH_COLLECT_FULL_ON_CPU: a full
 * collection that compacts on the CPU server even when the tracers would
 * mark it (cssc.E1). */
#define RH_COLLECT_FULL_ON_CPU 2
int rh_collect_for_alloc(rh_heap *h, rh_mutator *self, int full);
size_t rh_verify_heap(rh_heap *h);
void rh_emit(rh_heap *h, rh_gc_kind kind, rh_phase ph, int begin);

/* ---- distributed collection (cssc.h) ---- */
/* Whether region i receives promoted objects (some copying thread's
 * destination), and forgetting it as one. */
static inline bool rh_is_dest(const rh_heap *h, uint32_t i)
{
	for (unsigned k = 0; k < RH_COPY_THREADS_MAX; k++)
		if (h->dest_region[k] == i + 1)
			return true;
	return false;
}
static inline void rh_dest_drop(rh_heap *h, uint32_t i)
{
	for (unsigned k = 0; k < RH_COPY_THREADS_MAX; k++)
		if (h->dest_region[k] == i + 1)
			h->dest_region[k] = 0;
}

static inline bool rh_cssc_cand(const rh_heap *h, uintptr_t v)
{
	return h->offload_active && rh_is_ref(h, v) && h->offload[rh_region_index(h, v)];
}

/* ---- stats (stats.c) ---- */
void rh_stats_record_pause(rh_heap *h, rh_gc_kind kind, uint64_t ns);

/* A memory server is lost: run the VM's fatal handler, then exit. */
_Noreturn void rh_heap_fail(rh_heap *h, const rh_error *err);

/* Thread-local last error. */
void rh_set_last_error(int code, const char *fmt, ...) RH_PRINTF(2, 3);

#if RH_DEBUG_CHECKS
#define RH_CHECK(cond, ...)                                                                        \
	do {                                                                                       \
		if (!(cond))                                                                       \
			rh_panic(__VA_ARGS__);                                                     \
	} while (0)
#else
#define RH_CHECK(cond, ...) ((void)0)
#endif

#endif
