/* One MADV_DONTNEED per eviction batch (docs/swap.md, swap.P5).
 *
 * 32 pages of one region, every other one resident (CLEAN), the ones
 * between evicted: flushing the region drops the 16 resident pages with
 * one call over the span, the evicted pages between them claimed for the
 * call. Afterwards every page is EVICTED (the claimed ones as they were),
 * the resident count is right, and every page reads back intact. A second
 * round dirties the resident pages first: the batch writes them back,
 * then drops them with one call too.
 *
 * usage: test-swap-drops TRACERD PROVIDER
 */
#include "runtime/internal.h"
#include "swap/internal.h"
#include "tests/common/check.h"
#include "tests/common/cluster.h"
#include "tests/swap/pages.h"

#define PAGES 32

static size_t count_state(rh_swap *s, uintptr_t a, size_t n, size_t step, uint8_t st)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i += step)
		k += rh_swap_page_state(s, a + i * RH_PAGE_SIZE) == st;
	return k;
}

/* Every other page made resident (read, or written if write), then the
 * region flushed: one drop call, every page EVICTED after. */
static void round_of(rh_swap *s, uint32_t region, uintptr_t p0, bool write, const char *what)
{
	rh_error err;
	volatile uint8_t *vp = (volatile uint8_t *)p0;
	for (size_t i = 0; i < PAGES; i += 2) {
		if (write)
			vp[i * RH_PAGE_SIZE + 1] ^= 0x3c;
		else
			(void)vp[i * RH_PAGE_SIZE];
	}
	settle(s);
	CHECK(count_state(s, p0, PAGES, 2, write ? RH_PAGE_DIRTY : RH_PAGE_CLEAN) == PAGES / 2 &&
	              count_state(s, p0 + RH_PAGE_SIZE, PAGES - 1, 2, RH_PAGE_EVICTED) == PAGES / 2,
	      "%s: every other page resident, the ones between evicted", what);
	rh_swap_stats s0, s1;
	rh_swap_stats_get(s, &s0);
	int rc = rh_swap_flush_region(s, region, &err);
	rh_swap_stats_get(s, &s1);
	CHECK(rc == RH_OK, "%s: the region flushes (%s)", what, rc == RH_OK ? "" : err.msg);
	CHECK(s1.drop_calls - s0.drop_calls == 1,
	      "%s: the %d resident pages went in one MADV_DONTNEED (%llu calls)", what, PAGES / 2,
	      (unsigned long long)(s1.drop_calls - s0.drop_calls));
	CHECK(count_state(s, p0, PAGES, 1, RH_PAGE_EVICTED) == PAGES,
	      "%s: every page is EVICTED after", what);
	CHECK(s1.resident_pages == count_resident(s),
	      "%s: the resident count matches the pages (%llu, %zu)", what,
	      (unsigned long long)s1.resident_pages, count_resident(s));
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	swap_deadline(40);
	cluster_test ct = {.timeout_ms = 3000};
	int rc = cluster_test_begin(&ct, argc, argv, "");
	if (rc)
		return rc;
	rh_heap *h = ct.heap;
	rh_error err;
	rh_type_id t_bytes = swap_bytes_type(h, &err);
	static void *arr;
	rh_global_add(h, &arr);
	rh_mutator *m = rh_mutator_attach(h, &err);
	uintptr_t p0 = swap_pattern_pages(m, t_bytes, &arr, PAGES);
	CHECK(p0 != 0, "allocate the array");
	if (!p0)
		goto out;
	uint8_t *pages = (uint8_t *)p0;
	uint32_t region = rh_region_index(h, p0);
	CHECK(rh_region_index(h, p0 + PAGES * RH_PAGE_SIZE - 1) == region,
	      "the pages lie in one region");
	rh_swap *s = h->swap;
	CHECK(rh_swap_flush_region(s, region, &err) == RH_OK, "evict the region");
	/* Faults fetch their own page alone. */
	rh_swap_set_readahead(s, 0);

	round_of(s, region, p0, false, "clean");
	round_of(s, region, p0, true, "dirty");

	size_t bad = 0;
	for (size_t i = 0; i < PAGES * RH_PAGE_SIZE; i++) {
		uint8_t want = pattern(i);
		if (i % (2 * RH_PAGE_SIZE) == 1)
			want ^= 0x3c;
		bad += pages[i] != want;
	}
	CHECK(bad == 0, "the pages read back intact (%zu bytes differ)", bad);
out:
	rh_mutator_detach(m);
	return cluster_test_end(&ct);
}
