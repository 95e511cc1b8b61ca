/* Warm regions: a pause copies into free regions that are still mapped
 * rather than into dropped ones, whose every page it would fault in. A
 * program keeps a sliding window of live byte arrays, three quarters of
 * what it allocates and about one eden's worth, so every partial
 * collection copies most of eden, and full collections come often. From
 * the fifth collection on, the page faults taken on the collecting thread
 * while evacuating must stay under half the pages copied. Copying into
 * whatever region the free list held on top faulted 59,085 times for
 * 64,844 pages; preferring warm regions, and keeping enough of them for
 * eden's expected survivors, 21,247 times. What is left: full collections,
 * which copy the whole live set while only eden's pool is warm, and
 * partial ones whose survivors outgrow the regions the last pause freed.
 *
 * Counts come from getrusage(RUSAGE_THREAD) on the collecting thread, read
 * in the event callback at the start and end of EVACUATE, so the mutator's
 * own faults (eden) are not counted. */
#include <stdint.h>
#include <stdio.h>

#include "th.h"

#define HEAP_MIB 256
#define REGION_KIB 1024
#define WINDOW 2048     /* live arrays */
#define LIVE_BYTES 3000 /* each */
#define DEAD_BYTES 1000 /* allocated between two live ones */
#define WARMUP 4        /* collections before counting */

static rh_type_id t_bytes;

struct bytes {
	uint64_t hdr;
	uint64_t len;
	uint8_t b[];
};

static struct {
	uint64_t gc_index;
	long start;       /* ru_minflt at EVACUATE begin, -1 outside it */
	uint64_t counted; /* collections counted */
	uint64_t faults;  /* during their evacuation */
	uint64_t seen;    /* collections seen */
} ev;

static void on_event(const rh_event *e, void *data)
{
	(void)data;
	if (e->phase != RH_PHASE_EVACUATE)
		return;
	if (e->begin) {
		ev.gc_index = e->gc_index;
		ev.start = th_minflt();
		return;
	}
	if (ev.start < 0 || e->gc_index != ev.gc_index)
		return;
	if (ev.seen++ >= WARMUP) {
		ev.faults += (uint64_t)(th_minflt() - ev.start);
		ev.counted++;
	}
	ev.start = -1;
}

int main(void)
{
	rh_config cfg;
	th_config(&cfg, HEAP_MIB, REGION_KIB);
	/* Eden sized by the old generation alone (the pause budget never
	 * binds), so the schedule does not depend on this machine's speed. */
	cfg.pause_budget_us = 10u * 1000 * 1000;
	rh_heap *h = th_open(&cfg);
	rh_set_conservative(h, false);
	rh_type_desc b = {.name = "bytes", .layout = RH_LAYOUT_BYTE_ARRAY, .size = 16};
	t_bytes = th_type(h, &b);
	ev.start = -1;
	rh_on_event(h, on_event, NULL);

	rh_mutator *m = th_attach(h);
	static void *window[WINDOW];
	rh_frame f;
	rh_push_frame(m, &f, window, WINDOW);
	rh_stats s0 = th_stats(h);
	uint64_t copied0 = 0;
	/* 400 MiB in all: dozens of collections of an 8 MiB eden. */
	for (uint64_t i = 0; i < 100000; i++) {
		struct bytes *live = rh_alloc_array(m, t_bytes, LIVE_BYTES);
		if (!live)
			REQUIRE(0, "allocation %llu failed", (unsigned long long)i);
		live->b[0] = (uint8_t)i;
		live->b[LIVE_BYTES - 1] = (uint8_t)(i >> 8);
		window[i % WINDOW] = live;
		if (!rh_alloc_array(m, t_bytes, DEAD_BYTES))
			REQUIRE(0, "garbage allocation %llu failed", (unsigned long long)i);
		rh_safepoint(m);
		/* A partial and a full collection in one stop count two at
		 * once: take the copies so far as soon as the warm-up is past. */
		if (ev.seen >= WARMUP && !copied0)
			copied0 = th_stats(h).bytes_copied;
	}
	/* The window itself survived every move. */
	size_t bad = 0;
	for (uint64_t i = 100000 - WINDOW; i < 100000; i++) {
		struct bytes *p = window[i % WINDOW];
		bad += p->b[0] != (uint8_t)i || p->b[LIVE_BYTES - 1] != (uint8_t)(i >> 8);
	}
	CHECK(bad == 0, "%zu live arrays changed", bad);
	rh_stats s1 = th_stats(h);
	uint64_t pages = (s1.bytes_copied - copied0) / 4096;
	printf("# %llu collections counted (of %llu, %llu of them full), %llu pages copied, "
	       "%llu page faults while evacuating\n",
	       (unsigned long long)ev.counted, (unsigned long long)ev.seen,
	       (unsigned long long)(s1.full_collections - s0.full_collections),
	       (unsigned long long)pages, (unsigned long long)ev.faults);
	CHECK(ev.counted >= 20, "only %llu collections counted", (unsigned long long)ev.counted);
	CHECK(pages >= ev.counted * 256, "collections copied only %llu pages",
	      (unsigned long long)pages);
	CHECK(ev.faults * 2 <= pages, "%llu page faults while copying %llu pages",
	      (unsigned long long)ev.faults, (unsigned long long)pages);
	rh_pop_frame(m, &f);
	rh_mutator_detach(m);
	rh_heap_close(h);
	return check_done();
}
