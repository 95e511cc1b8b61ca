/* rheap embedding API.
 *
 * A VM opens one heap, registers its object types as data, attaches each
 * mutator thread, allocates through the inline fast path in rheap-inline.h,
 * stores references through rh_write_ref(), polls rh_safepoint() in loops
 * and calls, and reports its roots. See docs/embedding.md.
 *
 * Threading: every function taking an rh_mutator must be called from the
 * thread that attached it. rh_heap_* functions may be called from any thread
 * unless noted. Debug builds (-Ddebug_checks=true, default for buildtype
 * debug) abort with a message on API misuse: wrong thread, unattached
 * mutator, barrier on a slot outside the heap, detach while parked, etc.
 */
#ifndef RHEAP_H
#define RHEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rheap-config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The project's version (meson.build's project()): meson refuses to
 * configure when these disagree with it (include/meson.build), and the
 * programs print RH_VERSION_STRING for --version. */
#define RH_VERSION_MAJOR 0
#define RH_VERSION_MINOR 2
#define RH_VERSION_PATCH 0
#define RH_VERSION_STRING "0.2.0"

/* ------------------------------------------------------------------ errors */

typedef enum rh_status {
	RH_OK = 0,
	RH_EINVAL = 1,    /* bad argument */
	RH_ECONFIG = 2,   /* bad configuration value */
	RH_ENOMEM = 3,    /* heap exhausted after a full collection, or host memory */
	RH_ESTATE = 4,    /* call not allowed in the current state */
	RH_EIO = 5,       /* system call or transport failure */
	RH_ETIMEDOUT = 6, /* peer did not answer within the timeout */
	RH_EPEER = 7,     /* peer closed, died or sent a malformed message */
	RH_EAUTH = 8,     /* authentication failed */
	RH_ERANGE = 9,    /* access outside registered memory */
	RH_EBUSY = 10,    /* resource already in use */
} rh_status;

struct rh_error {
	int code; /* an rh_status */
	char msg[256];
};
typedef struct rh_error rh_error;

RH_API const char *rh_status_name(int code);

/* ------------------------------------------------------------------ types */

typedef uint32_t rh_type_id; /* 1..RH_MAX_TYPES-1; 0 is rheap's filler */
#define RH_MAX_TYPES 65536

typedef enum rh_layout {
	/* fixed size; pointer fields at ptr_offsets */
	RH_LAYOUT_FIXED = 0,
	/* length word at offset 8, then elements of elem_size bytes. The fixed
	 * part (size bytes, header and length included) may hold more VM fields
	 * and pointers (ptr_offsets); each element's pointers are at
	 * elem_ptr_offsets. */
	RH_LAYOUT_REF_ARRAY = 1,    /* elem_size 8, one pointer per element */
	RH_LAYOUT_BYTE_ARRAY = 2,   /* elem_size 1, no pointers in elements */
	RH_LAYOUT_RECORD_ARRAY = 3, /* elem_size and elem_ptr_offsets given */
} rh_layout;

#define RH_HEADER_SIZE 8
#define RH_ARRAY_HEADER_SIZE 16 /* header + length word */
#define RH_MAX_PTR_FIELDS 256

typedef struct rh_type_desc {
	const char *name; /* unique, for the type table and diagnostics */
	rh_layout layout;
	uint32_t size;               /* bytes of the fixed part, header included, multiple of 8 */
	uint32_t elem_size;          /* record arrays only */
	const uint32_t *ptr_offsets; /* offsets in the fixed part, 8-aligned, >= 8 */
	uint32_t n_ptrs;
	const uint32_t *elem_ptr_offsets; /* record arrays only, 8-aligned */
	uint32_t n_elem_ptrs;
} rh_type_desc;

/* A slot declared as a pointer field holds either a reference (an 8-aligned
 * address inside the heap that starts an object) or an immediate: anything
 * that is not 8-aligned or lies outside the heap. Tagged VMs keep their
 * immediates' low three bits non-zero. */

