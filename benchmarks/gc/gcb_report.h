/* The one JSON line each GC benchmark prints on stdout, and the process
 * measurements in it. The driver (benchmarks/run-gc-compare) only
 * aggregates these lines; the field names are documented in
 * docs/benchmarks.md. */
#ifndef GCB_REPORT_H
#define GCB_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gcb_pauses.h"

/* A minimal JSON object writer: keys are trusted literals, string values
 * are escaped. */
typedef struct gcb_json {
	FILE *out;
	bool first;
} gcb_json;

void gcb_json_begin(gcb_json *j, FILE *out);
void gcb_json_u64(gcb_json *j, const char *key, uint64_t v);
void gcb_json_f64(gcb_json *j, const char *key, double v);
void gcb_json_bool(gcb_json *j, const char *key, bool v);
void gcb_json_str(gcb_json *j, const char *key, const char *v);
/* v must already be a JSON value (e.g. an object from rh_stats_json). */
void gcb_json_raw(gcb_json *j, const char *key, const char *v);
void gcb_json_obj_begin(gcb_json *j, const char *key);
void gcb_json_obj_end(gcb_json *j);
/* Closes the top-level object and ends the line. */
void gcb_json_end(gcb_json *j);

typedef struct gcb_result {
	const char *bench; /* "binary-trees", "gcbench" */
	const char *impl;  /* "rheap", "bdwgc" */
	uint64_t setup_ns; /* heap open / GC_INIT, not in wall_ns */
	uint64_t wall_ns;  /* the workload, first allocation to last check */
	uint64_t checksum; /* nodes counted by the workload */
	uint64_t expected; /* closed-form count */
	bool extra_ok;     /* workload-specific checks (array contents, ...) */
} gcb_result;

typedef struct gcb_usage {
	uint64_t user_ns, sys_ns; /* CPU time, all threads */
	uint64_t peak_rss_kib;
	uint64_t minor_faults; /* pages first touched or touched again after release */
} gcb_usage;

void gcb_proc_usage(gcb_usage *u);

/* Opens the line and writes the fields common to every benchmark:
 * bench, impl, ok, checksum, expected, wall_ns, cpu_ns (user_ns + sys_ns),
 * user_ns, sys_ns, minor_faults, setup_ns, gc_ns,
 * collections, max_pause_ns, p50/p99_pause_ns, pauses_dropped,
 * pause_source, peak_rss_kib. The caller adds its own fields and calls gcb_json_end. */
void gcb_report_begin(gcb_json *j, const gcb_result *r, const gcb_pause_summary *s);

/* ok == checksum matches and extra checks passed; prints a loud message
 * on stderr when not. */
bool gcb_result_ok(const gcb_result *r);

#endif
