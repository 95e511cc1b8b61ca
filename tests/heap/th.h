/* Shared helpers for the local-heap tests: a small-heap config and the
 * set-up calls, each required to succeed. Checks and the closing line come
 * from tests/common/check.h. */
#ifndef RH_TESTS_HEAP_TH_H
#define RH_TESTS_HEAP_TH_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "rheap/rheap.h"
#include "tests/common/check.h"
#include "tests/common/rng.h"

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

/* The calling thread's minor page faults so far: first touches of fresh
 * memory, which the warm-region tests count. */
static inline long th_minflt(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		return 0;
	return ru.ru_minflt;
}

static inline int th_same_region(const void *a, const void *b, uint64_t region_size)
{
	return ((uintptr_t)a / region_size) == ((uintptr_t)b / region_size);
}

#endif
