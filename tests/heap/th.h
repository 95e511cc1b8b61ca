/* Shared helpers for the local-heap tests: check counting, the final
 * "N passed, N failed" line, and a small-heap config. Every test binary
 * includes this once; everything is static so each binary has its own
 * counters. Counters are atomic because the stress test checks from
 * several mutator threads. */
#ifndef RH_TESTS_HEAP_TH_H
#define RH_TESTS_HEAP_TH_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rheap/rheap.h"
#include "tests/common/rng.h"

static unsigned long th_passed_n;
static unsigned long th_failed_n;

__attribute__((format(printf, 4, 5))) static inline int th_check(int ok, const char *expr, int line,
                                                                 const char *fmt, ...)
{
	if (ok) {
		__atomic_fetch_add(&th_passed_n, 1, __ATOMIC_RELAXED);
		return 1;
	}
	__atomic_fetch_add(&th_failed_n, 1, __ATOMIC_RELAXED);
	/* fmt starts with a space so that CHECK(cond) has a non-empty one. */
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	const char *msg = buf + (buf[0] == ' ');
	fprintf(stderr, "FAIL line %d: %s%s%s\n", line, expr, msg[0] ? ": " : "", msg);
	return 0;
}

/* CHECK(cond) or CHECK(cond, "fmt", args...): counts one check; returns
 * whether it held so a test can stop following a broken structure. */
#define CHECK(cond, ...) th_check(!!(cond), #cond, __LINE__, " " __VA_ARGS__)

/* Print the summary line the harness reads and return the exit status. */
static inline int th_done(void)
{
	unsigned long p = __atomic_load_n(&th_passed_n, __ATOMIC_RELAXED);
	unsigned long f = __atomic_load_n(&th_failed_n, __ATOMIC_RELAXED);
	fflush(stderr);
	printf("%lu passed, %lu failed\n", p, f);
	fflush(stdout);
	return f == 0 && p > 0 ? 0 : 1;
}

/* Abort the test (counted as a failure) when going on makes no sense. */
#define REQUIRE(cond, ...)                                                                         \
	do {                                                                                       \
		if (!CHECK(cond, __VA_ARGS__)) {                                                   \
			fprintf(stderr, "giving up after the failed requirement\n");               \
			th_done();                                                                 \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* A small local heap: heap_mib MiB in regions of region_kib KiB. */
static inline void th_config(rh_config *cfg, uint64_t heap_mib, uint64_t region_kib)
{
	rh_config_default(cfg);
	cfg->heap_size = heap_mib << 20;
	cfg->region_size = region_kib << 10;
}

static inline rh_heap *th_open(const rh_config *cfg)
{
	rh_error err = {0};
	rh_heap *h = rh_heap_open(cfg, &err);
	REQUIRE(h != NULL, "rh_heap_open: %s (%s)", err.msg, rh_status_name(err.code));
	return h;
}

static inline rh_type_id th_type(rh_heap *h, const rh_type_desc *d)
{
	rh_error err = {0};
	rh_type_id t = rh_type_register(h, d, &err);
	REQUIRE(t != 0, "rh_type_register(%s): %s", d->name, err.msg);
	return t;
}

static inline rh_mutator *th_attach(rh_heap *h)
{
	rh_error err = {0};
	rh_mutator *m = rh_mutator_attach(h, &err);
	REQUIRE(m != NULL, "rh_mutator_attach: %s", err.msg);
	return m;
}

static inline rh_stats th_stats(rh_heap *h)
{
	rh_stats s;
	memset(&s, 0, sizeof s);
	rh_stats_get(h, &s);
	return s;
}

static inline int th_same_region(const void *a, const void *b, uint64_t region_size)
{
	return ((uintptr_t)a / region_size) == ((uintptr_t)b / region_size);
}

#endif