/* ------------------------------------------------------------------ heap */

typedef struct rh_heap rh_heap;
typedef struct rh_mutator rh_mutator;

/* Open a heap. The config is copied. NULL on failure, with err filled. */
RH_API rh_heap *rh_heap_open(const rh_config *cfg, rh_error *err);
RH_API rh_heap *rh_heap_open_file(const char *path, rh_error *err);
/* No mutator may be attached. Releases the address range. */
RH_API void rh_heap_close(rh_heap *h);

/* The last error on the heap (set when an operation returns NULL/failure
 * without an rh_error argument, e.g. allocation). Thread-local. */
RH_API const rh_error *rh_last_error(void);

/* Register a type. Returns the id (>= 1) or 0 with err filled. Allowed only
 * before the first mutator attaches (the table is shipped to tracers). */
RH_API rh_type_id rh_type_register(rh_heap *h, const rh_type_desc *desc, rh_error *err);

/* The type table as JSON (malloc'd). */
RH_API char *rh_type_table_json(rh_heap *h);

/* ------------------------------------------------------------------ mutators */

RH_API rh_mutator *rh_mutator_attach(rh_heap *h, rh_error *err);
RH_API void rh_mutator_detach(rh_mutator *m);

/* Around blocking calls: a parked mutator does not hold up a collection. It
 * must not touch heap objects until it unparks. */
RH_API void rh_mutator_park(rh_mutator *m);
RH_API void rh_mutator_unpark(rh_mutator *m);

/* ------------------------------------------------------------------ allocation */

/* See rheap-inline.h for rh_alloc() and rh_alloc_array(), the fast paths.
 * The slow paths return zeroed objects with the header (and length) set, or
 * NULL with rh_last_error() set to RH_ENOMEM. They may collect. */
RH_API void *rh_alloc_slow(rh_mutator *m, rh_type_id t, size_t bytes, size_t length);

/* Size in bytes an object of type t with `length` elements occupies. */
RH_API size_t rh_object_size(rh_heap *h, rh_type_id t, size_t length);

/* Type and length of an object (length 0 for fixed types). */
RH_API rh_type_id rh_object_type(const void *obj);
RH_API size_t rh_array_length(const void *obj);

/* ------------------------------------------------------------------ barrier */

/* Out-of-line part of rh_write_ref(): records a cross-region reference. */
RH_API void rh_barrier_slow(rh_mutator *m, void **slot, void *val);

/* ------------------------------------------------------------------ safepoints */

RH_API void rh_safepoint_slow(rh_mutator *m);

/* Request a collection now: 0 = partial (young + chosen old regions), which
 * becomes or is followed by a full one when the old generation would
 * outgrow its bound (docs/collector.md, "Sizing"); 1 = full heap. Must be
 * called by an attached, unparked mutator. */
RH_API int rh_collect(rh_mutator *m, int full);

/* Start a concurrent marking cycle of the old generation (or join the one
 * running) with a partial collection; with `wait`, return once the cycle
 * has finished: the mutator is parked while the marker works and runs the
 * remark and finish pauses itself. (If that partial collection has to
 * become a full one, the heap being short of free regions, no cycle runs:
 * the full collection did its work.) Dead old regions are freed at the
 * finish; partly dead ones are evacuated by the partial collections that
 * follow (docs/collector.md, "Concurrent marking"). On a disaggregated heap
 * with offloading on, the cycle is the tracers' full marking, begun at the
 * end of the partial collection and ended by the first pause that finds it
 * done (docs/distributed-gc.md, "Concurrent full marking"). RH_EINVAL when
 * concurrent marking is off (gc.concurrent_mark false, or offloading off on
 * a disaggregated heap). */
RH_API int rh_collect_concurrent(rh_mutator *m, int wait);

/* ------------------------------------------------------------------ roots */

/* Shadow stack: a frame of n slots, pushed and popped LIFO by its mutator.
 * Slots hold references or immediates and are updated when objects move. */
