/* The benchmark suite's harness, shared by every workload: command line,
 * opening the heap from a config file (RHEAP_CONFIG, set by `rheapctl
 * run`, takes precedence), per-pause timestamps from rh_on_event, a thread
 * sampling rh_stats and the tracers' status files, and the one JSON object
 * a run writes. Workloads use only the public API; see
 * docs/benchmarks.md, "Benchmark suite". */
#ifndef RS_HARNESS_H
#define RS_HARNESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "memory.h"
#include "rheap/rheap.h"

/* One stop-the-world pause, from its first event to its last. */
typedef struct rs_pause {
	uint64_t start_ns; /* since the run started */
	uint64_t dur_ns;
	uint8_t full;
	uint8_t remote; /* a REMOTE phase ran: tracers took part */
} rs_pause;

/* Counters sampled periodically, for the plots over time. */
typedef struct rs_sample {
	uint64_t t_ns; /* since the run started */
	uint64_t faults, readahead_pages, bytes_fetched, bytes_evicted, gc_ns, pauses;
	uint64_t tracer_bytes_held;
	uint64_t rss_anon_kib, heap_rss_kib; /* memory.h */
} rs_sample;

/* Sums over the tracers' status files (docs/operations.md). */
typedef struct rs_tracers {
	int n;
	uint64_t bytes_held, bytes_traced, mark_ns, max_mark_ns, regions_evacuated;
} rs_tracers;

#define RS_MAX_PAUSES 65536
#define RS_MAX_THREADS 64

typedef struct rs_env {
	const char *workload;
	uint64_t size;
	uint64_t seed;
	const char *config_path; /* what the heap was opened from */
	const char *json_path;   /* NULL: the summary only; "-": JSON on stdout */
	const char *status_dir;  /* the tracers' status files; NULL if none */
	const char *mode;        /* the driver's label, copied to the JSON */
	uint64_t sample_ms;
	unsigned threads; /* mutator threads, --threads (rs_run_threads) */
	bool multi;       /* set by a workload that runs rs_run_threads */
	rh_config cfg;
	rh_heap *h;
	rh_mutator *m;

	/* Written by the event callback (collecting thread, no allocation). */
	rs_pause *pauses;
	size_t n_pauses;
	uint64_t dropped_pauses;
	uint64_t cur_gc;
	bool open;

	/* Written by the sampler thread under lock. */
	pthread_t sampler;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	rs_sample *samples;
	size_t n_samples, cap_samples;
	uint64_t max_tracer_held;
	rs_mem mem_peak; /* field-wise maxima over the samples */

	uint64_t t0_ns, t1_ns;
	uint64_t checksum;
	bool ok;
} rs_env;

uint64_t rs_now_ns(void);

/* Parses the common options plus --size (default_size when absent) and
 * --threads (default 1); exits with usage on a bad option. */
void rs_init(rs_env *e, const char *workload, uint64_t default_size, int argc, char **argv);
/* Opens the heap; exits with rheap's message on failure. */
void rs_open(rs_env *e);
/* Registers a type; exits with rheap's message on failure. */
rh_type_id rs_type(rs_env *e, const rh_type_desc *d);
/* After the types: precise roots only, events, attach, sampler, clock.
 * Exits if --threads asked for more than one thread of a workload that
 * did not set multi. */
void rs_start(rs_env *e);
/* Stops the clock and the sampler, reads the tracers, writes the JSON,
 * closes the heap. Returns the process exit code (1 when !ok). */
int rs_finish(rs_env *e, uint64_t checksum, bool ok);
/* Runs fn on e->threads threads, each with its own mutator (index 0 on
 * the calling thread with e->m, the others attached here), and returns
 * when all have finished. The caller's mutator is parked while it waits,
 * so it never holds up the others' collections. */
typedef void (*rs_thread_fn)(rs_env *e, rh_mutator *m, unsigned index, void *arg);
void rs_run_threads(rs_env *e, rs_thread_fn fn, void *arg);
/* A progress line on stderr, prefixed with the workload and elapsed time. */
void rs_progress(const rs_env *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
_Noreturn void rs_oom(void);

/* p, or the end of the run (rs_oom) when an allocation returned NULL. */
static inline void *rs_must(void *p)
{
	if (!p)
		rs_oom();
	return p;
}

/* An array's elements, past its header and length word. */
static inline void **rs_slots_of(void *array)
{
	return (void **)((char *)array + RH_ARRAY_HEADER_SIZE);
}

static inline uint8_t *rs_bytes_of(void *array)
{
	return (uint8_t *)array + RH_ARRAY_HEADER_SIZE;
}

/* Deterministic per-run randomness (splitmix64). */
static inline uint64_t rs_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif
