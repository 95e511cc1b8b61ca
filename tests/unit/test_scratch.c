/* The pause's scratch buffers (runtime/scratch.c, docs/collector.md,
 * "Scratch buffers"): a buffer a pause grew is readied ahead to twice its
 * size, every page written (scratch.K4), one bounded step at a time; one
 * it did not grow is left alone; and none passes the limit (K2). */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/common/check.h"
#include "runtime/scratch.h"

/* Pages of [p, p + bytes) resident, counted with mincore. */
static size_t resident(const void *p, size_t bytes)
{
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095,
	          hi = ((uintptr_t)p + bytes + 4095) & ~4095ul;
	size_t n = (hi - lo) / 4096, in = 0;
	unsigned char *v = malloc(n);
	REQUIRE(v && mincore((void *)lo, hi - lo, v) == 0, "mincore");
	for (size_t i = 0; i < n; i++)
		in += v[i] & 1;
	free(v);
	return in;
}

static size_t steps(rh_scratch *s)
{
	size_t n = 0;
	while (rh_scratch_ahead_step(s))
		n++;
	return n;
}

int main(void)
{
	rh_scratch s;
	rh_scratch_init(&s, 8u << 20);
	size_t cap;
	CHECK(rh_scratch_take(&s, RH_SCR_GC_SLOTS, &cap) == NULL && cap == 0, "nothing held yet");

	/* A pause grew the list from nothing to 1 MiB (a mapped block whose
	 * pages it wrote only in part). */
	size_t elems = 128 * 1024;
	uint64_t *a = malloc(elems * sizeof *a);
	REQUIRE(a);
	a[0] = 1;
	rh_scratch_put(&s, RH_SCR_GC_SLOTS, a, elems, sizeof *a);
	CHECK(s.held == elems * sizeof *a, "held %zu", s.held);
	size_t n = steps(&s);
	CHECK(n == 2 * elems * sizeof *a / RH_SCRATCH_STEP, "%zu steps of at most %u bytes", n,
	      RH_SCRATCH_STEP);
	uint64_t *b = rh_scratch_take(&s, RH_SCR_GC_SLOTS, &cap);
	REQUIRE(b && cap == 2 * elems, "readied ahead to twice the room (cap %zu)", cap);
	size_t pages = 2 * elems * sizeof *b / 4096;
	size_t in = resident(b, cap * sizeof *b);
	CHECK(in >= pages, "every page written: %zu of %zu resident", in, pages);

	/* Put back as taken: not grown, nothing to ready. */
	rh_scratch_put(&s, RH_SCR_GC_SLOTS, b, cap, sizeof *b);
	CHECK(steps(&s) == 0, "a list the pause did not grow is left alone");
	b = rh_scratch_take(&s, RH_SCR_GC_SLOTS, &cap);
	CHECK(cap == 2 * elems, "same buffer (cap %zu)", cap);

	/* Grown to 5 MiB: kept (within 8), but twice that would pass the
	 * limit (scratch.K2), so it stays as it is. */
	size_t big = 5 * 128 * 1024;
	b = realloc(b, big * sizeof *b);
	REQUIRE(b);
	rh_scratch_put(&s, RH_SCR_GC_SLOTS, b, big, sizeof *b);
	CHECK(s.held == big * sizeof *b, "kept: held %zu", s.held);
	CHECK(steps(&s) == 0, "no step past the limit");
	CHECK(s.held == big * sizeof *b, "held unchanged: %zu", s.held);
	b = rh_scratch_take(&s, RH_SCR_GC_SLOTS, &cap);
	CHECK(cap == big && s.held == 0, "the same 5 MiB back (cap %zu, held %zu)", cap, s.held);
	rh_scratch_put(&s, RH_SCR_GC_SLOTS, b, cap, sizeof *b);
	rh_scratch_fini(&s);
	return check_done();
}