typedef struct rh_frame {
	struct rh_frame *prev;
	size_t n;
	void **slots;
} rh_frame;

RH_API void rh_push_frame(rh_mutator *m, rh_frame *f, void **slots, size_t n);
RH_API void rh_pop_frame(rh_mutator *m, rh_frame *f);

/* A global slot (static or malloc'd) that holds a reference. */
RH_API int rh_global_add(rh_heap *h, void **slot);
RH_API int rh_global_remove(rh_heap *h, void **slot);

/* Conservative scanning of each mutator's native stack and registers is on
 * by default; a VM with complete precise roots may turn it off. Objects a
 * conservative word may point into are pinned for that collection. */
RH_API void rh_set_conservative(rh_heap *h, bool on);

/* A precise frame callback. While walking a mutator's native stack with
 * libunwind, frames whose instruction pointer lies in [ip_lo, ip_hi) are not
 * scanned conservatively; instead fn(frame_sp, frame_cfa, visit, vctx, data)
 * is called and must call visit(vctx, slot) for each reference slot of that
 * frame. frame_sp is the frame's stack pointer, frame_cfa its canonical frame
 * address (the caller's stack pointer before the call). */
typedef void (*rh_slot_visitor)(void *vctx, void **slot);
typedef void (*rh_frame_fn)(uintptr_t frame_sp, uintptr_t frame_cfa, rh_slot_visitor visit,
                            void *vctx, void *data);
RH_API int rh_frame_range_add(rh_heap *h, uintptr_t ip_lo, uintptr_t ip_hi, rh_frame_fn fn,
                              void *data);

/* ------------------------------------------------------------------ events, stats */

typedef enum rh_phase {
	RH_PHASE_STOP = 0,  /* stopping mutators */
	RH_PHASE_ROOTS = 1, /* scanning roots and remembered sets */
	/* With gc.reorder on (the default) a collection copies each object
	 * when the traversal first reaches it and fixes references as it
	 * goes: its MARK and FIXUP phases are empty and EVACUATE holds all
	 * three. */
	RH_PHASE_MARK = 2,
	RH_PHASE_EVACUATE = 3,
	RH_PHASE_FIXUP = 4,   /* updating references to moved objects */
	RH_PHASE_RECLAIM = 5, /* freeing regions, rebuilding remsets */
	RH_PHASE_REMOTE = 6,  /* tracers remark and evacuate their regions (CSSC) */
	RH_PHASE_VERIFY = 7,
	RH_PHASE_COUNT = 8,
} rh_phase;

typedef enum rh_gc_kind {
	RH_GC_PARTIAL = 0,
	RH_GC_FULL = 1,
} rh_gc_kind;

typedef struct rh_event {
	rh_gc_kind kind;
	rh_phase phase;
	int begin; /* 1 at the start of the phase, 0 at its end */
	uint64_t gc_index;
	uint64_t time_ns; /* CLOCK_MONOTONIC */
} rh_event;

/* Called on the collecting thread, mutators stopped; must not allocate. */
typedef void (*rh_event_fn)(const rh_event *ev, void *data);
RH_API void rh_on_event(rh_heap *h, rh_event_fn fn, void *data);

#define RH_PAUSE_BUCKETS 32 /* bucket i counts pauses in [2^i, 2^(i+1)) us */

typedef struct rh_stats {
	uint64_t collections; /* partial */
	uint64_t full_collections;
	uint64_t gc_ns; /* total time in pauses */
	uint64_t max_pause_ns;
	uint64_t pause_hist[RH_PAUSE_BUCKETS];
	uint64_t phase_ns[RH_PHASE_COUNT];
	uint64_t bytes_allocated;
	uint64_t
	        slow_allocs; /* allocations that took a slow path (TLAB refill, medium, humongous) */
	uint64_t bytes_copied;
	uint64_t objects_copied;
	uint64_t bytes_freed;         /* region bytes returned to the free list */
	uint64_t bytes_marked_cpu;    /* live bytes traced by the CPU server */
	uint64_t bytes_marked_remote; /* live bytes traced by tracers */
	uint64_t pinned_objects;
	uint64_t remset_entries; /* current cards over all source queues */
	uint64_t barrier_slow;   /* cross-region stores recorded */
	uint64_t faults;         /* on-demand page faults (swap) */
	uint64_t readahead_pages;
	uint64_t bytes_fetched;
	uint64_t bytes_evicted;
	uint64_t heap_size;
	uint64_t region_size;
	uint64_t regions_total;
	uint64_t regions_free;
	uint64_t regions_eden;
	uint64_t regions_old;
	uint64_t regions_humongous;
	uint64_t peak_used_bytes;
	/* Distributed collection (docs/distributed-gc.md). */
	uint64_t regions_marked_remote;    /* regions tracers reported marked (MARKED) */
	uint64_t regions_evacuated_remote; /* regions tracers evacuated in CSSCs */
	uint64_t bytes_copied_remote;      /* bytes tracers copied */
	uint64_t csscs;                    /* pauses in which tracers evacuated */
	uint64_t remote_refs_fixed;        /* external references to moved objects fixed */
	uint64_t full_collections_remote;  /* full collections marked by the tracers */
	/* Concurrent marking (local heaps). */
	uint64_t concurrent_cycles;         /* cycles finished (the tracers' too) */
	uint64_t concurrent_aborts;         /* cycles dropped for a full collection */
	uint64_t concurrent_pause_finishes; /* cycles finished inside a pause, the room running
	                                     * short (docs/collector.md, sizing.C3) */
	uint64_t concurrent_mark_ns;        /* marker thread time: finished cycles, mark clearing */
	/* Parallel copying (gc.copy_threads). */
	uint64_t
	        bytes_copied_helpers; /* of bytes_copied, by threads other than the collecting one */
	uint64_t copies_undone;       /* copies given up: another thread copied the object first */
	/* Redundancy (docs/resilience.md). */
	uint64_t servers_lost;    /* memory servers lost and survived (red.R5) */
	uint64_t pages_from_copy; /* evicted pages read from a copy, their server lost (red.R4) */
	uint64_t servers_rebuilt; /* lost servers whose place a spare took (red.S1-S3) */
	uint64_t last_rebuild_ns; /* the last such rebuild, from the spare's HELLO to redundancy */
} rh_stats;

RH_API void rh_stats_get(rh_heap *h, rh_stats *out);
/* Pause percentile (0..100) in ns, from the recorded pauses. */
RH_API uint64_t rh_stats_pause_percentile(rh_heap *h, double pct);
/* Stats as JSON (malloc'd). */
RH_API char *rh_stats_json(rh_heap *h);

/* ------------------------------------------------------------------ failures */

/* A disaggregated heap whose memory server is lost (dead, hung, network
 * cut) cannot continue, its pages gone, unless redundancy.mode keeps a copy
 * of them on a server that is up (docs/resilience.md): then the loss is
 * logged, counted in rh_stats.servers_lost, and the heap goes on. Otherwise,
 * and for a loss beyond the redundancy, rheap detects the loss within
 * the config's transport.timeout_ms and calls fn(err, data) once, from one
 * of its threads, with a message naming the server. fn may log, flush and
 * exit; if it returns (or none is set), rheap prints the message on stderr
 * and ends the process with _exit(RH_EXIT_LOST). Threads touching an
 * evicted page block until then; API calls return RH_EPEER. */
#define RH_EXIT_LOST 75
typedef void (*rh_fatal_fn)(const rh_error *err, void *data);
RH_API void rh_on_fatal(rh_heap *h, rh_fatal_fn fn, void *data);

/* ------------------------------------------------------------------ debugging */

/* Run the heap verifier now (mutators must be stopped: call from a mutator,
 * which stops the others). Returns 0 or the number of problems found, each
 * reported on stderr. */
RH_API size_t rh_verify(rh_mutator *m);

#ifdef __cplusplus
}
#endif

#include "rheap-inline.h"

#endif
