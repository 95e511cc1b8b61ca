/* rheap side of the GC benchmarks: opening a local heap from command-line
 * settings, registering types, attaching the single mutator as a precise
 * VM would (conservative stack scanning off, every root in a shadow-stack
 * frame), recording pauses through rh_on_event, and reporting the
 * runtime's own statistics next to them. Uses only the public API. */
#ifndef RHEAP_ENV_H
#define RHEAP_ENV_H

#include <stdbool.h>

#include "rheap/rheap.h"

#include "gcb_opts.h"
#include "gcb_pauses.h"
#include "gcb_report.h"

typedef struct rhb_opts {
	uint64_t heap_mib;      /* heap.size */
	uint64_t region_kib;    /* heap.region_size, 0 = rheap chooses */
	double young_fraction;  /* gc.young_fraction, 0 = rheap's default */
	double pause_budget_ms; /* gc.pause_budget_ms, 0 = rheap's default */
	uint64_t copy_threads;  /* gc.copy_threads, 0 = rheap's default */
	uint64_t conservative;  /* flag: leave conservative stack scanning on */
	uint64_t verify;        /* flag: verify the heap after every collection */
} rhb_opts;

#define RHB_DEFAULT_HEAP_MIB 1024

void rhb_opts_default(rhb_opts *o);
/* Appends the rheap options to a gcb_opts_parse table: fills out[0..n-1]
 * (out must have RHB_N_OPTS free entries) and returns n. */
#define RHB_N_OPTS 7
int rhb_opts_table(rhb_opts *o, gcb_opt *out);

typedef struct rhb_env {
	rh_config cfg;
	rh_heap *h;
	rh_mutator *m;
	gcb_pauses pauses;
	uint64_t gc_index; /* collection whose pause is open */
	bool open;
	uint64_t last_ns; /* time of its latest event */
	uint64_t setup_ns;
	bool conservative;
} rhb_env;

/* Opens the heap; exits with rheap's message on failure. */
void rhb_open(rhb_env *e, const rhb_opts *o);
/* Registers a type; exits with rheap's message on failure. */
rh_type_id rhb_type(rhb_env *e, const rh_type_desc *d);
/* After the types: precise roots, pause events, attach the mutator. */
void rhb_start(rhb_env *e, const rhb_opts *o);
/* Closes the pause still open, if any, and summarises. If no event ever
 * arrived but the runtime counted collections, falls back to the
 * runtime's own pause statistics (pause_source "rh_stats"). */
void rhb_summarize(rhb_env *e, gcb_pause_summary *s);
/* Adds the runtime's statistics and the heap settings to the line. */
void rhb_report(rhb_env *e, gcb_json *j);
void rhb_close(rhb_env *e);
_Noreturn void rhb_oom(void);

#endif
